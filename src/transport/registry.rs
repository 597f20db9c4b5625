//! Which transport a URL names: the one table of transports. Adding a transport is its
//! folder under `src/transport/` (a `url.rs` that exports `REGISTERED`, a `mod.rs` with the
//! transport) and one line in [`TRANSPORTS`].

use super::endpoint::{Endpoint, EndpointError, Registered};
use super::{amqp, amqp10, embedded, ibmmq, mqtt, nats, stomp};

/// Every transport, in the order errors and help list them.
const TRANSPORTS: &[Registered] = &[
    embedded::REGISTERED,
    amqp::url::REGISTERED,
    ibmmq::url::REGISTERED,
    nats::url::REGISTERED,
    amqp10::url::REGISTERED,
    stomp::url::REGISTERED,
    mqtt::url::REGISTERED,
];

/// Schemes that name a protocol oemputx knows of but cannot drive put/get over yet.
const NOT_YET: &[&str] = &["mqtts"];

/// Schemes written wrong in a way worth a hint of its own.
const MISSPELT: &[(&str, &str)] = &[("amqp1", "amqp10"), ("amqps1", "amqps10")];

/// Every scheme a run takes, e.g. for help texts and the typo check.
pub fn schemes() -> impl Iterator<Item = &'static str> {
    TRANSPORTS.iter().flat_map(|t| t.schemes.iter().copied())
}

/// The transports' examples, for "use …" in errors: `embedded:, amqp://…, …`.
pub fn known() -> String {
    TRANSPORTS
        .iter()
        .map(|t| t.example)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The endpoint of a run that names none: the embedded queue manager.
pub fn embedded() -> Endpoint {
    embedded::endpoint()
}

/// Parse a URL (`scheme://…`, or `embedded:`) into its transport's endpoint.
pub fn parse_url(raw: &str) -> Result<Endpoint, EndpointError> {
    if raw.eq_ignore_ascii_case("embedded") {
        return Ok(embedded());
    }
    let scheme = match raw.split_once(':') {
        Some((s, _))
            if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            s.to_ascii_lowercase()
        }
        _ => {
            return Err(EndpointError::bad(
                raw,
                format!("not a URL; use {}", known()),
            ));
        }
    };
    if let Some(t) = TRANSPORTS
        .iter()
        .find(|t| t.schemes.contains(&scheme.as_str()))
    {
        return (t.parse)(raw);
    }
    if let Some((_, right)) = MISSPELT.iter().find(|(wrong, _)| *wrong == scheme) {
        return Err(EndpointError::bad(
            raw,
            format!("{scheme}:// is written {right}://"),
        ));
    }
    if NOT_YET.contains(&scheme.as_str()) {
        return Err(EndpointError::NotYet {
            url: crate::secret::redact_url(raw),
            scheme,
            known: known(),
        });
    }
    Err(EndpointError::bad(
        raw,
        format!("unknown scheme {scheme}:; use {}", known()),
    ))
}

/// A name that is no profile, as a transport that takes bare names takes it (an IBM MQ
/// queue manager, as OEMPUTX did); `None` when none can.
pub fn bare_name(name: &str, note: String) -> Option<Endpoint> {
    TRANSPORTS
        .iter()
        .find_map(|t| t.bare_name.and_then(|f| f(name, note.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scheme_reaches_its_transport() {
        for (raw, transport) in [
            ("embedded:", "embedded"),
            ("amqp://localhost", "amqp"),
            ("AMQP://localhost", "amqp"),
            ("amqps://localhost", "amqp"),
            ("ibmmq://QM1", "ibmmq"),
            ("nats://localhost", "nats"),
            ("tls://localhost", "nats"),
            ("amqp10://localhost", "amqp10"),
            ("stomp://localhost", "stomp"),
            ("stomp+ssl://localhost", "stomp"),
            ("mqtt://localhost", "mqtt"),
        ] {
            let e = parse_url(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(e.transport(), transport, "{raw}");
        }
        assert!(schemes().any(|s| s == "amqps10"));
        assert!(known().contains("nats://"));
    }

    #[test]
    fn unsupported_schemes_say_not_yet_or_name_the_right_one() {
        assert!(matches!(
            parse_url("mqtts://127.0.0.1:8883"),
            Err(EndpointError::NotYet { .. })
        ));
        assert!(
            parse_url("amqp1://127.0.0.1:5672").is_err_and(|e| e.to_string().contains("amqp10://"))
        );
        assert!(matches!(
            parse_url("http://x"),
            Err(EndpointError::BadUrl { .. })
        ));
        let err = parse_url("gopher://u:hunter2@h")
            .expect_err("unknown")
            .to_string();
        assert!(!err.contains("hunter2") && err.contains("amqp://"), "{err}");
        assert!(parse_url("no scheme at all").is_err());
    }

    #[test]
    fn a_bare_name_is_taken_as_an_ibm_mq_queue_manager_when_it_can_be_one() {
        let e = bare_name("QM1", "no profile QM1".into()).expect("an MQ name");
        assert_eq!(e.transport(), "ibmmq");
        assert!(bare_name("not a name!", String::new()).is_none());
    }
}
