//! What the broker says of itself, for the report's settings: its cluster id, the broker
//! answering and the API versions it serves. The client keeps both answers to itself, so an
//! ApiVersions and a Metadata request go on a connection of their own before the run,
//! through rskafka's protocol layer with the endpoint's TLS and SASL ([`super::acks1`]).

use super::url::KafkaEndpoint;
use rskafka::protocol::messages::{ApiVersionsRequest, MetadataRequest};
use rskafka::protocol::primitives::{CompactString, Int16, TaggedFields};
use std::time::Duration;

/// How long describing may take; a broker that does not answer in time is not described.
const BOUND: Duration = Duration::from_secs(2);

/// The names of the APIs a request/reply run uses, by API key.
const USED: [(i16, &str); 6] = [
    (0, "Produce"),
    (1, "Fetch"),
    (2, "ListOffsets"),
    (3, "Metadata"),
    (19, "CreateTopics"),
    (20, "DeleteTopics"),
];

/// The broker's description, or why there is none.
pub async fn describe(ep: &KafkaEndpoint) -> String {
    match crate::signals::within(BOUND, ask(ep)).await {
        Ok(Ok(d)) => d,
        Ok(Err(why)) => format!("not described: {}", crate::secret::scrub(&why)),
        Err(crate::signals::Stopped::Elapsed) => {
            format!("not described: no answer within {} s", BOUND.as_secs())
        }
        Err(crate::signals::Stopped::Interrupted) => "not described: interrupted".into(),
    }
}

async fn ask(ep: &KafkaEndpoint) -> Result<String, String> {
    let (host, port) = ep.brokers.first().ok_or("no broker")?;
    let m = super::acks1::messenger(ep, host, *port, "oemputx-describe").await?;
    let versions = m
        // Apache Kafka (2.4 and later) refuses an ApiVersions v3 whose client name or
        // version is empty or not of [a-zA-Z0-9.-]: both are given.
        .request(ApiVersionsRequest {
            client_software_name: Some(CompactString("oemputx".into())),
            client_software_version: Some(CompactString(env!("CARGO_PKG_VERSION").into())),
            tagged_fields: Some(TaggedFields::default()),
        })
        .await
        .map_err(|e| e.to_string())?;
    if let Some(e) = versions.error_code {
        return Err(format!("ApiVersions answered {e}"));
    }
    // No topics: the cluster alone (None would be every topic).
    let metadata = m
        .request(MetadataRequest {
            topics: Some(Vec::new()),
            allow_auto_topic_creation: None,
        })
        .await
        .map_err(|e| e.to_string())?;
    let apis: Vec<(i16, i16, i16)> = versions
        .api_keys
        .iter()
        .map(|k| {
            (
                Int16::from(k.api_key).0,
                k.min_version.0.0,
                k.max_version.0.0,
            )
        })
        .collect();
    let cluster = metadata.cluster_id.and_then(|c| c.0);
    let controller = metadata
        .controller_id
        .map_or("unknown".to_string(), |c| c.0.to_string());
    Ok(text(
        &apis,
        cluster.as_deref(),
        metadata.brokers.len(),
        &controller,
    ))
}

/// The description: the cluster, its brokers and controller, and the versions served of
/// the APIs a run uses.
fn text(
    apis: &[(i16, i16, i16)],
    cluster: Option<&str>,
    brokers: usize,
    controller: &str,
) -> String {
    let used: Vec<String> = USED
        .iter()
        .map(|(key, name)| match apis.iter().find(|a| a.0 == *key) {
            Some((_, min, max)) => format!("{name} {min}–{max}"),
            None => format!("{name} none"),
        })
        .collect();
    format!(
        "cluster {}, {} broker(s), controller {controller}; API versions: {} ({} APIs served)",
        crate::terminal::for_terminal(cluster.unwrap_or("(no id)")),
        brokers,
        used.join(", "),
        apis.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_names_the_used_apis_and_those_the_broker_lacks() {
        let d = text(&[(0, 3, 11), (1, 4, 16)], Some("tansu\x1b"), 1, "111");
        assert!(d.starts_with("cluster tansu"), "{d}");
        assert!(
            d.contains("Produce 3–11, Fetch 4–16, ListOffsets none"),
            "{d}"
        );
        assert!(d.ends_with("(2 APIs served)"), "{d}");
        assert!(!d.contains('\x1b'), "{d}");
    }
}
