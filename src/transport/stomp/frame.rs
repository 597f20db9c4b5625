//! STOMP 1.2 frames (stomp.github.io/stomp-specification-1.2.html), encoded into and decoded
//! from byte buffers with no I/O, so that oemputx's blocking session and sample-flow's async
//! one share them.
//!
//! Why a codec of our own: the Rust STOMP crates are old or early (stomp 0.11 on futures
//! 0.1, tokio-stomp 0.2, async-stomp 0.6 EUPL and async only), and the driver's loop wants a
//! synchronous session that sends a frame and reads the next in a few microseconds. The
//! protocol is a line-based text header block and a body: a command line, `name:value`
//! header lines (`\`-escaped in 1.2 but in CONNECT and CONNECTED), a blank line, the body
//! (`content-length` bytes, else up to the first NUL) and a NUL. EOLs between frames are
//! heart-beats.

/// One frame.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frame {
    pub command: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A frame that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("a malformed STOMP frame ({0})")]
    Malformed(String),
    #[error("a STOMP frame larger than {0} bytes")]
    TooLarge(usize),
}

/// Commands whose headers are not escaped (STOMP 1.2 keeps CONNECT and CONNECTED as 1.0).
fn raw_headers(command: &str) -> bool {
    command == "CONNECT" || command == "CONNECTED"
}

fn escape(v: &str, out: &mut Vec<u8>) {
    for b in v.bytes() {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b':' => out.extend_from_slice(b"\\c"),
            b => out.push(b),
        }
    }
}

fn unescape(v: &str) -> Result<String, FrameError> {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('c') => out.push(':'),
            other => {
                return Err(FrameError::Malformed(format!(
                    "undefined escape \\{}",
                    other.map_or(String::new(), String::from)
                )));
            }
        }
    }
    Ok(out)
}

impl Frame {
    pub fn new(command: &str) -> Frame {
        Frame {
            command: command.to_string(),
            ..Frame::default()
        }
    }

    /// The frame with one more header.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Frame {
        self.headers.push((name.to_string(), value.into()));
        self
    }

    /// The frame with a body.
    pub fn with_body(mut self, body: &[u8]) -> Frame {
        self.body = body.to_vec();
        self
    }

    /// A header's value: its first occurrence wins (STOMP 1.2).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The frame's bytes appended to `out`; a body gets its `content-length` (binary-safe).
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        encode_parts(&self.command, &self.headers, &self.body, out);
    }

    /// The frame's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.body.len());
        self.encode_into(&mut out);
        out
    }
}

/// A frame's bytes from its parts, without building a [`Frame`] (the driver's hot path).
pub fn encode_parts(command: &str, headers: &[(String, String)], body: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(command.as_bytes());
    out.push(b'\n');
    let raw = raw_headers(command);
    for (k, v) in headers {
        if raw {
            out.extend_from_slice(k.as_bytes());
            out.push(b':');
            out.extend_from_slice(v.as_bytes());
        } else {
            escape(k, out);
            out.push(b':');
            escape(v, out);
        }
        out.push(b'\n');
    }
    if !body.is_empty() && !headers.iter().any(|(k, _)| k == "content-length") {
        out.extend_from_slice(b"content-length:");
        out.extend_from_slice(itoa::Buffer::new().format(body.len()).as_bytes());
        out.push(b'\n');
    }
    out.push(b'\n');
    out.extend_from_slice(body);
    out.push(0);
}

/// Where the header block ends in `buf` (the index after its blank line), if it does.
fn header_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(p) = buf[i..].iter().position(|b| *b == b'\n') {
        let at = i + p;
        // A blank line: "\n\n" or "\n\r\n".
        if buf.get(at + 1) == Some(&b'\n') {
            return Some(at + 2);
        }
        if buf.get(at + 1) == Some(&b'\r') && buf.get(at + 2) == Some(&b'\n') {
            return Some(at + 3);
        }
        i = at + 1;
    }
    None
}

