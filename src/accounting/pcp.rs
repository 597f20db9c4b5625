//! Another host's CPU through Performance Co-Pilot: a snapshot of that host taken from
//! pmproxy's REST API (`/pmapi/fetch`), in the same shape as a local snapshot, so that the
//! table is built by the same steps.
//!
//! Why these metrics: `proc.schedstat.cpu_time` is the scheduler's nanosecond counter, exact
//! like a local CPU clock; but it is read from `/proc/PID/schedstat`, which holds the
//! *thread* PID's time only, so a process's CPU is the sum over its threads. pmdaproc lists
//! threads when it runs with `-L`; without it the per-process figure would be the main
//! thread alone, and oemputx falls back to `proc.psinfo.utime + stime` (ticks) and says so.
//! pmdaproc shows other users' processes only to authenticated clients (or with `-A`).
//! Time counters come in milliseconds; the host's snapshot counts its "ticks" in ms.
//!
//! The user/system split: with `-L` every instance is a thread, and each thread's
//! `utime`/`stime` is the kernel's scaling of *that thread's* ticks to its runtime; summed,
//! they lean a few points from the process's own split in `/proc/PID/stat` (the kernel
//! scales the whole group's ticks at once), which is what a local snapshot reads. For
//! many-threaded processes (RabbitMQ's ~40 schedulers) that lean was 4 points, more than
//! the split's tick σ. So oemputx opens a second context in which pmdaproc lists processes
//! only (a per-client store of `proc.control.perclient.threads = 0`) and takes the split
//! from there: the same kernel figures a local read gets. pmdaproc takes that store only
//! from a client pmcd has authenticated (a context without attributes is "illegal" to it),
//! so without a PCP user the split stays the threads' sum and the report says so.

use super::selector::{GroupSpec, ProcFacts};
use super::snapshot::{Key, Members, Sample, Snapshot};
use crate::secret::Secret;
use crate::url_parts::{UrlParts, host_for_url};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// pmproxy's port.
pub const DEFAULT_PORT: u16 = 44322;
// What only the HTTP client reads (its constants, a host's address and credentials, the
// stamp of an answer) is unused in a build without the `pcp` feature, which never makes a
// host: allowed there rather than gated item by item.
/// A request to pmproxy that takes longer has failed (a snapshot is 10-70 ms here).
#[cfg_attr(not(feature = "pcp"), allow(dead_code))]
const REQUEST_TIMEOUT_S: u64 = 10;
/// The largest answer read from pmproxy: a fetch of every process's counters on a host with
/// tens of thousands of processes is a few MiB.
#[cfg_attr(not(feature = "pcp"), allow(dead_code))]
const MAX_ANSWER_BYTES: usize = 64 << 20;
/// The environment variable a PCP password comes from when the URL has none.
pub const PASSWORD_ENV: &str = "OEMPUTX_PCP_PASSWORD";
/// Counters in a host's snapshot are in ms: its "ticks" per second.
pub const UNITS_PER_S: u64 = 1000;

/// A host that cannot be read, or a `--host` that is wrong.
#[derive(Debug, thiserror::Error)]
pub enum PcpError {
    #[error(
        "--host {0}: write NAME=pcp://HOST[:PORT], e.g. broker=pcp://mq1.example.com:44322 (pmproxy's REST port)"
    )]
    BadSpec(String),
    #[error("--host {name}: {why}")]
    BadUrl { name: String, why: String },
    /// A build without the `pcp` feature reads no other host.
    #[error("--host {host} {needs}", needs = crate::features::needs("pcp"))]
    NotBuilt { host: String },
    #[error(
        "--host {0:?}: a host name is 1 to 64 letters, digits, '_', '-' or '.', and not 'local' (the name of this machine's row in the Hosts lines): choose e.g. broker or db1"
    )]
    BadName(String),
    #[error(
        "host {name} ({url}): pmproxy does not answer: {why}. Start PCP there (/etc/init.d/pmcd start && /etc/init.d/pmproxy start, or systemctl start pmcd pmproxy) and check that port {port} is open to this machine"
    )]
    Unreachable {
        name: String,
        url: String,
        port: u16,
        why: String,
    },
    #[error("host {name} ({url}): interrupted while waiting for pmproxy's answer")]
    Interrupted { name: String, url: String },
    #[error(
        "host {name} ({url}): pmproxy refused the credentials (HTTP {status}); check the user in the URL and {PASSWORD_ENV}, and that pmcd's SASL configuration knows that user"
    )]
    Auth {
        name: String,
        url: String,
        status: u16,
    },
    #[error("host {name} ({url}): {what}: {why}")]
    Protocol {
        name: String,
        url: String,
        what: &'static str,
        why: String,
    },
    #[error(
        "host {name} ({url}): PCP returned no processes. pmdaproc shows processes only to authenticated clients: give a user pmcd's SASL accepts (pcp://USER@HOST, password in {PASSWORD_ENV}), or add -A to the proc line of /etc/pcp/pmcd/pmcd.conf on that host and restart pmcd (add -L too, for exact per-process CPU)"
    )]
    NoProcesses { name: String, url: String },
    #[error(
        "--group {group}@{host}: no host named '{host}'; name it with --host {host}=pcp://HOST[:PORT] (hosts given: {known})"
    )]
    UnknownHost {
        group: String,
        host: String,
        known: String,
    },
}

