//! A lean synchronous AMQP 0-9-1 session for the hot loop: one blocking TCP socket per task,
//! the frames oemputx needs written and read by hand, no runtime, no tasks, no channels.
//!
//! Why: the driver's CPU per round trip is one of the rows it reports, and through amqprs it
//! was about 1.6 times a minimal C client's on librabbitmq (issue 18; `cargo bench --bench
//! loop_overhead` has the C client beside it). amqprs spends it in its reader, writer and
//! dispatcher tasks and the channels between them: every reply crosses three task hops and
//! every request is copied into two buffers. Here a put is one `send` of a frame set built
//! in a reused buffer, and a get reads the socket straight into a reused buffer and parses
//! the reply in place.
//!
//! The session covers what the default loop uses: plain `amqp://`, its own reply queue
//! (temporary or named, or RabbitMQ's direct reply-to) consumed without acks, persistent or
//! not; and what only it does: a reply queue per request, and publisher confirms. `amqps://`, a named reply
//! queue shared by several tasks and `--syncpoint` keep the amqprs session, as does
//! `OEMPUTX_AMQP_CLIENT=amqprs` (for comparing the two). The connection is set up by the
//! spec's handshake with heartbeats off (the client's tune-ok decides, and a synchronous
//! loop cannot answer heartbeats while it waits); the broker's closes and a cancelled
//! consumer end the session with their reason, as through amqprs.

use super::super::{Reply, Session, TransportError};
use super::url::AmqpEndpoint;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

const FRAME_METHOD: u8 = 1;
const FRAME_HEADER: u8 = 2;
const FRAME_BODY: u8 = 3;
const FRAME_HEARTBEAT: u8 = 8;
const FRAME_END: u8 = 0xCE;
/// The largest frame this client asks for (RabbitMQ's default, 128 KiB).
const FRAME_MAX: u32 = 131_072;
const CHANNEL: u16 = 1;
/// The socket's read timeout while a get's deadline is further off: a get wakes this often
/// to look at its deadline when nothing comes.
const READ_SLICE: Duration = Duration::from_millis(20);

/// Where a lean session's replies come back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeanReply {
    /// A temporary queue of the session's own, declared once.
    Temporary,
    /// A queue by name: a named one of its own, or direct reply-to's pseudo-queue.
    Queue(String),
    /// A temporary queue per request (see [`LeanSession::put`]).
    PerRequest,
}

/// What a lean session is opened with.
pub struct LeanOptions<'a> {
    pub request_queue: &'a str,
    pub reply: LeanReply,
    pub persistent: bool,
    /// Publisher confirms: at most this many requests unconfirmed after a put.
    pub confirm_window: Option<u32>,
    /// The longest a put waits for confirms (the run's --wait).
    pub wait: Duration,
    pub task: usize,
}

/// Publisher confirms under way: the delivery tags published and not yet confirmed.
struct Confirms {
    window: usize,
    published: u64,
    unconfirmed: std::collections::VecDeque<u64>,
}

impl Confirms {
    /// basic.ack: this tag, or every tag up to it.
    fn ack(&mut self, tag: u64, multiple: bool) {
        if multiple {
            while self.unconfirmed.front().is_some_and(|t| *t <= tag) {
                self.unconfirmed.pop_front();
            }
        } else if let Some(at) = self.unconfirmed.iter().position(|t| *t == tag) {
            self.unconfirmed.remove(at);
        }
    }
}

/// One task's connection, channel 1, and reply consumer.
pub struct LeanSession {
    sock: TcpStream,
    target: String,
    /// The node of the endpoint the connection went to (`host:port`).
    node: Option<String>,
    request_queue: String,
    reply_queue: String,
    /// A new reply queue and consumer for every request (`--reply-queue per-request`).
    per_request: bool,
    /// Per-request queues made so far, to name the next.
    made: u64,
    /// The consumer tag of the delivery being read (per-request: cancelled with its reply).
    delivering: Option<String>,
    task: usize,
    confirms: Option<Confirms>,
    wait: Duration,
    /// Replies read while a put waited for confirms, for the next gets.
    stash: std::collections::VecDeque<Reply>,
    persistent: bool,
    frame_max: usize,
    /// The read buffer, allocated (and zeroed) once: bytes read and not yet parsed are
    /// `inbuf[start..end]`, so a read needs no resizing or zeroing.
    inbuf: Vec<u8>,
    start: usize,
    end: usize,
    /// Frames of the next send.
    out: Vec<u8>,
    /// The read timeout now set on the socket, to set it only when it changes.
    timeout: Option<Duration>,
    /// A delivery being assembled: its correlation id, body size, and bytes seen.
    pending: Option<(Option<String>, u64, u64)>,
    closed: bool,
}

/// A method frame's class and method ids and arguments.
struct Method<'a> {
    class: u16,
    method: u16,
    args: &'a [u8],
}

