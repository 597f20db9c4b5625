//! Which transport a URL names: the one table of transports. Adding a transport is its
//! folder under `src/transport/` (a `url.rs` that exports `REGISTERED`, a `mod.rs` with the
//! transport), one line in [`TRANSPORTS`] and, since a build may leave it out, one in
//! [`GATED`] with its cargo feature.

#[cfg(feature = "rabbitmq")]
use super::amqp;
#[cfg(feature = "amqp10")]
use super::amqp10;
use super::embedded;
use super::endpoint::{Endpoint, EndpointError, Registered};
#[cfg(feature = "ibmmq")]
use super::ibmmq;
#[cfg(feature = "kafka")]
use super::kafka;
#[cfg(feature = "mqtt")]
use super::mqtt;
#[cfg(feature = "nats")]
use super::nats;
#[cfg(feature = "stomp")]
use super::stomp;

/// Every transport this build has, in the order errors and help list them.
const TRANSPORTS: &[Registered] = &[
    embedded::REGISTERED,
    #[cfg(feature = "rabbitmq")]
    amqp::url::REGISTERED,
    #[cfg(feature = "ibmmq")]
    ibmmq::url::REGISTERED,
    #[cfg(feature = "nats")]
    nats::url::REGISTERED,
    #[cfg(feature = "amqp10")]
    amqp10::url::REGISTERED,
    #[cfg(feature = "stomp")]
    stomp::url::REGISTERED,
    #[cfg(feature = "mqtt")]
    mqtt::url::REGISTERED,
    #[cfg(feature = "kafka")]
    kafka::url::REGISTERED,
];

/// A transport a build may leave out, as the registry knows it without its code: the cargo
/// feature that brings it and the schemes it registers (a test checks them against the
/// transport's own `REGISTERED`), so that in a build without it its URL is answered with
/// the feature, not taken for an unknown scheme.
#[derive(Debug, Clone, Copy)]
pub struct Gated {
    pub feature: &'static str,
    /// Whether this build has it (then [`TRANSPORTS`] holds it too).
    pub built: bool,
    pub schemes: &'static [&'static str],
    /// It takes bare names (IBM MQ's queue managers).
    pub bare_names: bool,
}

impl Gated {
    /// The refusal of `raw`, a URL of this transport's, in a build without it.
    pub fn refuse(&self, raw: &str) -> EndpointError {
        EndpointError::NotBuilt {
            what: format!("--qmgr {}", crate::secret::redact_url(raw)),
            feature: self.feature,
        }
    }
}

/// Every transport behind a cargo feature, built or not.
pub const GATED: &[Gated] = &[
    Gated {
        feature: "rabbitmq",
        built: cfg!(feature = "rabbitmq"),
        schemes: &["amqp", "amqps"],
        bare_names: false,
    },
    Gated {
        feature: "ibmmq",
        built: cfg!(feature = "ibmmq"),
        schemes: &["ibmmq"],
        bare_names: true,
    },
    Gated {
        feature: "nats",
        built: cfg!(feature = "nats"),
        schemes: &["nats", "tls"],
        bare_names: false,
    },
    Gated {
        feature: "amqp10",
        built: cfg!(feature = "amqp10"),
        schemes: &["amqp10", "amqps10"],
        bare_names: false,
    },
    Gated {
        feature: "stomp",
        built: cfg!(feature = "stomp"),
        schemes: &["stomp", "stomp+ssl"],
        bare_names: false,
    },
    Gated {
        feature: "mqtt",
        built: cfg!(feature = "mqtt"),
        schemes: &["mqtt"],
        bare_names: false,
    },
    Gated {
        feature: "kafka",
        built: cfg!(feature = "kafka"),
        schemes: &["kafka", "kafka+ssl"],
        bare_names: false,
    },
];

/// The transports this build left out.
fn left_out() -> impl Iterator<Item = &'static Gated> {
    GATED.iter().filter(|t| !t.built)
}

/// Schemes that name a protocol oemputx knows of but cannot drive put/get over yet.
const NOT_YET: &[&str] = &["mqtts"];