/// A `--host` or `--group …@HOST` that is wrong is the user's input (exit 2); a host that
/// fails to answer is the run's failure (exit 1; before a run starts, `ConfigError::Host`
/// makes it the command line's).
impl crate::exit_code::Classified for PcpError {
    fn exit(&self) -> crate::exit_code::Exit {
        match self {
            PcpError::BadSpec(_)
            | PcpError::BadUrl { .. }
            | PcpError::NotBuilt { .. }
            | PcpError::BadName(_)
            | PcpError::UnknownHost { .. } => crate::exit_code::Exit::Usage,
            _ => crate::exit_code::Exit::Failure,
        }
    }
}

/// One host read through pmproxy.
#[derive(Debug)]
#[cfg_attr(not(feature = "pcp"), allow(dead_code))]
pub struct PcpHost {
    /// The `--host` name rows are labelled with (`Jobname.PID@NAME`).
    pub name: String,
    /// `pcp://user:***@host:port`: what reports and errors print.
    pub shown: String,
    /// How its requests are made, apart from the host: a request runs on a thread of its
    /// own, so that a signal ends a wait on a silent pmproxy at once (issue 48, class d).
    ask: Asker,
    /// pmproxy's context for this host (0: none yet); kept so that each snapshot is one
    /// request on one pmcd connection.
    context: AtomicU64,
    /// The context that lists processes, not threads, for the user/system split (0: not
    /// opened yet; [`NO_SPLIT`]: pmdaproc refused the per-client store).
    split_context: AtomicU64,
}

/// What a request to one pmproxy needs, owned, so that it can run on a thread of its own.
#[derive(Debug, Clone)]
#[cfg_attr(not(feature = "pcp"), allow(dead_code))]
struct Asker {
    name: String,
    shown: String,
    base: String,
    port: u16,
    /// `Authorization` header value, when a user is given.
    auth: Option<Secret>,
}

impl Asker {
    fn protocol(&self, what: &'static str, why: impl std::fmt::Display) -> PcpError {
        PcpError::Protocol {
            name: self.name.clone(),
            url: self.shown.clone(),
            what,
            why: why.to_string(),
        }
    }

    /// One GET of pmproxy's API, as JSON.
    ///
    /// The HTTP client writes header names as given: pmproxy (6.0 here) matches
    /// `Authorization` case-sensitively and ignores `authorization`, which is how clients
    /// built on the `http` crate (ureq 3, hyper) send it, so credentials never reached pmcd
    /// through them.
    #[cfg(feature = "pcp")]
    fn get(&self, path_and_query: &str) -> Result<Value, PcpError> {
        // Redirects are not followed: the credentials go to the pmproxy named, never to
        // wherever an answer points.
        let mut req = minreq::get(format!("{}{path_and_query}", self.base))
            .with_timeout(REQUEST_TIMEOUT_S)
            .with_follow_redirects(false);
        if let Some(a) = &self.auth {
            req = req.with_header("Authorization", a.expose());
        }
        let resp = req.send_lazy().map_err(|e| PcpError::Unreachable {
            name: self.name.clone(),
            url: self.shown.clone(),
            port: self.port,
            why: e.to_string(),
        })?;
        let status = resp.status_code;
        if status == 401 || status == 403 {
            return Err(PcpError::Auth {
                name: self.name.clone(),
                url: self.shown.clone(),
                status,
            });
        }
        if (300..400).contains(&status) {
            let to = resp
                .headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("location"))
                .map_or("nowhere said", |(_, v)| v.as_str());
            return Err(self.protocol(
                "pmproxy answered with a redirect",
                format!(
                    "HTTP {status} to {}, not followed (credentials go to the pmproxy named only): give --host the address of the pmproxy itself",
                    crate::secret::scrub(to)
                ),
            ));
        }
        let body = self.read_body(resp)?;
        let body =
            std::str::from_utf8(&body).map_err(|e| self.protocol("reading pmproxy's answer", e))?;
        let mut v: Value = serde_json::from_str(body)
            .map_err(|e| self.protocol("pmproxy's answer is not JSON", e))?;
        if let (Some(stamp), Some(o)) = (host_stamp(body), v.as_object_mut()) {
            o.insert("timestamp".into(), stamp.into());
        }
        if status >= 400 || v.get("success") == Some(&Value::Bool(false)) {
            let msg = v.get("message").and_then(Value::as_str).unwrap_or(body);
            // pmproxy answers a refused login with 400 and pmcd's words.
            if msg.contains("authentication failure") {
                return Err(PcpError::Auth {
                    name: self.name.clone(),
                    url: self.shown.clone(),
                    status,
                });
            }
            return Err(self.protocol("pmproxy refused the request", msg));
        }
        Ok(v)
    }

    /// An answer's body, at most [`MAX_ANSWER_BYTES`] and within [`REQUEST_TIMEOUT_S`] in
    /// all: a server that streams without end costs a bounded memory and time.
    #[cfg(feature = "pcp")]
    fn read_body(&self, mut resp: minreq::ResponseLazy) -> Result<Vec<u8>, PcpError> {
        use std::io::Read;
        let deadline = Instant::now() + Duration::from_secs(REQUEST_TIMEOUT_S);
        let mut body = Vec::new();
        let mut chunk = vec![0u8; 65_536];
        loop {
            let n = resp
                .read(&mut chunk)
                .map_err(|e| self.protocol("reading pmproxy's answer", e))?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
            if body.len() > MAX_ANSWER_BYTES {
                return Err(self.protocol(
                    "pmproxy's answer is too large",
                    format!(
                        "over {} MiB (no answer oemputx asks for is near that): is this a pmproxy?",
                        MAX_ANSWER_BYTES >> 20
                    ),
                ));
            }
            if Instant::now() > deadline {
                return Err(self.protocol(
                    "pmproxy's answer is too slow",
                    format!("not complete after {REQUEST_TIMEOUT_S} s"),
                ));
            }
        }
        Ok(body)
    }
}

