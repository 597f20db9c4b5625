//! Subject and topic names as NATS takes them: dotted tokens, no white space, no
//! wildcard. Outside `nats/` because `oemputx pubsub` holds every broker's topic to the same
//! rule (its subjects, routing keys and topics are `TOPIC.SNN`), in a build without NATS too.

/// Why `subject` cannot be a request subject, if it cannot: NATS subjects are tokens of
/// printable characters without spaces, separated by dots; `*` and `>` are wildcards, which
/// a publish may not use.
pub(crate) fn subject_problem(subject: &str) -> Option<String> {
    if subject.is_empty() {
        return Some("a subject cannot be empty".into());
    }
    if subject.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!(
            "'{subject}' has white space: NATS subjects have none"
        ));
    }
    if subject.split('.').any(|t| t == "*" || t == ">") {
        return Some(format!(
            "'{subject}' has a wildcard (* or >): requests are published to one subject"
        ));
    }
    if subject.split('.').any(str::is_empty) {
        return Some(format!(
            "'{subject}' has an empty token: dots separate non-empty tokens (a.b.c)"
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_with_spaces_wildcards_or_empty_tokens_are_refused() {
        assert_eq!(subject_problem("MQSI.IN"), None);
        assert_eq!(subject_problem("orders.v1.new-order"), None);
        for bad in ["", "a b", "a.*", ">", "a..b", ".a", "a."] {
            assert!(subject_problem(bad).is_some(), "{bad}");
        }
    }
}
