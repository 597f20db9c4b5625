//! `oemputx profiles` (which names `--qmgr` takes, and from where) and `oemputx init` (the
//! shipped profiles written to the user's config folder, to edit): a new user's first
//! questions after `cargo install`, answered without reading the source.

use crate::config::profile::{BUILT_IN, Source, known_profiles, profile_paths};
use crate::config::{ConfigError, DEFAULT_REQUEST_QUEUE, bad};
use crate::exit::Exit;
use std::path::{Path, PathBuf};

/// `oemputx profiles`: every profile, its URL (password masked), request queue, where it
/// comes from and what it overrides.
pub fn profiles(config: Option<&Path>) -> anyhow::Result<Exit> {
    let paths = profile_paths(config);
    let known = known_profiles(&paths, config.is_some())?;
    let mut rows = vec![
        ["profile", "url", "request queue", "from"]
            .map(String::from)
            .to_vec(),
    ];
    for k in &known {
        let from = match k.overrides.as_slice() {
            [] => k.source.to_string(),
            o => format!(
                "{} (overrides {})",
                k.source,
                o.iter()
                    .map(Source::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        // A profile file is anyone's text: no control character reaches the terminal.
        let shown = |t: &str| crate::export::for_terminal(t);
        rows.push(vec![
            shown(&k.name),
            shown(&crate::secret::scrub(&k.profile.url)),
            shown(&k.profile.request_queue.clone().unwrap_or_else(|| {
                crate::transport::parse_url(&k.profile.url)
                    .map_or(DEFAULT_REQUEST_QUEUE, |e| e.kind().default_request_queue())
                    .into()
            })),
            shown(&from),
        ]);
    }
    let searched: Vec<String> = paths
        .iter()
        .map(|p| {
            let state = if p.exists() { "" } else { " (none there)" };
            format!("{}{state}", p.display())
        })
        .collect();
    crate::outln!(
        "{}Profile files, first first: {}, then the built-in profiles. `oemputx --qmgr NAME` takes the first of a name; `oemputx init` writes the built-in ones to edit.",
        left_aligned(&rows),
        searched.join(", ")
    );
    Ok(Exit::Ok)
}

/// Text columns, left-aligned (names and URLs read from the left).
fn left_aligned(rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..rows.first().map_or(0, Vec::len))
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Where `init` writes without `--path`: the user's config folder (the second file the
/// profiles are looked up in).
fn default_init_path() -> Result<PathBuf, ConfigError> {
    profile_paths(None).into_iter().nth(1).ok_or_else(|| {
        bad(
            "--path",
            "neither XDG_CONFIG_HOME nor HOME is set to an absolute path: give --path FILE",
        )
    })
}

/// `oemputx init`: the shipped profiles written to `path` (default
/// ~/.config/oemputx/oemputx.toml), never over an existing file unless `force`.
pub fn init(path: Option<&Path>, force: bool) -> anyhow::Result<Exit> {
    let path = match path {
        Some(p) => p.to_path_buf(),
        None => default_init_path()?,
    };
    if path.is_dir() {
        return Err(bad(
            "--path",
            format!(
                "{} is a folder: give the file to write, e.g. {}/oemputx.toml",
                path.display(),
                path.display()
            ),
        )
        .into());
    }
    if path.exists() && !force {
        return Err(bad(
            "--path",
            format!(
                "{} exists and is kept: edit it, or pass --force to replace it with the shipped profiles",
                path.display()
            ),
        )
        .into());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            bad(
                "--path",
                format!("cannot make the folder {}: {e}", dir.display()),
            )
        })?;
    }
    crate::export::write_output(&path, "the profiles", BUILT_IN)?;
    crate::outln!(
        "Wrote the shipped profiles to {}. Edit a profile's url, request_queue and groups for your brokers, add your own as [profile.NAME], then run `oemputx --qmgr NAME`; `oemputx profiles` lists what is known and from where.",
        path.display()
    );
    Ok(Exit::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_left_aligned_to_the_widest_cell_without_trailing_blanks() {
        let rows = vec![
            vec!["NAME".to_string(), "URL".to_string()],
            vec!["rabbitmq".to_string(), "amqp://127.0.0.1".to_string()],
            vec!["µq".to_string(), String::new()],
        ];
        assert_eq!(
            left_aligned(&rows),
            "NAME      URL\nrabbitmq  amqp://127.0.0.1\nµq\n"
        );
        assert_eq!(left_aligned(&[]), "");
    }
}
