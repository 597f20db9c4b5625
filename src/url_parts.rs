//! The parts every URL oemputx takes shares, parsed one way: the scheme, the user and its
//! password (percent-decoded, the password a [`Secret`]), the host (an IPv6 address without
//! its brackets), the port, the path and the query, whose keys each caller lists — a key it
//! does not list is refused, naming it and the known ones, never ignored.
//!
//! Transports, PCP hosts and pub/sub brokers each add their own rules (defaults, which
//! keys) on top; none re-implements these.

use crate::secret::{Secret, redact_url};

/// A URL taken apart. The password never leaves as text: it is a [`Secret`].
#[derive(Debug, Clone)]
pub struct UrlParts {
    /// The URL with its password masked, for errors about it.
    pub shown: String,
    pub scheme: String,
    /// The user, percent-decoded; `None` when the URL has none.
    pub user: Option<String>,
    pub password: Option<Secret>,
    /// The host as written, IPv6 brackets removed; `None` when the URL has none.
    pub host: Option<String>,
    pub port: Option<u16>,
    /// The path without its leading `/`, percent-decoded.
    pub path: String,
    query: Vec<(String, String)>,
}

/// Percent-decoding as every URL part here is decoded (invalid UTF-8 is replaced, never an
/// error: the part is then shown as it decoded).
pub fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Percent-encoding of a user, password or path segment when a URL is written back.
pub fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// An IPv6 address for a URL's authority: in brackets (anything else as it is).
pub(crate) fn host_for_url(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

impl UrlParts {
    /// Parse `raw`; the error says what is wrong (the URL in it masked).
    pub fn parse(raw: &str) -> Result<UrlParts, String> {
        let url = url::Url::parse(raw)
            .map_err(|e| format!("'{}' is not a URL ({e})", redact_url(raw)))?;
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string());
        let path = match url.path() {
            "" | "/" => String::new(),
            p => decode(p.strip_prefix('/').unwrap_or(p)),
        };
        Ok(UrlParts {
            shown: redact_url(raw),
            scheme: url.scheme().to_string(),
            user: Some(url.username()).filter(|u| !u.is_empty()).map(decode),
            password: url.password().map(|p| Secret::new(decode(p))),
            host,
            port: url.port(),
            path,
            query: url
                .query_pairs()
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        })
    }

    /// The host, or `why` (e.g. "no host; write amqp://HOST:5672").
    pub(crate) fn host_or(&self, why: &str) -> Result<String, String> {
        self.host.clone().ok_or_else(|| why.to_string())
    }

    /// The query's pairs, every key one of `known` (each pair once, in order); an unknown
    /// key is refused with the list, so that a typo never passes as a default.
    pub fn query(&self, known: &[&str]) -> Result<&[(String, String)], String> {
        if let Some((k, _)) = self
            .query
            .iter()
            .find(|(k, _)| !known.contains(&k.as_str()))
        {
            return Err(if known.is_empty() {
                format!("unknown query parameter '{k}': this URL takes none")
            } else {
                format!("unknown query parameter '{k}'; known: {}", known.join(", "))
            });
        }
        Ok(&self.query)
    }

    /// Whether the URL has a query at all.
    pub fn has_query(&self) -> bool {
        !self.query.is_empty()
    }
}

/// The nodes of a cluster named in one URL, comma-separated as the NATS and RabbitMQ clients
/// take them: `nats://h1:4222,nats://h2:4222`, or `nats://h1:4222,h2:4222` where a node
/// without a scheme takes the first node's. Each comes back as a URL of its own, in the
/// order given. Only a comma that a node follows splits (`scheme://…`, or `host[:port]`
/// then the end, a comma, `/` or `?`): a comma inside a password (`u:se,cret@h`) does not.
pub fn split_nodes(raw: &str) -> Vec<String> {
    let scheme = raw.split_once("://").map(|(s, _)| s).unwrap_or_default();
    let mut pieces = Vec::new();
    let mut from = 0;
    for (i, _) in raw.match_indices(',') {
        if i >= from && starts_a_node(&raw[i + 1..]) {
            pieces.push(&raw[from..i]);
            from = i + 1;
        }
    }
    pieces.push(&raw[from..]);
    pieces
        .into_iter()
        .map(str::trim)
        .map(|node| {
            if node.contains("://") || scheme.is_empty() {
                node.to_string()
            } else {
                format!("{scheme}://{node}")
            }
        })
        .collect()
}

