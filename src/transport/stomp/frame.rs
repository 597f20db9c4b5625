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

// A failure of the run (exit 1).
crate::runtime_error!(FrameError);

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

    #[cfg(test)]
    /// The frame with a body.
    pub(crate) fn with_body(mut self, body: &[u8]) -> Frame {
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

/// How far the scan of the frame at the front of a buffer has got, kept between reads so
/// that the next read resumes it: each byte is looked at a bounded number of times whatever
/// the size of the reads. (Scanning again from the frame's start on every read cost
/// n²/2k byte looks for a frame of n bytes in reads of k: issue 48, item 19.)
#[derive(Debug, Default)]
struct Progress {
    /// Bytes from the frame's start known to hold no blank line ending the headers, less
    /// the last two, which a blank line may yet begin in.
    head_scanned: usize,
    /// The headers, parsed once their block is whole.
    head: Option<Head>,
    /// Body bytes known to hold no NUL (a body without content-length ends at its first).
    body_scanned: usize,
}

/// A frame's command and headers, parsed once.
#[derive(Debug)]
struct Head {
    command: String,
    headers: Vec<(String, String)>,
    /// Bytes of the command line, the header lines and the blank line.
    len: usize,
    content_length: Option<usize>,
}

/// Where the header block ends in `buf` (the index after its blank line), looking from
/// `from` on; `looked` counts the bytes looked at.
fn header_end(buf: &[u8], from: usize, looked: &mut u64) -> Option<usize> {
    let mut i = from;
    while let Some(p) = buf[i..].iter().position(|b| *b == b'\n') {
        let at = i + p;
        *looked += (p + 1) as u64;
        // A blank line: "\n\n" or "\n\r\n".
        if buf.get(at + 1) == Some(&b'\n') {
            return Some(at + 2);
        }
        if buf.get(at + 1) == Some(&b'\r') && buf.get(at + 2) == Some(&b'\n') {
            return Some(at + 3);
        }
        i = at + 1;
    }
    *looked += (buf.len() - i) as u64;
    None
}

/// The command and headers of a whole header block (`block` ends with its blank line).
fn parse_head(block: &[u8]) -> Result<Head, FrameError> {
    let head = std::str::from_utf8(block)
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
    let content_length = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .map(|(_, v)| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| FrameError::Malformed(format!("content-length {v:?}")))
        })
        .transpose()?;
    Ok(Head {
        command,
        headers,
        len: block.len(),
        content_length,
    })
}

/// The frame that starts at `rest[0]` (no EOL before it) and how many bytes it took, going
/// on from `p`, where the last call on a shorter `rest` stopped; `None` until it is whole.
fn scan(
    rest: &[u8],
    p: &mut Progress,
    max: usize,
    looked: &mut u64,
) -> Result<Option<(Frame, usize)>, FrameError> {
    if rest.is_empty() {
        return Ok(None);
    }
    // The head is taken out while the body is looked at, and put back if it is not whole.
    let head = match p.head.take() {
        Some(head) => head,
        None => {
            let Some(end) = header_end(rest, p.head_scanned, looked) else {
                p.head_scanned = rest.len().saturating_sub(2);
                if rest.len() > max.min(1 << 20) {
                    return Err(FrameError::TooLarge(max.min(1 << 20)));
                }
                return Ok(None);
            };
            *looked += end as u64;
            parse_head(&rest[..end])?
        }
    };
    let frame_body = &rest[head.len..];
    let n = match head.content_length {
        Some(n) if n > max => return Err(FrameError::TooLarge(max)),
        Some(n) if frame_body.len() < n + 1 => None,
        Some(n) if frame_body[n] != 0 => {
            return Err(FrameError::Malformed(
                "no NUL after content-length bytes".into(),
            ));
        }
        Some(n) => Some(n),
        None => {
            let from = p.body_scanned.min(frame_body.len());
            let nul = frame_body[from..].iter().position(|b| *b == 0);
            *looked += nul.map_or(frame_body.len() - from, |k| k + 1) as u64;
            p.body_scanned = frame_body.len();
            if nul.is_none() && frame_body.len() > max {
                return Err(FrameError::TooLarge(max));
            }
            nul.map(|k| from + k)
        }
    };
    let Some(n) = n else {
        p.head = Some(head);
        return Ok(None);
    };
    *p = Progress::default();
    let used = head.len + n + 1;
    Ok(Some((
        Frame {
            command: head.command,
            headers: head.headers,
            body: frame_body[..n].to_vec(),
        },
        used,
    )))
}

/// How many EOLs (heart-beats) lead `buf`.
fn leading_eols(buf: &[u8]) -> usize {
    buf.iter()
        .position(|b| *b != b'\n' && *b != b'\r')
        .unwrap_or(buf.len())
}

/// The first frame in `buf` and how many bytes it took (EOLs before it, heart-beats, are
/// taken with it); `None` until the whole frame is there. A frame whose body would pass
/// `max` bytes is an error, so that a peer cannot make the reader buffer without bound.
/// Each call scans `buf` from its start: a connection that reads a frame in pieces keeps a
/// [`FrameReader`], which resumes where the last read stopped.
pub fn decode(buf: &[u8], max: usize) -> Result<Option<(Frame, usize)>, FrameError> {
    let start = leading_eols(buf);
    Ok(scan(&buf[start..], &mut Progress::default(), max, &mut 0)?
        .map(|(f, used)| (f, start + used)))
}

