//! The real MQI: the IBM MQ client library, loaded at run time, called through `mqi`.
//!
//! Loading at run time (dlopen) lets oemputx build and run everywhere; only a run against
//! IBM MQ needs the library, and its absence is a usage error that says how to install it.

use super::calls::{
    ConnectSpec, Got, Hobj, Id, MqFailure, MqiConnection, MqiLibrary, QueueKind, Reason, RequestMd,
};
use dlopen2::wrapper::Container;
use libmqm_sys::dlopen2::MqWrapper;
use mqi::connection::{
    Binding, ConnectOption, ConnectStructs, Credentials, MqServer, ThreadBlock, Tls,
};
use mqi::get::GetWait;
use mqi::header::{TextEnc, fmt};
use mqi::put::PutOption;
use mqi::result::ResultComp;
use mqi::string::CCSID;
use mqi::types::MessageFormat;
use mqi::types::{
    ApplName, CipherSpec, CorrelationId, KeyRepo, MQGMO, MQOO, MQPMO, MessageId, QueueManagerName,
    QueueName, ReplyToQueueName,
};
use mqi::{Object, Syncpoint, attribute, constants, mqstr, structs};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

/// The client library's file name on Linux (the thread-safe variant).
pub const MQ_LIBRARY: &str = "libmqm_r.so";

type Lib = Arc<Container<MqWrapper>>;
type Conn = mqi::Connection<Lib, ThreadBlock>;

const APPL_NAME: ApplName = ApplName(mqstr!("oemputx"));

/// The loaded library; loaded once per process and never unloaded (MQ keeps threads).
pub struct Loaded(Lib);

/// Where the library was looked for and why each place failed, for the error message.
#[derive(Debug, Clone)]
pub struct NotLoaded {
    pub tried: Vec<String>,
}

impl std::fmt::Display for NotLoaded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot load the IBM MQ client library {MQ_LIBRARY} (tried {}). Install the IBM MQ \
             redistributable client (9.3 or later, e.g. 9.3.0.0-IBM-MQC-Redist-LinuxX64.tar.gz from \
             https://public.dhe.ibm.com/ibmdl/export/pub/software/websphere/messaging/mqdev/redist/), \
             unpack it to /opt/mqm, or set MQ_INSTALLATION_PATH to where it is (its lib64 holds {MQ_LIBRARY}) \
             or add that lib64 to LD_LIBRARY_PATH",
            self.tried.join("; ")
        )
    }
}

/// The places looked at, in order: $MQ_INSTALLATION_PATH/lib64, the loader's own search
/// (LD_LIBRARY_PATH, ld.so.cache), then /opt/mqm/lib64.
fn candidates() -> Vec<(String, Option<PathBuf>)> {
    let mut out = Vec::new();
    match std::env::var_os("MQ_INSTALLATION_PATH") {
        Some(dir) => {
            let p = PathBuf::from(dir).join("lib64").join(MQ_LIBRARY);
            out.push((p.display().to_string(), Some(p)));
        }
        None => out.push(("MQ_INSTALLATION_PATH (unset)".into(), None)),
    }
    let ld = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    out.push((
        format!(
            "{MQ_LIBRARY} on LD_LIBRARY_PATH ({}) and the system paths",
            if ld.is_empty() { "unset" } else { &ld }
        ),
        Some(PathBuf::from(MQ_LIBRARY)),
    ));
    let opt = PathBuf::from("/opt/mqm/lib64").join(MQ_LIBRARY);
    out.push((opt.display().to_string(), Some(opt)));
    out
}

/// Load the library, once per process.
pub fn load() -> Result<Arc<Loaded>, NotLoaded> {
    static LOADED: OnceLock<Result<Arc<Loaded>, NotLoaded>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let mut tried = Vec::new();
            for (label, path) in candidates() {
                let Some(path) = path else {
                    tried.push(label);
                    continue;
                };
                // SAFETY: loading a shared library runs its initialisers; this is the IBM MQ
                // client the user installed, found where MQ documents it.
                match unsafe { Container::<MqWrapper>::load(&path) } {
                    Ok(lib) => return Ok(Arc::new(Loaded(Arc::new(lib)))),
                    Err(e) => tried.push(format!("{label}: {e}")),
                }
            }
            Err(NotLoaded { tried })
        })
        .clone()
}

/// The outcome of MQCMIT or MQBACK: MQ reports a unit of work it could not commit as the
/// *warning* MQRC_BACKED_OUT (MQCMIT, IBM MQ documentation "MQCMIT - Commit changes",
/// reason codes for MQCC_WARNING), which `mqi` passes on as success with a warning. Here
/// it is the failure it is; other warnings are not failures.
fn settle<T>(verb: &'static str, result: ResultComp<T>) -> Result<(), MqFailure> {
    match result {
        Ok(mqi::result::Completion(_, Some((rc, _)))) if rc == constants::MQRC_BACKED_OUT => {
            Err(MqFailure {
                verb,
                reason: Reason::BACKED_OUT,
            })
        }
        Ok(_) => Ok(()),
        Err(e) => Err(failure(e)),
    }
}