/// Each process's own user and system ms, by PID.
type ProcessSplit = HashMap<i64, (u64, u64)>;

/// `split_context` when pmdaproc will not list processes alone for this client.
const NO_SPLIT: u64 = u64::MAX;

/// A fetch's stamp, seconds since the epoch, read from the answer's text.
///
/// pmproxy writes it as seconds, a dot and the nanoseconds *unpadded* (`"%I.%I"` in its
/// webapi.c, 6.0.3 here): 7 ns past second 12 reads `12.7`, 17,468,710 ns reads
/// `12.17468710`. Read as a decimal number, every stamp in the first 100 ms of a second is
/// late by up to 0.9 s (seen here: a window's end stamped 0.1 s after oemputx had exited).
/// More than nine digits can only be a decimal fraction, and is read as one.
#[cfg_attr(not(feature = "pcp"), allow(dead_code))]
fn host_stamp(body: &str) -> Option<f64> {
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        timestamp: Option<&'a serde_json::value::RawValue>,
    }
    let raw = serde_json::from_str::<Head>(body).ok()?.timestamp?.get();
    let (secs, frac) = raw.split_once('.').unwrap_or((raw, "0"));
    let secs: u64 = secs.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return raw.parse().ok();
    }
    let nanos: u64 = frac.parse().ok()?;
    Some(secs as f64 + nanos as f64 / 1e9)
}

/// What a host's snapshot says besides the processes.
#[derive(Debug, Clone, Default)]
pub struct HostFacts {
    /// The host's own clock at the fetch (seconds since the epoch).
    pub timestamp: f64,
    /// Whether pmdaproc lists threads (`-L`): per-process CPU is then exact.
    pub threads: bool,
    pub ncpu: usize,
    /// USER_HZ there: the granularity of its tick counters.
    pub hz: u64,
    /// Wall time of the request, from this machine.
    pub round_trip: Duration,
    /// CPU of the host's PCP agents (pmcd, pmda*, pmproxy) so far, ns.
    pub agents_ns: u64,
    /// Whether the user/system split is each process's own (`/proc/PID/stat` there, read
    /// in a context without threads), not the sum of its threads'.
    pub process_split: bool,
}

impl Clone for PcpHost {
    fn clone(&self) -> Self {
        PcpHost {
            name: self.name.clone(),
            shown: self.shown.clone(),
            ask: self.ask.clone(),
            context: AtomicU64::new(self.context.load(Ordering::Relaxed)),
            split_context: AtomicU64::new(self.split_context.load(Ordering::Relaxed)),
        }
    }
}

const PROC_METRICS: [&str; 20] = [
    "proc.schedstat.cpu_time",
    "proc.psinfo.psargs",
    "proc.psinfo.tgid",
    "proc.psinfo.ppid",
    "proc.psinfo.cmd",
    "proc.psinfo.utime",
    "proc.psinfo.stime",
    "proc.psinfo.start_time",
    "proc.psinfo.cutime",
    "proc.psinfo.cstime",
    "proc.id.uid",
    "proc.id.uid_nm",
    "proc.psinfo.cgroups",
    // Cost beyond CPU: pmdaproc's /proc/PID/io and status fields.
    "proc.io.read_bytes",
    "proc.io.write_bytes",
    "proc.io.syscr",
    "proc.io.syscw",
    "proc.psinfo.rss",
    "proc.psinfo.vctxsw",
    "proc.psinfo.nvctxsw",
];
const HOST_METRICS: [&str; 8] = [
    "kernel.all.cpu.idle",
    "kernel.all.cpu.irq.hard",
    "kernel.all.cpu.irq.soft",
    "kernel.all.cpu.wait.total",
    "kernel.all.cpu.steal",
    "kernel.all.uptime",
    "hinv.ncpu",
    "kernel.all.hz",
];

