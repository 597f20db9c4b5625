//! Reading the files a user names (message files, saved reports and histories, baselines,
//! profiles, gate files, CA certificates, pid files): a regular file only where a file is
//! meant, and at most a stated size, so that `/dev/zero`, a FIFO or a runaway file is one
//! clear error instead of a hang or unbounded memory.

use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// Why a named file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{} does not exist", path.display())]
    Missing { path: PathBuf },
    #[error("{} is {kind}, not a regular file: name a file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{} is larger than the {} a {what} may be: is it the right file?", path.display(), shown_size(*max))]
    TooLarge {
        path: PathBuf,
        what: &'static str,
        max: u64,
    },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A file the user named that is missing, no regular file or too large is their input
/// (exit 2); one that could not be read is the run's failure (exit 1).
impl crate::exit_code::Classified for ReadError {
    fn exit(&self) -> crate::exit_code::Exit {
        match self {
            ReadError::Io { .. } => crate::exit_code::Exit::Failure,
            _ => crate::exit_code::Exit::Usage,
        }
    }
}

/// A bound in bytes as a person reads it: MiB, or KiB below one MiB.
fn shown_size(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{} KiB", (bytes >> 10).max(1))
    }
}

impl ReadError {
    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, ReadError::Missing { .. })
    }
}

/// The whole of `path`, which must be a regular file of at most `max` bytes (`what` names
/// it in the error). Opened without blocking, so that a FIFO with no writer is refused at
/// once rather than waited on.
pub fn read_regular(path: &Path, max: u64, what: &'static str) -> Result<Vec<u8>, ReadError> {
    let io = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing {
            path: path.to_path_buf(),
        },
        _ => ReadError::Io {
            path: path.to_path_buf(),
            source,
        },
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let t = meta.file_type();
    if !t.is_file() {
        let kind = if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a file"
        };
        return Err(ReadError::NotRegular {
            path: path.to_path_buf(),
            kind,
        });
    }
    let too_large = || ReadError::TooLarge {
        path: path.to_path_buf(),
        what,
        max,
    };
    if meta.len() > max {
        return Err(too_large());
    }
    // A file that grows while it is read is still bounded.
    let mut data = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1).read_to_end(&mut data).map_err(io)?;
    if data.len() as u64 > max {
        return Err(too_large());
    }
    Ok(data)
}

/// Where an output at `path` is written: `path` itself, or the file a symbolic link there
/// points to. Renaming a new file onto the link replaced the link with a plain file: a
/// shared history it pointed to never grew, and its folder's lock was taken beside the
/// link, not beside the history. A link whose target cannot be reached is refused, naming
/// both.
pub(crate) fn output_target(path: &Path) -> std::io::Result<PathBuf> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return Ok(path.to_path_buf());
    }
    std::fs::canonicalize(path).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            format!(
                "{} is a symbolic link to {}, which cannot be reached ({e}): point it at an existing file, or give the file's own path",
                path.display(),
                std::fs::read_link(path)
                    .map_or_else(|_| "?".to_string(), |t| t.display().to_string())
            ),
        )
    })
}

