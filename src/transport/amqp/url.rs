//! `amqp://` and `amqps://` URLs (RabbitMQ's URI spec) and what they name.

use super::super::endpoint::{Endpoint, EndpointError, Registered};
use super::super::tls::{self, TlsOptions};
use crate::secret::{MASK, Secret};
use crate::url_parts::{UrlParts, encode, host_for_url};

/// AMQP 0-9-1 virtual host names are short strings: at most 255 bytes.
const MAX_VHOST: usize = 255;

/// How the registry knows this transport.
pub const REGISTERED: Registered = Registered {
    schemes: &["amqp", "amqps"],
    example: "amqp://user:password@host:5672/vhost",
    parse: |raw| Ok(Endpoint::new(AmqpEndpoint::parse(raw)?)),
    node_lists: true,
    bare_name: None,
};

/// The parts of an `amqp://` or `amqps://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AmqpEndpoint {
    /// The node connections go to first.
    pub host: String,
    pub port: u16,
    /// Every node of a cluster named in the URL, the first included, in the order given:
    /// the order connecting tries them.
    pub nodes: Vec<(String, u16)>,
    pub user: String,
    pub password: Secret,
    pub vhost: String,
    /// Set for `amqps://`.
    pub tls: Option<TlsOptions>,
}

impl AmqpEndpoint {
    /// Parse `amqp://user:pass@host:port/vhost` (RabbitMQ's URI spec: default guest/guest,
    /// port 5672 or 5671, vhost "/" when the path is absent, percent-decoded otherwise), and
    /// for `amqps://` RabbitMQ's TLS query parameters; or a cluster's nodes, comma-separated
    /// as a list of URLs, the user, virtual host and TLS parameters on the first:
    /// `amqp://u:p@h1:5672/%2f,h2:5672,amqp://h3:5672`.
    pub fn parse(raw: &str) -> Result<AmqpEndpoint, EndpointError> {
        let bad = |why: String| EndpointError::bad(raw, why);
        let listed = crate::url_parts::split_nodes(raw);
        let mut ep = AmqpEndpoint::parse_one(&listed[0]).map_err(|e| match e {
            EndpointError::BadUrl { why, .. } => bad(why),
            other => other,
        })?;
        let default_port = if ep.tls.is_some() { 5671 } else { 5672 };
        for node in &listed[1..] {
            let u = UrlParts::parse(node).map_err(&bad)?;
            let host = u
                .host_or("a node without a host; write amqp://u:p@h1:5672/vhost,h2:5672")
                .map_err(&bad)?;
            let same_scheme = u.scheme == if ep.tls.is_some() { "amqps" } else { "amqp" };
            let same_user = u.user.as_ref().is_none_or(|user| *user == ep.user)
                && u.password
                    .as_ref()
                    .is_none_or(|p| p.expose() == ep.password.expose());
            let same_vhost = u.path.is_empty() || u.path == ep.vhost;
            if !same_scheme || !same_user || !same_vhost || u.has_query() {
                return Err(bad(
                    "a cluster's nodes share one scheme, user, virtual host and TLS settings: give them once, on the first node (amqp://user:password@h1:5672/vhost,h2:5672)".into(),
                ));
            }
            ep.nodes.push((host, u.port.unwrap_or(default_port)));
        }
        Ok(ep)
    }

    /// Whichever node of the list: this endpoint with its first node replaced by `node`.
    pub fn at(&self, node: &(String, u16)) -> AmqpEndpoint {
        AmqpEndpoint {
            host: node.0.clone(),
            port: node.1,
            ..self.clone()
        }
    }

    /// One node's URL, as RabbitMQ's URI spec writes it.
    fn parse_one(raw: &str) -> Result<AmqpEndpoint, EndpointError> {
        let bad = |why: String| EndpointError::bad(raw, why);
        let u = UrlParts::parse(raw).map_err(&bad)?;
        let host = u
            .host_or("no host; write amqp://user:password@HOST:5672/vhost")
            .map_err(&bad)?;
        let secure = u.scheme == "amqps";
        let known: &[&str] = if secure { &tls::QUERY_KEYS } else { &[] };
        let query = u.query(known).map_err(|why| {
            bad(if secure {
                why
            } else {
                format!(
                    "{why} (amqps:// takes the TLS parameters {})",
                    tls::QUERY_KEYS.join(", ")
                )
            })
        })?;
        let vhost = if u.path.is_empty() {
            "/".to_string()
        } else {
            u.path.clone()
        };
        if vhost.len() > MAX_VHOST {
            return Err(bad(format!(
                "the virtual host name is {} bytes; AMQP allows at most {MAX_VHOST}",
                vhost.len()
            )));
        }
        let tls = secure
            .then(|| TlsOptions::from_query(&host, query))
            .transpose()
            .map_err(&bad)?;
        let port = u.port.unwrap_or(if secure { 5671 } else { 5672 });
        Ok(AmqpEndpoint {
            port,
            user: u.user.clone().unwrap_or_else(|| "guest".into()),
            password: u.password.clone().unwrap_or_else(|| Secret::new("guest")),
            nodes: vec![(host.clone(), port)],
            host,
            vhost,
            tls,
        })
    }

