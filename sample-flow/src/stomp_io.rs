//! The flow's STOMP side (ActiveMQ Classic): a subscription to `/queue/INPUT` with
//! `ack:client-individual` (and ActiveMQ's prefetch), each reply sent to the request's
//! `reply-to` with its `correlation-id` (JMSCorrelationID; the request's `message-id` when
//! it has none), the request acknowledged (ACK of its `ack` id) once its work is done, so
//! that a flow that dies mid-message leaves it to be redelivered. The frames are oemputx's
//! own codec, over a tokio TCP stream (TLS is oemputx's side only, for now).

use super::engine::{FlowIo, FlowOptions, Incoming, Replied};
use anyhow::Context;
use oemputx::transport::stomp::frame::{Frame, FrameReader, encode_parts};
use oemputx::transport::stomp::url::{StompEndpoint, queue_destination};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Frames larger than this are refused (ActiveMQ's default frame limit).
const MAX_FRAME: usize = 100 * 1024 * 1024;

/// One instance's connection and subscription.
pub struct StompIo {
    tcp: TcpStream,
    /// Bytes read and not yet taken as frames (its scan resumes where the last read left it).
    frames: FrameReader,
    out: Vec<u8>,
    queue: String,
}

/// What a request carries for its reply and acknowledgement.
pub struct Meta {
    ack: Option<String>,
    reply_to: Option<String>,
    persistent: bool,
}

impl StompIo {
    pub async fn open(i: usize, ep: &StompEndpoint, o: &FlowOptions) -> anyhow::Result<StompIo> {
        let target = ep.redacted();
        if ep.tls.is_some() {
            anyhow::bail!(
                "{target}: sample-flow serves STOMP without TLS so far; give it stomp://"
            );
        }
        let tcp = tokio::time::timeout(
            Duration::from_secs(5),
            TcpStream::connect((ep.host.as_str(), ep.port)),
        )
        .await
        .map_err(|_| anyhow::anyhow!("cannot connect to {target}: no answer within 5 s"))?
        .with_context(|| {
            format!("cannot connect to {target}: is the broker's STOMP connector enabled?")
        })?;
        let _ = tcp.set_nodelay(true);
        let mut io = StompIo {
            tcp,
            frames: FrameReader::new(MAX_FRAME),
            out: Vec::with_capacity(1024),
            queue: o.input_queue.clone(),
        };
        let mut connect = Frame::new("CONNECT")
            .header("accept-version", "1.2")
            .header("host", ep.host.clone())
            .header("heart-beat", "0,0")
            .header(
                "client-id",
                format!("sample-flow-{}-{i}", std::process::id()),
            );
        if let Some(l) = &ep.login {
            connect = connect.header("login", l.clone());
        }
        if let Some(p) = &ep.passcode {
            connect = connect.header("passcode", p.expose());
        }
        io.send(&connect).await?;
        match io.read_frame(Duration::from_secs(5)).await? {
            Some(f) if f.command == "CONNECTED" => {}
            Some(f) => anyhow::bail!(
                "{target} refused the connection: {}",
                f.get("message").unwrap_or(&f.command)
            ),
            None => anyhow::bail!("{target}: no CONNECTED within 5 s"),
        }
        io.send(
            &Frame::new("SUBSCRIBE")
                .header("id", "requests")
                .header("destination", queue_destination(&o.input_queue))
                .header("ack", "client-individual")
                .header("activemq.prefetchSize", o.prefetch.to_string()),
        )
        .await?;
        Ok(io)
    }

    async fn send(&mut self, f: &Frame) -> anyhow::Result<()> {
        self.out.clear();
        f.encode_into(&mut self.out);
        self.tcp
            .write_all(&self.out)
            .await
            .context("sending a frame")
    }

    /// The next frame, or `None` when none came within `wait`.
    async fn read_frame(&mut self, wait: Duration) -> anyhow::Result<Option<Frame>> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(f) = self.frames.next_frame()? {
                return Ok(Some(f));
            }
            match tokio::time::timeout_at(deadline, self.tcp.read(&mut chunk)).await {
                Err(_) => return Ok(None),
                Ok(Ok(0)) => anyhow::bail!("the broker closed the connection"),
                Ok(Ok(n)) => self.frames.extend(&chunk[..n]),
                Ok(Err(e)) => return Err(e).context("reading from the broker"),
            }
        }
    }
}

