//! `amqp://` and `amqps://` URLs (RabbitMQ's URI spec) and what they name.

use super::super::endpoint::{EndpointError, EndpointKind, redact_raw};
use super::super::{QueueSetup, Transport, TransportError};
use std::path::PathBuf;
use std::sync::Arc;

/// AMQP 0-9-1 virtual host names are short strings: at most 255 bytes.
const MAX_VHOST: usize = 255;

/// The parts of an `amqp://` or `amqps://` URL.
#[derive(Clone, PartialEq, Eq)]
pub struct AmqpEndpoint {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub vhost: String,
    /// Set for `amqps://`.
    pub tls: Option<TlsOptions>,
}

/// TLS settings of an `amqps://` URL (RabbitMQ's query parameters `cacertfile`, `certfile`,
/// `keyfile`, `server_name_indication`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// CA certificate (PEM) to trust; the built-in web roots when absent.
    pub ca_file: Option<PathBuf>,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// Name the server's certificate must carry; the host by default.
    pub server_name: String,
}

impl std::fmt::Debug for AmqpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.redacted())
    }
}

impl AmqpEndpoint {
    /// `amqp://user:***@host:port/vhost`: the password never leaves this struct.
    pub fn redacted(&self) -> String {
        let vhost =
            percent_encoding::utf8_percent_encode(&self.vhost, percent_encoding::NON_ALPHANUMERIC);
        let scheme = if self.tls.is_some() { "amqps" } else { "amqp" };
        format!(
            "{scheme}://{}:***@{}:{}/{}",
            self.user, self.host, self.port, vhost
        )
    }
}

impl AmqpEndpoint {
    /// The full URL, password included, for handing to a child process (the flows `sweep`
    /// starts); never for printing.
    pub fn url_with_password(&self) -> String {
        use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode as enc};
        let scheme = if self.tls.is_some() { "amqps" } else { "amqp" };
        let mut url = format!(
            "{scheme}://{}:{}@{}:{}/{}",
            enc(&self.user, NON_ALPHANUMERIC),
            enc(&self.password, NON_ALPHANUMERIC),
            self.host,
            self.port,
            enc(&self.vhost, NON_ALPHANUMERIC)
        );
        if let Some(tls) = &self.tls {
            let mut q = url::form_urlencoded::Serializer::new(String::new());
            let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
            for (k, v) in [
                ("cacertfile", path(&tls.ca_file)),
                ("certfile", path(&tls.cert_file)),
                ("keyfile", path(&tls.key_file)),
                ("server_name_indication", Some(tls.server_name.clone())),
            ] {
                if let Some(v) = v {
                    q.append_pair(k, &v);
                }
            }
            url.push('?');
            url.push_str(&q.finish());
        }
        url
    }
}

impl EndpointKind for AmqpEndpoint {
    fn transport(&self) -> &'static str {
        "amqp"
    }
    fn redacted(&self) -> String {
        AmqpEndpoint::redacted(self)
    }
    fn open(&self, setup: QueueSetup) -> Result<Arc<dyn Transport>, TransportError> {
        Ok(Arc::new(super::Amqp::new(self.clone(), setup)))
    }
    fn url_for_flow(&self) -> Option<String> {
        Some(self.url_with_password())
    }
    fn consumers(&self, queue: &str) -> Result<Option<u32>, TransportError> {
        super::consumers(self, queue).map(Some)
    }
    fn delete_queue(&self, queue: &str) -> Result<(), TransportError> {
        super::delete_queue(self, queue)
    }
}

/// The rest of an `amqp://` URL that [`url::Url`] has parsed: user, password, host, port,
/// vhost (RabbitMQ's defaults: guest/guest, 5672 or 5671, "/" when the path is absent), and
/// for `amqps://` RabbitMQ's TLS query parameters.
pub fn parse(raw: &str, url: &url::Url) -> Result<super::super::Endpoint, EndpointError> {
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| EndpointError::BadUrl {
            url: redact_raw(raw),
            why: "no host; write amqp://user:password@HOST:5672/vhost".into(),
        })?;
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(s)
            .decode_utf8_lossy()
            .into_owned()
    };
    let user = if url.username().is_empty() {
        "guest".to_string()
    } else {
        decode(url.username())
    };
    let password = url
        .password()
        .map(decode)
        .unwrap_or_else(|| "guest".to_string());
    let vhost = match url.path() {
        "" | "/" => "/".to_string(),
        p => decode(&p[1..]),
    };
    if vhost.len() > MAX_VHOST {
        return Err(EndpointError::BadUrl {
            url: redact_raw(raw),
            why: format!(
                "the virtual host name is {} bytes; AMQP allows at most {MAX_VHOST}",
                vhost.len()
            ),
        });
    }
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tls = if url.scheme() == "amqps" {
        // RabbitMQ's URI query parameters for TLS.
        let mut t = TlsOptions {
            server_name: host.clone(),
            ..Default::default()
        };
        for (k, v) in url.query_pairs() {
            match k.as_ref() {
                "cacertfile" => t.ca_file = Some(PathBuf::from(v.as_ref())),
                "certfile" => t.cert_file = Some(PathBuf::from(v.as_ref())),
                "keyfile" => t.key_file = Some(PathBuf::from(v.as_ref())),
                "server_name_indication" => t.server_name = v.into_owned(),
                _ => {}
            }
        }
        for f in [&t.ca_file, &t.cert_file, &t.key_file]
            .into_iter()
            .flatten()
        {
            if !f.is_file() {
                return Err(EndpointError::BadUrl {
                    url: redact_raw(raw),
                    why: format!("TLS file {} does not exist", f.display()),
                });
            }
        }
        if t.cert_file.is_some() != t.key_file.is_some() {
            return Err(EndpointError::BadUrl {
                url: redact_raw(raw),
                why: "a client certificate needs both certfile and keyfile".into(),
            });
        }
        Some(t)
    } else {
        None
    };
    Ok(super::super::Endpoint::Amqp(AmqpEndpoint {
        host,
        port: url
            .port()
            .unwrap_or(if tls.is_some() { 5671 } else { 5672 }),
        user,
        password,
        vhost,
        tls,
    }))
}
