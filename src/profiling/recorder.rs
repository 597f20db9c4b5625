//! `perf record` across the measured window: started before the run, disabled, switched on
//! and off through its control FIFO at the window's two instants (each switch waits for
//! perf's acknowledgement), and read with `perf script` after the run, while the sampled
//! binaries are still in place.
//!
//! **Re-phasing.** perf's cpu-clock samples each CPU on a fixed 1 ms grid, and a
//! request/reply flow falls into step with it: here 77–84 % of a C responder's CPU time was
//! sampled at 999 Hz, and its two functions read −21 % and +34 % of their truth, with jitter
//! in the work and all. While the window is open a thread of oemputx switches perf off for
//! a random 0–1.1 ms every 5–30 ms: perf keeps the rest of the period across the pause, so
//! each pause moves the grid by a random amount and no flow stays in step with it. Over 4
//! runs the same functions then read −2 … +9 % (docs/profiles.md).
//!
//! The samples carry CLOCK_MONOTONIC times (`-k CLOCK_MONOTONIC`), and only those between
//! the instants the window opened and closed count: what perf sampled while its switch was
//! under way stays out. `--no-buildid-cache` keeps perf from copying every sampled binary
//! into ~/.debug (1.9 GB after a few system-wide runs).

use super::attribute::{Attribution, Membership, Rows};
use super::{FREQUENCY_HZ, Profile, stacks};
use crate::children::Group;
use std::io::{BufReader, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long perf may take to answer a switch (it starts by reading every process's maps).
const ACK_WITHIN: Duration = Duration::from_secs(15);
/// How long perf may take to write its file after the run.
const FINISH_WITHIN: Duration = Duration::from_secs(30);
/// How long `perf script` may take to read it back.
const SCRIPT_WITHIN: Duration = Duration::from_secs(300);

/// Why the stacks could not be sampled: the setup's (exit 2) or the run's.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProfileError {
    #[error(
        "Linux perf ('{0}') was not found: install it (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r)) or name it with OEMPUTX_PERF=/path/to/perf"
    )]
    NoPerf(String),
    #[error(
        "perf cannot sample every CPU here (kernel.perf_event_paranoid={0}; perf record -a said {1}): run as root with CAP_PERFMON (a container needs it granted), give perf the capability (setcap cap_perfmon,cap_sys_ptrace+ep $(command -v perf)), or lower the setting (sysctl kernel.perf_event_paranoid=0)"
    )]
    Refused(i64, String),
    #[error("perf could not start: {0}")]
    Start(String),
    #[error("{0}")]
    Run(String),
}

/// perf missing or not allowed to sample is the setup's, which the user fixes (exit 2);
/// perf failing mid-run is the run's (exit 1).
impl crate::exit_code::Classified for ProfileError {
    fn exit(&self) -> crate::exit_code::Exit {
        if self.is_setup() {
            crate::exit_code::Exit::Usage
        } else {
            crate::exit_code::Exit::Failure
        }
    }
}

impl ProfileError {
    /// Whether it is the user's to fix before running (exit 2).
    pub(crate) fn is_setup(&self) -> bool {
        matches!(self, ProfileError::NoPerf(_) | ProfileError::Refused(..))
    }
}

/// The perf binary: `OEMPUTX_PERF`, else `perf` on the PATH.
fn perf_binary() -> String {
    std::env::var("OEMPUTX_PERF").unwrap_or_else(|_| "perf".into())
}

fn on_path(bin: &str) -> bool {
    if bin.contains('/') {
        return Path::new(bin).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(bin).is_file()))
}

/// Whether `--profile` can work here: perf is there and the kernel lets this user sample
/// every CPU. Checked before a message is sent.
/// Asked once per process: every profiled round of compare and the gate starts a recorder,
/// and the answer does not change between rounds.
pub fn check() -> Result<(), ProfileError> {
    static ANSWER: std::sync::Mutex<Option<Result<(), ProfileError>>> = std::sync::Mutex::new(None);
    let mut answer = ANSWER.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(known) = answer.as_ref() {
        return known.clone();
    }
    let found = probe();
    // An interrupted probe said nothing about perf: asked again next time.
    if !matches!(found, Err(ProfileError::Run(_))) {
        *answer = Some(found.clone());
    }
    found
}

