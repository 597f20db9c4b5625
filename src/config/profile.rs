//! Profiles: `[profile.NAME]` tables of oemputx.toml, so that `--qmgr RABBIT` names a URL,
//! its queues, label and process groups once.

use super::ConfigError;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One `[profile.NAME]` table of oemputx.toml.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Transport URL (`embedded:`, `amqp://…`).
    pub url: String,
    pub request_queue: Option<String>,
    pub reply_queue: Option<String>,
    /// Label for saved reports; defaults to the profile name.
    pub label: Option<String>,
    /// Default process groups: NAME = [selectors].
    pub groups: Option<BTreeMap<String, Vec<String>>>,
    /// Hosts groups may be placed on (`QMGR@broker`): NAME = "pcp://HOST[:PORT]".
    pub hosts: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    #[serde(default)]
    profile: BTreeMap<String, Profile>,
}

/// The profile files looked at, in order: an explicit --config, else ./oemputx.toml and
/// $XDG_CONFIG_HOME/oemputx/oemputx.toml (~/.config when XDG_CONFIG_HOME is unset).
pub fn profile_paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(p) = explicit {
        return vec![p.to_path_buf()];
    }
    let mut paths = vec![PathBuf::from("oemputx.toml")];
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(dir) = xdg {
        paths.push(dir.join("oemputx").join("oemputx.toml"));
    }
    paths
}

/// Read the profiles of one file; a missing file has none.
pub fn read_profiles(path: &Path) -> Result<BTreeMap<String, Profile>, ConfigError> {
    let text = match crate::files::read_text(path, crate::files::MAX_CONFIG_BYTES, "profile file") {
        Ok(t) => t,
        Err(e) if e.is_missing() => return Ok(BTreeMap::new()),
        Err(e) => {
            return Err(ConfigError::BadProfileFile {
                path: path.into(),
                why: e.to_string(),
            });
        }
    };
    let file: ProfileFile = toml::from_str(&text).map_err(|e| ConfigError::BadProfileFile {
        path: path.into(),
        why: format!(
            "{}; see the oemputx.toml shipped with oemputx for the format",
            toml_error(&text, &e)
        ),
    })?;
    Ok(file.profile)
}

/// A TOML error as "line L, column C: what", without the offending line: a profile file
/// holds URLs with passwords, and the parser's own message quotes the line it stopped on.
pub fn toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = crate::secret::scrub(e.message().trim());
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: {message}")
        }
        None => message,
    }
}

/// Find a profile by name in the profile files, first file first.
pub(super) fn find_profile(
    name: &str,
    paths: &[PathBuf],
    explicit: bool,
) -> Result<Profile, ConfigError> {
    let mut known = Vec::new();
    for path in paths {
        if explicit && !path.exists() {
            return Err(ConfigError::BadProfileFile {
                path: path.clone(),
                why: "no such file (from --config)".into(),
            });
        }
        let mut profiles = read_profiles(path)?;
        if let Some(p) = profiles.remove(name) {
            return Ok(p);
        }
        known.extend(profiles.into_keys());
    }
    Err(ConfigError::UnknownProfile {
        name: name.into(),
        searched: paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        known: if known.is_empty() {
            "none".into()
        } else {
            known.join(", ")
        },
    })
}
