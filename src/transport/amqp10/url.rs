//! `amqp10://` and `amqps10://` URLs, and how a queue name becomes an AMQP 1.0 address.
//!
//! The scheme cannot be mistaken for AMQP 0-9-1's `amqp://`: the two protocols share port
//! 5672 on RabbitMQ and nothing else.

use super::super::amqp::url::AmqpEndpoint;
use super::super::endpoint::{Endpoint, EndpointError, Registered};
use super::super::tls::TlsOptions;
use crate::secret::{MASK, Secret};
use crate::url_parts::{UrlParts, encode, host_for_url, later_nodes, nodes_suffix, split_nodes};

/// How the registry knows this transport.
pub const REGISTERED: Registered = Registered {
    schemes: &["amqp10", "amqps10"],
    example: "amqp10://user:password@host:5672",
    parse: |raw| Ok(Endpoint::new(Amqp10Endpoint::parse(raw)?)),
    node_lists: true,
    bare_name: None,
};

/// AMQP's port (RabbitMQ serves 0-9-1 and 1.0 on it).
pub const DEFAULT_PORT: u16 = 5672;
/// AMQP over TLS.
pub const DEFAULT_TLS_PORT: u16 = 5671;

/// How a queue name is written as an AMQP 1.0 address: brokers disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressStyle {
    /// RabbitMQ 3.x's plugin: `/amq/queue/NAME` for a queue that must exist, `/queue/NAME`
    /// to create it when missing (both the default exchange, routing key NAME).
    Rabbitmq,
    /// The name itself: ActiveMQ Artemis, Qpid, Azure Service Bus, Solace.
    Plain,
    /// `queue://NAME`: ActiveMQ Classic's destination prefix.
    QueuePrefix,
}

impl AddressStyle {
    fn parse(s: &str) -> Option<AddressStyle> {
        match s {
            "rabbitmq" => Some(AddressStyle::Rabbitmq),
            "plain" => Some(AddressStyle::Plain),
            "queue-prefix" => Some(AddressStyle::QueuePrefix),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            AddressStyle::Rabbitmq => "rabbitmq",
            AddressStyle::Plain => "plain",
            AddressStyle::QueuePrefix => "queue-prefix",
        }
    }

    /// The address of existing queue `queue` (RabbitMQ: `/amq/queue/NAME`, which refuses a
    /// queue that does not exist). A name that already is an address (it starts with `/` or
    /// holds `://`) is used as it is.
    pub fn address(self, queue: &str) -> String {
        self.written(queue, "/amq/queue/")
    }

    /// The address that creates queue `queue` when it is missing (RabbitMQ: `/queue/NAME`,
    /// a durable queue when the link's terminus is durable); other brokers create queues by
    /// their own configuration, so there it is [`AddressStyle::address`].
    pub fn declaring(self, queue: &str) -> String {
        self.written(queue, "/queue/")
    }

    fn written(self, queue: &str, rabbitmq_prefix: &str) -> String {
        if queue.starts_with('/') || queue.contains("://") {
            return queue.to_string();
        }
        match self {
            AddressStyle::Rabbitmq => format!("{rabbitmq_prefix}{queue}"),
            AddressStyle::Plain => queue.to_string(),
            AddressStyle::QueuePrefix => format!("queue://{queue}"),
        }
    }

    /// Where a task's replies go when it has no named reply queue. `None`: ask the broker
    /// for a dynamic node, deleted with the link. RabbitMQ 3.x's plugin has no dynamic nodes
    /// ("Dynamic sources not supported") and declares every queue it makes for a link
    /// without auto-delete (`/exchange/X/KEY` sources too), so there the reply queue is an
    /// ordinary `/queue/KEY` that the session deletes when it closes (see
    /// [`Amqp10Endpoint::as_amqp091`]).
    pub fn temporary(self, key: &str) -> Option<String> {
        match self {
            AddressStyle::Rabbitmq => Some(format!("/queue/{key}")),
            AddressStyle::Plain | AddressStyle::QueuePrefix => None,
        }
    }

    /// The queue name inside an address of this style, for messages and reports.
    pub(crate) fn queue_of(self, address: &str) -> String {
        let stripped = match self {
            AddressStyle::Rabbitmq => address
                .strip_prefix("/amq/queue/")
                .or_else(|| address.strip_prefix("/queue/")),
            AddressStyle::Plain => None,
            AddressStyle::QueuePrefix => address.strip_prefix("queue://"),
        };
        stripped.unwrap_or(address).to_string()
    }
}