/// Schemes written wrong in a way worth a hint of its own.
const MISSPELT: &[(&str, &str)] = &[("amqp1", "amqp10"), ("amqps1", "amqps10")];

/// Every scheme the registry knows, e.g. for help texts and the typo check: a transport
/// this build left out too (its URL is then answered with the feature it needs).
pub fn schemes() -> impl Iterator<Item = &'static str> {
    let built = TRANSPORTS.iter().flat_map(|t| t.schemes.iter().copied());
    built.chain(left_out().flat_map(|t| t.schemes.iter().copied()))
}

/// The examples of the transports this build has, for "use …" in errors: `embedded:,
/// amqp://…, …`.
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

/// ActiveMQ's form of a node list, `failover:(stomp://h1:61613,stomp://h2:61613)`, as the
/// comma list every transport here takes; `None` for any other URL. Its options are
/// ActiveMQ's client's: only `randomize=false` is what oemputx does (the nodes in the order
/// given), and any other is refused rather than ignored.
fn failover_list(raw: &str) -> Result<Option<String>, EndpointError> {
    let Some(rest) = raw
        .get(..9)
        .filter(|s| s.eq_ignore_ascii_case("failover:"))
        .map(|_| &raw[9..])
    else {
        return Ok(None);
    };
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.rsplit_once(')'))
        .filter(|(list, options)| {
            !list.is_empty() && (options.is_empty() || *options == "?randomize=false")
        });
    match inner {
        Some((list, _)) => Ok(Some(list.to_string())),
        None => Err(EndpointError::bad(
            raw,
            "write failover:(stomp://h1:61613,stomp://h2:61613): the nodes in brackets, tried in the order given (no options but ?randomize=false)",
        )),
    }
}