/// Reading AMQP's field types off a byte slice.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(b: &'a [u8]) -> Self {
        Cursor { b, at: 0 }
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|s| u16::from_be_bytes([s[0], s[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .map(|s| u64::from_be_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]))
    }
    fn shortstr(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()? as usize;
        self.take(n)
    }
    fn longstr(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

fn put_shortstr(out: &mut Vec<u8>, s: &[u8]) {
    // Short strings are at most 255 bytes; queue names and ids oemputx makes are far shorter,
    // and longer ones were refused when the URL and queues were checked.
    let n = s.len().min(255);
    out.push(n as u8);
    out.extend_from_slice(&s[..n]);
}

fn put_longstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u32).to_be_bytes());
    out.extend_from_slice(s);
}

/// Append a frame whose payload `fill` writes, sizing it afterwards.
fn frame(out: &mut Vec<u8>, kind: u8, channel: u16, fill: impl FnOnce(&mut Vec<u8>)) {
    out.push(kind);
    out.extend_from_slice(&channel.to_be_bytes());
    let size_at = out.len();
    out.extend_from_slice(&[0; 4]);
    fill(out);
    let size = (out.len() - size_at - 4) as u32;
    out[size_at..size_at + 4].copy_from_slice(&size.to_be_bytes());
    out.push(FRAME_END);
}

fn method(out: &mut Vec<u8>, channel: u16, class: u16, id: u16, args: impl FnOnce(&mut Vec<u8>)) {
    frame(out, FRAME_METHOD, channel, |o| {
        o.extend_from_slice(&class.to_be_bytes());
        o.extend_from_slice(&id.to_be_bytes());
        args(o);
    });
}

/// A close's reply code and text, as the broker gave them.
fn close_reason(args: &[u8]) -> String {
    let mut c = Cursor::new(args);
    let code = c.u16().unwrap_or(0);
    let text = c
        .shortstr()
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    format!("{code} {text}")
}

/// The longest one read waits during set-up before it looks for a signal.
const SETUP_SLICE: Duration = Duration::from_millis(50);

impl LeanSession {
    /// Connect, log in, open channel 1, declare the temporary reply queue (or use the named
    /// one) and consume from it without acks.
    pub fn open(
        ep: &AmqpEndpoint,
        target: &str,
        o: LeanOptions,
    ) -> Result<LeanSession, TransportError> {
        let lost = |why: String| TransportError::ConnectionLost {
            target: target.to_string(),
            why,
        };
        let addr = std::net::ToSocketAddrs::to_socket_addrs(&(ep.host.as_str(), ep.port))
            .map_err(|e| lost(format!("resolving {}: {e}", ep.host)))?
            .next()
            .ok_or_else(|| lost(format!("{} has no address", ep.host)))?;
        let sock = TcpStream::connect_timeout(&addr, super::CONNECT_TIMEOUT)
            .map_err(|e| lost(format!("connecting: {e}")))?;
        // Requests are single small frames sets sent one at a time: no Nagle delay.
        sock.set_nodelay(true)
            .map_err(|e| lost(format!("setting TCP_NODELAY: {e}")))?;
        let mut s = LeanSession {
            sock,
            target: target.to_string(),
            node: None,
            request_queue: o.request_queue.to_string(),
            reply_queue: String::new(),
            per_request: o.reply == LeanReply::PerRequest,
            made: 0,
            delivering: None,
            task: o.task,
            confirms: o.confirm_window.map(|w| Confirms {
                window: w.max(1) as usize,
                published: 0,
                unconfirmed: Default::default(),
            }),
            wait: o.wait,
            stash: Default::default(),
            persistent: o.persistent,
            frame_max: FRAME_MAX as usize,
            inbuf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            out: Vec::with_capacity(4096),
            timeout: None,
            pending: None,
            closed: false,
        };
        s.handshake(ep, o.task)?;
        if s.confirms.is_some() {
            // confirm.select, waiting for its select-ok.
            method(&mut s.out, CHANNEL, 85, 10, |o| o.push(0));
            s.send()?;
            s.expect(85, 11, "turning on publisher confirms (confirm.select)")?;
        }
        match o.reply {
            // Each put declares its own (LeanSession::put).
            LeanReply::PerRequest => {}
            LeanReply::Queue(q) => {
                s.reply_queue = q;
                s.consume(o.task)?;
            }
            LeanReply::Temporary => {
                s.reply_queue = s.declare_temporary()?;
                s.consume(o.task)?;
            }
        }
        Ok(s)
    }

    fn lost(&self, why: impl std::fmt::Display) -> TransportError {
        TransportError::ConnectionLost {
            target: self.target.clone(),
            why: why.to_string(),
        }
    }

    fn send(&mut self) -> Result<(), TransportError> {
        let r = self.sock.write_all(&self.out);
        self.out.clear();
        r.map_err(|e| self.lost(format!("sending to the broker: {e}")))
    }