/// The first frame in `buf` and how many bytes it took (EOLs before it, heart-beats, are
/// taken with it); `None` until the whole frame is there. A frame whose body would pass
/// `max` bytes is an error, so that a peer cannot make the reader buffer without bound.
pub fn decode(buf: &[u8], max: usize) -> Result<Option<(Frame, usize)>, FrameError> {
    let start = buf
        .iter()
        .position(|b| *b != b'\n' && *b != b'\r')
        .unwrap_or(buf.len());
    let rest = &buf[start..];
    if rest.is_empty() {
        return Ok(None);
    }
    let Some(end) = header_end(rest) else {
        if rest.len() > max.min(1 << 20) {
            return Err(FrameError::TooLarge(max.min(1 << 20)));
        }
        return Ok(None);
    };
    let head = std::str::from_utf8(&rest[..end])
        .map_err(|_| FrameError::Malformed("headers are not UTF-8".into()))?;
    let mut lines = head.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let command = lines.next().unwrap_or_default().to_string();
    if command.is_empty() {
        return Err(FrameError::Malformed("no command".into()));
    }
    let raw = raw_headers(&command);
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (k, v) = line
            .split_once(':')
            .ok_or_else(|| FrameError::Malformed(format!("header line without ':': {line:?}")))?;
        if raw {
            headers.push((k.to_string(), v.to_string()));
        } else {
            headers.push((unescape(k)?, unescape(v)?));
        }
    }
    let frame_body = &rest[end..];
    let length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map(|(_, v)| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| FrameError::Malformed(format!("content-length {v:?}")))
        })
        .transpose()?;
    let (body, used) = match length {
        Some(n) if n > max => return Err(FrameError::TooLarge(max)),
        Some(n) => {
            if frame_body.len() < n + 1 {
                return Ok(None);
            }
            if frame_body[n] != 0 {
                return Err(FrameError::Malformed(
                    "no NUL after content-length bytes".into(),
                ));
            }
            (frame_body[..n].to_vec(), n + 1)
        }
        None => match frame_body.iter().position(|b| *b == 0) {
            Some(n) => (frame_body[..n].to_vec(), n + 1),
            None if frame_body.len() > max => return Err(FrameError::TooLarge(max)),
            None => return Ok(None),
        },
    };
    Ok(Some((
        Frame {
            command,
            headers,
            body,
        },
        start + end + used,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_round_trips_with_escaped_headers_and_a_binary_body() {
        let f = Frame::new("SEND")
            .header("destination", "/queue/a:b")
            .header("note", "line\nbreak\\ and \r")
            .with_body(b"bin\0ary");
        let bytes = f.encode();
        assert!(
            bytes.windows(16).any(|w| w == b"content-length:7"),
            "{bytes:?}"
        );
        let (back, used) = decode(&bytes, 1 << 20).expect("valid").expect("whole");
        // encode adds the content-length header that a binary body needs.
        let expected = f.clone().header("content-length", "7");
        assert_eq!((back, used), (expected, bytes.len()));
    }

    #[test]
    fn partial_frames_wait_and_heart_beats_are_skipped() {
        let bytes = Frame::new("MESSAGE")
            .header("correlation-id", "x")
            .with_body(b"hello")
            .encode();
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut], 1 << 20), Ok(None), "{cut}");
        }
        let mut with_beats = b"\n\r\n\n".to_vec();
        with_beats.extend_from_slice(&bytes);
        with_beats.extend_from_slice(b"\nRECEIPT\nreceipt-id:1\n\n\0");
        let (f, used) = decode(&with_beats, 1 << 20).expect("valid").expect("whole");
        assert_eq!(
            (f.command.as_str(), f.get("correlation-id")),
            ("MESSAGE", Some("x"))
        );
        let (r, _) = decode(&with_beats[used..], 1 << 20)
            .expect("valid")
            .expect("whole");
        assert_eq!(r.get("receipt-id"), Some("1"));
    }

    #[test]
    fn a_body_without_length_ends_at_nul_and_connect_headers_are_not_unescaped() {
        let (f, _) = decode(b"CONNECTED\nversion:1.2\nserver:ActiveMQ/5.17\\c\n\n\0", 64)
            .expect("valid")
            .expect("whole");
        assert_eq!(f.get("server"), Some("ActiveMQ/5.17\\c"));
        let (e, _) = decode(b"ERROR\r\nmessage:bad\\cthing\r\n\r\nbody\0", 64)
            .expect("valid")
            .expect("whole");
        assert_eq!(
            (e.get("message"), e.body.as_slice()),
            (Some("bad:thing"), &b"body"[..])
        );
    }

    #[test]
    fn oversized_or_malformed_frames_are_errors_not_buffered_forever() {
        let big = Frame::new("MESSAGE").with_body(&[b'x'; 100]).encode();
        assert_eq!(decode(&big, 10), Err(FrameError::TooLarge(10)));
        assert!(decode(b"SEND\nnocolon\n\n\0", 64).is_err());
        assert!(decode(b"SEND\nk:\\x\n\n\0", 64).is_err());
        assert!(decode(b"SEND\ncontent-length:2\n\nabc", 64).is_err());
    }
}