/// The folder a file at `path` is in: its parent, or `.` for a bare name.
pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// How long a run waits for another process's lock on a history's folder: a run saving
/// holds it for milliseconds, so a minute means a process that holds it for good.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// An exclusive lock on the folder `dir`, waited for at most [`LOCK_WAIT`], and given up
/// as soon as `stop` says why (a signal): a blocking `flock` waited forever for any process
/// holding the folder (opening it is enough to lock it), deaf to SIGTERM (issue 61, item 4).
pub(crate) fn lock_folder(
    dir: &Path,
    stop: impl Fn() -> Option<String>,
) -> anyhow::Result<std::fs::File> {
    use anyhow::Context;
    let folder = std::fs::File::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    let started = std::time::Instant::now();
    loop {
        match folder.try_lock() {
            Ok(()) => return Ok(folder),
            Err(std::fs::TryLockError::WouldBlock) => {}
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(e).with_context(|| format!("locking {}", dir.display()));
            }
        }
        if let Some(why) = stop() {
            anyhow::bail!("{why} while waiting for the lock on {}", dir.display());
        }
        if started.elapsed() >= LOCK_WAIT {
            anyhow::bail!(
                "{} has been locked by another process for {} s (a run saving into it holds it for milliseconds): find it with `fuser -v {}` or `lsof +D {}`, or save elsewhere",
                dir.display(),
                LOCK_WAIT.as_secs(),
                dir.display(),
                dir.display()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// FIFOs opened for an output before the run (see [`hold_fifo`]), kept open until it is
/// written: closing one would give its reader an end of file before the report came.
fn held() -> &'static std::sync::Mutex<Vec<(PathBuf, std::fs::File)>> {
    static HELD: std::sync::OnceLock<std::sync::Mutex<Vec<(PathBuf, std::fs::File)>>> =
        std::sync::OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// Open `path` for writing in place (a device, a FIFO), never waiting for a FIFO's reader.
/// A FIFO opened for writing blocks until some process opens it for reading — forever,
/// deaf to SIGTERM, with every other output unwritten (issue 48, item 20) — so it is
/// opened with O_NONBLOCK, where no reader is ENXIO: an error naming the path and what to
/// do. The file is then made blocking again, so that the reader takes a report larger
/// than the pipe's buffer at its own pace instead of the write failing with EAGAIN.
pub(crate) fn open_in_place(path: &Path) -> std::io::Result<std::fs::File> {
    if let Some(file) = held().lock().ok().and_then(|mut h| {
        let i = h.iter().position(|(p, _)| p == path)?;
        Some(h.swap_remove(i).1)
    }) {
        return Ok(file);
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(nix::libc::ENXIO) {
                std::io::Error::other(format!(
                    "{} is a FIFO with no reader: start the reader first, or give a file path",
                    path.display()
                ))
            } else {
                e
            }
        })?;
    // Blocking again for the write, through nix's safe fcntl.
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(&file, FcntlArg::F_GETFL)?);
    fcntl(
        &file,
        FcntlArg::F_SETFL(flags.difference(OFlag::O_NONBLOCK)),
    )?;
    Ok(file)
}

/// Check before the run that the FIFO at `path` has a reader (an error naming it if not),
/// and keep it open for [`open_in_place`], which hands it to the writer after the run.
pub(crate) fn hold_fifo(path: &Path) -> std::io::Result<()> {
    // Once per path: a second descriptor left open after the write would keep the reader
    // from its end of file until oemputx exits.
    if held()
        .lock()
        .is_ok_and(|h| h.iter().any(|(p, _)| p == path))
    {
        return Ok(());
    }
    let file = open_in_place(path)?;
    if let Ok(mut h) = held().lock() {
        h.push((path.to_path_buf(), file));
    }
    Ok(())
}

/// Write `bytes` to `out` (a FIFO, a pipe, stdout) in pieces the reader has room for, so
/// that a signal ends a write whose reader stopped reading: a blocking write(2) into a full
/// pipe is restarted after the handler and held SIGTERM for ever (issue 61, class b). A
/// signal that came before the write (the run it reports was interrupted) does not stop it:
/// that report is what the signal asked for, and a second signal still ends the process.
/// Once one write is abandoned, every later one stops at the signal too: the outputs after
/// a stalled FIFO must not stall again.
pub(crate) fn write_watching<W: std::io::Write + std::os::fd::AsFd>(
    out: &mut W,
    bytes: &[u8],
) -> std::io::Result<()> {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    // PIPE_BUF: a piece this size fits in a pipe that poll says is not full.
    const PIECE: usize = 4096;
    static ABANDONED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let abandoned = || ABANDONED.load(std::sync::atomic::Ordering::Relaxed);
    let signalled_before = crate::signals::interrupted() && !abandoned();
    for piece in bytes.chunks(PIECE) {
        loop {
            let mut fds = [PollFd::new(out.as_fd(), PollFlags::POLLOUT)];
            match poll(&mut fds, PollTimeout::from(50u16)) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => {}
                Ok(_) => break,
                Err(e) => return Err(e.into()),
            }
            if !signalled_before && crate::signals::interrupted() {
                ABANDONED.store(true, std::sync::atomic::Ordering::Relaxed);
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Interrupted,
                    "a signal came while the output's reader was not reading (a full pipe or FIFO); the output is incomplete",
                ));
            }
        }
        out.write_all(piece)?;
        out.flush()?;
    }
    Ok(())
}

/// Whether `path` is a FIFO (a named pipe).
pub(crate) fn is_fifo(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// [`read_regular`] as UTF-8 text.
pub(crate) fn read_text(path: &Path, max: u64, what: &'static str) -> Result<String, ReadError> {
    let data = read_regular(path, max, what)?;
    String::from_utf8(data).map_err(|e| ReadError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
    })
}

/// The largest saved report, history or baseline read back (a report of a million rounds
/// is far smaller).
pub const MAX_REPORT_BYTES: u64 = 256 << 20;
/// The largest profile, gate file or certificate file.
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// A FIFO at `path`, for the tests of what reads and writes one.
#[cfg(test)]
pub(crate) fn test_fifo(path: &Path) -> PathBuf {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    path.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_fifos_and_directories_are_refused_by_kind_and_a_large_file_by_size() {
        let dir = std::env::temp_dir().join(format!("oemputx-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let fifo = crate::files::test_fifo(&dir.join("fifo"));
        let big = dir.join("big");
        std::fs::write(&big, vec![b'x'; 2048]).expect("write");
        let cases: [(&Path, &str); 3] = [
            (Path::new("/dev/zero"), "a character device"),
            (&fifo, "a FIFO"),
            (&dir, "a directory"),
        ];
        for (p, kind) in cases {
            let e = read_regular(p, 1024, "message file").expect_err("refused");
            assert!(e.to_string().contains(kind), "{e}");
        }
        let e = read_regular(&big, 1024, "message file").expect_err("too large");
        assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
        assert_eq!(
            read_regular(&big, 4096, "x").map(|d| d.len()).ok(),
            Some(2048)
        );
        assert!(read_regular(&dir.join("none"), 1, "x").is_err_and(|e| e.is_missing()));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
