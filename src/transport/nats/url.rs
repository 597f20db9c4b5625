//! `nats://` and `tls://` URLs, and what they name.

use super::super::endpoint::{EndpointError, EndpointKind, redact_raw};
use super::super::{QueueSetup, Transport, TransportError};
use std::sync::Arc;

/// NATS's client port.
pub const DEFAULT_PORT: u16 = 4222;

/// A NATS server: `nats://[user:password@]host[:4222]`, `nats://token@host`, or `tls://…`
/// for TLS.
#[derive(Clone, PartialEq, Eq)]
pub struct NatsEndpoint {
    pub host: String,
    pub port: u16,
    /// User and password, or a token (a user with no password, as NATS URLs write it).
    pub user: Option<String>,
    pub password: Option<String>,
    pub tls: bool,
}

impl std::fmt::Debug for NatsEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl NatsEndpoint {
    fn scheme(&self) -> &'static str {
        if self.tls { "tls" } else { "nats" }
    }

    /// The URL with the password (or token) replaced by `***`.
    pub fn redacted(&self) -> String {
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            // A lone user part is a token: a secret of its own.
            (Some(_), None) => "***@".into(),
            _ => String::new(),
        };
        format!("{}://{auth}{}:{}", self.scheme(), self.host, self.port)
    }

    /// The URL with its secrets, for the client and for flows oemputx starts.
    pub fn url_with_password(&self) -> String {
        let enc = |s: &str| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        let auth = match (&self.user, &self.password) {
            (Some(u), Some(p)) => format!("{}:{}@", enc(u), enc(p)),
            (Some(t), None) => format!("{}@", enc(t)),
            _ => String::new(),
        };
        format!("{}://{auth}{}:{}", self.scheme(), self.host, self.port)
    }

    /// The server address as async-nats takes it, without credentials (those go through
    /// its options, so that no error of the client can quote them).
    pub fn server(&self) -> String {
        format!("{}://{}:{}", self.scheme(), self.host, self.port)
    }
}

impl EndpointKind for NatsEndpoint {
    fn transport(&self) -> &'static str {
        "nats"
    }
    fn redacted(&self) -> String {
        NatsEndpoint::redacted(self)
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(super::Nats::new(self.clone(), setup)))
    }
    fn url_for_flow(&self) -> Option<String> {
        Some(self.url_with_password())
    }
    fn consumers(&self, queue: &str) -> Result<Option<u32>, TransportError> {
        super::responders(self, queue)
    }
}

/// Parse a `nats://` or `tls://` URL that [`url::Url`] has already parsed.
pub fn parse(raw: &str, url: &url::Url) -> Result<super::super::Endpoint, EndpointError> {
    let bad = |why: String| EndpointError::BadUrl {
        url: redact_raw(raw),
        why,
    };
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| bad("no host; write nats://host:4222".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    if !matches!(url.path(), "" | "/") || url.query().is_some() {
        return Err(bad(
            "a NATS URL is nats://[user:password@]host[:port], with no path or query".into(),
        ));
    }
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let user = Some(url.username()).filter(|u| !u.is_empty()).map(decode);
    let password = url.password().map(decode);
    Ok(super::super::Endpoint::Nats(NatsEndpoint {
        host,
        port: url.port().unwrap_or(DEFAULT_PORT),
        user,
        password,
        tls: url.scheme() == "tls",
    }))
}

/// Why `subject` cannot be a request subject, if it cannot: NATS subjects are tokens of
/// printable characters without spaces, separated by dots; `*` and `>` are wildcards, which
/// a publish may not use.
pub fn subject_problem(subject: &str) -> Option<String> {
    if subject.is_empty() {
        return Some("a subject cannot be empty".into());
    }
    if subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!(
            "'{subject}' has white space: NATS subjects have none"
        ));
    }
    if subject.split('.').any(|t| t == "*" || t == ">") {
        return Some(format!(
            "'{subject}' has a wildcard (* or >): requests are published to one subject"
        ));
    }
    if subject.split('.').any(str::is_empty) {
        return Some(format!(
            "'{subject}' has an empty token: dots separate non-empty tokens (a.b.c)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::super::{Endpoint, parse_url};
    use super::*;

    #[test]
    fn urls_give_host_port_credentials_and_hide_them() {
        let Ok(Endpoint::Nats(n)) = parse_url("nats://app:SeCrEt%2199@127.0.0.1") else {
            panic!("parses");
        };
        assert_eq!((n.host.as_str(), n.port, n.tls), ("127.0.0.1", 4222, false));
        assert_eq!(n.password.as_deref(), Some("SeCrEt!99"));
        assert_eq!(n.redacted(), "nats://app:***@127.0.0.1:4222");
        assert_eq!(n.server(), "nats://127.0.0.1:4222");
        assert!(n.url_with_password().contains("SeCrEt%2199"));
        let Ok(Endpoint::Nats(t)) = parse_url("tls://s3cr3tt0ken@nats.example:4443") else {
            panic!("parses");
        };
        assert!(t.tls);
        assert_eq!(t.redacted(), "tls://***@nats.example:4443");
        for bad in ["nats://", "nats://h:4222/path", "nats://h?x=1"] {
            let err = parse_url(bad).expect_err(bad).to_string();
            assert!(!err.contains("SeCrEt"), "{err}");
        }
    }

    #[test]
    fn subjects_with_spaces_wildcards_or_empty_tokens_are_refused() {
        assert_eq!(subject_problem("MQSI.IN"), None);
        assert_eq!(subject_problem("orders.v1.new-order"), None);
        for bad in ["", "a b", "a.*", ">", "a..b", ".a", "a."] {
            assert!(subject_problem(bad).is_some(), "{bad}");
        }
    }
}
