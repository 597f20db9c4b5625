//! `stomp://` and `stomp+ssl://` URLs: a STOMP 1.2 broker (ActiveMQ Classic's STOMP
//! connector here; Artemis and RabbitMQ's STOMP plugin speak it too).

use super::super::endpoint::{Endpoint, EndpointError, Registered};
use super::super::tls::{self, TlsOptions};
use crate::secret::{MASK, Secret};
use crate::url_parts::{UrlParts, encode, host_for_url, later_nodes, nodes_suffix, split_nodes};

/// ActiveMQ's STOMP ports: plain and TLS.
pub const DEFAULT_PORT: u16 = 61613;
pub const DEFAULT_TLS_PORT: u16 = 61612;

/// How the registry knows this transport.
pub const REGISTERED: Registered = Registered {
    schemes: &["stomp", "stomp+ssl"],
    example: "stomp://user:password@host:61613",
    parse: |raw| Ok(Endpoint::new(StompEndpoint::parse(raw)?)),
    node_lists: true,
    bare_name: None,
};

/// A STOMP broker: `stomp://[user[:password]@]host[:61613]`, `stomp+ssl://…[:61612]` with
/// the TLS parameters amqps:// takes (`cacertfile`, `certfile`, `keyfile`,
/// `server_name_indication`). A cluster's nodes (a primary and its backups) as a list,
/// `stomp://u:p@h1:61613,h2:61613`, or in ActiveMQ's form,
/// `failover:(stomp://h1:61613,stomp://h2:61613)`: the login and TLS once, on the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StompEndpoint {
    /// The node connections go to first.
    pub host: String,
    pub port: u16,
    /// The nodes after the first, in the order connecting tries them.
    pub later: Vec<(String, u16)>,
    /// CONNECT's `login` and `passcode`; none sent when absent.
    pub login: Option<String>,
    pub passcode: Option<Secret>,
    pub tls: Option<TlsOptions>,
}

impl StompEndpoint {
    pub fn parse(raw: &str) -> Result<StompEndpoint, EndpointError> {
        let bad = |why: String| EndpointError::bad(raw, why);
        let listed = split_nodes(raw);
        let u = UrlParts::parse(&listed[0]).map_err(&bad)?;
        let host = u
            .host_or("no host; write stomp://user:password@HOST:61613")
            .map_err(&bad)?;
        let secure = u.scheme == "stomp+ssl";
        if !u.path.is_empty() {
            return Err(bad(
                "a STOMP URL names no path: the queue is --request-queue (a /queue/ destination)"
                    .into(),
            ));
        }
        let known: &[&str] = if secure { &tls::QUERY_KEYS } else { &[] };
        let query = u.query(known).map_err(|why| {
            bad(if secure {
                why
            } else {
                format!(
                    "{why} (stomp+ssl:// takes the TLS parameters {})",
                    tls::QUERY_KEYS.join(", ")
                )
            })
        })?;
        let tls = if secure {
            Some(TlsOptions::from_query(&host, query).map_err(bad)?)
        } else {
            None
        };
        let port = if secure {
            DEFAULT_TLS_PORT
        } else {
            DEFAULT_PORT
        };
        Ok(StompEndpoint {
            port: u.port.unwrap_or(port),
            later: later_nodes(&listed, &u, port, "stomp://user:password@h1:61613,h2:61613")
                .map_err(&bad)?,
            host,
            login: u.user.clone(),
            passcode: u.password.clone(),
            tls,
        })
    }

    fn url(&self, reveal: bool) -> String {
        let scheme = if self.tls.is_some() {
            "stomp+ssl"
        } else {
            "stomp"
        };
        let auth = match (&self.login, &self.passcode) {
            (Some(l), Some(p)) if reveal => format!("{}:{}@", encode(l), encode(p.expose())),
            (Some(l), Some(_)) => format!("{l}:{MASK}@"),
            (Some(l), None) => format!("{}@", if reveal { encode(l) } else { l.clone() }),
            _ => String::new(),
        };
        let query: Vec<String> = self
            .tls
            .iter()
            .flat_map(|t| t.query_pairs())
            .filter(|(k, v)| *k != "server_name_indication" || *v != self.host)
            .map(|(k, v)| format!("{k}={}", encode(&v)))
            .collect();
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        format!(
            "{scheme}://{auth}{}:{}{q}{}",
            host_for_url(&self.host),
            self.port,
            nodes_suffix(&self.later)
        )
    }

    /// Every node, the first included, in the order connecting tries them (a TLS server
    /// name set for the first stays the first's: each node is then checked against it).
    pub fn nodes(&self) -> Vec<StompEndpoint> {
        let first = std::iter::once((self.host.clone(), self.port));
        first
            .chain(self.later.iter().cloned())
            .map(|(host, port)| StompEndpoint {
                host,
                port,
                later: Vec::new(),
                ..self.clone()
            })
            .collect()
    }

    /// The URL with the passcode as `***`.
    pub fn redacted(&self) -> String {
        self.url(false)
    }

    /// The URL with its passcode, for flows oemputx starts.
    pub(crate) fn url_with_password(&self) -> String {
        self.url(true)
    }
}

/// A queue as a STOMP destination: `/queue/NAME`, or the destination as given when it
/// starts with `/` (a `/topic/`, a `/temp-queue/`).
pub fn queue_destination(name: &str) -> String {
    if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/queue/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_their_defaults_and_never_show_the_passcode() {
        let e = StompEndpoint::parse("stomp://admin:s3cret@mq1").expect("valid");
        assert_eq!(
            (e.host.as_str(), e.port, e.login.as_deref()),
            ("mq1", 61613, Some("admin"))
        );
        assert_eq!(e.redacted(), "stomp://admin:***@mq1:61613");
        assert_eq!(e.url_with_password(), "stomp://admin:s3cret@mq1:61613");
        let t = StompEndpoint::parse("stomp+ssl://mq1").expect("valid");
        assert_eq!((t.port, t.tls.is_some()), (61612, true));
        for bad in ["stomp://", "stomp://h/queue/x", "stomp://h?cacertfile=/x"] {
            let e = StompEndpoint::parse(bad).expect_err(bad).to_string();
            assert!(!e.contains("s3cret"), "{e}");
        }
        assert_eq!(queue_destination("MQSI.IN"), "/queue/MQSI.IN");
        assert_eq!(queue_destination("/topic/t"), "/topic/t");
    }
}
