//! Every JSON output checked against its committed schema (schemas/TAG-VERSION.schema.json),
//! found by the output's own `schema` tag.

use std::path::PathBuf;

/// The repository's schemas folder.
pub fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

/// The schema file of a tag: `oemputx.pubsub/1` → schemas/oemputx.pubsub-1.schema.json.
pub fn schema_file(tag: &str) -> PathBuf {
    schemas_dir().join(format!("{}.schema.json", tag.replace('/', "-")))
}

/// Panic, listing every violation, unless `json` matches the schema its `schema` tag names,
/// and so does every tagged output inside it (the reports of `pubsub --rounds`, say).
pub fn assert_matches_schema(json: &serde_json::Value) {
    check_one(json);
    let mut inner = Vec::new();
    nested(json, &mut inner, true);
    for j in inner {
        check_one(j);
    }
}

/// The tagged objects inside `json` (not `json` itself when `top`).
fn nested<'a>(json: &'a serde_json::Value, out: &mut Vec<&'a serde_json::Value>, top: bool) {
    match json {
        serde_json::Value::Object(m) => {
            if !top
                && m.get("schema")
                    .and_then(|s| s.as_str())
                    .is_some_and(|s| s.starts_with("oemputx."))
            {
                out.push(json);
            }
            for v in m.values() {
                nested(v, out, false);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| nested(v, out, false)),
        _ => {}
    }
}

fn check_one(json: &serde_json::Value) {
    let tag = json["schema"]
        .as_str()
        .unwrap_or_else(|| panic!("the output has no schema tag: {json}"));
    let file = schema_file(tag);
    let text = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("no schema file for {tag} ({}): {e}", file.display()));
    let schema: serde_json::Value = serde_json::from_str(&text).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "the {tag} output does not match {}:\n{}",
        file.display(),
        errors.join("\n")
    );
}