fn failure(e: mqi::result::Error) -> MqFailure {
    let mqi::result::Error(_, verb, rc) = e;
    MqFailure {
        verb,
        reason: Reason(rc.0),
    }
}

/// A name MQ cannot hold (too long, bad characters) fails as MQ would fail it.
fn bad_name(verb: &'static str) -> MqFailure {
    MqFailure {
        verb,
        reason: Reason::OBJECT_NAME_ERROR,
    }
}

impl MqiLibrary for Loaded {
    fn connect(&self, spec: &ConnectSpec) -> Result<Box<dyn MqiConnection>, MqFailure> {
        let qm = QueueManagerName::from_str(&spec.qmgr).map_err(|_| bad_name("MQCONNX"))?;
        let server_text = spec
            .channel
            .as_ref()
            .map(|(channel, conname)| format!("{channel}/TCP/{conname}"));
        // The client channel definition: MqServer's parse fills channel, connection name
        // and transport into a default client MQCD, whose MaxMsgLength (4 MB) is then
        // raised — MQSERVER-style strings cannot carry it.
        let cd = match server_text.as_deref() {
            Some(s) => {
                let server = MqServer::try_from(s).map_err(|_| MqFailure {
                    verb: "MQCONNX",
                    reason: Reason::UNKNOWN_CHANNEL_NAME,
                })?;
                let mut structs = ConnectStructs::default();
                server.apply_param(&mut structs);
                let mut cd = structs.cd;
                if let Some(max) = spec.max_msg_length {
                    cd.MaxMsgLength = max;
                }
                Some(cd)
            }
            None => None,
        };
        // A queue manager named alone, with a client channel named by the environment:
        // client binding, so that a host with the MQ server installed does not try a local
        // queue manager first.
        let binding = spec.client_binding.map(|_| Binding::Client);
        let creds = spec
            .credentials
            .as_ref()
            .map(|(user, password)| Credentials::User(user.as_str(), password.expose().into()));
        let tls_parts = match &spec.tls {
            Some((cipher, repo)) => Some((
                CipherSpec::from_str(cipher).map_err(|_| bad_name("MQCONNX"))?,
                KeyRepo::from_str(repo).map_err(|_| bad_name("MQCONNX"))?,
            )),
            None => None,
        };
        let tls = tls_parts
            .as_ref()
            .map(|(cipher, repo)| Tls::new(repo, None, cipher));
        let conn: Conn = mqi::connect_lib::<ThreadBlock, _>(
            self.0.clone(),
            // Applied right to left: the MQCD first, so that TLS's cipher lands on it.
            &(APPL_NAME, qm, binding, creds, tls, cd),
        )
        .map_err(failure)?
        .discard_warning();
        Ok(Box::new(RealConnection {
            conn: Arc::new(conn),
            objects: Vec::new(),
        }))
    }
}

struct RealConnection {
    conn: Arc<Conn>,
    objects: Vec<Option<Object<Arc<Conn>>>>,
}

impl RealConnection {
    fn object(&self, hobj: Hobj, verb: &'static str) -> Result<&Object<Arc<Conn>>, MqFailure> {
        self.objects
            .get(hobj)
            .and_then(Option::as_ref)
            .ok_or(MqFailure {
                verb,
                reason: Reason::HOBJ_ERROR,
            })
    }
}

fn put_options(md: &RequestMd, options: MQPMO) -> Result<impl PutOption<'static>, MqFailure> {
    let reply_to = ReplyToQueueName::from_str(&md.reply_to_q).map_err(|_| bad_name("MQPUT"))?;
    Ok((options, md.persistence, constants::MQMT_REQUEST, reply_to))
}

/// MQSTR in UTF-8 (CCSID 1208) for text, MQFMT_NONE for bytes.
fn format(md: &RequestMd) -> MessageFormat {
    MessageFormat {
        ccsid: CCSID(1208),
        encoding: constants::MQENC_NATIVE,
        fmt: TextEnc::Ascii(if md.text {
            fmt::MQFMT_STRING
        } else {
            fmt::MQFMT_NONE
        }),
    }
}

impl MqiConnection for RealConnection {
    fn open(&mut self, queue: &str, options: MQOO) -> Result<(Hobj, String), MqFailure> {
        let name = QueueName::from_str(queue).map_err(|_| bad_name("MQOPEN"))?;
        let (obj, resolved, _) = Object::open_resolved(self.conn.clone(), &(name, options))
            .map_err(failure)?
            .discard_warning();
        // Blank when MQ gave no name; the transport decides what that means.
        let resolved = resolved
            .map(|q| q.to_string().trim_end_matches([' ', '\0']).to_string())
            .unwrap_or_default();
        self.objects.push(Some(obj));
        Ok((self.objects.len() - 1, resolved))
    }

