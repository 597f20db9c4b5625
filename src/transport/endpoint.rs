//! Where a run connects: the URL schemes, parsed once into an [`Endpoint`].
//!
//! Each transport parses its own URLs and describes itself through [`EndpointKind`]; this
//! file only routes a scheme to its transport. A new transport adds its variant, one arm in
//! [`Endpoint::kind`] and one in [`parse_url`].

use super::amqp::url::AmqpEndpoint;
use super::amqp10::url::Amqp10Endpoint;
use super::ibmmq::url::IbmMqEndpoint;
use super::nats::url::NatsEndpoint;
use super::{QueueSetup, Transport, TransportError, amqp, amqp10, embedded, ibmmq, nats};
use std::sync::Arc;

/// A URL or queue manager name that cannot be used: the user's input, exit 2.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("--qmgr {url}: {why}")]
    BadUrl { url: String, why: String },
    #[error(
        "--qmgr {url}: the {scheme}:// transport is not yet supported; use embedded:, amqp://, amqps://, ibmmq://, nats:// or amqp10://"
    )]
    NotYet { url: String, scheme: String },
}

/// What a transport's endpoint tells and does, whatever the transport.
pub trait EndpointKind {
    /// The transport's name in reports.
    fn transport(&self) -> &'static str;
    /// A description safe to print: passwords are replaced by `***`.
    fn redacted(&self) -> String;
    /// Open the transport for a run.
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError>;
    /// The URL a flow process started by oemputx connects with, password included (never
    /// for printing); `None` when no flow of ours can serve this transport.
    fn url_for_flow(&self) -> Option<String> {
        None
    }
    /// How many consumers the queue has, when the transport can tell (to wait until the
    /// flows oemputx started are ready).
    fn consumers(&self, _queue: &str) -> Result<Option<u32>, TransportError> {
        Ok(None)
    }
    /// Delete a queue oemputx declared for a run of its own (the A/B gate's); nothing to do
    /// where queues need no deleting.
    fn delete_queue(&self, _queue: &str) -> Result<(), TransportError> {
        Ok(())
    }
}

/// Where a run connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// The in-process queue manager with its built-in responder.
    Embedded,
    /// An AMQP 0-9-1 broker (RabbitMQ).
    Amqp(AmqpEndpoint),
    /// An IBM MQ queue manager, through the MQI.
    IbmMq(IbmMqEndpoint),
    /// A NATS server (core request/reply, JetStream).
    Nats(NatsEndpoint),
    /// An AMQP 1.0 container (ActiveMQ, Artemis, Qpid, Service Bus, RabbitMQ's plugin).
    Amqp10(Amqp10Endpoint),
}

impl Endpoint {
    /// What this endpoint's transport does: the one place that names every variant.
    pub fn kind(&self) -> &dyn EndpointKind {
        match self {
            Endpoint::Embedded => &embedded::EmbeddedEndpoint,
            Endpoint::Amqp(a) => a,
            Endpoint::IbmMq(m) => m,
            Endpoint::Nats(n) => n,
            Endpoint::Amqp10(a) => a,
        }
    }

    /// The transport's name in reports.
    pub fn transport(&self) -> &'static str {
        self.kind().transport()
    }

    /// A description safe to print: passwords are replaced by `***`.
    pub fn redacted(&self) -> String {
        self.kind().redacted()
    }
}

/// Parse `embedded:` or `amqp://user:pass@host:port/vhost` (RabbitMQ's URI spec: default
/// guest/guest, port 5672, vhost "/" when the path is absent, percent-decoded otherwise).
pub fn parse_url(raw: &str) -> Result<Endpoint, EndpointError> {
    if raw == "embedded:" || raw == "embedded" || raw.starts_with("embedded:") {
        return Ok(Endpoint::Embedded);
    }
    if raw.starts_with("ibmmq://") {
        return ibmmq::url::parse(raw);
    }
    let url = url::Url::parse(raw).map_err(|e| EndpointError::BadUrl {
        url: redact_raw(raw),
        why: format!("{e}; expected amqp://user:password@host:5672/vhost or embedded:"),
    })?;
    match url.scheme() {
        "amqp" | "amqps" => amqp::url::parse(raw, &url),
        "nats" | "tls" => nats::url::parse(raw, &url),
        "amqp10" | "amqps10" => amqp10::url::parse(raw, &url),
        "amqp1" | "amqps1" => Err(EndpointError::BadUrl {
            url: redact_raw(raw),
            why: "AMQP 1.0 URLs are written amqp10:// (amqps10:// with TLS)".into(),
        }),
        "mqtt" | "mqtts" => Err(EndpointError::NotYet {
            url: redact_raw(raw),
            scheme: url.scheme().into(),
        }),
        other => Err(EndpointError::BadUrl {
            url: redact_raw(raw),
            why: format!(
                "unknown scheme {other}:; use embedded:, amqp://, ibmmq://, nats:// or amqp10://"
            ),
        }),
    }
}
/// Best-effort redaction of a URL that may not parse: `scheme://user:***@rest`.
pub fn redact_raw(raw: &str) -> String {
    if let Some((scheme, rest)) = raw.split_once("://")
        && let Some((userinfo, host)) = rest.rsplit_once('@')
    {
        let user = userinfo.split(':').next().unwrap_or("");
        return format!("{scheme}://{user}:***@{host}");
    }
    raw.to_string()
}