impl FlowIo for StompIo {
    type Meta = Meta;

    async fn next(&mut self, wait: Duration) -> anyhow::Result<Option<Incoming<Meta>>> {
        loop {
            let Some(f) = self.read_frame(wait).await? else {
                return Ok(None);
            };
            match f.command.as_str() {
                "MESSAGE" => {
                    let correl = f
                        .get("correlation-id")
                        .or(f.get("message-id"))
                        .map(String::from);
                    let meta = Meta {
                        ack: f.get("ack").map(String::from),
                        reply_to: f.get("reply-to").map(String::from),
                        persistent: f.get("persistent") == Some("true"),
                    };
                    return Ok(Some(Incoming {
                        body: f.body,
                        correl,
                        meta,
                    }));
                }
                // A reply sent to the temporary queue of a requester that went away (its
                // connection broke): ActiveMQ answers it with an ERROR, which ends that reply,
                // not the subscription.
                "ERROR" if to_a_gone_requester(&f) => {
                    eprintln!(
                        "sample-flow: a reply was not delivered: {}",
                        f.get("message").unwrap_or_default()
                    );
                }
                "ERROR" => anyhow::bail!(
                    "the broker ended the subscription to '{}': {}",
                    self.queue,
                    f.get("message").unwrap_or("ERROR")
                ),
                _ => {}
            }
        }
    }

    async fn reply(&mut self, req: &Incoming<Meta>, body: Vec<u8>) -> anyhow::Result<Replied> {
        let Some(to) = &req.meta.reply_to else {
            return Ok(Replied::NoReplyTo);
        };
        let mut headers = vec![("destination".to_string(), to.clone())];
        if let Some(c) = &req.correl {
            headers.push(("correlation-id".into(), c.clone()));
        }
        if req.meta.persistent {
            headers.push(("persistent".into(), "true".into()));
        }
        self.out.clear();
        encode_parts("SEND", &headers, &body, &mut self.out);
        self.tcp
            .write_all(&self.out)
            .await
            .context("sending a reply")?;
        Ok(Replied::Sent)
    }

    async fn commit(&mut self, req: &Incoming<Meta>) -> anyhow::Result<()> {
        if let Some(id) = &req.meta.ack {
            self.send(&Frame::new("ACK").header("id", id.clone()))
                .await?;
        }
        Ok(())
    }

    async fn audit(&mut self, req: &Incoming<Meta>, to: &str) -> anyhow::Result<()> {
        self.out.clear();
        encode_parts(
            "SEND",
            &[("destination".to_string(), queue_destination(to))],
            &req.body,
            &mut self.out,
        );
        self.tcp
            .write_all(&self.out)
            .await
            .context("sending the audit copy")
    }

    async fn close(mut self) {
        let _ = self.send(&Frame::new("DISCONNECT")).await;
        let _ = self.tcp.shutdown().await;
    }
}

/// Whether an ERROR is ActiveMQ's answer to a reply sent to a temporary queue that is gone
/// (its requester's connection broke): its `message` is then the destination itself
/// (`temp-queue://ID:…`, seen here) or says "Cannot publish to a deleted Destination".
fn to_a_gone_requester(f: &Frame) -> bool {
    let message = f.get("message").unwrap_or_default();
    message.starts_with("temp-queue://")
        || message.contains("deleted Destination")
        || String::from_utf8_lossy(&f.body).contains("deleted Destination")
}
