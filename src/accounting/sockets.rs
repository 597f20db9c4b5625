//! Which local processes hold a TCP connection to a broker: the kernel's socket tables
//! (/proc/net/tcp, tcp6) give each established connection's remote address, its owner's uid
//! and its inode; the /proc/PID/fd links give the inodes each process holds. A connection
//! whose process cannot be read (another user's, without root) keeps its owner's uid.
//!
//! Why sockets and not names: a group by name (`comm:sample-flow`, `@sample-flow`) takes
//! every process of that name on the host, another user's included, and misses a consumer
//! of another name; a process serving a queue holds a connection to its broker, whatever
//! its name.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};

/// The connections to a broker that the host shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connections {
    /// Process id → established connections to the broker it holds.
    pub by_pid: BTreeMap<i32, usize>,
    /// Connections no readable process holds, by their owner's uid.
    pub unreadable: BTreeMap<u32, usize>,
}

/// Whether a connection's remote end is the broker: one of its addresses, or, for a broker
/// on loopback, any loopback address on its port (127.0.0.1 and ::1 are the same broker).
fn is_broker(remote: SocketAddr, broker: &[SocketAddr]) -> bool {
    let remote = unmapped(remote);
    broker.iter().any(|b| {
        let b = unmapped(*b);
        b == remote
            || (b.port() == remote.port() && b.ip().is_loopback() && remote.ip().is_loopback())
    })
}

/// An IPv4 address written as IPv6 (::ffff:a.b.c.d, in tcp6) as the IPv4 it is.
fn unmapped(a: SocketAddr) -> SocketAddr {
    match a.ip() {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), a.port()),
            None => a,
        },
        IpAddr::V4(_) => a,
    }
}

/// The established connections to `broker` on this host, by process.
pub(crate) fn to_broker(broker: &[SocketAddr]) -> Connections {
    // Socket inode → owner uid, of every established connection to the broker.
    let mut wanted: HashMap<u64, u32> = HashMap::new();
    for table in [procfs::net::tcp(), procfs::net::tcp6()] {
        for e in table.into_iter().flatten() {
            if e.state == procfs::net::TcpState::Established && is_broker(e.remote_address, broker)
            {
                wanted.insert(e.inode, e.uid);
            }
        }
    }
    let mut found = Connections::default();
    if wanted.is_empty() {
        return found;
    }
    if let Ok(all) = procfs::process::all_processes() {
        for p in all.flatten() {
            let Ok(fds) = p.fd() else { continue };
            let held = fds
                .flatten()
                .filter(|fd| match fd.target {
                    procfs::process::FDTarget::Socket(inode) => wanted.remove(&inode).is_some(),
                    _ => false,
                })
                .count();
            if held > 0 {
                *found.by_pid.entry(p.pid).or_default() += held;
            }
        }
    }
    for uid in wanted.into_values() {
        *found.unreadable.entry(uid).or_default() += 1;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_brokers_match_whichever_loopback_address_and_mapped_v4_is_v4() {
        let broker: Vec<SocketAddr> = vec!["127.0.0.1:5672".parse().expect("addr")];
        for yes in ["127.0.0.1:5672", "[::1]:5672", "[::ffff:127.0.0.1]:5672"] {
            assert!(is_broker(yes.parse().expect("addr"), &broker), "{yes}");
        }
        for no in ["127.0.0.1:5673", "10.0.0.5:5672"] {
            assert!(!is_broker(no.parse().expect("addr"), &broker), "{no}");
        }
        let remote: Vec<SocketAddr> = vec!["10.0.0.5:5672".parse().expect("addr")];
        assert!(is_broker(
            "[::ffff:10.0.0.5]:5672".parse().expect("addr"),
            &remote
        ));
        assert!(!is_broker("127.0.0.1:5672".parse().expect("addr"), &remote));
    }

    #[test]
    fn this_process_s_own_connection_is_found_by_its_pid() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let _client = std::net::TcpStream::connect(addr).expect("connect");
        let _server = listener.accept().expect("accept");
        let c = to_broker(&[addr]);
        let me = std::process::id() as i32;
        assert_eq!(c.by_pid.get(&me), Some(&1), "{c:?}");
    }
}