/// Whether `rest` begins with a node: a URL, or `host[:port]` up to the end, a comma, `/`
/// or `?` (a host of letters, digits, `.`, `-`, `_`, or an IPv6 address in brackets).
fn starts_a_node(rest: &str) -> bool {
    let rest = rest.trim_start();
    let first = &rest[..rest.find(',').unwrap_or(rest.len())];
    if let Some((scheme, _)) = first.split_once("://") {
        return !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    }
    let node = &rest[..rest.find([',', '/', '?']).unwrap_or(rest.len())];
    let (host, port) = match node.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((addr, port)) => (addr, port),
            None => return false,
        },
        None => match node.split_once(':') {
            Some((host, port)) => (host, port),
            None => (node, ""),
        },
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        || (!node.starts_with('[') && !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    !host.is_empty()
        && port_ok
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".-_:".contains(c))
}

/// The nodes after the first of a node list ([`split_nodes`]), each `host:port` (`port`
/// when a node gives none): a cluster's nodes share the first's scheme, user, password and
/// settings, so a later node may repeat them but not differ, and has no path or query of its
/// own. `example` shows the form in the error.
pub fn later_nodes(
    listed: &[String],
    first: &UrlParts,
    port: u16,
    example: &str,
) -> Result<Vec<(String, u16)>, String> {
    let mut nodes = Vec::new();
    for node in listed.iter().skip(1) {
        let u = UrlParts::parse(node)?;
        let host = u.host_or(&format!("a node without a host; write {example}"))?;
        let same_user = u
            .user
            .as_ref()
            .is_none_or(|user| Some(user) == first.user.as_ref())
            && u.password
                .as_ref()
                .is_none_or(|p| first.password.as_ref().map(Secret::expose) == Some(p.expose()));
        if u.scheme != first.scheme || !same_user || !u.path.is_empty() || u.has_query() {
            return Err(format!(
                "a cluster's nodes share one scheme, user and settings: give them once, on the first node ({example})"
            ));
        }
        nodes.push((host, u.port.unwrap_or(port)));
    }
    Ok(nodes)
}

/// A node as reports name it: `host:port` (an IPv6 address in brackets).
pub fn node_name(host: &str, port: u16) -> String {
    format!("{}:{port}", host_for_url(host))
}

/// The later nodes as a URL names them after its first: `,h2:1883,h3:1883`.
pub fn nodes_suffix(later: &[(String, u16)]) -> String {
    later
        .iter()
        .map(|(host, port)| format!(",{}:{port}", host_for_url(host)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_parts_come_out_decoded_with_the_password_kept_secret() {
        let u =
            UrlParts::parse("amqp://u%40x:p%3As%2Fw@[::1]:5673/my%2Fvhost?a=1").expect("parses");
        assert_eq!(u.scheme, "amqp");
        assert_eq!(u.user.as_deref(), Some("u@x"));
        assert_eq!(u.password.as_ref().map(Secret::expose), Some("p:s/w"));
        assert_eq!(u.host.as_deref(), Some("::1"));
        assert_eq!(u.port, Some(5673));
        assert_eq!(u.path, "my/vhost");
        assert!(!format!("{u:?}").contains("p:s/w"));
        assert_eq!(u.shown, "amqp://u%40x:***@[::1]:5673/my%2Fvhost?a=1");
        assert_eq!(host_for_url("::1"), "[::1]");
        assert_eq!(host_for_url("broker"), "broker");
    }

    #[test]
    fn a_node_list_splits_into_urls_each_with_its_scheme() {
        assert_eq!(
            split_nodes("nats://u:p@h1:4222, nats://h2:4223,h3"),
            ["nats://u:p@h1:4222", "nats://h2:4223", "nats://h3"]
        );
        assert_eq!(split_nodes("nats://h1"), ["nats://h1"]);
        // A comma in a password is no node's start.
        assert_eq!(
            split_nodes("nats://app:se,cret@h1:4222"),
            ["nats://app:se,cret@h1:4222"]
        );
        assert_eq!(
            split_nodes("amqp://u:p@h1:5672/v,[::1]:5673,h3"),
            ["amqp://u:p@h1:5672/v", "amqp://[::1]:5673", "amqp://h3"]
        );
    }

    #[test]
    fn an_unknown_query_key_is_refused_by_name() {
        let u = UrlParts::parse("nats://h:4222?tls_ca=x").expect("parses");
        let err = u.query(&["cacertfile"]).expect_err("refused");
        assert!(
            err.contains("'tls_ca'") && err.contains("cacertfile"),
            "{err}"
        );
        assert!(u.query(&[]).expect_err("none taken").contains("takes none"));
        let ok = UrlParts::parse("amqps://h/?cacertfile=/x").expect("parses");
        assert_eq!(ok.query(&["cacertfile"]).expect("known").len(), 1);
        assert!(UrlParts::parse("not a url").is_err());
        let e = UrlParts::parse("amqp://u:hunter2@:5672")
            .map(|u| u.host)
            .unwrap_or_default();
        assert!(e.is_none());
    }
}
