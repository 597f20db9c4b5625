//! Process groups and the selectors that say which processes belong to them.
//!
//! `--group NAME=SEL[,SEL…]`: a process (or, for `thread:`, a thread of oemputx itself)
//! belongs to the group when any selector matches it. Presets (`@rabbitmq`, …) stand for the
//! process names of well-known brokers, queue managers and databases.

use regex::Regex;
use std::path::PathBuf;

/// Whether `name` may head a row, a TSV column and a CI annotation: 1 to 64 letters,
/// digits, '_', '-' or '.' (group and host names).
pub(crate) fn plain_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

/// Whether `name` may stand for a host in a report another host reads (a shard's node): 1 to
/// 253 letters, digits, '_', '-' or '.', as host names are. A merge prints it on a line of
/// its own; a name with a line break would forge lines of the merged report.
pub(crate) fn plain_host_name(name: &str) -> bool {
    (1..=253).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
}

/// A wrong group or selector: the user's input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SelectorError {
    #[error(
        "--group {0}: '{0}' is a name oemputx gives its own rows (DRIVER, captured, corrected, rate, p99): choose another, e.g. FLOW or QMGR"
    )]
    Reserved(String),
    #[error(
        "--group {0:?}: a group name is 1 to 64 letters, digits, '_', '-' or '.' (it heads table rows, TSV columns and CI annotations): choose e.g. FLOW or QMGR_2"
    )]
    BadName(String),
    #[error(
        "--group {0}: write NAME=SELECTOR[,SELECTOR…], e.g. QMGR=comm:beam.smp,comm:epmd or QMGR=@rabbitmq"
    )]
    NoName(String),
    #[error(
        "--group {group}: unknown selector '{sel}'; use comm:NAME, cmd:REGEX, pid:N, pidfile:PATH, user:NAME, tree:PID, cgroup:PATH, thread:REGEX or @PRESET ({presets})"
    )]
    Unknown {
        group: String,
        sel: String,
        presets: String,
    },
    #[error("--group {group}: '{sel}' is not a valid regular expression: {why}")]
    BadRegex {
        group: String,
        sel: String,
        why: String,
    },
    #[error("--group {group}: '{sel}' needs a process id number, e.g. pid:4711")]
    BadPid { group: String, sel: String },
    #[error("--group {group}: {why}")]
    BadPidFile { group: String, why: String },
    #[error("--group {group}: no user named '{user}' on this machine")]
    NoUser { group: String, user: String },
    #[error(
        "--group {group}: cgroup {path} does not exist; give a cgroup v2 directory or a v1 cpuacct directory, e.g. cgroup:/sys/fs/cgroup/system.slice/rabbitmq-server.service"
    )]
    NoCgroup { group: String, path: PathBuf },
    #[error("--group {group}: unknown preset @{preset}; presets are {presets}")]
    UnknownPreset {
        group: String,
        preset: String,
        presets: String,
    },
    #[error("--group {0} is given twice; merge its selectors into one --group")]
    Duplicate(String),
    #[error(
        "--group {group}@{host}: '{sel}' cannot be read on another host ({why}); use comm:, cmd:, pid:, user:, tree: or a preset there"
    )]
    NotRemote {
        group: String,
        host: String,
        sel: String,
        why: &'static str,
    },
}

// The user's input (exit 2).
crate::usage_error!(SelectorError);

/// What a selector matches.
#[derive(Debug, Clone)]
pub enum Selector {
    /// Process name (the kernel's `comm`, at most 15 bytes).
    Comm(String),
    /// Command line, joined with spaces.
    Cmd(Regex),
    Pid(i32),
    /// The pid written in a file, read at each snapshot.
    PidFile(PathBuf),
    Uid(u32),
    /// A user by name on another host (its uid there may differ from this machine's).
    UserName(String),
    /// A process and all its descendants.
    Tree(i32),
    /// A cgroup directory: its usage counter, which keeps processes that came and went.
    Cgroup(PathBuf),
    /// On another host: the processes in a cgroup (or below it), by the membership its agent
    /// reports (`proc.psinfo.cgroups`), with each process's exact CPU. PCP's own cgroup
    /// counters gave no values on the hybrid v1/v2 layout here, so they are not used.
    CgroupMember(String),
    /// Threads of the oemputx process itself, by thread name.
    Thread(Regex),
}