fn probe() -> Result<(), ProfileError> {
    let bin = perf_binary();
    if !on_path(&bin) {
        return Err(ProfileError::NoPerf(bin));
    }
    let paranoid: i64 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    // Root in a container without CAP_PERFMON, or perf given the capability: only trying
    // tells. A system-wide sample of `true`, bounded.
    let dir = tempfile::tempdir().map_err(|e| ProfileError::Start(e.to_string()))?;
    let stderr = dir.path().join("probe.stderr");
    let err = std::fs::File::create(&stderr).map_err(|e| ProfileError::Start(e.to_string()))?;
    let mut cmd = Command::new(&bin);
    cmd.args(["record", "-a", "-e", "cpu-clock", "-q", "-B", "-o"])
        .arg(dir.path().join("probe.data"))
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err);
    let out = Group::spawn(&mut cmd, Duration::from_secs(1))
        .map_err(|e| ProfileError::Start(format!("{bin}: {e}")))?;
    match wait_for(out, Duration::from_secs(15), &stderr) {
        Ok(()) => Ok(()),
        Err(why) if why == "interrupted" => Err(ProfileError::Run(why)),
        Err(why) => Err(ProfileError::Refused(paranoid, why)),
    }
}

/// The last lines perf wrote to `stderr` (a file of its own), for an error: read within the
/// bound every file reader keeps, made safe for a terminal.
fn perf_said(stderr: &Path) -> String {
    let text = crate::files::read_text(stderr, 64 * 1024, "perf's messages").unwrap_or_default();
    let text = crate::terminal::for_terminal(text.trim());
    let last: Vec<&str> = text.lines().rev().take(3).collect();
    if last.is_empty() {
        "it said nothing".into()
    } else {
        last.into_iter().rev().collect::<Vec<_>>().join(" / ")
    }
}

