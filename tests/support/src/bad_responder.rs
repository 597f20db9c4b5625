//! A misbehaving AMQP 0-9-1 responder, the hostile review's "bad responder" as a tool of
//! the repo: it consumes a request queue like a flow and answers each request wrongly in
//! one chosen way. Written on amqprs (not oemputx's own session code), in a thread of its
//! own; dropped, it stops and deletes its queue.

use amqprs::BasicProperties;
use amqprs::channel::{
    BasicAckArguments, BasicConsumeArguments, BasicPublishArguments, QueueDeclareArguments,
    QueueDeleteArguments,
};
use amqprs::connection::Connection;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How each request is answered.
#[derive(Debug, Clone, Copy)]
pub enum Misbehaviour {
    /// Two identical replies to every request.
    ReplyTwice,
    /// One reply, after this long.
    ReplyAfter(Duration),
}

pub struct BadResponder {
    queue: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl BadResponder {
    /// Consume `queue` (declared durable) and answer as `how` says; returns once it consumes.
    pub fn start(queue: &str, how: Misbehaviour) -> BadResponder {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (q, s) = (queue.to_string(), stop.clone());
        let thread = std::thread::spawn(move || {
            crate::amqp::runtime().block_on(serve(&q, how, &s, ready_tx));
        });
        ready_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the bad responder consumes within 20 s");
        BadResponder {
            queue: queue.to_string(),
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for BadResponder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        crate::amqp::delete_queue(&self.queue);
    }
}

async fn serve(
    queue: &str,
    how: Misbehaviour,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<()>,
) {
    let conn = Connection::open(&crate::amqp::open_args())
        .await
        .expect("the test broker must be running");
    let ch = conn.open_channel(None).await.expect("channel");
    ch.queue_declare(QueueDeclareArguments::durable_client_named(queue))
        .await
        .expect("declare the request queue");
    let (_, mut rx) = ch
        .basic_consume_rx(BasicConsumeArguments::new(queue, "bad-responder"))
        .await
        .expect("consume");
    let _ = ready.send(());
    while !stop.load(Ordering::SeqCst) {
        let Ok(Some(msg)) = tokio::time::timeout(Duration::from_millis(50), rx.recv()).await else {
            continue;
        };
        let (Some(deliver), Some(props), Some(body)) =
            (msg.deliver, msg.basic_properties, msg.content)
        else {
            continue;
        };
        let Some(reply_to) = props.reply_to().cloned() else {
            continue;
        };
        let mut reply = BasicProperties::default();
        if let Some(c) = props.correlation_id().or(props.message_id()) {
            reply.with_correlation_id(c);
        }
        let times = match how {
            Misbehaviour::ReplyTwice => 2,
            Misbehaviour::ReplyAfter(d) => {
                tokio::time::sleep(d).await;
                1
            }
        };
        for _ in 0..times {
            let _ = ch
                .basic_publish(
                    reply.clone(),
                    body.clone(),
                    BasicPublishArguments::new("", &reply_to),
                )
                .await;
        }
        let _ = ch
            .basic_ack(BasicAckArguments::new(deliver.delivery_tag(), false))
            .await;
    }
    let _ = ch.queue_delete(QueueDeleteArguments::new(queue)).await;
    let _ = conn.close().await;
}
