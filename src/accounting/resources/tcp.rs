//! Bytes every TCP socket on the host has sent and received, by inode: one sock_diag dump
//! (IPv4 and IPv6) asking for TCP_INFO, the counters `ss -i` shows as bytes_sent and
//! bytes_received. A process's sockets are matched to them through its fd links' inodes.

use netlink_packet_core::{
    NLM_F_DUMP, NLM_F_REQUEST, NetlinkHeader, NetlinkMessage, NetlinkPayload,
};
use netlink_packet_sock_diag::{
    AF_INET, AF_INET6, IPPROTO_TCP, SockDiagMessage,
    inet::{ExtensionFlags, InetRequest, SocketId, StateFlags, nlas::Nla},
};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_SOCK_DIAG};
use std::collections::HashMap;

/// The most a dump may return before it is called off: a host with a million sockets is
/// not measured by the second.
const MAX_SOCKETS: usize = 1 << 20;

/// inode → (bytes sent, bytes received) of every TCP socket, or why they could not be read.
pub fn all() -> Result<HashMap<u64, (u64, u64)>, String> {
    let mut out = HashMap::new();
    for family in [AF_INET, AF_INET6] {
        dump(family, &mut out).map_err(|e| {
            format!("TCP sockets could not be read through sock_diag ({e}): network bytes are null")
        })?;
    }
    Ok(out)
}

fn dump(family: u8, out: &mut HashMap<u64, (u64, u64)>) -> std::io::Result<()> {
    let mut socket = Socket::new(NETLINK_SOCK_DIAG)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    // A kernel that stops answering must not stall the snapshot.
    let timeout = nix::sys::time::TimeVal::new(2, 0);
    nix::sys::socket::setsockopt(&socket, nix::sys::socket::sockopt::ReceiveTimeout, &timeout)
        .map_err(std::io::Error::from)?;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_DUMP;
    let mut packet = NetlinkMessage::new(
        header,
        SockDiagMessage::InetRequest(InetRequest {
            family,
            protocol: IPPROTO_TCP,
            extensions: ExtensionFlags::INFO,
            states: StateFlags::all(),
            socket_id: if family == AF_INET {
                SocketId::new_v4()
            } else {
                SocketId::new_v6()
            },
        })
        .into(),
    );
    packet.finalize();
    let mut buf = vec![0u8; packet.buffer_len()];
    packet.serialize(&mut buf[..]);
    socket.send(&buf, 0)?;
    let mut rx: Vec<u8> = Vec::with_capacity(1 << 16);
    loop {
        rx.clear();
        let n = socket.recv(&mut rx, 0)?;
        if n == 0 {
            return Err(std::io::Error::other(
                "sock_diag closed before its dump was done",
            ));
        }
        let mut offset = 0;
        while offset < n.min(rx.len()) {
            let msg = <NetlinkMessage<SockDiagMessage>>::deserialize(&rx[offset..])
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            let len = msg.header.length as usize;
            match msg.payload {
                NetlinkPayload::InnerMessage(SockDiagMessage::InetResponse(r)) => {
                    for nla in &r.nlas {
                        if let Nla::TcpInfo(info) = nla {
                            out.insert(
                                u64::from(r.header.inode),
                                (info.bytes_sent, info.bytes_received),
                            );
                        }
                    }
                }
                NetlinkPayload::Done(_) => return Ok(()),
                NetlinkPayload::Error(e) => {
                    return Err(std::io::Error::other(format!("{e:?}")));
                }
                _ => {}
            }
            if out.len() > MAX_SOCKETS {
                return Err(std::io::Error::other(format!(
                    "more than {MAX_SOCKETS} TCP sockets"
                )));
            }
            if len == 0 {
                break;
            }
            offset += len;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// The inode of a socket this process holds, from its fd link.
    fn inode_of(fd: std::os::fd::RawFd) -> u64 {
        let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).expect("fd link");
        let t = target.to_string_lossy().to_string();
        t.trim_start_matches("socket:[")
            .trim_end_matches(']')
            .parse()
            .expect("socket inode")
    }

    #[test]
    fn a_connection_s_bytes_are_read_by_its_inode() {
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let mut client =
            std::net::TcpStream::connect(listener.local_addr().expect("addr")).expect("connect");
        let (mut server, _) = listener.accept().expect("accept");
        client.write_all(&[7u8; 1000]).expect("write");
        let mut got = [0u8; 1000];
        server.read_exact(&mut got).expect("read");
        server.write_all(&[1u8; 10]).expect("write");
        let mut back = [0u8; 10];
        client.read_exact(&mut back).expect("read");
        let all = all().expect("sock_diag");
        let c = all
            .get(&inode_of(client.as_raw_fd()))
            .expect("client socket");
        assert_eq!(*c, (1000, 10), "client sent 1000 and received 10");
        let s = all
            .get(&inode_of(server.as_raw_fd()))
            .expect("server socket");
        assert_eq!(*s, (10, 1000));
    }
}
