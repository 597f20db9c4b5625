//! TLS settings of a URL (RabbitMQ's query parameters `cacertfile`, `certfile`, `keyfile`,
//! `server_name_indication`, which the AMQP transports share) and a client stream made with
//! tokio-rustls on ring for clients that take a ready stream.
//!
//! Built with a transport that takes these settings (rabbitmq, amqp10, stomp); the streams
//! only with those that make their own (amqprs makes its own): the async one for amqp10,
//! the blocking one for stomp.

use std::path::PathBuf;

/// TLS settings of an `amqps://` or `amqps10://` URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// CA certificate (PEM) to trust; the system's roots when absent.
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Name the server's certificate must carry; the host by default.
    pub server_name: String,
}

/// The query keys [`TlsOptions::from_query`] takes.
pub const QUERY_KEYS: [&str; 4] = [
    "cacertfile",
    "certfile",
    "keyfile",
    "server_name_indication",
];

impl TlsOptions {
    /// The settings a URL's query gives for `host` (keys of [`QUERY_KEYS`]; others are the
    /// caller's), checked: every file named exists, and a client certificate has its key.
    pub(crate) fn from_query(host: &str, query: &[(String, String)]) -> Result<TlsOptions, String> {
        let mut t = TlsOptions {
            server_name: host.to_string(),
            ..TlsOptions::default()
        };
        for (k, v) in query {
            match k.as_str() {
                "cacertfile" => t.ca_file = Some(PathBuf::from(v)),
                "certfile" => t.cert_file = Some(PathBuf::from(v)),
                "keyfile" => t.key_file = Some(PathBuf::from(v)),
                "server_name_indication" => t.server_name = v.clone(),
                _ => {}
            }
        }
        for f in [&t.ca_file, &t.cert_file, &t.key_file]
            .into_iter()
            .flatten()
        {
            if !f.is_file() {
                return Err(format!("TLS file {} does not exist", f.display()));
            }
        }
        if t.cert_file.is_some() != t.key_file.is_some() {
            return Err("a client certificate needs both certfile and keyfile".into());
        }
        Ok(t)
    }

    /// The query pairs that give these settings back, for a URL written again.
    pub(crate) fn query_pairs(&self) -> Vec<(&'static str, String)> {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
        [
            ("cacertfile", path(&self.ca_file)),
            ("certfile", path(&self.cert_file)),
            ("keyfile", path(&self.key_file)),
            ("server_name_indication", Some(self.server_name.clone())),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// The client configuration and server name: the CA file's certificates, or else the
/// system's roots.
#[cfg(any(feature = "amqp10", feature = "stomp", feature = "kafka"))]
pub(crate) fn client_config(
    tls: &TlsOptions,
) -> Result<
    (
        std::sync::Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    ),
    String,
> {
    // rustls needs one process-wide crypto provider; a second install is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    match &tls.ca_file {
        Some(ca) => {
            let pem = crate::files::read_regular(ca, crate::files::MAX_CONFIG_BYTES, "cacertfile")
                .map_err(|e| format!("cacertfile: {e}"))?;
            for cert in <rustls::pki_types::CertificateDer as rustls::pki_types::pem::PemObject>::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("{}: {e}", ca.display()))?;
                roots.add(cert).map_err(|e| format!("{}: {e}", ca.display()))?;
            }
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from(tls.server_name.clone())
        .map_err(|e| format!("server name '{}': {e}", tls.server_name))?;
    Ok((std::sync::Arc::new(config), name))
}

/// A TLS client stream over `tcp`, trusting the CA file or else the system's roots.
#[cfg(any(feature = "amqp10", feature = "kafka"))]
pub async fn connect(
    tls: &TlsOptions,
    tcp: tokio::net::TcpStream,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let (config, name) = client_config(tls)?;
    tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("{e}; is the server's certificate trusted here (cacertfile=)?"))
}

/// The same over a blocking `tcp`: the handshake completes on the first read or write.
#[cfg(any(feature = "amqp10", feature = "stomp"))]
pub fn connect_blocking(
    tls: &TlsOptions,
    tcp: std::net::TcpStream,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>, String> {
    let (config, name) = client_config(tls)?;
    let conn = rustls::ClientConnection::new(config, name).map_err(|e| e.to_string())?;
    Ok(rustls::StreamOwned::new(conn, tcp))
}