/// The PCP agents' own processes: their CPU over the window is what the snapshots cost there.
const AGENTS: [&str; 5] = ["pmcd", "pmproxy", "pmdaproc", "pmdalinux", "pmdakvm"];

impl PcpHost {
    /// Parse `NAME=pcp://[USER[:PASSWORD]@]HOST[:PORT]`.
    pub fn parse(spec: &str) -> Result<PcpHost, PcpError> {
        let (name, url) = spec
            .split_once('=')
            .map(|(n, u)| (n.trim(), u.trim()))
            .filter(|(n, u)| !n.is_empty() && !u.is_empty())
            .ok_or_else(|| PcpError::BadSpec(spec.into()))?;
        // The name heads the host's rows and its line in the Hosts list beside this
        // machine's, which is "local": a second "local" could not be told from it.
        if name.eq_ignore_ascii_case("local") || !crate::accounting::selector::plain_name(name) {
            return Err(PcpError::BadName(name.into()));
        }
        let bad = |why: String| PcpError::BadUrl {
            name: name.into(),
            why,
        };
        let u = UrlParts::parse(url).map_err(|e| bad(format!("{e}; write pcp://HOST[:PORT]")))?;
        match u.scheme.as_str() {
            "pcp" if !cfg!(feature = "pcp") => {
                return Err(PcpError::NotBuilt {
                    host: format!("{name}={}", crate::secret::redact_url(url)),
                });
            }
            "pcp" => {}
            "pcps" => {
                return Err(bad(
                    "pcps:// (pmproxy over TLS) is not yet supported; use pcp:// over a trusted network or an SSH tunnel".into(),
                ));
            }
            other => {
                return Err(bad(format!(
                    "scheme '{other}:' is not one oemputx reads hosts with; write pcp://HOST[:PORT]"
                )));
            }
        }
        if !u.path.is_empty() {
            return Err(bad(format!(
                "{}: a host URL has no path; write pcp://HOST[:PORT]",
                u.shown
            )));
        }
        u.query(&[]).map_err(&bad)?;
        let host = host_for_url(
            &u.host_or("the URL names no host; write pcp://HOST[:PORT]")
                .map_err(&bad)?,
        );
        let port = u.port.unwrap_or(DEFAULT_PORT);
        let user = u.user.clone().unwrap_or_default();
        let password = u
            .password
            .clone()
            .or_else(|| std::env::var(PASSWORD_ENV).ok().map(Secret::new));
        let auth = (!user.is_empty()).then(|| {
            use base64::Engine as _;
            let pair = format!("{user}:{}", password.as_ref().map_or("", Secret::expose));
            Secret::new(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            ))
        });
        let shown = if user.is_empty() {
            format!("pcp://{host}:{port}")
        } else {
            format!("pcp://{user}:***@{host}:{port}")
        };
        Ok(PcpHost {
            name: name.into(),
            shown: shown.clone(),
            ask: Asker {
                name: name.into(),
                shown,
                base: format!("http://{host}:{port}"),
                port,
                auth,
            },
            context: AtomicU64::new(0),
            split_context: AtomicU64::new(0),
        })
    }

    fn protocol(&self, what: &'static str, why: impl std::fmt::Display) -> PcpError {
        self.ask.protocol(what, why)
    }

    /// One GET of pmproxy's API, as JSON, within [`REQUEST_TIMEOUT_S`]; a signal ends the
    /// wait at once.
    #[cfg(feature = "pcp")]
    fn get(&self, path_and_query: &str) -> Result<Value, PcpError> {
        let (ask, path) = (self.ask.clone(), path_and_query.to_string());
        match crate::signals::unless_interrupted(move || ask.get(&path)) {
            Ok(answer) => answer,
            Err(crate::signals::Stopped::Interrupted) => Err(PcpError::Interrupted {
                name: self.name.clone(),
                url: self.shown.clone(),
            }),
            // The request's thread ended without a word (it cannot, short of a panic).
            Err(crate::signals::Stopped::Elapsed) => {
                Err(self.protocol("asking pmproxy", "the request ended without an answer"))
            }
        }
    }

    /// No request in a build without the `pcp` feature: [`PcpHost::parse`] refuses every
    /// host there, so this is never reached.
    #[cfg(not(feature = "pcp"))]
    fn get(&self, _path_and_query: &str) -> Result<Value, PcpError> {
        Err(PcpError::NotBuilt {
            host: format!("{}={}", self.name, self.shown),
        })
    }

    /// A pmproxy context for the host's local pmcd, kept across snapshots.
    fn context(&self, fresh: bool) -> Result<u64, PcpError> {
        let known = self.context.load(Ordering::Relaxed);
        if known != 0 && !fresh {
            return Ok(known);
        }
        let c = self.open_context()?;
        self.context.store(c, Ordering::Relaxed);
        Ok(c)
    }

    fn open_context(&self) -> Result<u64, PcpError> {
        // The context lives while it is used at least once per polltimeout seconds.
        let v = self.get("/pmapi/context?hostspec=localhost&polltimeout=3600")?;
        v.get("context")
            .and_then(Value::as_u64)
            .ok_or_else(|| self.protocol("opening a context", "no context number in the answer"))
    }

    /// The context in which pmdaproc lists processes only, or None where it refuses that
    /// store (an unauthenticated client: pmdaproc answers "illegal context").
    fn split_context(&self, fresh: bool) -> Result<Option<u64>, PcpError> {
        match self.split_context.load(Ordering::Relaxed) {
            NO_SPLIT => return Ok(None),
            0 => {}
            known if !fresh => return Ok(Some(known)),
            _ => {}
        }
        let c = self.open_context()?;
        let stored = self.get(&format!(
            "/pmapi/store?context={c}&name=proc.control.perclient.threads&value=0"
        ));
        match stored {
            Ok(_) => {
                self.split_context.store(c, Ordering::Relaxed);
                Ok(Some(c))
            }
            Err(PcpError::Protocol { .. }) => {
                self.split_context.store(NO_SPLIT, Ordering::Relaxed);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Each process's own user and system ms (`/proc/PID/stat` there), by PID; None where
    /// pmdaproc lists threads for this client whatever it is told.
    fn process_split(&self) -> Result<Option<ProcessSplit>, PcpError> {
        let Some(c) = self.split_context(false)? else {
            return Ok(None);
        };
        let query = |c: u64| {
            format!(
                "/pmapi/fetch?context={c}&names=proc.psinfo.tgid,proc.psinfo.utime,proc.psinfo.stime"
            )
        };
        let v = match self.get(&query(c)) {
            // A context pmproxy has dropped: open another, once.
            Err(PcpError::Protocol { .. }) => match self.split_context(true)? {
                Some(c) => self.get(&query(c))?,
                None => return Ok(None),
            },
            other => other?,
        };
        let m = Metrics::from(&v);
        let tgid = m.nums("proc.psinfo.tgid");
        if tgid.is_empty() || tgid.iter().any(|(i, t)| *i as u64 != *t) {
            return Ok(None);
        }
        let (utime, stime) = (m.nums("proc.psinfo.utime"), m.nums("proc.psinfo.stime"));
        Ok(Some(
            utime
                .iter()
                .filter_map(|(pid, u)| Some((*pid, (*u, *stime.get(pid)?))))
                .collect(),
        ))
    }

    /// Check the host answers and shows processes: before a run, so that a wrong host is
    /// exit 2 before any message is sent.
    pub fn check(&self) -> Result<HostFacts, PcpError> {
        self.snapshot(&[]).map(|(_, f)| f)
    }

    fn fetch(&self) -> Result<Value, PcpError> {
        let names = PROC_METRICS
            .iter()
            .chain(HOST_METRICS.iter())
            .copied()
            .collect::<Vec<_>>()
            .join(",");
        let c = self.context(false)?;
        match self.get(&format!("/pmapi/fetch?context={c}&names={names}")) {
            // A context pmproxy has dropped (restart, timeout): open another, once.
            Err(PcpError::Protocol { .. }) => {
                let c = self.context(true)?;
                self.get(&format!("/pmapi/fetch?context={c}&names={names}"))
            }
            other => other,
        }
    }

    /// A snapshot of the host for `groups` (those placed on it).
    pub fn snapshot(&self, groups: &[GroupSpec]) -> Result<(Snapshot, HostFacts), PcpError> {
        let cost_start = super::clock::self_thread().ok();
        let sent = Instant::now();
        let v = self.fetch()?;
        let round_trip = sent.elapsed();
        // The middle of the request is the best guess of when pmcd sampled.
        let at = sent + round_trip / 2;
        let metrics = Metrics::from(&v);
        let mut read = metrics.processes();
        if read.procs.is_empty() {
            return Err(PcpError::NoProcesses {
                name: self.name.clone(),
                url: self.shown.clone(),
            });
        }
        // The split from the context without threads, right after; both snapshots of a
        // window take it the same way (the table is told when they do not).
        let process_split = read.threads
            && match self.process_split()? {
                Some(split) => {
                    for s in read.procs.values_mut() {
                        if let Some(&(u, st)) = split.get(&i64::from(s.pid)) {
                            (s.utime, s.stime) = (u, st);
                        }
                    }
                    true
                }
                None => false,
            };
        let members = members(groups, &read.facts);
        let one = |m: &str| metrics.single(m);
        let agents_ns = read
            .procs
            .values()
            .filter(|s| AGENTS.iter().any(|a| s.name == *a))
            .map(|s| s.cpu_ns)
            .sum();
        let facts = HostFacts {
            timestamp: v.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0),
            threads: read.threads,
            ncpu: one("hinv.ncpu").map_or(1, |n| n.max(1.0) as usize),
            hz: one("kernel.all.hz").map_or(100, |n| n.max(1.0) as u64),
            round_trip,
            agents_ns,
            process_split,
        };
        let cost = match (cost_start, super::clock::self_thread().ok()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => Duration::ZERO,
        };
        let ms = |m: &str| one(m).map_or(0, |x| x.max(0.0) as u64);
        let snapshot = Snapshot {
            at,
            procs: read.procs,
            groups: members,
            idle_ticks: ms("kernel.all.cpu.idle"),
            iowait_ticks: ms("kernel.all.cpu.wait.total"),
            steal_ticks: ms("kernel.all.cpu.steal"),
            irq_ticks: ms("kernel.all.cpu.irq.hard") + ms("kernel.all.cpu.irq.soft"),
            // pmcd's proc agent gives live processes and their reaped children only: the
            // table sums those and says it cannot see short-lived processes.
            all_tasks: None,
            uptime_ticks: one("kernel.all.uptime").map_or(0, |s| (s.max(0.0) * 1000.0) as u64),
            denied: Vec::new(),
            cost,
            usage: super::resources::UseSample {
                members: read.usage,
                ..super::resources::UseSample::unread(
                    "not read on other hosts: PCP has no per-socket bytes or per-process syncs, so a remote group's network bytes and syncs are null",
                )
            },
        };
        Ok((snapshot, facts))
    }
}

/// The hosts of `--host NAME=URL` options and a profile's hosts table; an option names a
/// host the profile also names: the option wins.
pub(crate) fn parse_hosts(
    specs: &[String],
    profile: Option<&std::collections::BTreeMap<String, String>>,
) -> Result<Vec<PcpHost>, PcpError> {
    let mut hosts: Vec<PcpHost> = specs
        .iter()
        .map(|s| PcpHost::parse(s))
        .collect::<Result<_, _>>()?;
    for (name, url) in profile.into_iter().flatten() {
        if !hosts.iter().any(|h| h.name == *name) {
            hosts.push(PcpHost::parse(&format!("{name}={url}"))?);
        }
    }
    let mut names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(PcpError::BadSpec(format!(
            "{}=… is given twice; give each host once",
            w[0]
        )));
    }
    Ok(hosts)
}

