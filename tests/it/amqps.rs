//! `amqps://` end to end: a real TLS handshake (a CA and a server certificate made here)
//! through a TLS-terminating proxy in front of the real RabbitMQ, since the shared test broker
//! has no TLS listener. The proxy only unwraps TLS; AMQP is spoken by oemputx and RabbitMQ.

use oemputx_test_support::*;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use std::sync::Arc;
use tokio_rustls::rustls;

pub(crate) struct Pki {
    _dir: tempfile::TempDir,
    pub(crate) ca_file: std::path::PathBuf,
    pub(crate) server: rustls::ServerConfig,
}

/// A CA and a server certificate for `localhost` signed by it.
pub(crate) fn pki() -> Pki {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().expect("server key");
    let leaf = CertificateParams::new(vec!["localhost".to_string()])
        .expect("server params")
        .signed_by(&leaf_key, &issuer)
        .expect("server cert");
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca_cert.pem()).expect("write CA");
    let key =
        rustls::pki_types::PrivateKeyDer::try_from(leaf_key.serialize_der()).expect("key der");
    let server = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .expect("server config");
    Pki {
        _dir: dir,
        ca_file,
        server,
    }
}

/// Accept TLS on 127.0.0.1:PORT and forward the plain bytes to the broker; returns the port.
pub(crate) fn tls_proxy(server: rustls::ServerConfig, broker: std::net::SocketAddr) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    listener.set_nonblocking(true).expect("nonblocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("rt");
        rt.block_on(async move {
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(socket).await else {
                        return;
                    };
                    let Ok(mut upstream) = tokio::net::TcpStream::connect(broker).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut upstream).await;
                });
            }
        });
    });
    port
}

fn broker_addr() -> std::net::SocketAddr {
    let ep = oemputx::transport::amqp::url::AmqpEndpoint::parse(&amqp_url()).expect("amqp url");
    std::net::ToSocketAddrs::to_socket_addrs(&(ep.host.as_str(), ep.port))
        .expect("resolve")
        .next()
        .expect("an address")
}

#[test]
fn amqps_round_trips_through_a_real_tls_handshake() {
    live!(RabbitMq);
    let pki = pki();
    let port = tls_proxy(pki.server.clone(), broker_addr());
    let q = fresh_queue("tls");
    let _flow = EchoFlow::start(&q, &[]);
    let url = format!(
        "amqps://guest:guest@localhost:{port}/%2f?cacertfile={}",
        pki.ca_file.display()
    );
    let (code, j, err) = run_json(&["--qmgr", &url, "--request-queue", &q, "--count", "100"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["integrity"]["matched"], 100);
    assert!(
        j["settings"]["qmgr"]
            .as_str()
            .is_some_and(|s| s.starts_with("amqps://guest:***@localhost:")),
        "{}",
        j["settings"]["qmgr"]
    );
}

#[test]
fn amqps_refuses_a_server_it_cannot_verify() {
    live!(RabbitMq);
    let pki = pki();
    let port = tls_proxy(pki.server.clone(), broker_addr());
    // No cacertfile: the built-in web roots do not know this CA.
    let url = format!("amqps://guest:guest@localhost:{port}/%2f");
    let (code, _, err) = run_json(&["--qmgr", &url, "--request-queue", "MQSI.IN", "--count", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("TLS handshake failed"), "{err}");
}

#[test]
fn amqps10_round_trips_through_a_real_tls_handshake_and_refuses_an_unknown_ca() {
    live!(RabbitMq, Amqp10);
    let pki = pki();
    let port = tls_proxy(pki.server.clone(), broker_addr());
    let q = QueueGuard(fresh_queue("tls10"));
    let _flow = SampleFlow::start(
        &[
            "--echo",
            "--url",
            "amqp10://guest:guest@127.0.0.1:5672",
            "--input-queue",
            &q.0,
        ],
        "echoing",
    );
    let url = format!(
        "amqps10://guest:guest@localhost:{port}?cacertfile={}",
        pki.ca_file.display()
    );
    let (code, j, err) = run_json(&["--qmgr", &url, "--request-queue", &q.0, "--count", "100"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["integrity"]["matched"], 100);
    assert!(
        j["settings"]["qmgr"]
            .as_str()
            .is_some_and(|s| s.starts_with("amqps10://guest:***@localhost:")),
        "{}",
        j["settings"]["qmgr"]
    );
    // Without cacertfile the system's roots do not know this CA.
    let url = format!("amqps10://guest:guest@localhost:{port}");
    let (code, _, err) = run_json(&["--qmgr", &url, "--request-queue", &q.0, "--count", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("TLS failed"), "{err}");
}
