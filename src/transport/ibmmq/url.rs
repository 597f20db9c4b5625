//! `ibmmq://` URLs and queue manager names, and what they name.

use super::super::endpoint::{Endpoint, EndpointError, Registered};
use crate::secret::{MASK, Secret};
use crate::url_parts::decode;

/// How the registry knows this transport: by URL, and by a bare queue manager name (as
/// OEMPUTX took one).
pub const REGISTERED: Registered = Registered {
    schemes: &["ibmmq"],
    example: "ibmmq://QM1?conn=host(1414)&channel=DEV.APP.SVRCONN",
    parse: |raw| Ok(Endpoint::new(IbmMqEndpoint::parse(raw)?)),
    node_lists: true,
    bare_name: Some(bare_name),
};

/// A name that is no profile, as a queue manager name, when it can be one; the user from
/// $OEMPUTX_MQ_USER.
fn bare_name(name: &str, note: String) -> Option<Endpoint> {
    is_qmgr_name(name).then(|| {
        Endpoint::new(IbmMqEndpoint {
            qmgr: name.to_string(),
            user: std::env::var("OEMPUTX_MQ_USER").ok(),
            note: Some(note),
            ..IbmMqEndpoint::default()
        })
    })
}

/// An IBM MQ queue manager: by name (MQ picks the way: MQSERVER, a CCDT, or bindings) or by
/// `ibmmq://[user@]QM1?conn=host(1414)&channel=DEV.APP.SVRCONN[&cipher=…&keyrepo=…]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IbmMqEndpoint {
    /// Queue manager name; empty for the default queue manager.
    pub qmgr: String,
    /// Client channel and connection name, when the URL gives them.
    pub channel: Option<(String, String)>,
    /// MQCSP user; the password comes from the URL (discouraged), OEMPUTX_MQ_PASSWORD or a
    /// prompt.
    pub user: Option<String>,
    pub password: Option<Secret>,
    /// TLS: (cipher spec, key repository).
    pub tls: Option<(String, String)>,
    /// Why a bare name was taken for a queue manager (no profile of that name), for errors.
    pub note: Option<String>,
}

impl IbmMqEndpoint {
    /// The endpoint as a URL with the password replaced by `***`, and how MQ will connect.
    pub fn redacted(&self) -> String {
        let user = match (&self.user, &self.password) {
            (Some(u), Some(_)) => format!("{u}:{MASK}@"),
            (Some(u), None) => format!("{u}@"),
            _ => String::new(),
        };
        let mut query = Vec::new();
        if let Some((channel, conn)) = &self.channel {
            query.push(format!("conn={conn}&channel={channel}"));
        }
        if let Some((cipher, repo)) = &self.tls {
            query.push(format!("cipher={cipher}&keyrepo={repo}"));
        }
        // Says which binding the connect uses, the same choice as the connect itself.
        let how = if self.channel.is_some() {
            String::new()
        } else {
            match super::client_channel_env(|k| std::env::var_os(k).is_some()) {
                Some(var) => format!(
                    " (client binding: {var}={})",
                    std::env::var(var).unwrap_or_default()
                ),
                None => {
                    " (standard binding: a local queue manager, else the client's default CCDT)"
                        .into()
                }
            }
        };
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        format!("ibmmq://{user}{}{q}{how}", self.qmgr)
    }
}

/// Whether `name` can be given as a queue manager name: an MQ object name, or one with a
/// leading `*`, which asks the client for any queue manager of that CCDT group (IBM MQ
/// documentation, "Queue manager groups in the CCDT").
pub(crate) fn is_qmgr_name(name: &str) -> bool {
    match name.strip_prefix('*') {
        Some(group) => name.len() <= 48 && is_mq_name(group),
        None => is_mq_name(name),
    }
}

/// Whether `name` can be an MQ object name: 1 to 48 of A-Z a-z 0-9 . _ / %.
/// The listener of a CONNAME (`host(port)`, MQ's default port 1414 without one); of a
/// list (`h1(1414),h2(1414)`, a multi-instance queue manager), the first.
pub(crate) fn conn_host_port(conn: &str) -> Option<(String, u16)> {
    let first = conn.split(',').next()?.trim();
    let (host, port) = match first.split_once('(') {
        Some((h, rest)) => (h, rest.strip_suffix(')')?.trim().parse().ok()?),
        None => (first, 1414),
    };
    (!host.is_empty()).then(|| (host.to_string(), port))
}