    /// Wait (without a deadline) for method `class.method` on `channel`, during set-up.
    fn expect(&mut self, class: u16, id: u16, what: &str) -> Result<Vec<u8>, TransportError> {
        // Read in slices, so that a signal ends a wait on a silent broker at once.
        self.set_timeout(Some(SETUP_SLICE))?;
        let deadline = Instant::now() + super::CONNECT_TIMEOUT;
        loop {
            if crate::signals::interrupted() {
                return Err(TransportError::connecting(&self.target));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(self.lost(format!(
                    "no answer to {what} within {} s",
                    super::CONNECT_TIMEOUT.as_secs()
                )));
            }
            match self.next_frame(deadline.min(now + SETUP_SLICE))? {
                None => continue,
                Some((FRAME_METHOD, _, payload)) => {
                    let m = parse_method(&payload).ok_or_else(|| self.lost("a malformed frame"))?;
                    if (m.class, m.method) == (class, id) {
                        return Ok(m.args.to_vec());
                    }
                    self.unexpected(&m, what)?;
                }
                Some(_) => {}
            }
        }
    }

    /// A method the loop does not wait for: the broker's closes and cancels end the session.
    fn unexpected(&mut self, m: &Method, what: &str) -> Result<(), TransportError> {
        match (m.class, m.method) {
            (10, 50) => {
                let why = close_reason(m.args);
                method(&mut self.out, 0, 10, 51, |_| {});
                let _ = self.send();
                self.closed = true;
                Err(self.lost(format!("the broker closed the connection: {why}")))
            }
            (20, 40) => {
                let why = close_reason(m.args);
                method(&mut self.out, CHANNEL, 20, 41, |_| {});
                let _ = self.send();
                Err(self.lost(format!("the broker closed the channel: {why}")))
            }
            (60, 30) => {
                Err(self
                    .lost("the broker cancelled the reply consumer (was the reply queue deleted?)"))
            }
            _ => Err(self.lost(format!(
                "unexpected method {}.{} while {what}",
                m.class, m.method
            ))),
        }
    }

    fn handshake(&mut self, ep: &AmqpEndpoint, task: usize) -> Result<(), TransportError> {
        self.out.extend_from_slice(b"AMQP\x00\x00\x09\x01");
        self.send()?;
        self.expect(10, 10, "logging in (connection.start)")?;
        let name = format!("oemputx-task-{task}");
        method(&mut self.out, 0, 10, 11, |o| {
            // Client properties: the connection's name, as the management UI shows it.
            let mut table = Vec::new();
            put_shortstr(&mut table, b"connection_name");
            table.push(b'S');
            put_longstr(&mut table, name.as_bytes());
            put_longstr(o, &table);
            put_shortstr(o, b"PLAIN");
            let mut creds = vec![0u8];
            creds.extend_from_slice(ep.user.as_bytes());
            creds.push(0);
            creds.extend_from_slice(ep.password.expose().as_bytes());
            put_longstr(o, &creds);
            put_shortstr(o, b"en_US");
        });
        self.send()?;
        let tune = self.expect(
            10,
            30,
            "logging in (connection.tune; was the login refused?)",
        )?;
        let mut c = Cursor::new(&tune);
        let channel_max = c.u16().unwrap_or(0);
        let server_frame_max = c.u32().unwrap_or(0);
        let frame_max = match server_frame_max {
            0 => FRAME_MAX,
            n => n.min(FRAME_MAX),
        };
        self.frame_max = frame_max as usize;
        method(&mut self.out, 0, 10, 31, |o| {
            o.extend_from_slice(&channel_max.to_be_bytes());
            o.extend_from_slice(&frame_max.to_be_bytes());
            o.extend_from_slice(&0u16.to_be_bytes());
        });
        method(&mut self.out, 0, 10, 40, |o| {
            put_shortstr(o, ep.vhost.as_bytes());
            put_shortstr(o, b"");
            o.push(0);
        });
        self.send()?;
        self.expect(10, 41, "opening the virtual host")?;
        method(&mut self.out, CHANNEL, 20, 10, |o| put_shortstr(o, b""));
        self.send()?;
        self.expect(20, 11, "opening a channel")?;
        Ok(())
    }

