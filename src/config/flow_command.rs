//! A flow's command as the user gives it (`--flow-cmd`, `--flow-a`): split as a shell would,
//! without a shell, and checked before anything runs — a password on it would sit on a
//! child's command line, which every local user can read (/proc/PID/cmdline, `ps`). A
//! PostgreSQL URL's password moves to `PGPASSWORD` (libpq's convention, which sample-flow
//! follows too); any other URL with a password is refused with what to do. RabbitMQ's
//! default `guest:guest` is no secret (public, and the broker lets it in over loopback
//! only), so it stays in the URL. [`crate::flows`] starts the processes.

use super::ConfigError;
use std::path::PathBuf;

/// A flow's command: the program (found next to oemputx first, where cargo puts
/// sample-flow, then on PATH) and its arguments.
#[derive(Debug, Clone)]
pub struct FlowCommand {
    /// The option the command came from, for errors.
    pub flag: &'static str,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Environment variables the flow gets besides oemputx's own (sweep's mode, say).
    pub env: Vec<(String, String)>,
}

impl FlowCommand {
    /// Split `cmd` as a shell would (quotes, escapes), without running a shell.
    pub fn parse(flag: &'static str, cmd: &str) -> Result<FlowCommand, ConfigError> {
        let bad = |why: String| ConfigError::BadValue { flag, why };
        let words = shell_words::split(cmd).map_err(|e| bad(e.to_string()))?;
        let Some((program, args)) = words.split_first() else {
            return Err(bad("is empty; give the flow's command, e.g. \"sample-flow --db postgres://postgres@127.0.0.1/test\"".into()));
        };
        // Refused now, before any measurement, rather than when the flows start.
        without_secrets(args).map_err(bad)?;
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|d| d.join(program)))
            .filter(|p| !program.contains('/') && p.is_file());
        Ok(FlowCommand {
            flag,
            program: beside.unwrap_or_else(|| PathBuf::from(program)),
            args: args.to_vec(),
            env: Vec::new(),
        })
    }

    /// The same command run under a wrapper, e.g. `valgrind --tool=callgrind … CMD ARGS`.
    pub fn under(&self, wrapper: &str, wrapper_args: &[String]) -> FlowCommand {
        let mut args = wrapper_args.to_vec();
        args.push(self.program.display().to_string());
        args.extend(self.args.iter().cloned());
        FlowCommand {
            flag: self.flag,
            program: PathBuf::from(wrapper),
            args,
            env: self.env.clone(),
        }
    }

    /// The same command with `key=value` in its environment.
    pub(crate) fn with_env(&self, key: &str, value: &str) -> FlowCommand {
        let mut c = self.clone();
        c.env.push((key.to_string(), value.to_string()));
        c
    }

    /// Whether the command sets `flag` itself.
    pub fn sets(&self, flag: &str) -> bool {
        let with_value = format!("{flag}=");
        self.args
            .iter()
            .any(|a| a == flag || a.starts_with(&with_value))
    }
}

/// A flow command's arguments with the passwords taken out, and the environment that
/// carries them instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretFree {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// A URL's password, unless it is RabbitMQ's public default (`guest:guest`).
pub(crate) fn secret_of(url: &url::Url) -> Option<String> {
    let password = crate::url_parts::decode(url.password()?);
    crate::secret::remember(&password);
    (!(url.username() == "guest" && password == "guest")).then_some(password)
}

/// Take the passwords out of a flow command's arguments (see the module's notes): a
/// PostgreSQL password, in a URL's userinfo, a URL's `?password=` or a keyword connection
/// string's `password=`, moves to `PGPASSWORD`; any other password is refused.
pub(crate) fn without_secrets(args: &[String]) -> Result<SecretFree, String> {
    let mut out = SecretFree {
        args: Vec::with_capacity(args.len()),
        env: Vec::new(),
    };
    for arg in args {
        // `--db=VALUE` as well as `VALUE`.
        let (prefix, value) = match arg.split_once('=') {
            Some((flag, v)) if flag.starts_with("--") && (v.contains("://") || v.contains('=')) => {
                (format!("{flag}="), v)
            }
            _ => (String::new(), arg.as_str()),
        };
        let Some((freed, secret)) = take_password(value)? else {
            out.args.push(arg.clone());
            continue;
        };
        crate::secret::remember(&secret);
        if let Some((_, earlier)) = out.env.iter().find(|(k, _)| k == "PGPASSWORD")
            && *earlier != secret
        {
            return Err("the flow command has two PostgreSQL connection strings with different passwords; only one can travel in PGPASSWORD: give the flow the other through its own configuration".into());
        }
        out.args.push(format!("{prefix}{freed}"));
        if !out.env.iter().any(|(k, _)| k == "PGPASSWORD") {
            out.env.push(("PGPASSWORD".into(), secret));
        }
    }
    Ok(out)
}

