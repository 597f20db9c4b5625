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
    pub fn with_env(&self, key: &str, value: &str) -> FlowCommand {
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

/// Take the passwords out of a flow command's arguments (see the module's notes).
pub fn without_secrets(args: &[String]) -> Result<SecretFree, String> {
    let mut out = SecretFree {
        args: Vec::with_capacity(args.len()),
        env: Vec::new(),
    };
    for arg in args {
        // `--db=URL` as well as `URL`.
        let (prefix, value) = match arg.split_once('=') {
            Some((flag, v)) if flag.starts_with("--") && v.contains("://") => {
                (format!("{flag}="), v)
            }
            _ => (String::new(), arg.as_str()),
        };
        let parsed = value
            .contains("://")
            .then(|| url::Url::parse(value).ok())
            .flatten();
        let Some((mut url, secret)) = parsed.and_then(|u| secret_of(&u).map(|p| (u, p))) else {
            out.args.push(arg.clone());
            continue;
        };
        if !matches!(url.scheme(), "postgres" | "postgresql") {
            return Err(format!(
                "the flow command carries a password in {}: on a command line every local user can read it. Leave the broker URL out (oemputx passes it, in OEMPUTX_URL), or give the flow its password through its own environment or configuration",
                crate::secret::redact_url(value)
            ));
        }
        if let Some((_, earlier)) = out.env.iter().find(|(k, _)| k == "PGPASSWORD")
            && *earlier != secret
        {
            return Err("the flow command has two PostgreSQL URLs with different passwords; only one can travel in PGPASSWORD: give the flow the other through its own configuration".into());
        }
        let _ = url.set_password(None);
        out.args.push(format!("{prefix}{url}"));
        if !out.env.iter().any(|(k, _)| k == "PGPASSWORD") {
            out.env.push(("PGPASSWORD".into(), secret));
        }
    }
    Ok(out)
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
}
