//! Profiles: `[profile.NAME]` tables of oemputx.toml, so that `--qmgr RABBIT` names a URL,
//! its queues, label and process groups once.
//!
//! The profiles shipped with oemputx (the checkout's oemputx.toml) are built into the
//! binary, so that `--qmgr RABBIT` works from any directory after `cargo install`; a
//! profile of the same name in a file overrides the built-in one (./oemputx.toml first,
//! then ~/.config/oemputx/oemputx.toml, or the one file `--config` names).

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

/// The profiles shipped with oemputx, as `oemputx init` writes them.
pub const BUILT_IN: &str = include_str!("../../oemputx.toml");

/// Where a profile came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    BuiltIn,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::File(p) => write!(f, "{}", p.display()),
            Source::BuiltIn => f.write_str("built in"),
        }
    }
}

/// A profile known by name, where it comes from, and the sources whose profile of that name
/// it overrides.
#[derive(Debug, Clone)]
pub struct Known {
    pub name: String,
    pub profile: Profile,
    pub source: Source,
    pub overrides: Vec<Source>,
}

/// The built-in profiles.
pub fn built_in() -> Result<BTreeMap<String, Profile>, ConfigError> {
    parse_profiles(BUILT_IN, Path::new("(built in)"))
}

/// Every profile of `paths` and the built-in ones, the first source of a name winning, in
/// the order found (each file's profiles by name, then the built-in ones not overridden).
pub(crate) fn known_profiles(paths: &[PathBuf], explicit: bool) -> Result<Vec<Known>, ConfigError> {
    let mut sources: Vec<(Source, BTreeMap<String, Profile>)> = Vec::new();
    for path in paths {
        if explicit && !path.exists() {
            return Err(ConfigError::BadProfileFile {
                path: path.clone(),
                why: "no such file (from --config)".into(),
            });
        }
        sources.push((Source::File(path.clone()), read_profiles(path)?));
    }
    sources.push((Source::BuiltIn, built_in()?));
    // Each name's place in `known`, so that 40,000 profiles take one lookup each rather
    // than a scan of all before them (22.6 s, issue 48).
    let mut known: Vec<Known> = Vec::new();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (source, profiles) in sources {
        for (name, profile) in profiles {
            match at.get(&name) {
                Some(&i) => known[i].overrides.push(source.clone()),
                None => {
                    at.insert(name.clone(), known.len());
                    known.push(Known {
                        name,
                        profile,
                        source: source.clone(),
                        overrides: Vec::new(),
                    });
                }
            }
        }
    }
    Ok(known)
}

/// The profile files looked at, in order: an explicit --config, else ./oemputx.toml and
/// $XDG_CONFIG_HOME/oemputx/oemputx.toml (~/.config when XDG_CONFIG_HOME is unset).
pub fn profile_paths(explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(p) = explicit {
        return vec![p.to_path_buf()];
    }
    let mut paths = vec![PathBuf::from("oemputx.toml")];
    let dir = config_home(
        std::env::var_os("XDG_CONFIG_HOME"),
        std::env::var_os("HOME"),
    );
    if let Some(dir) = dir {
        paths.push(dir.join("oemputx").join("oemputx.toml"));
    }
    paths
}

/// The user's config folder, as the XDG Base Directory spec has it: $XDG_CONFIG_HOME when it
/// is set to an absolute path, else $HOME/.config when HOME is. An empty or relative value
/// counts as unset: it would otherwise read profiles from a folder under wherever the
/// command happens to run.
fn config_home(
    xdg: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    let absolute = |v: Option<std::ffi::OsString>| v.map(PathBuf::from).filter(|p| p.is_absolute());
    absolute(xdg).or_else(|| absolute(home).map(|h| h.join(".config")))
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
    parse_profiles(&text, path)
}

fn parse_profiles(text: &str, path: &Path) -> Result<BTreeMap<String, Profile>, ConfigError> {
    let file: ProfileFile = toml::from_str(text).map_err(|e| ConfigError::BadProfileFile {
        path: path.into(),
        why: format!(
            "{}; `oemputx init --path FILE` writes the shipped profiles there to start from",
            toml_error(text, &e)
        ),
    })?;
    Ok(file.profile)
}

/// A TOML error as "line L, column C: what", without the offending line: a profile file
/// holds URLs with passwords, and the parser's own message quotes the line it stopped on.
pub(crate) fn toml_error(text: &str, e: &toml::de::Error) -> String {
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

/// Find a profile by name in the profile files, first file first, then the built-in ones.
pub(super) fn find_profile(
    name: &str,
    paths: &[PathBuf],
    explicit: bool,
) -> Result<Profile, ConfigError> {
    let known = known_profiles(paths, explicit)?;
    if let Some(k) = known.iter().find(|k| k.name == name) {
        return Ok(k.profile.clone());
    }
    let mut searched: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    searched.push("the built-in profiles".into());
    Err(ConfigError::UnknownProfile {
        name: name.into(),
        searched: searched.join(", "),
        known: if known.is_empty() {
            "none".into()
        } else {
            known
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        },
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn an_empty_or_relative_config_home_counts_as_unset() {
        let os = |s: &str| Some(std::ffi::OsString::from(s));
        assert_eq!(
            config_home(os("/x/cfg"), os("/home/u")),
            Some(PathBuf::from("/x/cfg"))
        );
        assert_eq!(
            config_home(os(""), os("/home/u")),
            Some(PathBuf::from("/home/u/.config"))
        );
        assert_eq!(
            config_home(os("rel/cfg"), os("/home/u")),
            Some(PathBuf::from("/home/u/.config"))
        );
        assert_eq!(config_home(None, os("")), None);
        assert_eq!(config_home(os(""), None), None);
    }

    use super::*;

    #[test]
    fn the_shipped_profiles_are_built_in_and_a_file_overrides_them() {
        let b = built_in().expect("the built-in profiles parse");
        for name in ["RABBIT", "NATS", "AMQP10", "EMBEDDED"] {
            assert!(b.contains_key(name), "{name}");
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("oemputx.toml");
        std::fs::write(
            &file,
            "[profile.RABBIT]\nurl = \"embedded:\"\n[profile.MINE]\nurl = \"embedded:\"\n",
        )
        .expect("write");
        let known =
            known_profiles(&[file.clone(), dir.path().join("missing.toml")], false).expect("known");
        let rabbit = known.iter().find(|k| k.name == "RABBIT").expect("RABBIT");
        assert_eq!(rabbit.profile.url, "embedded:");
        assert_eq!(rabbit.source, Source::File(file.clone()));
        assert_eq!(rabbit.overrides, [Source::BuiltIn]);
        let nats = known.iter().find(|k| k.name == "NATS").expect("NATS");
        assert_eq!(nats.source, Source::BuiltIn);
        // The file's first, by name; then the built-in ones it does not override.
        assert_eq!(known[0].name, "MINE");
        assert_eq!(known[1].name, "RABBIT");
        let p = find_profile("NATS", &[file], false).expect("built in");
        assert!(p.url.starts_with("nats://"));
        let e = find_profile("NOPE", &[], false)
            .expect_err("unknown")
            .to_string();
        assert!(
            e.contains("the built-in profiles") && e.contains("RABBIT"),
            "{e}"
        );
    }
}
