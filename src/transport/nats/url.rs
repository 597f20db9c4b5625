//! `nats://` and `tls://` URLs, and what they name.

use super::super::endpoint::{Endpoint, EndpointError, Registered};
use crate::secret::{MASK, Secret};
use crate::url_parts::{UrlParts, encode, host_for_url};

/// NATS's client port.
pub const DEFAULT_PORT: u16 = 4222;

/// How the registry knows this transport.
pub const REGISTERED: Registered = Registered {
    schemes: &["nats", "tls"],
    example: "nats://host:4222",
    parse: |raw| Ok(Endpoint::new(NatsEndpoint::parse(raw)?)),
    bare_name: None,
};

/// How a client proves who it is to a NATS server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NatsAuth {
    None,
    User {
        user: String,
        password: Secret,
    },
    /// A lone user part of the URL: a token, a secret of its own (never printed, not even
    /// as a user name).
    Token(Secret),
}

/// A NATS server: `nats://[user:password@]host[:4222]`, `nats://token@host`, or `tls://…`
/// for TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsEndpoint {
    pub host: String,
    pub port: u16,
    pub auth: NatsAuth,
    pub tls: bool,
}

impl NatsEndpoint {
    /// Parse a `nats://` or `tls://` URL.
    pub fn parse(raw: &str) -> Result<NatsEndpoint, EndpointError> {
        let bad = |why: String| EndpointError::bad(raw, why);
        let u = UrlParts::parse(raw).map_err(&bad)?;
        let host = u.host_or("no host; write nats://host:4222").map_err(&bad)?;
        if !u.path.is_empty() || u.has_query() {
            return Err(bad(
                "a NATS URL is nats://[user:password@]host[:port], with no path or query".into(),
            ));
        }
        let auth = match (u.user.clone(), u.password.clone()) {
            (Some(user), Some(password)) => NatsAuth::User { user, password },
            (Some(token), None) => NatsAuth::Token(Secret::new(token)),
            _ => NatsAuth::None,
        };
        Ok(NatsEndpoint {
            host,
            port: u.port.unwrap_or(DEFAULT_PORT),
            auth,
            tls: u.scheme == "tls",
        })
    }

    fn scheme(&self) -> &'static str {
        if self.tls { "tls" } else { "nats" }
    }

    /// The URL, with its secrets only when `reveal`.
    fn url(&self, reveal: bool) -> String {
        let shown = |s: &Secret| {
            if reveal {
                encode(s.expose())
            } else {
                MASK.to_string()
            }
        };
        let auth = match &self.auth {
            NatsAuth::User { user, password } => {
                let user = if reveal { encode(user) } else { user.clone() };
                format!("{user}:{}@", shown(password))
            }
            NatsAuth::Token(t) => format!("{}@", shown(t)),
            NatsAuth::None => String::new(),
        };
        format!("{}://{auth}{}", self.scheme(), self.server_authority())
    }

    fn server_authority(&self) -> String {
        format!("{}:{}", host_for_url(&self.host), self.port)
    }

    /// The URL with the password (or token) replaced by `***`.
    pub fn redacted(&self) -> String {
        self.url(false)
    }

    /// The URL with its secrets, for the client and for flows oemputx starts.
    pub(crate) fn url_with_password(&self) -> String {
        self.url(true)
    }

    /// The server address as async-nats takes it, without credentials (those go through
    /// its options, so that no error of the client can quote them).
    pub fn server(&self) -> String {
        format!("{}://{}", self.scheme(), self.server_authority())
    }

    /// The user name to name in a refused login; a token is never named.
    pub(crate) fn user_shown(&self) -> String {
        match &self.auth {
            NatsAuth::User { user, .. } => user.clone(),
            NatsAuth::Token(_) => "(a token)".into(),
            NatsAuth::None => "(none)".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_host_port_credentials_and_hide_them() {
        let n = NatsEndpoint::parse("nats://app:SeCrEt%2199@127.0.0.1").expect("parses");
        assert_eq!((n.host.as_str(), n.port, n.tls), ("127.0.0.1", 4222, false));
        let NatsAuth::User { password, .. } = &n.auth else {
            panic!("user and password: {n:?}")
        };
        assert_eq!(password.expose(), "SeCrEt!99");
        assert_eq!(n.redacted(), "nats://app:***@127.0.0.1:4222");
        assert_eq!(n.server(), "nats://127.0.0.1:4222");
        assert!(n.url_with_password().contains("SeCrEt%2199"));
        let t = NatsEndpoint::parse("tls://s3cr3tt0ken@nats.example:4443").expect("parses");
        assert!(t.tls);
        assert_eq!(t.redacted(), "tls://***@nats.example:4443");
        assert_eq!(t.user_shown(), "(a token)");
        assert!(!format!("{t:?}").contains("s3cr3tt0ken"));
        for bad in ["nats://", "nats://h:4222/path", "nats://h?x=1"] {
            let err = NatsEndpoint::parse(bad).expect_err(bad).to_string();
            assert!(!err.contains("SeCrEt"), "{err}");
        }
        assert_eq!(
            NatsEndpoint::parse("nats://[::1]:4222")
                .expect("IPv6")
                .server(),
            "nats://[::1]:4222"
        );
    }
}