    fn declare_temporary(&mut self) -> Result<String, TransportError> {
        method(&mut self.out, CHANNEL, 50, 10, |o| {
            o.extend_from_slice(&0u16.to_be_bytes());
            put_shortstr(o, b"");
            // exclusive (bit 2) and auto-delete (bit 3): gone with the connection.
            o.push(0b0000_1100);
            put_longstr(o, b"");
        });
        self.send()?;
        let ok = self.expect(50, 11, "declaring a temporary reply queue")?;
        let name = Cursor::new(&ok)
            .shortstr()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| self.lost("the broker did not name the temporary reply queue"))?;
        Ok(name)
    }

    fn consume(&mut self, task: usize) -> Result<(), TransportError> {
        let (queue, tag) = (self.reply_queue.clone(), format!("oemputx-{task}"));
        method(&mut self.out, CHANNEL, 60, 20, |o| {
            o.extend_from_slice(&0u16.to_be_bytes());
            put_shortstr(o, queue.as_bytes());
            put_shortstr(o, tag.as_bytes());
            // no-ack (bit 1): replies are settled on delivery, as the amqprs session does.
            o.push(0b0000_0010);
            put_longstr(o, b"");
        });
        self.send()?;
        self.expect(60, 21, &format!("consuming from reply queue '{queue}'"))?;
        Ok(())
    }

    fn set_timeout(&mut self, t: Option<Duration>) -> Result<(), TransportError> {
        // A zero timeout means "block forever" to the socket: wait a microsecond instead.
        let t = t.map(|d| d.max(Duration::from_micros(1)));
        if self.timeout != t {
            self.sock
                .set_read_timeout(t)
                .map_err(|e| self.lost(format!("setting the read timeout: {e}")))?;
            self.timeout = t;
        }
        Ok(())
    }

    /// The next whole frame (type, channel, payload), reading until `deadline`; `None` at
    /// the deadline. A frame read in part stays buffered for the next call.
    fn next_frame(
        &mut self,
        deadline: Instant,
    ) -> Result<Option<(u8, u16, Vec<u8>)>, TransportError> {
        loop {
            if let Some((kind, channel, range)) = self.buffered_frame()? {
                let payload = self.inbuf[range].to_vec();
                return Ok(Some((kind, channel, payload)));
            }
            if !self.fill(deadline)? {
                return Ok(None);
            }
        }
    }

    /// A whole frame in the buffer: its type, channel and payload's range; consumed.
    fn buffered_frame(
        &mut self,
    ) -> Result<Option<(u8, u16, std::ops::Range<usize>)>, TransportError> {
        let b = &self.inbuf[self.start..self.end];
        if b.len() < 7 {
            return Ok(None);
        }
        let size = u32::from_be_bytes([b[3], b[4], b[5], b[6]]) as usize;
        if size > self.frame_max + 8 {
            return Err(self.lost(format!("a frame of {size} bytes, over the agreed maximum")));
        }
        if b.len() < 8 + size {
            return Ok(None);
        }
        if b[7 + size] != FRAME_END {
            return Err(self.lost("a frame without its end marker: the stream is out of step"));
        }
        let (kind, channel) = (b[0], u16::from_be_bytes([b[1], b[2]]));
        let payload = self.start + 7..self.start + 7 + size;
        self.start += 8 + size;
        Ok(Some((kind, channel, payload)))
    }

    /// Read more bytes, waiting at most until `deadline`; false once the deadline has passed
    /// with nothing read (a read that timed out before the deadline is simply tried again
    /// by the caller: true).
    fn fill(&mut self, deadline: Instant) -> Result<bool, TransportError> {
        // Room to read into: start over once all is parsed, move a tail to the front when
        // the end is near, and grow only for a frame larger than the buffer (rare).
        const ROOM: usize = 16 * 1024;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        } else if self.inbuf.len() - self.end < ROOM {
            self.inbuf.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, self.end - self.start);
        }
        if self.inbuf.len() - self.end < ROOM {
            let grown = (self.inbuf.len() * 2).max(self.end + ROOM);
            self.inbuf.resize(grown, 0);
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        // One fixed read timeout while the deadline is further off than it, so that the hot
        // loop makes no setsockopt per get; the exact rest only for the last stretch.
        self.set_timeout(Some((deadline - now).min(READ_SLICE)))?;
        match self.sock.read(&mut self.inbuf[self.end..]) {
            Ok(0) => Err(self.lost(
                "the connection to the broker was lost (the broker closed it, or the network failed)",
            )),
            Ok(n) => {
                self.end += n;
                Ok(true)
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Ok(Instant::now() < deadline)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(self.lost(format!("reading from the broker: {e}"))),
        }
    }

    /// Take the frames in the buffer, assembling deliveries; a whole reply ends it.
    fn take_reply(&mut self) -> Result<Option<Reply>, TransportError> {
        while let Some((kind, _channel, range)) = self.buffered_frame()? {
            match kind {
                FRAME_METHOD => {
                    // basic.deliver (60.60) is read in place; anything else is rare.
                    if self.inbuf.get(range.start..range.start + 4) == Some(&[0, 60, 0, 60]) {
                        self.pending = Some((None, 0, 0));
                        if self.per_request {
                            // Its consumer tag names the request's own queue and consumer.
                            self.delivering = Cursor::new(&self.inbuf[range.start + 4..range.end])
                                .shortstr()
                                .map(|t| String::from_utf8_lossy(t).into_owned());
                        }
                        continue;
                    }
                    let payload = self.inbuf[range].to_vec();
                    let m = parse_method(&payload).ok_or_else(|| self.lost("a malformed frame"))?;
                    self.confirmed(&m)?;
                }
                FRAME_HEADER => {
                    let (correl, size) = parse_header(&self.inbuf[range])
                        .ok_or_else(|| self.lost("a malformed content header"))?;
                    self.pending = Some((correl, size, 0));
                    if size == 0 {
                        return Ok(self.finish_delivery());
                    }
                }
                FRAME_BODY => {
                    if let Some(p) = self.pending.as_mut() {
                        p.2 += range.len() as u64;
                        if p.2 >= p.1 {
                            return Ok(self.finish_delivery());
                        }
                    }
                }
                FRAME_HEARTBEAT => {}
                _ => return Err(self.lost(format!("an unknown frame type {kind}"))),
            }
        }
        Ok(None)
    }

    fn finish_delivery(&mut self) -> Option<Reply> {
        if let Some(tag) = self.delivering.take() {
            // The request's queue has served: cancel its consumer (no-wait), which deletes
            // the auto-delete queue. Sent with the next put, in the same write.
            method(&mut self.out, CHANNEL, 60, 30, |o| {
                put_shortstr(o, tag.as_bytes());
                o.push(1);
            });
        }
        self.pending.take().map(|(correl_id, size, _)| Reply {
            correl_id,
            len: size as usize,
        })
    }

    /// A method among the replies: a publisher confirm (basic.ack), a refusal (basic.nack)
    /// or what [`Self::unexpected`] ends the session with.
    fn confirmed(&mut self, m: &Method) -> Result<(), TransportError> {
        let mut c = Cursor::new(m.args);
        match ((m.class, m.method), self.confirms.as_mut()) {
            ((60, 80), Some(confirms)) => {
                let tag = c.u64().unwrap_or(0);
                let multiple = c.u8().is_some_and(|b| b & 1 != 0);
                confirms.ack(tag, multiple);
                Ok(())
            }
            ((60, 120), Some(_)) => Err(self.lost(format!(
                "the broker nacked request {} (it could not take it: a queue's length limit, a full disk, an internal error); see the broker's log",
                c.u64().unwrap_or(0)
            ))),
            _ => self.unexpected(m, "waiting for a reply"),
        }
    }

    /// After a put: wait until fewer than the window's requests are unconfirmed, keeping
    /// the replies that come meanwhile. A signal ends the wait at once (the driver then
    /// abandons the request and reports the run as interrupted).
    fn await_confirms(&mut self) -> Result<(), TransportError> {
        let deadline = Instant::now() + self.wait;
        loop {
            match &self.confirms {
                Some(c) if c.unconfirmed.len() >= c.window => {}
                _ => return Ok(()),
            }
            if crate::signals::interrupted() {
                return Ok(());
            }
            if let Some(r) = self.take_reply()? {
                self.stash.push_back(r);
                continue;
            }
            if !self.fill(deadline.min(Instant::now() + READ_SLICE))? && Instant::now() >= deadline
            {
                return Err(self.lost(format!(
                    "no publisher confirm within {} s (--wait): the broker is not confirming what it takes",
                    self.wait.as_secs_f64()
                )));
            }
        }
    }

    /// A reply queue and its consumer for one request (`--reply-queue per-request`), both
    /// no-wait so that they go out in the put's own write: an exclusive, auto-delete queue
    /// named by the client (JMS's temporary queue per request, as JMSPerfHarness makes
    /// them), deleted when its consumer is cancelled after the reply.
    fn request_queue_of_its_own(&mut self) {
        self.made += 1;
        let name = format!(
            "oemputx.reply.{}.{}.{}",
            std::process::id(),
            self.task,
            self.made
        );
        method(&mut self.out, CHANNEL, 50, 10, |o| {
            o.extend_from_slice(&0u16.to_be_bytes());
            put_shortstr(o, name.as_bytes());
            // exclusive (bit 2), auto-delete (bit 3), no-wait (bit 4).
            o.push(0b0001_1100);
            put_longstr(o, b"");
        });
        method(&mut self.out, CHANNEL, 60, 20, |o| {
            o.extend_from_slice(&0u16.to_be_bytes());
            put_shortstr(o, name.as_bytes());
            put_shortstr(o, name.as_bytes());
            // no-ack (bit 1), no-wait (bit 3).
            o.push(0b0000_1010);
            put_longstr(o, b"");
        });
        self.reply_queue = name;
    }
}