/// An AMQP 1.0 container: `amqp10://[user:password@]host[:5672][?address-style=…]`, or
/// `amqps10://` for TLS (with amqps://'s `cacertfile` and `server_name_indication`); a
/// cluster's nodes as a list, `amqp10://u:p@h1:5672,h2:5672`, the login and settings once,
/// on the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Amqp10Endpoint {
    /// The node connections go to first.
    pub host: String,
    pub port: u16,
    /// The nodes after the first, in the order connecting tries them.
    pub later: Vec<(String, u16)>,
    pub user: String,
    pub password: Secret,
    pub tls: Option<TlsOptions>,
    pub style: AddressStyle,
}

impl Amqp10Endpoint {
    fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "amqps10"
        } else {
            "amqp10"
        }
    }

    /// The URL, with the password only when `reveal` (and then the TLS settings too).
    fn url(&self, reveal: bool) -> String {
        let (user, password) = if reveal {
            (encode(&self.user), encode(self.password.expose()))
        } else {
            (self.user.clone(), MASK.to_string())
        };
        format!(
            "{}://{user}:{password}@{}:{}{}{}",
            self.scheme(),
            host_for_url(&self.host),
            self.port,
            self.query(reveal),
            nodes_suffix(&self.later)
        )
    }

    /// Every node, the first included, in the order connecting tries them.
    pub fn nodes(&self) -> Vec<Amqp10Endpoint> {
        let first = std::iter::once((self.host.clone(), self.port));
        first
            .chain(self.later.iter().cloned())
            .map(|(host, port)| Amqp10Endpoint {
                host,
                port,
                later: Vec::new(),
                ..self.clone()
            })
            .collect()
    }

    /// `amqp10://user:***@host:port`: the password never leaves this struct.
    pub fn redacted(&self) -> String {
        self.url(false)
    }

    /// The URL with its password, for flows oemputx starts; never for printing.
    pub(crate) fn url_with_password(&self) -> String {
        self.url(true)
    }

    /// The query part: the address style when not the default, and with `tls` the TLS
    /// settings.
    fn query(&self, tls: bool) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        if self.style != AddressStyle::Rabbitmq {
            q.append_pair("address-style", self.style.name());
        }
        if let (true, Some(t)) = (tls, &self.tls) {
            if let Some(ca) = &t.ca_file {
                q.append_pair("cacertfile", &ca.to_string_lossy());
            }
            q.append_pair("server_name_indication", &t.server_name);
        }
        let q = q.finish();
        if q.is_empty() { q } else { format!("?{q}") }
    }
}

impl Amqp10Endpoint {
    /// The same broker over AMQP 0-9-1, for what AMQP 1.0 cannot ask of RabbitMQ: deleting
    /// a queue (a task's reply queue at the end of a run). RabbitMQ serves both protocols
    /// on one port with one user database.
    pub(crate) fn as_amqp091(&self) -> AmqpEndpoint {
        AmqpEndpoint {
            host: self.host.clone(),
            port: self.port,
            nodes: std::iter::once((self.host.clone(), self.port))
                .chain(self.later.iter().cloned())
                .collect(),
            user: self.user.clone(),
            password: self.password.clone(),
            vhost: "/".into(),
            tls: self.tls.clone(),
        }
    }
}

