//! `kafka://` and `kafka+ssl://` URLs: a bootstrap list of brokers, SASL credentials and
//! TLS settings, as Kafka clients take them (`bootstrap.servers`, `sasl.mechanism`,
//! `security.protocol`).

use super::super::endpoint::{Endpoint, EndpointError, Registered};
use super::super::tls::{QUERY_KEYS, TlsOptions};
use crate::secret::{MASK, Secret};
use crate::url_parts::{UrlParts, decode, encode, host_for_url};

/// Kafka's client port.
pub const DEFAULT_PORT: u16 = 9092;
/// How long a fetch waits at the broker for a record when none is there (librdkafka's
/// `fetch.wait.max.ms`, `?fetch_wait_ms=`). Apache Kafka answers a waiting fetch as soon as
/// a record comes, so the bound only paces idle polls; tansu looks again only every half
/// of it, so it is also the latency a reply can wait there: 10 ms keeps both small.
pub const DEFAULT_FETCH_WAIT_MS: u32 = 10;

/// How the registry knows this transport.
pub const REGISTERED: Registered = Registered {
    schemes: &["kafka", "kafka+ssl"],
    example: "kafka://host:9092",
    parse: |raw| {
        Ok(Endpoint::new(
            KafkaEndpoint::parse(raw).map_err(|why| EndpointError::bad(raw, why))?,
        ))
    },
    node_lists: true,
    bare_name: None,
};

/// The SASL mechanisms a URL may name (`?sasl=`), as Kafka's `sasl.mechanism` spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Plain,
    ScramSha256,
    ScramSha512,
}

impl Mechanism {
    fn parse(v: &str) -> Result<Mechanism, String> {
        match v.to_ascii_uppercase().as_str() {
            "PLAIN" => Ok(Mechanism::Plain),
            "SCRAM-SHA-256" => Ok(Mechanism::ScramSha256),
            "SCRAM-SHA-512" => Ok(Mechanism::ScramSha512),
            _ => Err(format!(
                "sasl={v} is no SASL mechanism oemputx speaks: use plain, scram-sha-256 or scram-sha-512"
            )),
        }
    }

    /// The name Kafka gives it.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }
}

/// SASL credentials of a URL: a user, a password and the mechanism (PLAIN unless `?sasl=`
/// names another).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sasl {
    pub user: String,
    pub password: Secret,
    pub mechanism: Mechanism,
}

/// A Kafka cluster: `kafka://[user:password@]host[:9092][,host[:port]…][?sasl=MECHANISM]`
/// (and `fetch_wait_ms=N`),
/// or `kafka+ssl://…` for TLS (with the `cacertfile`, `server_name_indication` … settings of
/// the other TLS URLs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KafkaEndpoint {
    /// The bootstrap brokers, each host and port.
    pub brokers: Vec<(String, u16)>,
    pub sasl: Option<Sasl>,
    /// TLS settings for `kafka+ssl://`.
    pub tls: Option<TlsOptions>,
    /// How long a fetch waits at the broker when no record is there, in ms.
    pub fetch_wait_ms: u32,
}

impl KafkaEndpoint {
    /// Parse a `kafka://` or `kafka+ssl://` URL.
    pub fn parse(raw: &str) -> Result<KafkaEndpoint, String> {
        let hint = "write kafka://host:9092[,host:9092…]";
        let Some((scheme, rest)) = raw.split_once("://") else {
            return Err(format!("not a URL; {hint}"));
        };
        let scheme = scheme.to_ascii_lowercase();
        let (authority, query) = match rest.split_once('?') {
            Some((a, q)) => (a, Some(q)),
            None => (rest, None),
        };
        let authority = authority.strip_suffix('/').unwrap_or(authority);
        if authority.contains('/') {
            return Err(format!("a Kafka URL has no path; {hint}"));
        }
        let (userinfo, hosts) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let brokers = hosts
            .split(',')
            .map(|h| {
                let u =
                    UrlParts::parse(&format!("kafka://{h}")).map_err(|e| format!("{e}; {hint}"))?;
                Ok((
                    u.host_or(&format!("a broker with no host; {hint}"))?,
                    u.port.unwrap_or(DEFAULT_PORT),
                ))
            })
            .collect::<Result<Vec<_>, String>>()?;
        // The query's keys, checked through the shared parser (a typo never passes).
        let q = UrlParts::parse(&format!(
            "kafka://h{}",
            query.map(|q| format!("?{q}")).unwrap_or_default()
        ))?;
        let mut known: Vec<&str> = vec!["sasl", "fetch_wait_ms"];
        if scheme == "kafka+ssl" {
            known.extend(QUERY_KEYS);
        }
        let pairs = q.query(&known)?;
        let mechanism = pairs
            .iter()
            .find(|(k, _)| k == "sasl")
            .map(|(_, v)| Mechanism::parse(v))
            .transpose()?;
        let fetch_wait_ms = match pairs.iter().find(|(k, _)| k == "fetch_wait_ms") {
            None => DEFAULT_FETCH_WAIT_MS,
            Some((_, v)) => v
                .parse::<u32>()
                .ok()
                .filter(|ms| (1..=60_000).contains(ms))
                .ok_or_else(|| {
                    format!("fetch_wait_ms={v} must be a whole number of ms from 1 to 60000")
                })?,
        };
        let sasl = match userinfo {
            Some(u) => {
                let Some((user, password)) = u.split_once(':') else {
                    return Err(
                        "SASL needs a user and a password (kafka://user:password@host)".into(),
                    );
                };
                Some(Sasl {
                    user: decode(user),
                    password: Secret::new(decode(password)),
                    mechanism: mechanism.unwrap_or(Mechanism::Plain),
                })
            }
            None if mechanism.is_some() => {
                return Err("sasl= needs a user and a password in the URL (kafka://user:password@host?sasl=…)".into());
            }
            None => None,
        };
        let tls = match scheme.as_str() {
            "kafka+ssl" => Some(TlsOptions::from_query(&brokers[0].0, pairs)?),
            "kafka" => None,
            other => return Err(format!("{other}:// is not Kafka; {hint}")),
        };
        Ok(KafkaEndpoint {
            brokers,
            sasl,
            tls,
            fetch_wait_ms,
        })
    }

