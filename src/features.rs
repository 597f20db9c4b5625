//! The cargo features a build may leave out (every transport but the embedded one, PCP
//! hosts, the HTML reports; Cargo.toml's `[features]`, all on by default) and the one
//! sentence every refusal of a left-out one ends with, so that a URL, a `--host` and an
//! `--export-html` all name the feature and the command that brings it.

/// What a refusal says after naming what was asked: `needs oemputx built with the 'nats'
/// feature: cargo install --path . --features nats`.
pub fn needs(feature: &str) -> String {
    format!(
        "needs oemputx built with the '{feature}' feature: cargo install --path . --features {feature}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sentence_names_the_feature_and_the_command() {
        let s = needs("nats");
        assert!(s.contains("'nats' feature"), "{s}");
        assert!(s.ends_with("cargo install --path . --features nats"), "{s}");
    }
}