/// The fetched values by metric: instance → value.
struct Metrics<'a> {
    by_name: HashMap<&'a str, Vec<(Option<i64>, &'a Value)>>,
}

/// Processes of a host: samples keyed like local ones, and the facts selectors match.
struct Read {
    procs: HashMap<Key, Sample>,
    facts: Vec<(Key, ProcFacts)>,
    threads: bool,
    /// Each process's counters beyond CPU, where the agent has them.
    usage: HashMap<Key, super::resources::ProcUse>,
}

impl<'a> Metrics<'a> {
    fn from(v: &'a Value) -> Self {
        let mut by_name = HashMap::new();
        for m in v
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = m.get("name").and_then(Value::as_str) else {
                continue;
            };
            let insts = m
                .get("instances")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| Some((i.get("instance").and_then(Value::as_i64), i.get("value")?)))
                .collect();
            by_name.insert(name, insts);
        }
        Metrics { by_name }
    }

    fn single(&self, name: &str) -> Option<f64> {
        self.by_name.get(name)?.first()?.1.as_f64()
    }

    fn nums(&self, name: &str) -> HashMap<i64, u64> {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|(i, v)| {
                Some(((*i)?, v.as_u64().or_else(|| v.as_f64().map(|f| f as u64))?))
            })
            .collect()
    }

    fn strings(&self, name: &str) -> HashMap<i64, &'a str> {
        self.by_name
            .get(name)
            .into_iter()
            .flatten()
            .filter_map(|(i, v)| Some(((*i)?, v.as_str()?)))
            .collect()
    }

    /// Each process's counters beyond CPU: io and context switches summed over its thread
    /// instances (pmdaproc reads each thread's own /proc/PID/task/TID files: its leader's
    /// instance alone is the main thread's, 1 write call for RabbitMQ's VM against its
    /// millions), the resident set from the leader. Without thread instances (no `-L`) the
    /// io and switches would be the main thread's alone: none.
    fn usage(
        &self,
        tgid: &HashMap<i64, u64>,
        by_pid: &HashMap<i64, Key>,
    ) -> HashMap<Key, super::resources::ProcUse> {
        let threads = tgid.iter().any(|(i, t)| *i as u64 != *t);
        let m = |n: &str| self.nums(n);
        let names = [
            "proc.io.read_bytes",
            "proc.io.write_bytes",
            "proc.io.syscr",
            "proc.io.syscw",
            "proc.psinfo.vctxsw",
            "proc.psinfo.nvctxsw",
        ];
        let per_inst: Vec<HashMap<i64, u64>> = names.iter().map(|n| m(n)).collect();
        // Per process: the six counters summed over its threads, or none when a thread
        // lacks one.
        let mut sums: HashMap<i64, Option<[u64; 6]>> = HashMap::new();
        for (&inst, &t) in tgid {
            let e = sums.entry(t as i64).or_insert(Some([0; 6]));
            *e = e.and_then(|mut acc| {
                for (k, v) in per_inst.iter().enumerate() {
                    acc[k] += *v.get(&inst)?;
                }
                Some(acc)
            });
        }
        // Each thread instance's switches, by thread id, under its process.
        let mut switches: HashMap<i64, HashMap<i32, (u64, u64)>> = HashMap::new();
        for (&inst, &t) in tgid {
            if let (Some(v), Some(n)) = (per_inst[4].get(&inst), per_inst[5].get(&inst)) {
                switches
                    .entry(t as i64)
                    .or_default()
                    .insert(inst as i32, (*v, *n));
            }
        }
        let rss = m("proc.psinfo.rss");
        by_pid
            .iter()
            .map(|(&pid, key)| {
                let c = sums.get(&pid).copied().flatten().filter(|_| threads);
                let used = super::resources::ProcUse {
                    // pmdaproc answers the io of a process it will not show this client
                    // with zeros: every live process has read something (its loader reads
                    // its ELF headers), so no reads at all is no io shown.
                    io: c
                        .filter(|c| c[2] > 0)
                        .map(|c| super::resources::proc_files::Io {
                            read_bytes: c[0],
                            write_bytes: c[1],
                            syscr: c[2],
                            syscw: c[3],
                        }),
                    switches: c.and_then(|_| switches.get(&pid).cloned()),
                    rss: rss.get(&pid).map(|k| k.saturating_mul(1024)),
                    ..Default::default()
                };
                (*key, used)
            })
            .collect()
    }

    /// Sum each process's threads (with `-L` every thread is an instance) into one sample.
    fn processes(&self) -> Read {
        let cpu = self.nums("proc.schedstat.cpu_time");
        let tgid = self.nums("proc.psinfo.tgid");
        let ppid = self.nums("proc.psinfo.ppid");
        let (utime, stime) = (
            self.nums("proc.psinfo.utime"),
            self.nums("proc.psinfo.stime"),
        );
        let (cutime, cstime) = (
            self.nums("proc.psinfo.cutime"),
            self.nums("proc.psinfo.cstime"),
        );
        let start = self.nums("proc.psinfo.start_time");
        let uid = self.nums("proc.id.uid");
        let cmd = self.strings("proc.psinfo.cmd");
        let args = self.strings("proc.psinfo.psargs");
        let user = self.strings("proc.id.uid_nm");
        let cgroups = self.strings("proc.psinfo.cgroups");
        let threads = tgid.iter().any(|(i, t)| *i as u64 != *t);
        let mut read = Read {
            procs: HashMap::new(),
            facts: Vec::new(),
            threads,
            usage: HashMap::new(),
        };
        let get = |m: &HashMap<i64, u64>, i: i64| m.get(&i).copied().unwrap_or(0);
        // Leaders first: a process is its thread-group leader's instance.
        let mut by_pid: HashMap<i64, Key> = HashMap::new();
        for (&inst, &t) in &tgid {
            if inst as u64 != t {
                continue;
            }
            let key: Key = (inst as i32, get(&start, inst));
            by_pid.insert(inst, key);
            read.procs.insert(
                key,
                Sample {
                    pid: inst as i32,
                    name: cmd.get(&inst).map_or_else(String::new, |s| s.to_string()),
                    cpu_ns: 0,
                    utime: 0,
                    stime: 0,
                    children_ticks: get(&cutime, inst) + get(&cstime, inst),
                },
            );
            read.facts.push((
                key,
                ProcFacts {
                    pid: inst as i32,
                    ppid: get(&ppid, inst) as i32,
                    comm: cmd.get(&inst).map_or_else(String::new, |s| s.to_string()),
                    cmdline: args.get(&inst).map(|s| s.to_string()),
                    uid: uid.get(&inst).map(|&u| u as u32),
                    user: user.get(&inst).map(|s| s.to_string()),
                    cgroups: cgroups.get(&inst).map(|s| s.to_string()),
                },
            ));
        }
        read.usage = self.usage(&tgid, &by_pid);
        for (&inst, &t) in &tgid {
            let Some(s) = by_pid.get(&(t as i64)).and_then(|k| read.procs.get_mut(k)) else {
                continue;
            };
            s.utime += get(&utime, inst);
            s.stime += get(&stime, inst);
            s.cpu_ns += if threads {
                get(&cpu, inst)
            } else {
                // Without threads, schedstat is the main thread's alone: the process's
                // ticks are the whole process.
                (get(&utime, inst) + get(&stime, inst)) * 1_000_000
            };
        }
        read
    }
}