impl Amqp10Endpoint {
    /// Parse `amqp10://[user:password@]host[:5672][?address-style=…]` (`amqps10://` with
    /// TLS: `cacertfile`, `server_name_indication`); guest/guest by default, as RabbitMQ.
    pub fn parse(raw: &str) -> Result<Amqp10Endpoint, EndpointError> {
        let bad = |why: String| EndpointError::bad(raw, why);
        let listed = split_nodes(raw);
        let u = UrlParts::parse(&listed[0]).map_err(&bad)?;
        let host = u
            .host_or("no host; write amqp10://user:password@HOST:5672")
            .map_err(&bad)?;
        if !u.path.is_empty() {
            return Err(bad(
                "an AMQP 1.0 URL names no virtual host or queue in its path; name the queue with --request-queue".into(),
            ));
        }
        let tls = u.scheme == "amqps10";
        let known: &[&str] = if tls {
            &["address-style", "cacertfile", "server_name_indication"]
        } else {
            &["address-style"]
        };
        let query = u.query(known).map_err(|why| {
            bad(format!(
                "{why} (amqp10:// takes address-style, amqps10:// also cacertfile and server_name_indication)"
            ))
        })?;
        let mut style = AddressStyle::Rabbitmq;
        for (k, v) in query {
            if k == "address-style" {
                style = AddressStyle::parse(v).ok_or_else(|| {
                    bad(format!(
                        "address-style={v} is unknown; use rabbitmq (/queue/NAME), plain (NAME: Artemis, Qpid, Service Bus) or queue-prefix (queue://NAME: ActiveMQ Classic)"
                    ))
                })?;
            }
        }
        let tls_options = if tls {
            let tls_query: Vec<(String, String)> = query
                .iter()
                .filter(|(k, _)| k != "address-style")
                .cloned()
                .collect();
            Some(TlsOptions::from_query(&host, &tls_query).map_err(&bad)?)
        } else {
            None
        };
        let port = if tls { DEFAULT_TLS_PORT } else { DEFAULT_PORT };
        Ok(Amqp10Endpoint {
            port: u.port.unwrap_or(port),
            later: later_nodes(&listed, &u, port, "amqp10://user:password@h1:5672,h2:5672")
                .map_err(&bad)?,
            user: u.user.clone().unwrap_or_else(|| "guest".into()),
            password: u.password.clone().unwrap_or_else(|| Secret::new("guest")),
            host,
            tls: tls_options,
            style,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_host_port_credentials_and_hide_the_password() {
        let e = Amqp10Endpoint::parse("amqp10://app:SeCrEt%2199@127.0.0.1").expect("parses");
        assert_eq!((e.host.as_str(), e.port), ("127.0.0.1", 5672));
        assert_eq!(e.password.expose(), "SeCrEt!99");
        assert_eq!(e.redacted(), "amqp10://app:***@127.0.0.1:5672");
        assert!(e.url_with_password().contains("SeCrEt%2199"));
        let ca = tempfile::NamedTempFile::new().expect("temp file");
        let t = Amqp10Endpoint::parse(&format!(
            "amqps10://h.example?cacertfile={}&address-style=plain",
            ca.path().display()
        ))
        .expect("parses");
        assert_eq!((t.port, t.style), (5671, AddressStyle::Plain));
        assert_eq!(
            t.redacted(),
            "amqps10://guest:***@h.example:5671?address-style=plain"
        );
        for bad in [
            "amqp10://",
            "amqp10://h/vhost",
            "amqp10://h?address-style=artemis",
            "amqp10://u:SeCrEt@h?x=1",
        ] {
            let err = Amqp10Endpoint::parse(bad).expect_err(bad).to_string();
            assert!(!err.contains("SeCrEt"), "{err}");
        }
    }

    #[test]
    fn each_style_writes_a_queue_as_its_broker_does() {
        assert_eq!(
            AddressStyle::Rabbitmq.address("MQSI.IN"),
            "/amq/queue/MQSI.IN"
        );
        assert_eq!(
            AddressStyle::Rabbitmq.declaring("MQSI.IN"),
            "/queue/MQSI.IN"
        );
        assert_eq!(AddressStyle::Plain.declaring("MQSI.IN"), "MQSI.IN");
        assert_eq!(
            AddressStyle::Rabbitmq.temporary("k").as_deref(),
            Some("/queue/k")
        );
        assert_eq!(AddressStyle::Plain.temporary("k"), None);
        assert_eq!(AddressStyle::Plain.address("MQSI.IN"), "MQSI.IN");
        assert_eq!(
            AddressStyle::QueuePrefix.address("MQSI.IN"),
            "queue://MQSI.IN"
        );
        // A full address is the user's own.
        assert_eq!(
            AddressStyle::Rabbitmq.address("/exchange/x/rk"),
            "/exchange/x/rk"
        );
        assert_eq!(AddressStyle::Rabbitmq.queue_of("/queue/Q"), "Q");
        assert_eq!(AddressStyle::Rabbitmq.queue_of("/amq/queue/Q"), "Q");
        assert_eq!(AddressStyle::Plain.queue_of("Q"), "Q");
    }
}