/// A named group of selectors.
#[derive(Debug, Clone)]
pub struct GroupSpec {
    pub name: String,
    pub selectors: Vec<Selector>,
    /// The host (a `--host` name) whose processes the group holds; `None`: this machine.
    pub host: Option<String>,
}

impl GroupSpec {
    /// The cgroup directory when the group is one, else None.
    pub fn cgroup(&self) -> Option<&PathBuf> {
        self.selectors.iter().find_map(|s| match s {
            Selector::Cgroup(p) => Some(p),
            _ => None,
        })
    }
}

/// Preset name → the process names it stands for (docs/accounting.md lists them).
pub const PRESETS: &[(&str, &[&str])] = &[
    (
        "rabbitmq",
        &["beam.smp", "epmd", "erl_child_setup", "inet_gethost"],
    ),
    ("postgresql", &["postgres"]),
    ("nats", &["nats-server"]),
    ("mosquitto", &["mosquitto"]),
    (
        "ibmmq",
        &[
            "amqzxma0", "amqzlaa0", "amqrmppa", "amqzmuc0", "amqzmur0", "amqfcxba", "amqfqpub",
            "runmqlsr", "runmqchi",
        ],
    ),
    (
        "ace",
        &[
            "DataFlowEngine",
            "IntegrationServer",
            "bipservice",
            "bipbroker",
        ],
    ),
    ("db2", &["db2sysc"]),
    // A JVM: its name is java, so the preset selects by command line (an entry of the form
    // cmd:REGEX), the way Debian's activemq package starts it (activemq.jar).
    (
        "activemq",
        &["cmd:activemq\\.jar|org\\.apache\\.activemq\\.console"],
    ),
    // Kafka: Apache Kafka's JVM (its main class kafka.Kafka), Redpanda, and tansu (its
    // binary carries its version in its name, so by command line too).
    (
        "kafka",
        &["redpanda", "cmd:kafka\\.Kafka|(^|/)tansu[^ /]* broker"],
    ),
    ("sample-flow", &["sample-flow"]),
];

fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|(n, _)| format!("@{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The kernel keeps 15 bytes of a process name; compare names the way it stores them.
pub(crate) fn comm_name(name: &str) -> String {
    let mut end = name.len().min(15);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

fn regex(group: &str, sel: &str, pattern: &str) -> Result<Regex, SelectorError> {
    Regex::new(pattern).map_err(|e| SelectorError::BadRegex {
        group: group.into(),
        sel: sel.into(),
        why: e.to_string(),
    })
}

fn pid(group: &str, sel: &str, v: &str) -> Result<i32, SelectorError> {
    v.parse::<i32>()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| SelectorError::BadPid {
            group: group.into(),
            sel: sel.into(),
        })
}

/// The largest pid file read: a pid and a line break, with room to spare.
pub const MAX_PIDFILE_BYTES: u64 = 4096;

/// A pid file's path. One that does not exist yet is fine (the service may start later);
/// one that exists must be a regular file of a pid's size, or it is no pid file at all.
fn pid_file(group: &str, value: &str) -> Result<PathBuf, SelectorError> {
    let path = PathBuf::from(value);
    match crate::files::read_regular(&path, MAX_PIDFILE_BYTES, "pid file") {
        Err(e) if !e.is_missing() => Err(SelectorError::BadPidFile {
            group: group.into(),
            why: e.to_string(),
        }),
        _ => Ok(path),
    }
}

/// Parse one selector (a preset may expand to several).
pub(crate) fn parse_selector(group: &str, sel: &str) -> Result<Vec<Selector>, SelectorError> {
    if let Some(preset) = sel.strip_prefix('@') {
        let (_, names) = PRESETS.iter().find(|(n, _)| *n == preset).ok_or_else(|| {
            SelectorError::UnknownPreset {
                group: group.into(),
                preset: preset.into(),
                presets: preset_names(),
            }
        })?;
        return names
            .iter()
            .map(|n| match n.strip_prefix("cmd:") {
                Some(pattern) => regex(group, sel, pattern).map(Selector::Cmd),
                None => Ok(Selector::Comm(comm_name(n))),
            })
            .collect();
    }
    let unknown = || SelectorError::Unknown {
        group: group.into(),
        sel: sel.into(),
        presets: preset_names(),
    };
    let (kind, value) = sel.split_once(':').ok_or_else(unknown)?;
    if value.is_empty() {
        return Err(unknown());
    }
    let s = match kind {
        "comm" => Selector::Comm(comm_name(value)),
        "cmd" => Selector::Cmd(regex(group, sel, value)?),
        "pid" => Selector::Pid(pid(group, sel, value)?),
        "pidfile" => Selector::PidFile(pid_file(group, value)?),
        "user" => {
            let uid = match value.parse::<u32>() {
                Ok(uid) => uid,
                Err(_) => nix::unistd::User::from_name(value)
                    .ok()
                    .flatten()
                    .map(|u| u.uid.as_raw())
                    .ok_or_else(|| SelectorError::NoUser {
                        group: group.into(),
                        user: value.into(),
                    })?,
            };
            Selector::Uid(uid)
        }
        "tree" => Selector::Tree(pid(group, sel, value)?),
        "cgroup" => {
            let path = cgroup_dir(value);
            if !path.is_dir() {
                return Err(SelectorError::NoCgroup {
                    group: group.into(),
                    path,
                });
            }
            Selector::Cgroup(path)
        }
        "thread" => Selector::Thread(regex(group, sel, value)?),
        _ => return Err(unknown()),
    };
    Ok(vec![s])
}

/// A cgroup given as a full path, or relative to the v2 root or the v1 cpuacct root.
fn cgroup_dir(value: &str) -> PathBuf {
    let p = PathBuf::from(value);
    if p.is_absolute() && p.starts_with("/sys/fs/cgroup") {
        return p;
    }
    let rel = value.trim_start_matches('/');
    for root in [
        "/sys/fs/cgroup/cpuacct",
        "/sys/fs/cgroup/cpu,cpuacct",
        "/sys/fs/cgroup",
    ] {
        let candidate = PathBuf::from(root).join(rel);
        if candidate.is_dir() {
            return candidate;
        }
    }
    p
}

/// Names of the rows and metrics oemputx makes itself: a group of that name would be
/// reported twice or gated ambiguously.
const RESERVED: [&str; 5] = ["DRIVER", "captured", "corrected", "rate", "p99"];

/// Parse `NAME=SEL[,SEL…]`, or `NAME@HOST=SEL[,SEL…]` for a group on another host.
pub(crate) fn parse_group(spec: &str) -> Result<GroupSpec, SelectorError> {
    let (name, sels) = spec
        .split_once('=')
        .ok_or_else(|| SelectorError::NoName(spec.into()))?;
    let (name, host) = match name.trim().split_once('@') {
        Some((n, h)) if !h.trim().is_empty() => (n.trim(), Some(h.trim().to_string())),
        Some(_) => return Err(SelectorError::NoName(spec.into())),
        None => (name.trim(), None),
    };
    if name.is_empty() || sels.trim().is_empty() {
        return Err(SelectorError::NoName(spec.into()));
    }
    // The figures beyond CPU are metrics too (`--metric syncs`).
    let beyond = super::resources::METRICS.iter().map(|m| m.name);
    if RESERVED
        .iter()
        .copied()
        .chain(beyond)
        .any(|r| r.eq_ignore_ascii_case(name))
    {
        return Err(SelectorError::Reserved(name.into()));
    }
    // A newline or a control character in a name broke the table and the TSV, and turned
    // `gate --github` lines into workflow commands.
    if !plain_name(name) {
        return Err(SelectorError::BadName(name.into()));
    }
    let mut selectors = Vec::new();
    for sel in sels.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match &host {
            Some(h) => selectors.extend(remote_selector(name, h, sel)?),
            None => selectors.extend(parse_selector(name, sel)?),
        }
    }
    Ok(GroupSpec {
        name: name.to_string(),
        selectors,
        host,
    })
}

/// A selector for a group on another host: what can be matched on the facts that host's
/// agent reports. Files and threads of this machine mean nothing there.
fn remote_selector(group: &str, host: &str, sel: &str) -> Result<Vec<Selector>, SelectorError> {
    let not = |why| SelectorError::NotRemote {
        group: group.into(),
        host: host.into(),
        sel: sel.into(),
        why,
    };
    match sel.split_once(':') {
        Some(("pidfile", _)) => Err(not("a pid file is read on this machine")),
        Some(("thread", _)) => Err(not("thread: names threads of oemputx itself")),
        Some(("cgroup", v)) if !v.trim().is_empty() => {
            Ok(vec![Selector::CgroupMember(remote_cgroup_path(v))])
        }
        Some(("user", v)) if v.parse::<u32>().is_err() && !v.is_empty() => {
            Ok(vec![Selector::UserName(v.to_string())])
        }
        _ => parse_selector(group, sel),
    }
}

