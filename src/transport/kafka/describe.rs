//! What the broker says of itself, for the report's settings: its cluster id, the broker
//! answering and the API versions it serves. The client library keeps both answers to
//! itself, so two plain requests (ApiVersions v0 and Metadata v2, encoded here: a few fixed
//! fields each) go on a connection of their own before the run. Over TLS or SASL the
//! handshake would come first, which only the client does: there the description says so.

use super::url::KafkaEndpoint;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long describing may take; a broker that does not answer in time is not described.
const BOUND: Duration = Duration::from_secs(2);
/// The largest answer read: an ApiVersions answer is a few hundred bytes, a Metadata answer
/// for no topics a few per broker.
const MOST: usize = 1 << 20;

/// The names of the APIs a request/reply run uses, by API key.
const USED: [(i16, &str); 6] = [
    (0, "Produce"),
    (1, "Fetch"),
    (2, "ListOffsets"),
    (3, "Metadata"),
    (19, "CreateTopics"),
    (20, "DeleteTopics"),
];

/// The broker's description, or why there is none.
pub async fn describe(ep: &KafkaEndpoint) -> String {
    if ep.tls.is_some() || ep.sasl.is_some() {
        return "not read over TLS or SASL yet (the client keeps the broker's answers to itself)"
            .into();
    }
    let Some((host, port)) = ep.brokers.first() else {
        return "no broker".into();
    };
    match tokio::time::timeout(BOUND, ask(host, *port)).await {
        Ok(Ok(d)) => d,
        Ok(Err(why)) => format!("not described: {why}"),
        Err(_) => format!("not described: no answer within {} s", BOUND.as_secs()),
    }
}

async fn ask(host: &str, port: u16) -> Result<String, String> {
    let mut s = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| e.to_string())?;
    let versions = request(&mut s, 18, 0, 1, &[]).await?;
    // Metadata v2 for no topics: an empty array (v1 and later; -1 would be every topic).
    let metadata = request(&mut s, 3, 2, 2, &0i32.to_be_bytes()).await?;
    let apis = api_versions(&versions)?;
    let (cluster, brokers, controller) = cluster(&metadata)?;
    let used: Vec<String> = USED
        .iter()
        .map(|(key, name)| match apis.iter().find(|a| a.0 == *key) {
            Some((_, min, max)) => format!("{name} {min}–{max}"),
            None => format!("{name} none"),
        })
        .collect();
    Ok(format!(
        "cluster {}, {} broker(s), controller {controller}; API versions: {} ({} APIs served)",
        crate::terminal::for_terminal(cluster.as_deref().unwrap_or("(no id)")),
        brokers,
        used.join(", "),
        apis.len()
    ))
}

/// Send one request (header v1: key, version, correlation id, client id) and read its
/// answer's body, after the correlation id.
async fn request(
    s: &mut tokio::net::TcpStream,
    key: i16,
    version: i16,
    id: i32,
    body: &[u8],
) -> Result<Vec<u8>, String> {
    let client = b"oemputx-describe";
    let mut m = Vec::with_capacity(32 + body.len());
    m.extend_from_slice(&key.to_be_bytes());
    m.extend_from_slice(&version.to_be_bytes());
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&(client.len() as i16).to_be_bytes());
    m.extend_from_slice(client);
    m.extend_from_slice(body);
    let mut framed = (m.len() as i32).to_be_bytes().to_vec();
    framed.extend_from_slice(&m);
    s.write_all(&framed).await.map_err(|e| e.to_string())?;
    let mut size = [0u8; 4];
    s.read_exact(&mut size).await.map_err(|e| e.to_string())?;
    let size = usize::try_from(i32::from_be_bytes(size)).map_err(|_| "a negative size")?;
    if !(4..=MOST).contains(&size) {
        return Err(format!("an answer of {size} bytes"));
    }
    let mut answer = vec![0u8; size];
    s.read_exact(&mut answer).await.map_err(|e| e.to_string())?;
    let mut r = Reader(&answer);
    if r.i32()? != id {
        return Err("an answer to another request".into());
    }
    Ok(r.0.to_vec())
}

/// The API keys with their version ranges, from an ApiVersions v0 answer.
fn api_versions(body: &[u8]) -> Result<Vec<(i16, i16, i16)>, String> {
    let mut r = Reader(body);
    let error = r.i16()?;
    if error != 0 {
        return Err(format!("ApiVersions answered error {error}"));
    }
    let n = r.count()?;
    (0..n).map(|_| Ok((r.i16()?, r.i16()?, r.i16()?))).collect()
}

/// The cluster id, how many brokers, and the controller's id, from a Metadata v2 answer.
fn cluster(body: &[u8]) -> Result<(Option<String>, usize, i32), String> {
    let mut r = Reader(body);
    let brokers = r.count()?;
    for _ in 0..brokers {
        r.i32()?; // node id
        r.string()?; // host
        r.i32()?; // port
        r.string()?; // rack (nullable)
    }
    let cluster = r.string()?;
    let controller = r.i32()?;
    Ok((cluster, brokers, controller))
}

/// Big-endian fields read off the front of an answer, each checked against its end.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or("an answer cut short")?;
        self.0 = rest;
        Ok(*head)
    }
    fn i16(&mut self) -> Result<i16, String> {
        self.take::<2>().map(i16::from_be_bytes)
    }
    fn i32(&mut self) -> Result<i32, String> {
        self.take::<4>().map(i32::from_be_bytes)
    }
    /// An array's length, at most what the rest of the answer could hold.
    fn count(&mut self) -> Result<usize, String> {
        let n = usize::try_from(self.i32()?).map_err(|_| "a negative count")?;
        if n > self.0.len() {
            return Err(format!("a count of {n} in {} bytes", self.0.len()));
        }
        Ok(n)
    }
    /// A nullable string (length -1: null).
    fn string(&mut self) -> Result<Option<String>, String> {
        let len = self.i16()?;
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        if len > self.0.len() {
            return Err("a string past the answer's end".into());
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(Some(String::from_utf8_lossy(s).into_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_field_by_field_and_a_short_or_lying_one_is_refused() {
        // ApiVersions v0: no error, two APIs.
        let mut v = 0i16.to_be_bytes().to_vec();
        v.extend_from_slice(&2i32.to_be_bytes());
        for x in [0i16, 3, 11, 1, 4, 16] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        assert_eq!(api_versions(&v), Ok(vec![(0, 3, 11), (1, 4, 16)]));
        assert!(api_versions(&v[..v.len() - 1]).is_err());
        let mut lying = 0i16.to_be_bytes().to_vec();
        lying.extend_from_slice(&1_000_000i32.to_be_bytes());
        assert!(api_versions(&lying).is_err_and(|e| e.contains("a count of")));
        // Metadata v2: one broker, cluster id, controller.
        let mut m = 1i32.to_be_bytes().to_vec();
        m.extend_from_slice(&111i32.to_be_bytes());
        m.extend_from_slice(&9i16.to_be_bytes());
        m.extend_from_slice(b"127.0.0.1");
        m.extend_from_slice(&19092i32.to_be_bytes());
        m.extend_from_slice(&(-1i16).to_be_bytes());
        m.extend_from_slice(&5i16.to_be_bytes());
        m.extend_from_slice(b"tansu");
        m.extend_from_slice(&111i32.to_be_bytes());
        assert_eq!(cluster(&m), Ok((Some("tansu".into()), 1, 111)));
        assert!(cluster(&m[..m.len() - 2]).is_err());
    }
}