fn parse_method(payload: &[u8]) -> Option<Method<'_>> {
    let mut c = Cursor::new(payload);
    Some(Method {
        class: c.u16()?,
        method: c.u16()?,
        args: payload.get(4..)?,
    })
}

/// A content header's body size and correlation id, skipping the properties before it.
fn parse_header(payload: &[u8]) -> Option<(Option<String>, u64)> {
    let mut c = Cursor::new(payload);
    let _class = c.u16()?;
    let _weight = c.u16()?;
    let size = c.u64()?;
    let flags = c.u16()?;
    let has = |bit: u16| flags & (1 << bit) != 0;
    if has(15) {
        c.shortstr()?; // content-type
    }
    if has(14) {
        c.shortstr()?; // content-encoding
    }
    if has(13) {
        c.longstr()?; // headers (a table, length-prefixed)
    }
    if has(12) {
        c.u8()?; // delivery-mode
    }
    if has(11) {
        c.u8()?; // priority
    }
    let correl = if has(10) {
        Some(String::from_utf8_lossy(c.shortstr()?).into_owned())
    } else {
        None
    };
    Some((correl, size))
}

impl LeanSession {
    /// This session, naming the node it is connected to.
    pub fn on_node(mut self, node: String) -> LeanSession {
        self.node = Some(node);
        self
    }
}