/// Parse several groups, refusing a name given twice.
pub(crate) fn parse_groups<'a>(
    specs: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<GroupSpec>, SelectorError> {
    let mut groups: Vec<GroupSpec> = Vec::new();
    for spec in specs {
        let g = parse_group(spec)?;
        if groups.iter().any(|h| h.name == g.name) {
            return Err(SelectorError::Duplicate(g.name));
        }
        groups.push(g);
    }
    Ok(groups)
}

/// What a process looks like to the selectors.
#[derive(Debug, Clone, Default)]
pub struct ProcFacts {
    pub pid: i32,
    pub ppid: i32,
    pub comm: String,
    /// Read only when a `cmd:` selector needs it.
    pub cmdline: Option<String>,
    pub uid: Option<u32>,
    /// The owner's name, where the source gives it (PCP); matched by `user:` on another host.
    pub user: Option<String>,
    /// Its cgroups as `/proc/PID/cgroup` lists them, `;`-joined (`memory:/a;0::/b`), where the
    /// source gives them (PCP); matched by `cgroup:` on another host.
    pub cgroups: Option<String>,
}

impl Selector {
    /// Whether a process matches, given the pids of `tree:` roots' descendants and pid files.
    pub fn matches(
        &self,
        p: &ProcFacts,
        in_tree: &dyn Fn(i32, i32) -> bool,
        pidfile_pid: &dyn Fn(&PathBuf) -> Option<i32>,
    ) -> bool {
        match self {
            Selector::Comm(n) => p.comm == *n,
            Selector::Cmd(re) => p.cmdline.as_deref().is_some_and(|c| re.is_match(c)),
            Selector::Pid(pid) => p.pid == *pid,
            Selector::PidFile(path) => pidfile_pid(path) == Some(p.pid),
            Selector::Uid(uid) => p.uid == Some(*uid),
            Selector::UserName(n) => p.user.as_deref() == Some(n.as_str()),
            Selector::Tree(root) => in_tree(*root, p.pid),
            Selector::CgroupMember(path) => {
                p.cgroups.as_deref().is_some_and(|c| in_cgroup(c, path))
            }
            Selector::Cgroup(_) | Selector::Thread(_) => false,
        }
    }
}