    fn inquire_kind(&mut self, hobj: Hobj) -> Result<QueueKind, MqFailure> {
        let obj = self.object(hobj, "MQINQ")?;
        // An alias has no definition type: MQ answers MQIAV_NOT_APPLICABLE for it with
        // the warning MQRC_SELECTOR_NOT_FOR_TYPE, which is no failure here.
        let items = obj
            .inquire(&[attribute::MQIA_Q_TYPE, attribute::MQIA_DEFINITION_TYPE])
            .map_err(failure)?
            .discard_warning();
        let mut values = items.iter().filter_map(|item| item.long_value());
        let q_type = values.next().unwrap_or(-1);
        let definition_type = values.next().unwrap_or(-1);
        Ok(QueueKind::from_inquiry(q_type, definition_type))
    }

    fn inquire_open_input_count(&mut self, hobj: Hobj) -> Result<i32, MqFailure> {
        let obj = self.object(hobj, "MQINQ")?;
        let items = obj
            .inquire(&[attribute::MQIA_OPEN_INPUT_COUNT])
            .map_err(failure)?
            .discard_warning();
        items
            .iter()
            .find_map(|item| item.long_value())
            .ok_or(MqFailure {
                verb: "MQINQ",
                reason: Reason::SELECTOR_ERROR,
            })
    }

    fn put(
        &mut self,
        hobj: Hobj,
        md: &RequestMd,
        options: MQPMO,
        body: &[u8],
    ) -> Result<Id, MqFailure> {
        let opts = put_options(md, options)?;
        let obj = self.object(hobj, "MQPUT")?;
        let id: MessageId = obj
            .put_message_with::<MessageId>(&opts, &(body, format(md)))
            .map_err(failure)?
            .discard_warning();
        Ok(id.0)
    }

    fn put1(
        &mut self,
        queue: &str,
        md: &RequestMd,
        options: MQPMO,
        body: &[u8],
    ) -> Result<Id, MqFailure> {
        let name = QueueName::from_str(queue).map_err(|_| bad_name("MQPUT1"))?;
        let opts = put_options(md, options)?;
        let id: MessageId = self
            .conn
            .put_message_with::<MessageId>(&name, &opts, &(body, format(md)))
            .map_err(failure)?
            .discard_warning();
        Ok(id.0)
    }

    fn get(
        &mut self,
        hobj: Hobj,
        options: MQGMO,
        wait_ms: i32,
        correl_id: Option<Id>,
        buffer: &mut [u8],
    ) -> Result<Option<Got>, MqFailure> {
        let obj = self.object(hobj, "MQGET")?;
        let wait = if options.contains(constants::MQGMO_WAIT) {
            GetWait::Wait(wait_ms)
        } else {
            GetWait::NoWait
        };
        let got = obj
            .get_data_with::<structs::MQMD, u8>(
                &(options, wait, correl_id.map(CorrelationId)),
                buffer,
            )
            .map_err(failure)?
            .discard_warning();
        Ok(got.map(|(body, md)| Got {
            msg_id: md.MsgId,
            correl_id: md.CorrelId,
            len: body.len(),
        }))
    }

    fn commit(&mut self) -> Result<(), MqFailure> {
        settle("MQCMIT", Syncpoint::new(&*self.conn).commit())
    }

    fn backout(&mut self) -> Result<(), MqFailure> {
        settle("MQBACK", Syncpoint::new(&*self.conn).backout())
    }

    fn close(&mut self, hobj: Hobj) -> Result<(), MqFailure> {
        match self.objects.get_mut(hobj).and_then(Option::take) {
            Some(obj) => obj.close().map_err(failure).map(|_| ()),
            None => Ok(()),
        }
    }

    fn disconnect(mut self: Box<Self>) -> Result<(), MqFailure> {
        for obj in self.objects.drain(..).flatten() {
            let _ = obj.close();
        }
        match Arc::try_unwrap(self.conn) {
            Ok(conn) => conn.disconnect().map_err(failure).map(|_| ()),
            // Another owner still holds it; dropping the last one disconnects.
            Err(_) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mqi::result::Completion;

    #[test]
    fn a_commit_mq_backed_out_is_a_failure_not_a_success() {
        let backed_out: ResultComp<()> = Ok(Completion::new_warning(
            (),
            (constants::MQRC_BACKED_OUT, "MQCMIT"),
        ));
        assert_eq!(
            settle("MQCMIT", backed_out),
            Err(MqFailure {
                verb: "MQCMIT",
                reason: Reason::BACKED_OUT
            })
        );
        assert_eq!(settle("MQCMIT", Ok(Completion::new(()))), Ok(()));
        // Another warning (a truncated message, say) is not a failed commit.
        let other: ResultComp<()> = Ok(Completion::new_warning(
            (),
            (constants::MQRC_TRUNCATED_MSG_ACCEPTED, "MQCMIT"),
        ));
        assert_eq!(settle("MQCMIT", other), Ok(()));
    }
}
