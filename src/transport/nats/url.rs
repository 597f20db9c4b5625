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
    node_lists: true,
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
/// for TLS; or a cluster's nodes, comma-separated as NATS clients take them:
/// `nats://h1:4222,nats://h2:4222` (or `nats://h1:4222,h2:4222`), the credentials once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsEndpoint {
    /// The first node: the one a run connects to while it answers.
    pub host: String,
    pub port: u16,
    /// Every node, the first included, in the order given: the order connecting tries them.
    pub nodes: Vec<(String, u16)>,
    pub auth: NatsAuth,
    pub tls: bool,
}

impl NatsEndpoint {
    /// Parse a `nats://` or `tls://` URL, or a comma-separated list of them.
    pub fn parse(raw: &str) -> Result<NatsEndpoint, EndpointError> {
        let bad = |why: String| EndpointError::bad(raw, why);
        let mut nodes = Vec::new();
        let mut first: Option<(String, NatsAuth)> = None;
        for node in crate::url_parts::split_nodes(raw) {
            let u = UrlParts::parse(&node).map_err(&bad)?;
            let host = u.host_or("no host; write nats://host:4222").map_err(&bad)?;
            if !u.path.is_empty() || u.has_query() {
                return Err(bad(
                    "a NATS URL is nats://[user:password@]host[:port], with no path or query (several nodes: nats://h1:4222,nats://h2:4222)".into(),
                ));
            }
            let auth = match (u.user.clone(), u.password.clone()) {
                (Some(user), Some(password)) => NatsAuth::User { user, password },
                (Some(token), None) => NatsAuth::Token(Secret::new(token)),
                _ => NatsAuth::None,
            };
            match &first {
                None => first = Some((u.scheme.clone(), auth)),
                Some((scheme, _)) if *scheme != u.scheme => {
                    return Err(bad(format!(
                        "the nodes mix {scheme}:// and {}://: a cluster's nodes are all TLS (tls://) or none (nats://)",
                        u.scheme
                    )));
                }
                Some((_, first_auth)) if auth != NatsAuth::None && auth != *first_auth => {
                    return Err(bad(
                        "the nodes carry different credentials: give them once, on the first node (nats://user:password@h1:4222,h2:4222)".into(),
                    ));
                }
                Some(_) => {}
            }
            nodes.push((host, u.port.unwrap_or(DEFAULT_PORT)));
        }
        let (Some((scheme, auth)), Some((host, port))) = (first, nodes.first().cloned()) else {
            return Err(bad("no host; write nats://host:4222".into()));
        };
        Ok(NatsEndpoint {
            host,
            port,
            nodes,
            auth,
            tls: scheme == "tls",
        })
    }

    fn scheme(&self) -> &'static str {
        if self.tls { "tls" } else { "nats" }
    }

    /// The URL, with its secrets only when `reveal`: the first node with the credentials,
    /// the others as `host:port` after it.
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
        let nodes: Vec<String> = self.nodes.iter().map(|(h, p)| authority(h, *p)).collect();
        format!("{}://{auth}{}", self.scheme(), nodes.join(","))
    }

    /// The URL with the password (or token) replaced by `***`.
    pub fn redacted(&self) -> String {
        self.url(false)
    }

    /// The URL with its secrets, for the client and for flows oemputx starts.
    pub(crate) fn url_with_password(&self) -> String {
        self.url(true)
    }

    /// The servers' addresses as async-nats takes them, in order, without credentials
    /// (those go through its options, so that no error of the client can quote them).
    pub fn server(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|(h, p)| format!("{}://{}", self.scheme(), authority(h, *p)))
            .collect()
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

/// A node as `host:port`, an IPv6 host in brackets.
fn authority(host: &str, port: u16) -> String {
    format!("{}:{port}", host_for_url(host))
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
        assert_eq!(n.server(), ["nats://127.0.0.1:4222"]);
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
            ["nats://[::1]:4222"]
        );
    }

    #[test]
    fn a_cluster_is_its_nodes_in_order_with_the_credentials_once_and_hidden() {
        let c =
            NatsEndpoint::parse("nats://app:hunter2@127.0.0.1:14222,nats://127.0.0.1:14223,[::1]")
                .expect("a node list");
        assert_eq!(
            c.nodes,
            [
                ("127.0.0.1".to_string(), 14222),
                ("127.0.0.1".to_string(), 14223),
                ("::1".to_string(), 4222)
            ]
        );
        assert_eq!((c.host.as_str(), c.port), ("127.0.0.1", 14222));
        assert_eq!(
            c.redacted(),
            "nats://app:***@127.0.0.1:14222,127.0.0.1:14223,[::1]:4222"
        );
        assert_eq!(
            c.server(),
            [
                "nats://127.0.0.1:14222",
                "nats://127.0.0.1:14223",
                "nats://[::1]:4222"
            ]
        );
        // The flow gets the same list, credentials and all.
        let again = NatsEndpoint::parse(&c.url_with_password()).expect("round trip");
        assert_eq!(again, c);
        for (bad, why) in [
            ("nats://h1:4222,tls://h2:4222", "mix"),
            ("nats://a:b@h1,nats://c:d@h2", "credentials"),
            ("nats://h1,nats://", "host"),
        ] {
            let err = NatsEndpoint::parse(bad).expect_err(bad).to_string();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