/// Free text with the password of every URL in it (`scheme://user:password@host`) replaced
/// by `***`: for text oemputx did not write itself (library errors, parser messages,
/// command lines) before it is printed or recorded.
pub fn redact_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        // The authority ends at the first of these; a password is what lies between the
        // first ':' and the last '@' before it.
        let end = tail
            .find(|c: char| c.is_whitespace() || "/?#\"'`<>".contains(c))
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rsplit_once('@') {
            Some((userinfo, host)) if userinfo.contains(':') => {
                let user = userinfo.split(':').next().unwrap_or("");
                out.push_str(&format!("{user}:***@{host}"));
            }
            _ => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_free_text_are_hidden() {
        assert_eq!(
            redact_text(
                "sample-flow --db postgres://postgres:SeCrEt99@127.0.0.1:5432/test --url amqp://u:p%40w@h/%2f"
            ),
            "sample-flow --db postgres://postgres:***@127.0.0.1:5432/test --url amqp://u:***@h/%2f"
        );
        assert_eq!(
            redact_text("url = \"amqp://guest:SeCrEt99@host"),
            "url = \"amqp://guest:***@host"
        );
        // No password, no change; a user alone is kept.
        for t in [
            "amqp://host:5672/%2f",
            "amqp://user@host",
            "no url at all",
            "x://",
        ] {
            assert_eq!(redact_text(t), t);
        }
    }

    #[test]
    fn amqp_url_defaults_follow_rabbitmq_uri_spec() {
        let Endpoint::Amqp(a) = parse_url("amqp://localhost").unwrap() else {
            panic!("not amqp")
        };
        assert_eq!(
            (
                a.user.as_str(),
                a.password.as_str(),
                a.port,
                a.vhost.as_str()
            ),
            ("guest", "guest", 5672, "/")
        );
        let Endpoint::Amqp(a) = parse_url("amqp://u:p%40ss@h:5673/%2f").unwrap() else {
            panic!("not amqp")
        };
        assert_eq!(
            (a.password.as_str(), a.port, a.vhost.as_str()),
            ("p@ss", 5673, "/")
        );
        let Endpoint::Amqp(a) = parse_url("amqp://u:p@h/prod").unwrap() else {
            panic!("not amqp")
        };
        assert_eq!(a.vhost, "prod");
    }

    #[test]
    fn redaction_hides_the_password() {
        let e = parse_url("amqp://guest:secret@127.0.0.1:5672/%2f").unwrap();
        assert_eq!(e.redacted(), "amqp://guest:***@127.0.0.1:5672/%2F");
        assert!(!format!("{e:?}").contains("secret"));
        assert_eq!(redact_raw("amqp://bob:pw@h:x"), "amqp://bob:***@h:x");
    }

    #[test]
    fn ibmmq_urls_give_channel_user_and_tls_and_hide_the_password() {
        let Ok(Endpoint::IbmMq(m)) = parse_url(
            "ibmmq://app@QM1?conn=mq.example(1414)&channel=DEV.APP.SVRCONN&cipher=TLS_AES_128_GCM_SHA256&keyrepo=/var/mqm/key",
        ) else {
            panic!("not ibmmq")
        };
        assert_eq!(m.qmgr, "QM1");
        assert_eq!(
            m.channel,
            Some(("DEV.APP.SVRCONN".into(), "mq.example(1414)".into()))
        );
        assert_eq!(m.user.as_deref(), Some("app"));
        assert_eq!(
            m.tls,
            Some(("TLS_AES_128_GCM_SHA256".into(), "/var/mqm/key".into()))
        );
        assert_eq!(
            m.redacted(),
            "ibmmq://app@QM1?conn=mq.example(1414)&channel=DEV.APP.SVRCONN&cipher=TLS_AES_128_GCM_SHA256&keyrepo=/var/mqm/key"
        );
        let Ok(Endpoint::IbmMq(m)) = parse_url("ibmmq://app:pa55@QM1") else {
            panic!("not ibmmq")
        };
        assert_eq!(m.password.as_deref(), Some("pa55"));
        assert!(m.redacted().starts_with("ibmmq://app:***@QM1"));
        assert!(!format!("{m:?}").contains("pa55"));
        // The default queue manager: no name.
        let Ok(Endpoint::IbmMq(m)) = parse_url("ibmmq://") else {
            panic!("not ibmmq")
        };
        assert_eq!(m.qmgr, "");
    }

    #[test]
    fn unsupported_schemes_say_not_yet() {
        assert!(matches!(
            parse_url("mqtt://127.0.0.1:1883"),
            Err(EndpointError::NotYet { .. })
        ));
        assert!(
            parse_url("amqp1://127.0.0.1:5672").is_err_and(|e| e.to_string().contains("amqp10://"))
        );
        let Endpoint::Amqp(a) =
            parse_url("amqps://u:p@broker/%2f?server_name_indication=mq.example").unwrap()
        else {
            panic!("not amqp")
        };
        assert_eq!(
            (a.port, a.tls.map(|t| t.server_name)),
            (5671, Some("mq.example".to_string()))
        );
        assert!(matches!(
            parse_url("amqps://h/?cacertfile=/no/such.pem"),
            Err(EndpointError::BadUrl { .. })
        ));
        assert!(matches!(
            parse_url("http://x"),
            Err(EndpointError::BadUrl { .. })
        ));
        let err = parse_url("amqp://u:hunter2@:5672").unwrap_err().to_string();
        assert!(!err.contains("hunter2"), "{err}");
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
            tls.as_str(),
        ] {
            let Ok(Endpoint::Amqp(ep)) = parse_url(raw) else {
                panic!("{raw} parses")
            };
            let again = parse_url(&ep.url_with_password()).expect("parses again");
            assert_eq!(again, Endpoint::Amqp(ep), "{raw}");
        }
    }
}