/// The refusal for a password that cannot leave the command line.
fn refused(shown: &str) -> String {
    format!(
        "the flow command carries a password in {}: on a command line every local user can read it. Leave the broker URL out (oemputx passes it, in OEMPUTX_URL), or give the flow its password through its own environment or configuration",
        crate::secret::scrub(shown)
    )
}

/// `value` without its PostgreSQL password, and the password; `None` when it holds none.
fn take_password(value: &str) -> Result<Option<(String, String)>, String> {
    if value.contains("://") {
        let Ok(mut url) = url::Url::parse(value) else {
            return Ok(None);
        };
        let postgres = matches!(url.scheme(), "postgres" | "postgresql");
        if let Some(secret) = secret_of(&url) {
            if !postgres {
                return Err(refused(value));
            }
            let _ = url.set_password(None);
            // A query password as well: it is the same server's, and must go too.
            if let Some((freed, _)) = take_query_password(&url) {
                return Ok(Some((freed, secret)));
            }
            return Ok(Some((url.to_string(), secret)));
        }
        return match take_query_password(&url) {
            Some(_) if !postgres => Err(refused(value)),
            found => Ok(found),
        };
    }
    match keyword_password(value) {
        // A libpq keyword string (`host=… password=…`): the pair leaves it.
        Some((freed, secret)) if is_keyword_conninfo(&freed) => Ok(Some((freed, secret))),
        Some(_) => Err(refused(value)),
        None => Ok(None),
    }
}

/// The URL without its `password` query parameter, and that password.
fn take_query_password(url: &url::Url) -> Option<(String, String)> {
    let mut secret = None;
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter_map(|(k, v)| {
            if k.eq_ignore_ascii_case("password") {
                secret = Some(v.into_owned());
                None
            } else {
                Some((k.into_owned(), v.into_owned()))
            }
        })
        .collect();
    let secret = secret.filter(|s| !s.is_empty())?;
    let mut freed = url.clone();
    if kept.is_empty() {
        freed.set_query(None);
    } else {
        freed.query_pairs_mut().clear().extend_pairs(kept);
    }
    Some((freed.to_string(), secret))
}

/// Whether what is left is a libpq keyword connection string: `key=value` pairs, one of them
/// a connection keyword.
fn is_keyword_conninfo(s: &str) -> bool {
    const KEYS: [&str; 6] = [
        "host=",
        "hostaddr=",
        "dbname=",
        "user=",
        "port=",
        "sslmode=",
    ];
    let lower = s.to_ascii_lowercase().replace(" =", "=");
    lower
        .split_whitespace()
        .any(|w| KEYS.iter().any(|k| w.starts_with(k)))
}

