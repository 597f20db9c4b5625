//! Request messages: read from files (whole or one per line) or generated to a size.
//!
//! The default is the 630-byte XML request of the broker paper, read from
//! `msgfiles/request-630.xml` when it is there and otherwise taken from the copy built into
//! the binary, so `oemputx --count 1000` works from any directory.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The default request: the 630-byte XML message also shipped as `msgfiles/request-630.xml`.
pub const DEFAULT_REQUEST: &[u8] = include_bytes!("../msgfiles/request-630.xml");
/// Where the default request is looked for first.
pub const DEFAULT_PATH: &str = "msgfiles/request-630.xml";

/// The largest body any transport takes (RabbitMQ's default 128 MiB).
pub const MAX_GENERATED: usize = 128 * 1024 * 1024;
/// The largest file read with `--lines`.
const MAX_LINES_FILE: u64 = 1 << 30;
/// The most distinct messages a run cycles through (--lines, several --msgfile): each is a
/// body of its own in memory, so a file of a hundred million one-byte lines would take
/// gigabytes. A million distinct bodies is far more than a measurement needs.
pub const MAX_MESSAGES: usize = 1_000_000;

/// What went wrong reading messages; each is the user's input (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum MsgFileError {
    #[error(
        "{path}: more than {max} messages (--lines makes one of each non-empty line): a run cycles through its messages, so use a file of at most {max} lines"
    )]
    TooMany { path: PathBuf, max: usize },
    #[error(
        "--msg-size {size}: larger than any transport takes ({max} bytes, RabbitMQ's limit; IBM MQ and the embedded queue manager take 100 MiB): give a smaller size"
    )]
    TooLarge { size: usize, max: usize },
    #[error(
        "message file {path} does not exist: give an existing file with --msgfile, or --msg-size N for a generated body"
    )]
    Missing { path: PathBuf },
    #[error(
        "message file {path} cannot be read ({source}): check its permissions, or give another with --msgfile"
    )]
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "message file {path} is empty: a request needs at least one byte (or use --msg-size N)"
    )]
    Empty { path: PathBuf },
    #[error("message file {path} has no non-empty lines, and --lines sends one message per line")]
    NoLines { path: PathBuf },
    #[error("--msg-size 0 makes empty messages: give a size of at least 1 byte")]
    ZeroSize,
    #[error("message file: {0} (--msgfile takes regular files)")]
    Refused(crate::files::ReadError),
}

// The user's input (exit 2).
crate::usage_error!(MsgFileError);

/// The set of request bodies a run sends, in turn.
#[derive(Debug, Clone)]
pub struct Messages {
    /// The bodies; the driver sends body `i % len` as its i-th request.
    pub bodies: Vec<Arc<[u8]>>,
    /// Where they came from, for the report ("msgfiles/request-630.xml", "generated").
    pub source: String,
}

impl Messages {
    /// Largest body, in bytes.
    pub(crate) fn max_len(&self) -> usize {
        self.bodies.iter().map(|b| b.len()).max().unwrap_or(0)
    }

    /// Smallest body, in bytes.
    pub(crate) fn min_len(&self) -> usize {
        self.bodies.iter().map(|b| b.len()).min().unwrap_or(0)
    }

    /// A generated body of `size` bytes: printable, so a flow that logs it shows text.
    pub(crate) fn generated(size: usize) -> Result<Self, MsgFileError> {
        if size == 0 {
            return Err(MsgFileError::ZeroSize);
        }
        // Checked before the body is made: a size beyond every transport's limit would
        // otherwise allocate gigabytes (or abort) before the transport refused it.
        if size > MAX_GENERATED {
            return Err(MsgFileError::TooLarge {
                size,
                max: MAX_GENERATED,
            });
        }
        let pattern = b"OEMPUTX generated request body 0123456789 ";
        let body: Vec<u8> = pattern.iter().copied().cycle().take(size).collect();
        Ok(Messages {
            bodies: vec![body.into()],
            source: "generated".to_string(),
        })
    }

    /// The default request, from `msgfiles/` when present, else the built-in copy.
    pub(crate) fn default_request() -> Result<Self, MsgFileError> {
        let path = Path::new(DEFAULT_PATH);
        if path.is_file() {
            return Self::from_files(&[path.to_path_buf()], false);
        }
        Ok(Messages {
            bodies: vec![DEFAULT_REQUEST.into()],
            source: "built-in request-630.xml".into(),
        })
    }

    /// Read each file whole, or (with `lines`) one message per non-empty line.
    pub fn from_files(paths: &[PathBuf], lines: bool) -> Result<Self, MsgFileError> {
        let mut bodies = Vec::new();
        for path in paths {
            // A body is at most what a transport takes; a file of lines, a million of them.
            let max = if lines {
                MAX_LINES_FILE
            } else {
                MAX_GENERATED as u64
            };
            let data =
                crate::files::read_regular(path, max, "message file").map_err(|e| match e {
                    crate::files::ReadError::Missing { .. } => {
                        MsgFileError::Missing { path: path.clone() }
                    }
                    crate::files::ReadError::Io { source, .. } => MsgFileError::Unreadable {
                        path: path.clone(),
                        source,
                    },
                    e => MsgFileError::Refused(e),
                })?;
            if data.is_empty() {
                return Err(MsgFileError::Empty { path: path.clone() });
            }
            if lines {
                let before = bodies.len();
                // Counted before any body is made: the limit is checked in one pass over
                // the bytes, not after gigabytes of allocations.
                if before + split_lines(&data).count() > MAX_MESSAGES {
                    return Err(MsgFileError::TooMany {
                        path: path.clone(),
                        max: MAX_MESSAGES,
                    });
                }
                bodies.extend(split_lines(&data).map(Arc::from));
                if bodies.len() == before {
                    return Err(MsgFileError::NoLines { path: path.clone() });
                }
            } else {
                bodies.push(Arc::from(data));
            }
        }
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        Ok(Messages {
            bodies,
            source: names.join(", "),
        })
    }
}

/// Non-empty lines without their line ending (LF or CRLF).
fn split_lines(data: &[u8]) -> impl Iterator<Item = &[u8]> {
    data.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_request_is_the_630_byte_xml() {
        assert_eq!(DEFAULT_REQUEST.len(), 630);
        assert!(DEFAULT_REQUEST.starts_with(b"<?xml"));
    }

    #[test]
    fn more_lines_than_the_limit_are_refused_before_they_are_made() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("tiny-lines.txt");
        std::fs::write(&path, b"x\n".repeat(MAX_MESSAGES + 1)).expect("write");
        assert!(matches!(
            Messages::from_files(std::slice::from_ref(&path), true),
            Err(MsgFileError::TooMany { .. })
        ));
        // As one message the same file is fine.
        assert!(Messages::from_files(&[path], false).is_ok());
    }

    #[test]
    fn lines_drop_crlf_and_blank_lines() {
        let got: Vec<&[u8]> = split_lines(b"a\r\n\nbc\n\r\nd").collect();
        assert_eq!(got, vec![&b"a"[..], b"bc", b"d"]);
    }

    #[test]
    fn generated_body_has_the_asked_size() {
        let m = Messages::generated(1000).unwrap();
        assert_eq!(m.max_len(), 1000);
        assert!(matches!(
            Messages::generated(0),
            Err(MsgFileError::ZeroSize)
        ));
    }
}