/// Which processes each group holds, from the facts the host's agent reported.
fn members(groups: &[GroupSpec], facts: &[(Key, ProcFacts)]) -> Vec<Members> {
    let trees = super::snapshot::trees(groups, facts);
    let in_tree = |root: i32, pid: i32| trees.get(&root).is_some_and(|s| s.contains(&pid));
    let no_pidfile = |_: &std::path::PathBuf| None;
    groups
        .iter()
        .map(|g| Members::Procs(super::snapshot::matching(g, facts, &in_tree, &no_pidfile)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // A host is made only with the feature.
    #[cfg(feature = "pcp")]
    #[test]
    fn a_host_url_is_shown_without_its_password_and_a_bad_one_names_the_form() {
        let h = PcpHost::parse("broker=pcp://ops:s3cret@mq1:4000").expect("valid");
        assert_eq!(
            (h.name.as_str(), h.shown.as_str()),
            ("broker", "pcp://ops:***@mq1:4000")
        );
        assert!(h.ask.auth.is_some());
        let h = PcpHost::parse("db=pcp://db1").expect("valid");
        assert_eq!(h.shown, "pcp://db1:44322");
        for bad in [
            "broker",
            "=pcp://x",
            "broker=http://x",
            "broker=pcps://x",
            "b=pcp://",
        ] {
            let e = PcpHost::parse(bad).expect_err(bad).to_string();
            assert!(!e.contains("s3cret"), "{e}");
            assert!(e.contains("pcp://"), "{bad}: {e}");
        }
        let e = PcpHost::parse("b=ftp://u:s3cret@x")
            .expect_err("scheme")
            .to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn a_build_without_pcp_names_the_feature_for_a_host() {
        let e = PcpError::NotBuilt {
            host: "broker=pcp://mq1".into(),
        }
        .to_string();
        assert!(
            e.starts_with("--host broker=pcp://mq1 needs") && e.contains("'pcp' feature"),
            "{e}"
        );
        if !cfg!(feature = "pcp") {
            let e = PcpHost::parse("broker=pcp://ops:s3cret@mq1")
                .expect_err("left out")
                .to_string();
            assert!(e.contains("'pcp' feature") && !e.contains("s3cret"), "{e}");
        }
    }

    // A host is made only with the feature.
    #[cfg(feature = "pcp")]
    #[test]
    fn a_host_is_never_a_second_local_and_its_name_is_plain() {
        for bad in [
            "local=pcp://x",
            "LOCAL=pcp://x",
            "a b=pcp://x",
            "bro\nker=pcp://x",
        ] {
            match PcpHost::parse(bad) {
                Err(e @ PcpError::BadName(_)) => {
                    assert!(e.to_string().contains("not 'local'"), "{e}")
                }
                other => panic!("{bad}: {:?}", other.map(|h| h.name)),
            }
        }
        assert!(PcpHost::parse("db-1.eu=pcp://x").is_ok());
    }

    #[test]
    fn pmproxy_s_unpadded_nanoseconds_are_read_as_nanoseconds() {
        let at = |t: &str| host_stamp(&format!(r#"{{"context":7,"timestamp":{t},"values":[]}}"#));
        // Written by pmproxy 6.0.3 here within a millisecond of each other's true times.
        let near = |t: &str, want: f64| at(t).is_some_and(|x| (x - want).abs() < 1e-6);
        assert!(near("1796397208.11659289", 1_796_397_208.011_659));
        assert!(near("1796397195.976476846", 1_796_397_195.976_477));
        assert_eq!(at("12.7"), Some(12.000000007));
        assert_eq!(at("12"), Some(12.0));
        // Not pmproxy's shape: read as the number it is.
        assert_eq!(at("12.1234567891"), Some(12.1234567891));
        assert_eq!(at("\"x\""), None);
        assert_eq!(host_stamp(r#"{"context":7}"#), None);
    }

    #[test]
    fn a_process_is_the_sum_of_its_threads_and_without_threads_its_ticks() {
        let v = serde_json::json!({"timestamp": 1.5, "values": [
            {"name": "proc.schedstat.cpu_time", "instances": [
                {"instance": 10, "value": 1000}, {"instance": 11, "value": 5000},
                {"instance": 20, "value": 7}]},
            {"name": "proc.psinfo.tgid", "instances": [
                {"instance": 10, "value": 10}, {"instance": 11, "value": 10},
                {"instance": 20, "value": 20}]},
            {"name": "proc.psinfo.cmd", "instances": [
                {"instance": 10, "value": "beam.smp"}, {"instance": 11, "value": "beam.smp"},
                {"instance": 20, "value": "postgres"}]},
            {"name": "proc.psinfo.utime", "instances": [
                {"instance": 10, "value": 0}, {"instance": 11, "value": 30},
                {"instance": 20, "value": 10}]},
            {"name": "hinv.ncpu", "instances": [{"instance": null, "value": 4}]}
        ]});
        let m = Metrics::from(&v);
        let r = m.processes();
        assert!(r.threads);
        let beam = r.procs.values().find(|s| s.pid == 10).expect("beam");
        assert_eq!((beam.cpu_ns, beam.utime), (6000, 30));
        assert_eq!(r.procs.len(), 2);
        assert_eq!(m.single("hinv.ncpu"), Some(4.0));
        // One instance per process: the main thread's schedstat would undercount.
        let v = serde_json::json!({"values": [
            {"name": "proc.schedstat.cpu_time", "instances": [{"instance": 10, "value": 1000}]},
            {"name": "proc.psinfo.tgid", "instances": [{"instance": 10, "value": 10}]},
            {"name": "proc.psinfo.utime", "instances": [{"instance": 10, "value": 30}]},
            {"name": "proc.psinfo.stime", "instances": [{"instance": 10, "value": 20}]}
        ]});
        let r = Metrics::from(&v).processes();
        assert!(!r.threads);
        let p = r.procs.values().next().expect("one");
        assert_eq!(p.cpu_ns, 50 * 1_000_000);
    }
}