impl Session for LeanSession {
    fn node(&self) -> Option<String> {
        self.node.clone()
    }
    fn put(&mut self, body: &[u8], correl_id: &str) -> Result<(), TransportError> {
        if self.per_request {
            self.request_queue_of_its_own();
        }
        let (queue, reply_to) = (&self.request_queue, &self.reply_queue);
        method(&mut self.out, CHANNEL, 60, 40, |o| {
            o.extend_from_slice(&0u16.to_be_bytes());
            put_shortstr(o, b"");
            put_shortstr(o, queue.as_bytes());
            o.push(0);
        });
        let mode = if self.persistent { 2 } else { 1 };
        frame(&mut self.out, FRAME_HEADER, CHANNEL, |o| {
            o.extend_from_slice(&60u16.to_be_bytes());
            o.extend_from_slice(&0u16.to_be_bytes());
            o.extend_from_slice(&(body.len() as u64).to_be_bytes());
            // delivery-mode (12), correlation-id (10), reply-to (9), message-id (7).
            let flags: u16 = (1 << 12) | (1 << 10) | (1 << 9) | (1 << 7);
            o.extend_from_slice(&flags.to_be_bytes());
            o.push(mode);
            put_shortstr(o, correl_id.as_bytes());
            put_shortstr(o, reply_to.as_bytes());
            put_shortstr(o, correl_id.as_bytes());
        });
        for chunk in body.chunks(self.frame_max.saturating_sub(8).max(1)) {
            frame(&mut self.out, FRAME_BODY, CHANNEL, |o| {
                o.extend_from_slice(chunk)
            });
        }
        self.send()?;
        if let Some(c) = self.confirms.as_mut() {
            c.published += 1;
            let tag = c.published;
            c.unconfirmed.push_back(tag);
            self.await_confirms()?;
        }
        Ok(())
    }

    fn get(&mut self, wait: Duration) -> Result<Option<Reply>, TransportError> {
        if let Some(r) = self.stash.pop_front() {
            return Ok(Some(r));
        }
        let deadline = Instant::now() + wait;
        loop {
            if let Some(r) = self.take_reply()? {
                return Ok(Some(r));
            }
            if !self.fill(deadline)? {
                return Ok(None);
            }
        }
    }

    fn commit(&mut self) -> Result<(), TransportError> {
        // Sessions under --syncpoint use the amqprs client; nothing to commit here.
        Ok(())
    }