    /// The bootstrap list as clients take it: `host:port,host:port`.
    pub fn bootstrap(&self) -> Vec<String> {
        self.brokers
            .iter()
            .map(|(h, p)| format!("{}:{p}", host_for_url(h)))
            .collect()
    }

    /// The URL, with its password only when `reveal`.
    fn url(&self, reveal: bool) -> String {
        let scheme = if self.tls.is_some() {
            "kafka+ssl"
        } else {
            "kafka"
        };
        let auth = match &self.sasl {
            Some(s) if reveal => format!("{}:{}@", encode(&s.user), encode(s.password.expose())),
            Some(s) => format!("{}:{MASK}@", s.user),
            None => String::new(),
        };
        let mut query: Vec<String> = Vec::new();
        if let Some(s) = self
            .sasl
            .as_ref()
            .filter(|s| s.mechanism != Mechanism::Plain)
        {
            query.push(format!("sasl={}", s.mechanism.name().to_ascii_lowercase()));
        }
        if self.fetch_wait_ms != DEFAULT_FETCH_WAIT_MS {
            query.push(format!("fetch_wait_ms={}", self.fetch_wait_ms));
        }
        if let Some(t) = &self.tls {
            let default_name = t.server_name == self.brokers[0].0;
            query.extend(
                t.query_pairs()
                    .into_iter()
                    .filter(|(k, _)| !(default_name && *k == "server_name_indication"))
                    .map(|(k, v)| format!("{k}={}", encode(&v))),
            );
        }
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        format!("{scheme}://{auth}{}{query}", self.bootstrap().join(","))
    }

    /// The URL with the password replaced by `***`.
    pub fn redacted(&self) -> String {
        self.url(false)
    }

    /// The URL with its password, for flows oemputx starts (never printed).
    pub(crate) fn url_with_password(&self) -> String {
        self.url(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_the_bootstrap_list_credentials_and_tls_and_hide_the_password() {
        let k = KafkaEndpoint::parse("kafka://127.0.0.1:19092").expect("parses");
        assert_eq!(k.bootstrap(), ["127.0.0.1:19092"]);
        assert_eq!(k.redacted(), "kafka://127.0.0.1:19092");
        assert_eq!(k.fetch_wait_ms, DEFAULT_FETCH_WAIT_MS);
        let k = KafkaEndpoint::parse(
            "kafka://app:s%3Acret@h1,h2:9093,[::1]:9094?sasl=scram-sha-512&fetch_wait_ms=2",
        )
        .expect("parses");
        assert_eq!(k.bootstrap(), ["h1:9092", "h2:9093", "[::1]:9094"]);
        let s = k.sasl.as_ref().expect("SASL");
        assert_eq!((s.user.as_str(), s.password.expose()), ("app", "s:cret"));
        assert_eq!(s.mechanism, Mechanism::ScramSha512);
        assert_eq!(
            k.redacted(),
            "kafka://app:***@h1:9092,h2:9093,[::1]:9094?sasl=scram-sha-512&fetch_wait_ms=2"
        );
        assert!(!format!("{k:?}").contains("cret"));
        assert_eq!(
            KafkaEndpoint::parse(&k.url_with_password()).expect("again"),
            k
        );
        let t = KafkaEndpoint::parse("kafka+ssl://u:p@broker:9093").expect("TLS");
        assert_eq!(
            t.tls.as_ref().map(|t| t.server_name.as_str()),
            Some("broker")
        );
        assert_eq!(t.sasl.as_ref().map(|s| s.mechanism), Some(Mechanism::Plain));
        assert_eq!(t.redacted(), "kafka+ssl://u:***@broker:9093");
    }

    #[test]
    fn bad_urls_are_refused_naming_what_is_wrong_and_never_the_password() {
        for (raw, says) in [
            ("kafka://", "no host"),
            ("kafka://h/topic", "no path"),
            ("kafka://h,", "no host"),
            ("kafka://u:hunter2@h?sasl=gssapi", "no SASL mechanism"),
            ("kafka://h?sasl=plain", "needs a user and a password"),
            ("kafka://hunter2@h", "needs a user and a password"),
            ("kafka://h?cacertfile=/x", "cacertfile"),
            ("kafka://h?fetch_wait_ms=0", "from 1 to 60000"),
        ] {
            let err = KafkaEndpoint::parse(raw).expect_err(raw);
            assert!(
                err.contains(says) && !err.contains("hunter2"),
                "{raw}: {err}"
            );
        }
    }
}