/// The frames of one connection's byte stream: bytes in as they are read, whole frames
/// out, each byte scanned a bounded number of times however the stream is cut into reads.
#[derive(Debug)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// Bytes before this are taken; the frame being read starts here.
    pos: usize,
    progress: Progress,
    max: usize,
    /// Bytes looked at so far, for the test that the work is linear.
    looked: u64,
}

impl FrameReader {
    /// A reader refusing frames whose body passes `max` bytes.
    pub fn new(max: usize) -> FrameReader {
        FrameReader {
            buf: Vec::with_capacity(8192),
            pos: 0,
            progress: Progress::default(),
            max,
            looked: 0,
        }
    }

    /// Bytes just read.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next whole frame, or `None` until more bytes come.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        // Heart-beats between frames are dropped as they come, not kept to be scanned
        // again; inside a frame the first byte is its command's, so this looks at one byte.
        let eols = leading_eols(&self.buf[self.pos..]);
        self.looked += eols as u64 + 1;
        self.pos += eols;
        match scan(
            &self.buf[self.pos..],
            &mut self.progress,
            self.max,
            &mut self.looked,
        )? {
            Some((f, used)) => {
                // Frames are taken from the front by moving `pos`; the bytes are shifted
                // out only once the buffer is used up or a frame is left partial, not once
                // per frame: a subscriber that reads hundreds of small frames per socket
                // read would otherwise move the whole rest of the buffer for each of them.
                self.pos += used;
                if self.pos == self.buf.len() {
                    self.buf.clear();
                    self.pos = 0;
                }
                Ok(Some(f))
            }
            None => {
                // The scan's progress counts from the frame's start, so it survives the shift.
                if self.pos > 0 {
                    self.buf.drain(..self.pos);
                    self.pos = 0;
                }
                Ok(None)
            }
        }
    }

    #[cfg(test)]
    /// Bytes looked at so far (each byte read is looked at a bounded number of times).
    pub(crate) fn scanned(&self) -> u64 {
        self.looked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `bytes` to a reader `step` bytes at a time: the frames it gave, and the bytes
    /// it scanned.
    fn fed(bytes: &[u8], step: usize) -> (Vec<Frame>, u64) {
        let mut r = FrameReader::new(1 << 24);
        let mut frames = Vec::new();
        for piece in bytes.chunks(step) {
            r.extend(piece);
            while let Some(f) = r.next_frame().expect("valid frames") {
                frames.push(f);
            }
        }
        (frames, r.scanned())
    }

    #[test]
    fn a_large_frame_in_many_small_reads_is_scanned_in_linear_work() {
        // Issue 48, item 19: every read rescanned the buffer from the start, so a frame of
        // n bytes in reads of k bytes cost n²/2k byte looks (a 100 MB body in 16 KiB reads:
        // 300 GB; this test's 64 KiB body in reads of 64 bytes: 33 million looks). Counted,
        // not timed: each byte may be looked at a few times, not n/k times.
        let big_body = vec![b'x'; 64 * 1024];
        let no_length = {
            let mut b = b"MESSAGE\ndestination:/queue/a\n\n".to_vec();
            b.extend_from_slice(&big_body);
            b.push(0);
            b
        };
        let with_length = Frame::new("MESSAGE").with_body(&big_body).encode();
        let long_headers = {
            let mut f = Frame::new("MESSAGE");
            for i in 0..2000 {
                f = f.header(&format!("h{i}"), "v".repeat(20));
            }
            f.with_body(b"end").encode()
        };
        let mut beats = vec![b'\n'; 50_000];
        beats.extend_from_slice(&Frame::new("RECEIPT").header("receipt-id", "1").encode());
        for (what, bytes) in [
            ("a body without content-length", &no_length),
            ("a body with content-length", &with_length),
            ("a long header block", &long_headers),
            ("heart-beats before a frame", &beats),
        ] {
            for step in [64, 7, 1] {
                let (frames, scanned) = fed(bytes, step);
                assert_eq!(frames.len(), 1, "{what}, reads of {step}");
                assert_eq!(frames[0], decode(bytes, 1 << 24).unwrap().unwrap().0);
                // A few looks per byte, and a few per read (the bytes a blank line may
                // yet begin in are looked at again): linear in what was read.
                let reads = bytes.len().div_ceil(step) as u64;
                assert!(
                    scanned <= 3 * bytes.len() as u64 + 4 * reads,
                    "{what} in reads of {step} bytes: {scanned} bytes scanned for {}",
                    bytes.len()
                );
            }
        }
    }

    #[test]
    fn a_reader_gives_back_to_back_frames_and_its_limits_hold() {
        let mut all = Vec::new();
        for i in 0..50 {
            all.extend_from_slice(b"\n");
            Frame::new("MESSAGE")
                .header("correlation-id", i.to_string())
                .with_body(format!("body {i}").as_bytes())
                .encode_into(&mut all);
            all.extend_from_slice(format!("RECEIPT\nreceipt-id:{i}\n\n\0").as_bytes());
        }
        for step in [1, 5, 4096] {
            let (frames, _) = fed(&all, step);
            assert_eq!(frames.len(), 100, "reads of {step}");
            assert_eq!(frames[98].get("correlation-id"), Some("49"));
            assert_eq!(frames[99].get("receipt-id"), Some("49"));
        }
        let mut r = FrameReader::new(10);
        r.extend(b"MESSAGE\n\n");
        r.extend(&[b'x'; 11]);
        assert_eq!(r.next_frame(), Err(FrameError::TooLarge(10)));
    }

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