    fn close(mut self: Box<Self>) -> Result<(), TransportError> {
        if self.closed {
            return Ok(());
        }
        method(&mut self.out, CHANNEL, 20, 40, |o| {
            o.extend_from_slice(&200u16.to_be_bytes());
            put_shortstr(o, b"bye");
            o.extend_from_slice(&[0, 0, 0, 0]);
        });
        method(&mut self.out, 0, 10, 50, |o| {
            o.extend_from_slice(&200u16.to_be_bytes());
            put_shortstr(o, b"bye");
            o.extend_from_slice(&[0, 0, 0, 0]);
        });
        self.send()?;
        // Wait briefly for close-ok so the broker does not log an abrupt close; replies
        // still arriving (late ones) are dropped with the connection.
        let deadline = Instant::now() + Duration::from_secs(2);
        while let Some((kind, _, payload)) = self.next_frame(deadline)? {
            if kind == FRAME_METHOD && payload.get(..4) == Some(&[0, 10, 0, 51]) {
                break;
            }
        }
        self.closed = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_publish_is_three_frames_with_the_properties_oemputx_sends() {
        let mut out = Vec::new();
        frame(&mut out, FRAME_HEADER, 1, |o| {
            o.extend_from_slice(&60u16.to_be_bytes());
            o.extend_from_slice(&0u16.to_be_bytes());
            o.extend_from_slice(&5u64.to_be_bytes());
            let flags: u16 = (1 << 12) | (1 << 10) | (1 << 9) | (1 << 7);
            o.extend_from_slice(&flags.to_be_bytes());
            o.push(1);
            put_shortstr(o, b"id-1");
            put_shortstr(o, b"amq.gen-x");
            put_shortstr(o, b"id-1");
        });
        assert_eq!(out[0], FRAME_HEADER);
        assert_eq!(*out.last().expect("end"), FRAME_END);
        let size = u32::from_be_bytes([out[3], out[4], out[5], out[6]]) as usize;
        assert_eq!(size + 8, out.len());
        let (correl, body) = parse_header(&out[7..7 + size]).expect("header");
        assert_eq!((correl.as_deref(), body), (Some("id-1"), 5));
    }

    /// A session on a socket whose other end the test holds.
    fn session_on_pair() -> (LeanSession, TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let sock = TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (peer, _) = listener.accept().expect("accept");
        let s = LeanSession {
            sock,
            target: "test".into(),
            node: None,
            request_queue: "q".into(),
            reply_queue: "r".into(),
            per_request: false,
            made: 0,
            delivering: None,
            task: 0,
            confirms: None,
            wait: Duration::from_secs(5),
            stash: Default::default(),
            persistent: false,
            frame_max: FRAME_MAX as usize,
            inbuf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            out: Vec::new(),
            timeout: None,
            pending: None,
            closed: false,
        };
        (s, peer)
    }

    /// A basic.deliver with a correlation id, as RabbitMQ sends it: the method, the content
    /// header, and the body in the frames given.
    fn delivery(correl: &str, bodies: &[&[u8]]) -> Vec<u8> {
        let size: usize = bodies.iter().map(|b| b.len()).sum();
        let mut wire = Vec::new();
        method(&mut wire, CHANNEL, 60, 60, |o| {
            put_shortstr(o, b"tag");
            o.extend_from_slice(&1u64.to_be_bytes());
            o.push(0);
            put_shortstr(o, b"");
            put_shortstr(o, b"r");
        });
        frame(&mut wire, FRAME_HEADER, CHANNEL, |o| {
            o.extend_from_slice(&60u16.to_be_bytes());
            o.extend_from_slice(&0u16.to_be_bytes());
            o.extend_from_slice(&(size as u64).to_be_bytes());
            o.extend_from_slice(&(1u16 << 10).to_be_bytes());
            put_shortstr(o, correl.as_bytes());
        });
        for b in bodies {
            frame(&mut wire, FRAME_BODY, CHANNEL, |o| o.extend_from_slice(b));
        }
        wire
    }

    #[test]
    fn a_get_waits_its_whole_wait_and_a_reply_split_across_reads_is_assembled() {
        let (mut s, mut peer) = session_on_pair();
        // Longer than the socket's read slice: nothing comes, so the get waits it all out.
        let t = Instant::now();
        assert!(
            s.get(Duration::from_millis(120))
                .expect("no error")
                .is_none()
        );
        assert!(
            t.elapsed() >= Duration::from_millis(120),
            "{:?}",
            t.elapsed()
        );
        let wire = delivery("c-1", &[b"abc", b"def"]);
        // In two writes cut inside a frame: the first half stays buffered.
        let cut = wire.len() / 2;
        peer.write_all(&wire[..cut]).expect("write");
        assert!(
            s.get(Duration::from_millis(30))
                .expect("no error")
                .is_none()
        );
        peer.write_all(&wire[cut..]).expect("write");
        let r = s
            .get(Duration::from_secs(2))
            .expect("no error")
            .expect("a reply");
        assert_eq!((r.correl_id.as_deref(), r.len), (Some("c-1"), 6));
        // The broker closing the channel ends the session with its reason.
        let mut close = Vec::new();
        method(&mut close, CHANNEL, 20, 40, |o| {
            o.extend_from_slice(&404u16.to_be_bytes());
            put_shortstr(o, b"NOT_FOUND - no queue 'q'");
            o.extend_from_slice(&[0, 60, 0, 40]);
        });
        peer.write_all(&close).expect("write");
        let e = s
            .get(Duration::from_secs(2))
            .expect_err("closed")
            .to_string();
        assert!(e.contains("404 NOT_FOUND"), "{e}");
    }

    #[test]
    fn a_frame_larger_than_the_read_buffer_grows_it_and_is_read_whole() {
        let (mut s, mut peer) = session_on_pair();
        let body = vec![7u8; 100_000];
        let wire = delivery("big", &[&body]);
        let writer = std::thread::spawn(move || peer.write_all(&wire).map(|_| peer));
        let r = s
            .get(Duration::from_secs(5))
            .expect("no error")
            .expect("a reply");
        assert_eq!((r.correl_id.as_deref(), r.len), (Some("big"), 100_000));
        assert!(writer.join().expect("writer").is_ok());
    }

    #[test]
    fn a_header_with_every_property_before_the_correlation_id_is_read_past() {
        let mut p = Vec::new();
        p.extend_from_slice(&60u16.to_be_bytes());
        p.extend_from_slice(&0u16.to_be_bytes());
        p.extend_from_slice(&630u64.to_be_bytes());
        let flags: u16 = (1 << 15) | (1 << 14) | (1 << 13) | (1 << 12) | (1 << 11) | (1 << 10);
        p.extend_from_slice(&flags.to_be_bytes());
        put_shortstr(&mut p, b"text/xml");
        put_shortstr(&mut p, b"utf-8");
        put_longstr(&mut p, b"\x03abcS\x00\x00\x00\x01x");
        p.push(2);
        p.push(5);
        put_shortstr(&mut p, b"c-9");
        assert_eq!(parse_header(&p), Some((Some("c-9".into()), 630)));
        // Cut short: refused, not read past the end.
        assert_eq!(parse_header(&p[..p.len() - 2]), None);
        let no_correl = {
            let mut q = p[..12].to_vec();
            q.extend_from_slice(&0u16.to_be_bytes());
            q
        };
        assert_eq!(parse_header(&no_correl), Some((None, 630)));
    }

    /// basic.ack (or nack) of delivery tag `tag`.
    fn confirm(id: u16, tag: u64, multiple: bool) -> Vec<u8> {
        let mut wire = Vec::new();
        method(&mut wire, CHANNEL, 60, id, |o| {
            o.extend_from_slice(&tag.to_be_bytes());
            o.push(u8::from(multiple));
        });
        wire
    }

    #[test]
    fn a_put_waits_for_its_confirm_and_keeps_the_reply_that_came_first() {
        let (mut s, mut peer) = session_on_pair();
        s.confirms = Some(Confirms {
            window: 1,
            published: 0,
            unconfirmed: Default::default(),
        });
        // The reply before the confirm (a persistent request's confirm follows its fsync,
        // which the responder's reply need not wait for).
        let mut wire = delivery("c-1", &[b"ok"]);
        wire.extend(confirm(80, 1, false));
        peer.write_all(&wire).expect("write");
        s.put(b"req", "c-1").expect("put waits for its confirm");
        assert!(
            s.confirms
                .as_ref()
                .is_some_and(|c| c.unconfirmed.is_empty())
        );
        let r = s
            .get(Duration::from_millis(10))
            .expect("get")
            .expect("the kept reply");
        assert_eq!(r.correl_id.as_deref(), Some("c-1"));
        // A nack is the broker refusing the request: an error that says so.
        peer.write_all(&confirm(120, 2, false)).expect("write");
        let e = s.put(b"req", "c-2").expect_err("nacked");
        assert!(e.to_string().contains("nacked request 2"), "{e}");
    }

    #[test]
    fn acks_confirm_one_tag_or_every_tag_up_to_it() {
        let mut c = Confirms {
            window: 8,
            published: 5,
            unconfirmed: (1..=5).collect(),
        };
        c.ack(2, false);
        assert_eq!(Vec::from(c.unconfirmed.clone()), [1, 3, 4, 5]);
        c.ack(4, true);
        assert_eq!(Vec::from(c.unconfirmed.clone()), [5]);
    }

    #[test]
    fn a_per_request_put_declares_and_consumes_its_queue_in_the_same_write_and_cancels_it_after() {
        let (mut s, mut peer) = session_on_pair();
        s.per_request = true;
        s.put(b"req", "c-1").expect("put");
        s.sock.flush().expect("flush");
        peer.set_read_timeout(Some(Duration::from_secs(2)))
            .expect("timeout");
        let mut got = vec![0u8; 4096];
        let n = peer.read(&mut got).expect("the put's frames");
        let sent = &got[..n];
        let name = format!("oemputx.reply.{}.0.1", std::process::id());
        let at = |needle: &[u8]| sent.windows(needle.len()).position(|w| w == needle);
        // queue.declare (50.10), basic.consume (60.20), then the publish (60.40).
        let declare = at(&[0, 50, 0, 10]).expect("declare");
        let consume = at(&[0, 60, 0, 20]).expect("consume");
        let publish = at(&[0, 60, 0, 40]).expect("publish");
        assert!(declare < consume && consume < publish);
        assert!(at(name.as_bytes()).is_some(), "reply-to {name}");
        // The reply comes through that consumer: the next put cancels it first.
        let mut wire = Vec::new();
        method(&mut wire, CHANNEL, 60, 60, |o| {
            put_shortstr(o, name.as_bytes());
            o.extend_from_slice(&1u64.to_be_bytes());
            o.push(0);
            put_shortstr(o, b"");
            put_shortstr(o, name.as_bytes());
        });
        frame(&mut wire, FRAME_HEADER, CHANNEL, |o| {
            o.extend_from_slice(&60u16.to_be_bytes());
            o.extend_from_slice(&0u16.to_be_bytes());
            o.extend_from_slice(&0u64.to_be_bytes());
            o.extend_from_slice(&(1u16 << 10).to_be_bytes());
            put_shortstr(o, b"c-1");
        });
        peer.write_all(&wire).expect("write");
        let r = s.get(Duration::from_secs(2)).expect("get").expect("reply");
        assert_eq!(r.correl_id.as_deref(), Some("c-1"));
        s.put(b"req", "c-2").expect("put");
        let n = peer.read(&mut got).expect("the next put's frames");
        let mut cancel = vec![0, 60, 0, 30, name.len() as u8];
        cancel.extend_from_slice(name.as_bytes());
        assert!(
            got[..n]
                .windows(cancel.len())
                .position(|w| w == cancel.as_slice())
                == Some(7),
            "the cancel of {name} first"
        );
    }
}