/// `s` without its `password = value` pair (libpq's keyword syntax: spaces around `=`, a
/// value bare or in single quotes with `\'` and `\\` escapes), and the value.
fn keyword_password(s: &str) -> Option<(String, String)> {
    let lower = s.to_ascii_lowercase();
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(k) = lower[from..].find("password") {
        let i = from + k;
        from = i + "password".len();
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            continue;
        }
        let mut j = from;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        if j >= b.len() || b[j] != b'=' {
            continue;
        }
        j += 1;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let (value, end) = if b.get(j) == Some(&b'\'') {
            let mut v = String::new();
            let mut chars = s[j + 1..].char_indices();
            let mut end = b.len();
            while let Some((n, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, e)) = chars.next() {
                            v.push(e);
                        }
                    }
                    '\'' => {
                        end = j + 1 + n + 1;
                        break;
                    }
                    c => v.push(c),
                }
            }
            (v, end)
        } else {
            let end = s[j..].find(char::is_whitespace).map_or(b.len(), |n| j + n);
            (s[j..end].to_string(), end)
        };
        let freed = format!("{} {}", s[..i].trim_end(), s[end..].trim_start());
        return Some((freed.trim().to_string(), value)).filter(|(_, v)| !v.is_empty());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flow_command_is_split_like_a_shell() {
        let c = FlowCommand::parse(
            "--flow-cmd",
            "sample-flow --db 'postgres://u@h/db' --stats node",
        )
        .expect("ok");
        assert!(c.program.ends_with("sample-flow"));
        assert_eq!(c.args, ["--db", "postgres://u@h/db", "--stats", "node"]);
        assert!(
            FlowCommand::parse("--flow-cmd", "sample-flow --threads=2")
                .is_ok_and(|c| c.sets("--threads"))
        );
        assert!(!c.sets("--url"));
        assert!(FlowCommand::parse("--flow-cmd", "").is_err());
        assert!(FlowCommand::parse("--flow-cmd", "sample-flow 'unclosed").is_err());
    }

    #[test]
    fn passwords_leave_the_command_line_for_the_environment() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let free = without_secrets(&args(&[
            "--db",
            "postgres://postgres:SeCrEt%2199@127.0.0.1:5432/test",
            "--audit=postgresql://postgres:SeCrEt%2199@h/x",
            "--stats",
            "node",
        ]))
        .expect("postgres passwords move");
        assert_eq!(
            free.args,
            args(&[
                "--db",
                "postgres://postgres@127.0.0.1:5432/test",
                "--audit=postgresql://postgres@h/x",
                "--stats",
                "node"
            ])
        );
        assert_eq!(free.env, [("PGPASSWORD".into(), "SeCrEt!99".into())]);
        // A URL without a password, and RabbitMQ's public default, stay as they are.
        let plain = args(&[
            "--url",
            "amqp://guest:guest@127.0.0.1/%2f",
            "postgres://u@h/d",
        ]);
        assert_eq!(without_secrets(&plain).map(|f| f.args), Ok(plain.clone()));
        // Anything else with a password is refused, redacted.
        let err =
            without_secrets(&args(&["--url", "amqp://app:SeCrEt99@mq/%2f"])).expect_err("refused");
        assert!(
            err.contains("OEMPUTX_URL") && !err.contains("SeCrEt99"),
            "{err}"
        );
        assert!(
            without_secrets(&args(&["postgres://a:x@h/d", "postgres://a:y@h/e"])).is_err(),
            "two different database passwords"
        );
        assert!(FlowCommand::parse("--flow-cmd", "f --url amqp://a:SeCrEt99@h").is_err());
    }

    #[test]
    fn keyword_and_query_passwords_leave_the_command_line_too() {
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let free = without_secrets(&args(&[
            "--db",
            "host=127.0.0.1 password = 'Se cr\\'et99' dbname=test",
        ]))
        .expect("keyword form moves");
        assert_eq!(free.args, args(&["--db", "host=127.0.0.1 dbname=test"]));
        assert_eq!(free.env, [("PGPASSWORD".into(), "Se cr'et99".into())]);
        let free = without_secrets(&args(&[
            "--db=postgres://u@h/test?sslmode=disable&password=SeCrEt99",
        ]))
        .expect("query form moves");
        assert_eq!(
            free.args,
            args(&["--db=postgres://u@h/test?sslmode=disable"])
        );
        assert_eq!(free.env, [("PGPASSWORD".into(), "SeCrEt99".into())]);
        let free = without_secrets(&args(&["postgres://u@h/test?password=SeCrEt99"]))
            .expect("query form moves");
        assert_eq!(free.args, args(&["postgres://u@h/test"]));
        // Elsewhere a password on the command line is refused, and not shown.
        for bad in [
            "--password=SeCrEt99",
            "amqp://u@mq/%2f?password=SeCrEt99",
            "password=SeCrEt99",
        ] {
            let err = without_secrets(&args(&[bad])).expect_err(bad);
            assert!(!err.contains("SeCrEt99"), "{err}");
        }
        // Words that merely contain the key stay.
        let plain = args(&["--mypassword-file", "/etc/x", "passwords.txt"]);
        assert_eq!(without_secrets(&plain).map(|f| f.args), Ok(plain.clone()));
    }
}
