//! What an MQTT 5 broker's SUBACK and PUBACK refuse, as errors that say so at once.
//!
//! rumqttc's event loop hands a SUBACK or PUBACK with a failure reason code on as an
//! ordinary event (it only logs a warning), so a subscription or a publish the broker
//! refused looked like success: the replies never came, and a run ended after five
//! timeouts saying the flow was most likely gone (issue 48, item 17). Reason codes are
//! MQTT 5's (OASIS MQTT 5.0, 3.9.3 and 3.4.2.1): 0x80 and above are failures.

use super::super::TransportError;
use rumqttc::v5::mqttbytes::v5::{PubAck, PubAckReason, SubAck, SubscribeReasonCode};

/// A refusal's words, its code and what to do about it.
struct Refusal {
    words: &'static str,
    code: u8,
    fix: &'static str,
}

const SEE_LOG: &str = "see the broker's log for why";
const ACL: &str = "check the broker's ACL for this user";

fn of_subscribe(code: &SubscribeReasonCode) -> Option<Refusal> {
    use SubscribeReasonCode as C;
    let (words, code, fix) = match code {
        C::Success(_) => return None,
        C::Failure | C::Unspecified => ("unspecified error", 0x80, SEE_LOG),
        C::ImplementationSpecific => ("implementation specific error", 0x83, SEE_LOG),
        C::NotAuthorized => ("not authorised", 0x87, ACL),
        C::TopicFilterInvalid => (
            "the topic filter is invalid",
            0x8f,
            "give a topic the broker takes",
        ),
        C::PkidInUse => ("packet identifier in use", 0x91, SEE_LOG),
        C::QuotaExceeded => ("quota exceeded", 0x97, SEE_LOG),
        C::SharedSubscriptionsNotSupported => (
            "shared subscriptions are not supported",
            0x9e,
            "enable them on the broker",
        ),
        C::SubscriptionIdNotSupported => {
            ("subscription identifiers are not supported", 0xa1, SEE_LOG)
        }
        C::WildcardSubscriptionsNotSupported => (
            "wildcard subscriptions are not supported",
            0xa2,
            "enable them on the broker",
        ),
    };
    Some(Refusal { words, code, fix })
}

fn of_publish(reason: &PubAckReason) -> Option<Refusal> {
    use PubAckReason as R;
    let (words, code, fix) = match reason {
        // No subscriber matched: delivered to no one, but accepted (0x10 is no failure).
        R::Success | R::NoMatchingSubscribers => return None,
        R::UnspecifiedError => ("unspecified error", 0x80, SEE_LOG),
        R::ImplementationSpecificError => ("implementation specific error", 0x83, SEE_LOG),
        R::NotAuthorized => ("not authorised", 0x87, ACL),
        R::TopicNameInvalid => (
            "the topic name is invalid",
            0x90,
            "give a topic the broker takes",
        ),
        R::PacketIdentifierInUse => ("packet identifier in use", 0x91, SEE_LOG),
        R::QuotaExceeded => ("quota exceeded", 0x97, SEE_LOG),
        R::PayloadFormatInvalid => ("the payload format is invalid", 0x99, SEE_LOG),
    };
    Some(Refusal { words, code, fix })
}

/// The first topic of `topics` whose subscription `ack` refused, as an error: "the broker
/// refused the subscription to 'T': not authorised (reason code 0x87); check …".
pub(crate) fn check_suback(
    target: &str,
    topics: &[&str],
    ack: &SubAck,
) -> Result<(), TransportError> {
    for (i, code) in ack.return_codes.iter().enumerate() {
        if let Some(r) = of_subscribe(code) {
            let topic = topics.get(i).copied().unwrap_or("(a topic)");
            return Err(TransportError::broker(
                target,
                "subscribing",
                format!(
                    "the broker refused the subscription to '{topic}': {} (reason code {:#04x}); {}",
                    r.words, r.code, r.fix
                ),
            ));
        }
    }
    Ok(())
}

/// A PUBACK that refused a publish to `topic`, as an error.
pub(crate) fn check_puback(target: &str, topic: &str, ack: &PubAck) -> Result<(), TransportError> {
    match of_publish(&ack.reason) {
        None => Ok(()),
        Some(r) => Err(TransportError::broker(
            target,
            "publishing",
            format!(
                "the broker refused the publish to '{topic}': {} (reason code {:#04x}); {}",
                r.words, r.code, r.fix
            ),
        )),
    }
}