pub(crate) fn is_mq_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 48
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '%'))
}

impl IbmMqEndpoint {
    /// Parse `ibmmq://[user[:password]@]QM1?conn=host(1414)&channel=NAME[&cipher=…&keyrepo=…]`
    /// (not through a URL library: queue manager names may hold `/` and `%`).
    pub fn parse(raw: &str) -> Result<IbmMqEndpoint, EndpointError> {
        let bad = |why: String| EndpointError::bad(raw, why);
        let rest = raw.strip_prefix("ibmmq://").unwrap_or(raw);
        let (authority, query) = rest.split_once('?').unwrap_or((rest, ""));
        let authority = authority.trim_end_matches('/');
        let (userinfo, qmgr) = match authority.rsplit_once('@') {
            Some((u, q)) => (Some(u), q),
            None => (None, authority),
        };
        let qmgr = decode(qmgr);
        if !qmgr.is_empty() && !is_qmgr_name(&qmgr) {
            return Err(bad(format!(
                "'{qmgr}' is no queue manager name: at most 48 characters of A-Z a-z 0-9 . _ / %, with a leading * for a CCDT queue manager group"
            )));
        }
        let (mut user, password) = match userinfo {
            None => (None, None),
            Some(u) => match u.split_once(':') {
                Some((u, p)) => (Some(decode(u)), Some(Secret::new(decode(p)))),
                None => (Some(decode(u)), None),
            },
        };
        let (mut conn, mut channel, mut cipher, mut keyrepo) = (None, None, None, None);
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            let v = v.into_owned();
            match k.as_ref() {
                "conn" | "connname" => conn = Some(v),
                "channel" => channel = Some(v),
                "user" => user = Some(v),
                "cipher" | "cipherspec" => cipher = Some(v),
                "keyrepo" => keyrepo = Some(v),
                other => {
                    return Err(bad(format!(
                        "unknown parameter '{other}'; known: conn, channel, user, cipher, keyrepo"
                    )));
                }
            }
        }
        let channel = match (channel, conn) {
            (Some(ch), Some(conn)) => {
                if ch.is_empty() || ch.len() > 20 {
                    return Err(bad(format!(
                        "channel '{ch}': MQ channel names are 1 to 20 characters"
                    )));
                }
                if conn.is_empty() || conn.len() > 264 || conn.contains('/') {
                    return Err(bad(format!(
                        "conn '{conn}': write host(port), e.g. conn=127.0.0.1(1414)"
                    )));
                }
                Some((ch, conn))
            }
            (None, None) => None,
            (None, Some(_)) => {
                return Err(bad(
                    "conn= needs channel= too, e.g. channel=DEV.APP.SVRCONN".into(),
                ));
            }
            (Some(_), None) => {
                return Err(bad(
                    "channel= needs conn= too, e.g. conn=127.0.0.1(1414)".into()
                ));
            }
        };
        let tls = match (cipher, keyrepo.or_else(|| std::env::var("MQSSLKEYR").ok())) {
            (None, _) => None,
            (Some(_), _) if channel.is_none() => {
                return Err(bad(
                "cipher= applies to a client channel given by conn= and channel= (otherwise set it in the CCDT)".into(),
            ));
            }
            (Some(c), Some(repo)) => Some((c, repo)),
            (Some(_), None) => {
                return Err(bad(
                "cipher= needs a key repository: add keyrepo=/path/to/key (without .kdb) or set MQSSLKEYR".into(),
            ));
            }
        };
        Ok(IbmMqEndpoint {
            qmgr,
            channel,
            user,
            password,
            tls,
            note: None,
        })
    }
}

#[cfg(test)]
mod conn_tests {
    use super::conn_host_port;

    #[test]
    fn a_conname_gives_its_first_listener() {
        let hp = |h: &str, p| Some((h.to_string(), p));
        assert_eq!(conn_host_port("127.0.0.1(1414)"), hp("127.0.0.1", 1414));
        assert_eq!(conn_host_port("mq1(1415),mq2(1415)"), hp("mq1", 1415));
        assert_eq!(conn_host_port("mqhost"), hp("mqhost", 1414));
        assert_eq!(conn_host_port("mqhost(x)"), None);
        assert_eq!(conn_host_port("(1414)"), None);
    }
}
