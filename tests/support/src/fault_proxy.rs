//! A fault proxy: a TCP proxy on 127.0.0.1 in front of a real server (RabbitMQ, NATS,
//! pmproxy) whose behaviour a test switches while a run goes on: forward, stall (keep every
//! connection open and pass nothing either way, as a dead network path does), cut (close
//! every connection, and every new one at once) or refuse (close new connections, keep
//! the open ones forwarding). The hostile review's proxy, as a tool of the repo.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::thread;
use std::time::Duration;

/// What the proxy does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    Forward = 0,
    /// Bytes are held, not passed on; connections stay open.
    Stall = 1,
    /// Every connection, open or new, is closed.
    Cut = 2,
    /// New connections are closed at once; open ones keep forwarding.
    Refuse = 3,
}

/// A running proxy; dropped, it stops accepting and closes what it holds.
pub struct FaultProxy {
    pub port: u16,
    mode: Arc<AtomicU8>,
    stop: Arc<AtomicBool>,
    forwarded: Arc<AtomicU64>,
}

impl FaultProxy {
    /// A proxy to `target` (`host:port`), forwarding.
    pub fn start(target: &str) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fault proxy");
        let port = listener.local_addr().expect("its address").port();
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let mode = Arc::new(AtomicU8::new(Fault::Forward as u8));
        let stop = Arc::new(AtomicBool::new(false));
        let forwarded = Arc::new(AtomicU64::new(0));
        let target = target.to_string();
        let (m, s, f) = (mode.clone(), stop.clone(), forwarded.clone());
        thread::spawn(move || accept_loop(listener, &target, &m, &s, &f));
        FaultProxy {
            port,
            mode,
            stop,
            forwarded,
        }
    }

    /// The bytes passed on so far, both ways, every connection: how far a run has got
    /// (a set-up is a few kB, a measured run a few hundred bytes a round trip).
    pub fn forwarded(&self) -> u64 {
        self.forwarded.load(Ordering::SeqCst)
    }

    /// Switch to `fault` once `bytes` have been passed on (or after `within`, whichever
    /// comes first): a fault that must fall inside a run's measured part, not its set-up,
    /// whose length a loaded host stretches.
    pub fn set_after_bytes(&self, bytes: u64, within: Duration, fault: Fault) {
        let until = std::time::Instant::now() + within;
        while self.forwarded() < bytes && std::time::Instant::now() < until {
            thread::sleep(Duration::from_millis(10));
        }
        self.set(fault);
    }

    /// `host:port` of the proxy.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn set(&self, fault: Fault) {
        self.mode.store(fault as u8, Ordering::SeqCst);
    }

    /// Switch to `fault` after `delay`, from a thread of its own.
    pub fn set_after(&self, delay: Duration, fault: Fault) {
        let mode = self.mode.clone();
        thread::spawn(move || {
            thread::sleep(delay);
            mode.store(fault as u8, Ordering::SeqCst);
        });
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.mode.store(Fault::Cut as u8, Ordering::SeqCst);
    }
}

fn now(mode: &AtomicU8) -> u8 {
    mode.load(Ordering::SeqCst)
}

fn accept_loop(
    listener: TcpListener,
    target: &str,
    mode: &Arc<AtomicU8>,
    stop: &AtomicBool,
    forwarded: &Arc<AtomicU64>,
) {
    while !stop.load(Ordering::SeqCst) {
        let client = match listener.accept() {
            Ok((c, _)) => c,
            Err(_) => {
                thread::sleep(Duration::from_millis(5));
                continue;
            }
        };
        let m = now(mode);
        if m == Fault::Cut as u8 || m == Fault::Refuse as u8 {
            let _ = client.shutdown(Shutdown::Both);
            continue;
        }
        let Ok(server) = TcpStream::connect(target) else {
            continue;
        };
        for (from, to) in [
            (client.try_clone(), server.try_clone()),
            (server.try_clone(), client.try_clone()),
        ] {
            if let (Ok(from), Ok(to)) = (from, to) {
                let (mode, forwarded) = (mode.clone(), forwarded.clone());
                thread::spawn(move || pump(from, to, &mode, &forwarded));
            }
        }
    }
}

/// Copy one direction, checking the mode between reads (a short read timeout keeps the
/// check going while nothing arrives).
fn pump(mut from: TcpStream, mut to: TcpStream, mode: &AtomicU8, forwarded: &AtomicU64) {
    let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; 64 * 1024];
    let mut held: Vec<u8> = Vec::new();
    loop {
        match now(mode) {
            m if m == Fault::Cut as u8 => break,
            m if m == Fault::Stall as u8 => {
                // Read what comes (so the peer's writes do not fail) and hold it.
                match from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => held.extend_from_slice(&buf[..n]),
                    Err(_) => {}
                }
                continue;
            }
            _ => {}
        }
        if !held.is_empty() {
            if to.write_all(&held).is_err() {
                break;
            }
            forwarded.fetch_add(held.len() as u64, Ordering::SeqCst);
            held.clear();
        }
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
                forwarded.fetch_add(n as u64, Ordering::SeqCst);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