/// Parse a URL (`scheme://…`, or `embedded:`) into its transport's endpoint.
pub fn parse_url(raw: &str) -> Result<Endpoint, EndpointError> {
    if raw.eq_ignore_ascii_case("embedded") {
        return Ok(embedded());
    }
    if let Some(list) = failover_list(raw)? {
        return parse_url(&list);
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
        if !t.node_lists && crate::url_parts::split_nodes(raw).len() > 1 {
            return Err(EndpointError::bad(
                raw,
                format!(
                    "a list of a cluster's nodes is not built yet for {scheme}:// (it is for nats://, amqp://, mqtt://, stomp://, kafka:// and IBM MQ's conn=): name one node, e.g. {}",
                    t.example
                ),
            ));
        }
        return (t.parse)(raw);
    }
    if let Some(t) = left_out().find(|t| t.schemes.contains(&scheme.as_str())) {
        return Err(t.refuse(raw));
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
/// queue manager, as OEMPUTX did); `None` when none can. `note` says why it was taken so;
/// in a build without that transport it heads the refusal.
pub(crate) fn bare_name(name: &str, note: String) -> Result<Option<Endpoint>, EndpointError> {
    if let Some(e) = TRANSPORTS
        .iter()
        .find_map(|t| t.bare_name.and_then(|f| f(name, note.clone())))
    {
        return Ok(Some(e));
    }
    match left_out().find(|t| t.bare_names) {
        Some(t) => Err(EndpointError::NotBuilt {
            what: format!("{note}, which"),
            feature: t.feature,
        }),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every transport built: the default features.
    #[cfg(all(
        feature = "rabbitmq",
        feature = "amqp10",
        feature = "nats",
        feature = "mqtt",
        feature = "stomp",
        feature = "ibmmq"
    ))]
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
            #[cfg(feature = "kafka")]
            ("kafka://localhost", "kafka"),
            #[cfg(feature = "kafka")]
            ("kafka+ssl://localhost", "kafka"),
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
        assert!(
            !err.contains("hunter2") && err.contains("embedded:"),
            "{err}"
        );
        assert!(parse_url("no scheme at all").is_err());
    }

    #[cfg(feature = "ibmmq")]
    #[test]
    fn a_bare_name_is_taken_as_an_ibm_mq_queue_manager_when_it_can_be_one() {
        let e = bare_name("QM1", "no profile QM1".into())
            .expect("built")
            .expect("an MQ name");
        assert_eq!(e.transport(), "ibmmq");
        assert!(bare_name("not a name!", String::new()).is_ok_and(|e| e.is_none()));
    }

    #[cfg(not(feature = "ibmmq"))]
    #[test]
    fn a_bare_name_without_ibm_mq_names_the_feature() {
        let err = bare_name("QM1", "--qmgr QM1 is no profile".into()).expect_err("left out");
        assert!(err.to_string().contains("'ibmmq' feature"), "{err}");
    }

    #[test]
    fn a_left_out_transport_s_url_names_its_feature_and_hides_its_password() {
        for t in GATED {
            for scheme in t.schemes {
                let raw = format!("{scheme}://user:hunter2@127.0.0.1:1");
                let err = t.refuse(&raw).to_string();
                assert!(
                    err.contains(&format!("built with the '{}' feature", t.feature))
                        && err
                            .ends_with(&format!("cargo install --path . --features {}", t.feature))
                        && err.contains(&format!("{scheme}://"))
                        && !err.contains("hunter2"),
                    "{err}"
                );
                // Whatever this build has, the URL reaches its transport or that refusal.
                match parse_url(&raw) {
                    Err(EndpointError::NotBuilt { feature, .. }) => {
                        assert!(!t.built && feature == t.feature, "{raw}")
                    }
                    _ => assert!(t.built, "{raw}"),
                }
            }
        }
    }

    #[test]
    fn the_gated_table_matches_the_transports_built() {
        for t in GATED.iter().filter(|t| t.built) {
            let r = TRANSPORTS
                .iter()
                .find(|r| r.schemes.contains(&t.schemes[0]))
                .unwrap_or_else(|| panic!("{} is built but not registered", t.feature));
            assert_eq!(r.schemes, t.schemes, "{}", t.feature);
            assert_eq!(r.bare_name.is_some(), t.bare_names, "{}", t.feature);
        }
        // Every registered scheme but the embedded one's is behind a feature.
        for r in &TRANSPORTS[1..] {
            assert!(
                GATED.iter().any(|t| t.built && t.schemes == r.schemes),
                "{:?} is in no feature",
                r.schemes
            );
        }
        let mut all: Vec<&str> = schemes().collect();
        all.sort_unstable();
        let before = all.len();
        all.dedup();
        assert_eq!(all.len(), before, "a scheme listed twice");
    }

    #[cfg(all(feature = "mqtt", feature = "stomp", feature = "amqp10"))]
    #[test]
    fn node_lists_are_taken_in_each_form_with_the_password_never_shown() {
        for (raw, shown) in [
            (
                "mqtt://u:hunter2@127.0.0.1:1883,127.0.0.1:1884",
                "mqtt://u:***@127.0.0.1:1883,127.0.0.1:1884",
            ),
            (
                "stomp://u:hunter2@h1:61613,stomp://h2",
                "stomp://u:***@h1:61613,h2:61613",
            ),
            (
                "failover:(stomp://u:hunter2@h1:61613,stomp://h2:61614)?randomize=false",
                "stomp://u:***@h1:61613,h2:61614",
            ),
            (
                "amqp10://u:hunter2@h1,h2:5673",
                "amqp10://u:***@h1:5672,h2:5673",
            ),
        ] {
            let ep = parse_url(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(ep.redacted(), shown);
        }
        for raw in [
            // A later node with another login, a path or a query of its own.
            "mqtt://u:hunter2@h1,mqtt://v:hunter2@h2",
            "stomp://u:hunter2@h1,stomp://h2/queue/x",
            "amqp10://u:hunter2@h1,amqp10://h2?address-style=plain",
            // ActiveMQ's failover options are not taken, nor an empty list.
            "failover:(stomp://u:hunter2@h1,stomp://h2)?randomize=true",
            "failover:()",
        ] {
            let err = parse_url(raw).map(|_| ()).expect_err(raw).to_string();
            assert!(!err.contains("hunter2"), "{err}");
        }
        assert!(parse_url("embedded:,embedded:").is_err());
    }
}