    /// The URL, with the password shown only when `reveal` (for a child process's
    /// environment, never for printing).
    fn url(&self, reveal: bool) -> String {
        let scheme = if self.tls.is_some() { "amqps" } else { "amqp" };
        let password = if reveal {
            encode(self.password.expose())
        } else {
            MASK.to_string()
        };
        let mut url = format!(
            "{scheme}://{}:{password}@{}:{}/{}",
            if reveal {
                encode(&self.user)
            } else {
                self.user.clone()
            },
            host_for_url(&self.host),
            self.port,
            encode(&self.vhost)
        );
        if let (true, Some(tls)) = (reveal, &self.tls) {
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in tls.query_pairs() {
                q.append_pair(k, &v);
            }
            url.push('?');
            url.push_str(&q.finish());
        }
        for (host, port) in self.nodes.iter().skip(1) {
            url.push_str(&format!(",{}:{port}", host_for_url(host)));
        }
        url
    }

    /// `amqp://user:***@host:port/vhost`: the password never leaves this struct.
    pub fn redacted(&self) -> String {
        self.url(false)
    }

    /// The full URL, password included, for handing to a child process (the flows `sweep`
    /// starts); never for printing.
    pub(crate) fn url_with_password(&self) -> String {
        self.url(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amqp_url_defaults_follow_rabbitmq_uri_spec() {
        let a = AmqpEndpoint::parse("amqp://localhost").expect("parses");
        assert_eq!(
            (
                a.user.as_str(),
                a.password.expose(),
                a.port,
                a.vhost.as_str()
            ),
            ("guest", "guest", 5672, "/")
        );
        let a = AmqpEndpoint::parse("amqp://u:p%40ss@h:5673/%2f").expect("parses");
        assert_eq!(
            (a.password.expose(), a.port, a.vhost.as_str()),
            ("p@ss", 5673, "/")
        );
        assert_eq!(
            AmqpEndpoint::parse("amqp://u:p@h/prod")
                .expect("parses")
                .vhost,
            "prod"
        );
        let a = AmqpEndpoint::parse("amqp://u:p@[::1]:5672/%2f").expect("IPv6");
        assert_eq!(a.host, "::1");
        assert_eq!(a.redacted(), "amqp://u:***@[::1]:5672/%2F");
    }

    #[test]
    fn redaction_hides_the_password() {
        let e = AmqpEndpoint::parse("amqp://guest:secret@127.0.0.1:5672/%2f").expect("parses");
        assert_eq!(e.redacted(), "amqp://guest:***@127.0.0.1:5672/%2F");
        assert!(!format!("{e:?}").contains("secret"));
        let err = AmqpEndpoint::parse("amqp://u:hunter2@:5672")
            .expect_err("no host")
            .to_string();
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn tls_parameters_belong_to_amqps_and_unknown_ones_are_refused() {
        let a = AmqpEndpoint::parse("amqps://u:p@broker/%2f?server_name_indication=mq.example")
            .expect("parses");
        assert_eq!(
            (a.port, a.tls.map(|t| t.server_name)),
            (5671, Some("mq.example".to_string()))
        );
        assert!(AmqpEndpoint::parse("amqps://h/?cacertfile=/no/such.pem").is_err());
        let e = AmqpEndpoint::parse("amqp://h/?heartbeat=10")
            .expect_err("unknown key")
            .to_string();
        assert!(e.contains("'heartbeat'"), "{e}");
        let e = AmqpEndpoint::parse("amqp://h/?cacertfile=/x")
            .expect_err("TLS on amqp")
            .to_string();
        assert!(e.contains("amqps://"), "{e}");
    }

    #[test]
    fn the_full_url_parses_back_to_the_same_endpoint() {
        let ca = tempfile::NamedTempFile::new().expect("temp file");
        let tls = format!(
            "amqps://a:b@h:5671/v?cacertfile={}&server_name_indication=broker",
            ca.path().display()
        );
        for raw in [
            "amqp://guest:guest@127.0.0.1:5672/%2f",
            "amqp://u%40x:p%3As%2Fw@host:5673/my%2Fvhost",
            "amqp://u:p@[::1]:5672/%2f",
            tls.as_str(),
        ] {
            let ep = AmqpEndpoint::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            let again = AmqpEndpoint::parse(&ep.url_with_password()).expect("parses again");
            assert_eq!(again, ep, "{raw}");
        }
    }

    #[test]
    fn a_cluster_is_its_nodes_in_order_with_user_vhost_and_password_once() {
        let c = AmqpEndpoint::parse(
            "amqp://app:hunter2@127.0.0.1:5672/prod,127.0.0.1:5673,amqp://app@[::1]",
        )
        .expect("a node list");
        assert_eq!(
            c.nodes,
            [
                ("127.0.0.1".to_string(), 5672),
                ("127.0.0.1".to_string(), 5673),
                ("::1".to_string(), 5672)
            ]
        );
        assert_eq!(
            (c.host.as_str(), c.port, c.vhost.as_str()),
            ("127.0.0.1", 5672, "prod")
        );
        assert_eq!(
            c.redacted(),
            "amqp://app:***@127.0.0.1:5672/prod,127.0.0.1:5673,[::1]:5672"
        );
        let again = AmqpEndpoint::parse(&c.url_with_password()).expect("round trip");
        assert_eq!(again, c);
        let second = c.at(&c.nodes[1]);
        assert_eq!((second.host.as_str(), second.port), ("127.0.0.1", 5673));
        assert_eq!(second.vhost, "prod");
        for bad in [
            "amqp://a:b@h1/v,amqp://c:d@h2",
            "amqp://h1/v,h2/w",
            "amqp://h1,amqps://h2",
        ] {
            let err = AmqpEndpoint::parse(bad).expect_err(bad).to_string();
            assert!(err.contains("give them once"), "{bad}: {err}");
            assert!(!err.contains(":b@") && !err.contains(":d@"), "{err}");
        }
    }
}