/// Whether a process whose cgroups read `cgroups` (`hierarchy:path` entries, `;`-joined,
/// as PCP gives `/proc/PID/cgroup`) is in `path` or below it, in any hierarchy.
fn in_cgroup(cgroups: &str, path: &str) -> bool {
    cgroups.split(';').any(|entry| {
        let Some((_, p)) = entry.split_once(':') else {
            return false;
        };
        // "hierarchy-id:controllers:path" in /proc/PID/cgroup; PCP drops the id.
        let p = p.rsplit_once(':').map_or(p, |(_, p)| p);
        path == "/"
            || p == path
            || p.strip_prefix(path)
                .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// A remote `cgroup:` value as a path inside the hierarchies: `/system.slice/x.service`,
/// `system.slice/x.service`, or a full `/sys/fs/cgroup/…` path on that host.
fn remote_cgroup_path(value: &str) -> String {
    let v = value.trim();
    let inside = match v.strip_prefix("/sys/fs/cgroup") {
        // v2 at the root, or v1 under a controller's directory (cpuacct, "cpu,cpuacct",
        // unified, systemd): drop that directory too when the next part names one.
        Some(rest) => {
            let rest = rest.trim_start_matches('/');
            let (first, tail) = rest.split_once('/').unwrap_or((rest, ""));
            let controller = first.contains(',')
                || matches!(
                    first,
                    "cpu" | "cpuacct" | "unified" | "systemd" | "memory" | "pids" | "cpuset"
                );
            if controller {
                tail.to_string()
            } else {
                rest.to_string()
            }
        }
        None => v.trim_start_matches('/').to_string(),
    };
    format!("/{}", inside.trim_end_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(pid: i32, comm: &str) -> ProcFacts {
        ProcFacts {
            pid,
            ppid: 1,
            comm: comm.into(),
            cmdline: Some(format!("/usr/bin/{comm} --flag")),
            uid: Some(0),
            user: Some("root".into()),
            cgroups: None,
        }
    }
    fn no_tree(_: i32, _: i32) -> bool {
        false
    }
    fn no_file(_: &PathBuf) -> Option<i32> {
        None
    }

    #[test]
    fn presets_expand_to_process_names() {
        let g = parse_group("QMGR=@rabbitmq").unwrap();
        assert_eq!(g.selectors.len(), 4);
        assert!(g.selectors[0].matches(&facts(7, "beam.smp"), &no_tree, &no_file));
    }

    #[test]
    fn long_names_compare_as_the_kernel_truncates_them() {
        let g = parse_group("ACE=@ace").unwrap();
        assert!(g.selectors.iter().any(|s| s.matches(
            &facts(9, "IntegrationServ"),
            &no_tree,
            &no_file
        )));
    }

    #[test]
    fn each_selector_kind_parses() {
        let g = parse_group("X=comm:a, cmd:^/usr/bin/b, pid:42, pidfile:/run/x.pid, user:root, tree:1, thread:^oemputx-flow$").unwrap();
        assert_eq!(g.selectors.len(), 7);
        assert!(g.selectors[1].matches(&facts(3, "b"), &no_tree, &no_file));
        assert!(g.selectors[2].matches(&facts(42, "z"), &no_tree, &no_file));
        assert!(g.selectors[4].matches(&facts(5, "z"), &no_tree, &no_file));
        assert!(g.selectors[5].matches(
            &facts(5, "z"),
            &|root, pid| root == 1 && pid == 5,
            &no_file
        ));
        assert!(g.selectors[3].matches(&facts(8, "z"), &no_tree, &|_| Some(8)));
    }

    #[test]
    fn bad_selectors_say_what_is_wrong() {
        assert!(matches!(parse_group("QMGR"), Err(SelectorError::NoName(_))));
        assert!(matches!(
            parse_group("Q=bogus:x"),
            Err(SelectorError::Unknown { .. })
        ));
        assert!(matches!(
            parse_group("Q=cmd:("),
            Err(SelectorError::BadRegex { .. })
        ));
        assert!(matches!(
            parse_group("Q=pid:abc"),
            Err(SelectorError::BadPid { .. })
        ));
        assert!(matches!(
            parse_group("Q=user:no-such-user-xyz"),
            Err(SelectorError::NoUser { .. })
        ));
        assert!(matches!(
            parse_group("Q=cgroup:/sys/fs/cgroup/no/such"),
            Err(SelectorError::NoCgroup { .. })
        ));
        assert!(matches!(
            parse_group("Q=@nosuch"),
            Err(SelectorError::UnknownPreset { .. })
        ));
        assert!(matches!(
            parse_groups(["A=pid:1", "A=pid:2"]),
            Err(SelectorError::Duplicate(_))
        ));
    }

    #[test]
    fn a_remote_cgroup_holds_the_processes_in_it_or_below_in_any_hierarchy() {
        let v1 = "name=systemd:/system.slice/rabbitmq-server.service;memory:/;cpu,cpuacct:/;:/";
        let v2 = "0::/system.slice/rabbitmq-server.service/beam";
        for path in [
            "/system.slice/rabbitmq-server.service",
            "/system.slice",
            "/",
        ] {
            assert!(in_cgroup(v1, path), "{path}");
            assert!(in_cgroup(v2, path), "{path}");
        }
        // A sibling whose name starts the same is not inside.
        assert!(!in_cgroup(v1, "/system.slice/rabbitmq"));
        assert!(!in_cgroup(v2, "/user.slice"));
        for (given, path) in [
            ("/system.slice/x.service", "/system.slice/x.service"),
            ("system.slice/x.service/", "/system.slice/x.service"),
            (
                "/sys/fs/cgroup/system.slice/x.service",
                "/system.slice/x.service",
            ),
            ("/sys/fs/cgroup/cpu,cpuacct/docker/abc", "/docker/abc"),
            ("/sys/fs/cgroup/unified/a", "/a"),
        ] {
            assert_eq!(remote_cgroup_path(given), path, "{given}");
        }
        let g = parse_group("Q@db=cgroup:/system.slice/postgresql.service").expect("remote cgroup");
        let p = ProcFacts {
            cgroups: Some("0::/system.slice/postgresql.service".into()),
            ..facts(7, "postgres")
        };
        assert!(g.selectors[0].matches(&p, &|_, _| false, &|_| None));
        assert!(!g.selectors[0].matches(&facts(8, "postgres"), &|_, _| false, &|_| None));
    }
}