/// Wait for `group` to end, within `bound`, at once on a signal (then killed): what it
/// wrote to `stderr` when it failed.
fn wait_for(mut group: Group, bound: Duration, stderr: &Path) -> Result<(), String> {
    let until = Instant::now() + bound;
    loop {
        if let Some(status) = group.ended() {
            group.finish(Instant::now());
            return if status.success() {
                Ok(())
            } else {
                Err(format!("{status}: {}", perf_said(stderr)))
            };
        }
        if crate::signals::interrupted() {
            group.signal(nix::sys::signal::Signal::SIGKILL);
            group.finish(Instant::now());
            return Err("interrupted".into());
        }
        if Instant::now() >= until {
            group.signal(nix::sys::signal::Signal::SIGKILL);
            group.finish(Instant::now());
            return Err(format!("no answer within {} s", bound.as_secs()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What the main thread tells the re-phasing thread.
enum Rephase {
    Run,
    /// Stop after the current pause, leaving perf on, and say so.
    Pause(std::sync::mpsc::SyncSender<()>),
}

/// The longest pause and the gaps between pauses (see the module's comment).
const PAUSE_UP_TO: Duration = Duration::from_micros(1100);
const GAP: (Duration, Duration) = (Duration::from_millis(5), Duration::from_millis(30));

/// The thread that moves perf's sampling grid while the window is open; it exits when its
/// sender is dropped. Reports its thread id and its CPU clock's reading when asked.
fn rephaser(
    mut ctl: std::fs::File,
    mut ack: std::fs::File,
    rx: std::sync::mpsc::Receiver<Rephase>,
    tid: std::sync::mpsc::SyncSender<i32>,
) {
    use std::sync::mpsc::RecvTimeoutError;
    let _ = tid.send(nix::unistd::gettid().as_raw());
    let mut rng = fastrand::Rng::new();
    let mut drain = [0u8; 256];
    while let Ok(cmd) = rx.recv() {
        if let Rephase::Pause(done) = cmd {
            let _ = done.send(());
            continue;
        }
        loop {
            let gap = GAP.0 + GAP.1.saturating_sub(GAP.0).mul_f64(rng.f64());
            match rx.recv_timeout(gap) {
                Ok(Rephase::Pause(done)) => {
                    let _ = done.send(());
                    break;
                }
                Ok(Rephase::Run) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if ctl.write_all(b"disable\n").is_err() {
                return;
            }
            std::thread::sleep(PAUSE_UP_TO.mul_f64(rng.f64()));
            if ctl.write_all(b"enable\n").is_err() {
                return;
            }
            // perf answers each switch: both answers are read before anything else is said
            // to perf, so that none is left for the main thread to take as its own. A busy
            // host delays them (perf drains its buffers first): this waits as long as a
            // switch of the main thread's may (a 1 s bound lost a CI run's profile at load
            // 4), and the main thread's pause waits for this.
            if !heard_both(&mut ack, &mut drain) {
                return;
            }
        }
    }
}

/// Read perf's two answers to a disable/enable pair, within [`ACK_WITHIN`]; false when they
/// did not come or oemputx was interrupted (the thread then ends, and the profile says why).
fn heard_both(ack: &mut std::fs::File, drain: &mut [u8]) -> bool {
    let until = Instant::now() + ACK_WITHIN;
    let mut heard = 0;
    while heard < 2 {
        match ack.read(drain) {
            Ok(n) if n > 0 => heard += drain[..n].iter().filter(|b| **b == b'\n').count(),
            _ if Instant::now() >= until || crate::signals::interrupted() => return false,
            _ => std::thread::sleep(Duration::from_micros(200)),
        }
    }
    true
}

/// perf recording, disabled until the window opens.
pub struct Recorder {
    perf: Group,
    rephase: Option<std::sync::mpsc::Sender<Rephase>>,
    rephase_tid: Option<i32>,
    dir: tempfile::TempDir,
    ctl: std::fs::File,
    ack: std::fs::File,
    opened: Option<u64>,
    windows: Vec<(u64, u64)>,
    clip: Clip,
    /// Threads of oemputx whose CPU is in no row (an embedded queue manager's, when the
    /// groups leave it out): their samples are in no group either.
    ignored: Vec<i32>,
    perf_cpu: Duration,
    perf_cpu_at_open: Option<Duration>,
    /// The first thing that went wrong; the run goes on without a profile.
    pub error: Option<String>,
}

fn monotonic_ns() -> u64 {
    nix::time::ClockId::CLOCK_MONOTONIC
        .now()
        .map(|t| t.tv_sec().max(0) as u64 * 1_000_000_000 + t.tv_nsec().max(0) as u64)
        .unwrap_or(0)
}

fn fifo(path: &Path) -> Result<std::fs::File, ProfileError> {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU)
        .map_err(|e| ProfileError::Start(format!("cannot make {}: {e}", path.display())))?;
    // Read and write: opening blocks on neither end, whenever perf opens its own.
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| ProfileError::Start(format!("cannot open {}: {e}", path.display())))
}

/// The temporary folders of profiled runs: `oemputx-profile-PID-…`, PID the run's.
const FOLDER_PREFIX: &str = "oemputx-profile-";

/// Remove the folders that profiled runs killed with SIGKILL left behind (perf.data grows
/// by about a megabyte a second of window): those of this user whose process is gone. A
/// folder of a live process, another user's, or a name not of this form is left alone.
fn sweep_stale_folders() {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    let uid = nix::unistd::getuid().as_raw();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(FOLDER_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let mine = e
            .path()
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir() && m.uid() == uid);
        let gone = !Path::new(&format!("/proc/{pid}")).exists();
        if mine && gone {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl Recorder {
    /// Start perf, disabled, sampling every CPU.
    pub fn start() -> Result<Recorder, ProfileError> {
        sweep_stale_folders();
        check()?;
        // Named by this process, so that a later run can tell it was left by a killed one;
        // readable by this user alone (perf.data holds every process's stacks).
        let dir = {
            use std::os::unix::fs::PermissionsExt;
            tempfile::Builder::new()
                .prefix(&format!("{FOLDER_PREFIX}{}-", std::process::id()))
                .permissions(std::fs::Permissions::from_mode(0o700))
                .tempdir()
                .map_err(|e| ProfileError::Start(format!("cannot make a temporary folder: {e}")))?
        };
        let ctl_path = dir.path().join("ctl");
        let ack_path = dir.path().join("ack");
        let ctl = fifo(&ctl_path)?;
        let ack = fifo(&ack_path)?;
        let err = std::fs::File::create(dir.path().join("stderr"))
            .map_err(|e| ProfileError::Start(e.to_string()))?;
        let mut cmd = Command::new(perf_binary());
        cmd.args(["record", "-a", "-g", "-e", "cpu-clock", "-F"])
            .arg(FREQUENCY_HZ.to_string())
            .args([
                "--no-buildid-cache",
                // No build-id pass over the whole file at the end (it can outlast the bound).
                "-B",
                "-k",
                "CLOCK_MONOTONIC",
                "-D",
                "-1",
                "-q",
            ])
            .arg(format!(
                "--control=fifo:{},{}",
                ctl_path.display(),
                ack_path.display()
            ))
            .arg("-o")
            .arg(dir.path().join("perf.data"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err);
        let perf = Group::spawn(&mut cmd, Duration::from_secs(2))
            .map_err(|e| ProfileError::Start(format!("{}: {e}", perf_binary())))?;
        let (tx, rx) = std::sync::mpsc::channel();
        let (tid_tx, tid_rx) = std::sync::mpsc::sync_channel(1);
        let clones = ctl.try_clone().and_then(|c| Ok((c, ack.try_clone()?)));
        let (ctl2, ack2) = clones.map_err(|e| ProfileError::Start(e.to_string()))?;
        std::thread::Builder::new()
            .name("oemputx-rephase".into())
            .spawn(move || rephaser(ctl2, ack2, rx, tid_tx))
            .map_err(|e| ProfileError::Start(format!("cannot start a thread: {e}")))?;
        let rephase_tid = tid_rx.recv_timeout(Duration::from_secs(5)).ok();
        Ok(Recorder {
            perf,
            rephase: Some(tx),
            rephase_tid,
            dir,
            ctl,
            ack,
            opened: None,
            windows: Vec::new(),
            clip: Clip::default(),
            ignored: Vec::new(),
            perf_cpu: Duration::ZERO,
            perf_cpu_at_open: None,
            error: None,
        })
    }

    fn perf_said(&self) -> String {
        perf_said(&self.dir.path().join("stderr"))
    }

    /// Send `word` to perf and wait for its acknowledgement.
    fn switch(&mut self, word: &str) -> Result<(), String> {
        let mut stale = [0u8; 256];
        while matches!(self.ack.read(&mut stale), Ok(n) if n > 0) {}
        self.ctl
            .write_all(format!("{word}\n").as_bytes())
            .map_err(|e| format!("cannot reach perf: {e}"))?;
        let until = Instant::now() + ACK_WITHIN;
        let mut buf = [0u8; 64];
        loop {
            match self.ack.read(&mut buf) {
                Ok(n) if n > 0 => return Ok(()),
                Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => {
                    return Err(format!("cannot hear perf: {e}"));
                }
                _ => {}
            }
            if let Some(status) = self.perf.ended() {
                return Err(format!("perf ended ({status}): {}", self.perf_said()));
            }
            if crate::signals::interrupted() {
                return Err("interrupted".into());
            }
            if Instant::now() >= until {
                return Err(format!(
                    "perf did not answer '{word}' within {} s: {}",
                    ACK_WITHIN.as_secs(),
                    self.perf_said()
                ));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stop perf record (SIGINT: it writes its file) and wait for it, within `bound`; at
    /// once, and killed, on a signal to oemputx.
    fn end_perf(&mut self, bound: Duration) -> Result<std::process::ExitStatus, String> {
        self.perf.signal(nix::sys::signal::Signal::SIGINT);
        let until = Instant::now() + bound;
        loop {
            if let Some(status) = self.perf.ended() {
                self.perf.finish(Instant::now());
                return Ok(status);
            }
            if crate::signals::interrupted() || Instant::now() >= until {
                self.perf.signal(nix::sys::signal::Signal::SIGKILL);
                self.perf.finish(Instant::now());
                return Err(if crate::signals::interrupted() {
                    "interrupted while perf wrote its samples".into()
                } else {
                    format!(
                        "perf did not write its samples within {} s",
                        bound.as_secs()
                    )
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// CPU of perf and of the re-phasing thread: the profile's own cost.
    fn perf_cpu_now(&self) -> Option<Duration> {
        let perf = crate::accounting::clock::process(self.perf.id() as i32).ok()?;
        let own = self
            .rephase_tid
            .and_then(|t| crate::accounting::clock::thread(t).ok())
            .unwrap_or_default();
        Some(perf + own)
    }

    /// Leave the samples of these threads of oemputx out of every group.
    pub(crate) fn ignore_threads(&mut self, tids: &[i32]) {
        self.ignored.extend_from_slice(tids);
    }

    /// The window to place innermost (see [`Clip`]).
    pub(crate) fn clip(&self) -> Clip {
        self.clip.clone()
    }

    /// oemputx's threads that work for the profile, to leave out of the driver's CPU.
    pub(crate) fn own_threads(&self) -> Vec<i32> {
        self.rephase_tid.into_iter().collect()
    }

    fn rephasing(&mut self, on: bool) {
        let Some(tx) = &self.rephase else { return };
        // The lab's switch, to measure what re-phasing is for (lab/profile-accuracy.sh).
        if on && std::env::var("OEMPUTX_PROFILE_REPHASE").is_ok_and(|v| v == "off") {
            return;
        }
        if on {
            let _ = tx.send(Rephase::Run);
        } else {
            let (done, wait) = std::sync::mpsc::sync_channel(1);
            let paused = tx.send(Rephase::Pause(done)).is_ok()
                && wait
                    .recv_timeout(ACK_WITHIN + Duration::from_secs(2))
                    .is_ok();
            if !paused {
                // It stopped hearing perf: its switches may be unanswered, the window's
                // samples unevenly thinned.
                self.error.get_or_insert_with(|| {
                    format!(
                        "perf did not answer the re-phasing switches within {} s",
                        ACK_WITHIN.as_secs()
                    )
                });
            }
        }
    }

    /// Read perf's file, and tally what it sampled inside the windows by group.
    pub fn finish(mut self, table: &Rows, transactions: u64) -> Result<Profile, String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let status = self.end_perf(FINISH_WITHIN)?;
        let data = self.dir.path().join("perf.data");
        // perf record writes its file on SIGINT, then raises SIGINT again to end by it.
        use std::os::unix::process::ExitStatusExt;
        if !(status.success() || status.signal() == Some(nix::libc::SIGINT)) {
            return Err(format!(
                "perf record failed ({status}): {}",
                self.perf_said()
            ));
        }
        let window_s = self
            .windows
            .iter()
            .map(|(a, b)| b.saturating_sub(*a))
            .sum::<u64>() as f64
            / 1e9;
        // The innermost instants when the driver had them; perf's own otherwise.
        let clipped = self.clip.windows();
        if clipped.len() == self.windows.len() {
            self.windows = clipped;
        }
        let mut ignored = self.own_threads();
        ignored.extend(&self.ignored);
        let membership = Membership::of(table, &ignored);
        let cgroups = membership.cgroup_groups.clone();
        let mut tally = Attribution::new(membership, std::mem::take(&mut self.windows));
        script(&data, self.dir.path(), |s| tally.add(s))?;
        let (samples, attributed) = (tally.samples, tally.attributed);
        if samples == 0 && window_s > 0.0 {
            return Err(format!(
                "perf recorded no sample in the {window_s:.3} s window: {}",
                self.perf_said()
            ));
        }
        let groups = tally.groups(table, transactions);
        let per_tran = |d: Duration| d.as_secs_f64() * 1e6 / transactions.max(1) as f64;
        let mut profile = Profile {
            method: format!(
                "perf record -a -g -e cpu-clock -F {FREQUENCY_HZ}: every CPU, kept by the groups' process ids"
            ),
            frequency_hz: FREQUENCY_HZ,
            samples,
            attributed_samples: attributed,
            window_s,
            perf_cpu_us_per_tran: Some(per_tran(self.perf_cpu)),
            overhead: format!(
                "sampling interrupts are inside the groups' figures (≤ 5 % on the reference flow, docs/benchmarks.md); perf's own {:.2} µs/msg is outside them, in other CPU",
                per_tran(self.perf_cpu)
            ),
            groups,
            warnings: Vec::new(),
        };
        super::diff::warn(&mut profile, &cgroups);
        Ok(profile)
    }
}

/// Run `perf script` on `data` and hand each sample to `each`.
fn script(data: &PathBuf, dir: &Path, mut each: impl FnMut(stacks::Sample)) -> Result<(), String> {
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    let err_path = dir.join("script.stderr");
    let err = std::fs::File::create(&err_path).map_err(|e| e.to_string())?;
    let mut cmd = Command::new(perf_binary());
    // -f: a JIT's perf map (/tmp/perf-PID.map) belongs to the broker's user, which perf
    // otherwise ignores when oemputx runs as root.
    cmd.args([
        "script",
        "-f",
        "-F",
        "comm,pid,tid,time,period,ip,sym,dso",
        "--ns",
        "--no-inline",
        "-i",
    ])
    .arg(data)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(err);
    let mut perf = Group::spawn(&mut cmd, Duration::from_secs(1))
        .map_err(|e| format!("cannot run {} script: {e}", perf_binary()))?;
    let Some(out) = perf.child_mut().stdout.take() else {
        return Err("perf script gave no output".into());
    };
    // A watchdog, so that a perf script that stalls (prints nothing) is still cut short by
    // a signal or the bound: killing its group ends the read below.
    let pgid = nix::unistd::Pid::from_raw(perf.id() as i32);
    let done = std::sync::Arc::new(AtomicBool::new(false));
    let why = std::sync::Arc::new(AtomicU8::new(0));
    let watchdog = {
        let (done, why) = (done.clone(), why.clone());
        std::thread::spawn(move || {
            let until = Instant::now() + SCRIPT_WITHIN;
            while !done.load(Ordering::Relaxed) {
                let stop = if crate::signals::interrupted() {
                    1
                } else if Instant::now() > until {
                    2
                } else {
                    0
                };
                if stop != 0 {
                    why.store(stop, Ordering::Relaxed);
                    // The leader is reaped only after this thread is joined: the id is perf's.
                    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let read = stacks::read(BufReader::new(out), |s| {
        if why.load(Ordering::Relaxed) == 0 {
            each(s);
        }
    });
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    let status = perf.finish(Instant::now() + Duration::from_secs(5));
    match why.load(Ordering::Relaxed) {
        1 => return Err("interrupted while reading perf's samples".into()),
        2 => {
            return Err(format!(
                "perf script took over {} s: profile a shorter window (--count or --duration)",
                SCRIPT_WITHIN.as_secs()
            ));
        }
        _ => {}
    }
    read.map_err(|e| format!("cannot read perf script's output: {e}"))?;
    if !status.is_some_and(|s| s.success()) {
        return Err(format!("perf script failed: {}", perf_said(&err_path)));
    }
    Ok(())
}

/// The instants that bound the samples that count, taken innermost, beside the driver's own
/// CPU clock: what perf sampled while the CPU snapshots were taken stays out of the profile
/// as it stays out of the figures.
#[derive(Clone, Default)]
pub struct Clip(std::sync::Arc<std::sync::Mutex<ClipState>>);

#[derive(Default)]
struct ClipState {
    opened: Option<u64>,
    windows: Vec<(u64, u64)>,
}

impl Clip {
    fn windows(&self) -> Vec<(u64, u64)> {
        self.0.lock().map(|s| s.windows.clone()).unwrap_or_default()
    }
}

impl crate::window::Window for Clip {
    fn start(&mut self) {
        if let Ok(mut s) = self.0.lock() {
            s.opened = Some(monotonic_ns());
        }
    }
    fn end(&mut self) {
        if let Ok(mut s) = self.0.lock()
            && let Some(a) = s.opened.take()
        {
            s.windows.push((a, monotonic_ns()));
        }
    }
}

impl crate::window::Window for Recorder {
    fn start(&mut self) {
        if self.error.is_some() {
            return;
        }
        match self.switch("enable") {
            Ok(()) => {
                self.perf_cpu_at_open = self.perf_cpu_now();
                self.opened = Some(monotonic_ns());
                self.rephasing(true);
            }
            Err(e) => self.error = Some(e),
        }
    }

    fn end(&mut self) {
        let Some(opened) = self.opened.take() else {
            return;
        };
        self.windows.push((opened, monotonic_ns()));
        self.rephasing(false);
        if let (Some(a), Some(b)) = (self.perf_cpu_at_open.take(), self.perf_cpu_now()) {
            self.perf_cpu += b.saturating_sub(a);
        }
        if let Err(e) = self.switch("disable") {
            self.error.get_or_insert(e);
        }
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.rephase = None;
        // perf ends and the folder goes with it (perf.data is a few MB a second).
        let _ = self.end_perf(Duration::from_secs(5));
    }
}
