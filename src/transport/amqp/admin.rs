//! RabbitMQ's administration over AMQP 0-9-1, on a connection of its own: counting a
//! queue's consumers and deleting a queue oemputx made. Both AMQP transports use it (AMQP
//! 1.0 cannot ask these of RabbitMQ).

use super::super::{QueueSetup, TransportError};
use super::Amqp;
use super::url::AmqpEndpoint;
use amqprs::channel::{Channel, QueueDeclareArguments, QueueDeleteArguments};

/// One administrative call on a connection and channel of its own, closed afterwards.
fn with_admin_channel<T>(
    ep: &AmqpEndpoint,
    queue: &str,
    connection_name: &str,
    call: impl AsyncFnOnce(&Amqp, &Channel) -> Result<T, TransportError>,
) -> Result<T, TransportError> {
    let admin = Amqp::new(ep.clone(), QueueSetup::for_queue(queue));
    let within = ADMIN_TIMEOUT;
    admin.runtime()?.block_on(async {
        // Bounded: a broker (or a path to it) that stalls must not hold up the run's end.
        tokio::time::timeout(within, async {
            let (conn, _) = admin.connect(connection_name).await?;
            let ch = conn
                .open_channel(None)
                .await
                .map_err(|e| admin.broker_error("opening a channel", e))?;
            let result = call(&admin, &ch).await;
            let _ = conn.close().await;
            result
        })
        .await
        .unwrap_or_else(|_| {
            Err(TransportError::broker(
                &admin.target(),
                &format!("the administrative call on queue '{queue}'"),
                format!("no answer within {} s", within.as_secs()),
            ))
        })
    })
}

/// The longest one administrative call (connect, call, close) may take: the broker answers
/// in milliseconds when it answers at all.
const ADMIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Delete a queue oemputx made (the A/B gate's request queues); a missing one is fine.
/// Tidying, so a signal that ended the run does not cut it short ([`crate::signals::finishing`]).
pub fn delete_queue(ep: &AmqpEndpoint, queue: &str) -> Result<(), TransportError> {
    crate::signals::finishing(|| {
        with_admin_channel(ep, queue, "oemputx-admin", async |admin, ch| {
            ch.queue_delete(QueueDeleteArguments::new(queue))
                .await
                .map(|_| ())
                .map_err(|e| admin.broker_error(format!("deleting queue '{queue}'"), e))
        })
    })
}

/// Consumers on `queue` now (0 when the queue does not exist yet): how `sweep` knows that
/// the flows it started are ready.
pub fn consumers(ep: &AmqpEndpoint, queue: &str) -> Result<u32, TransportError> {
    with_admin_channel(ep, queue, "oemputx-probe", async |_, ch| {
        Ok(ch
            .queue_declare(QueueDeclareArguments::new(queue).passive(true).finish())
            .await
            .ok()
            .flatten()
            .map_or(0, |(_, _, consumers)| consumers))
    })
}
