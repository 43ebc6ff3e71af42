//! A producer thread: librdkafka with `acks=all` and idempotence, sending its unique
//! values round-robin over the partitions at a steady rate, recording every
//! acknowledgement with its offset and every failure.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::client::ClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};

use crate::CheckError;
use crate::history::{Ack, History, Value};

/// How long the producer may take to settle what it sent once told to stop.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug)]
struct Deliveries {
    history: Arc<History>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(message) => {
                if let Some(value) = message.payload().and_then(Value::parse) {
                    self.history.events().acked.push(Ack {
                        value,
                        partition: message.partition(),
                        offset: message.offset(),
                    });
                }
            }
            Err((error, message)) => {
                if let Some(value) = message.payload().and_then(Value::parse) {
                    self.history
                        .events()
                        .failed
                        .push((value, error.to_string()));
                }
            }
        }
    }
}

/// What one producer thread sends.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) id: u32,
    pub(crate) topic: String,
    pub(crate) partitions: i32,
    /// Messages per second.
    pub(crate) rate: u32,
}

/// Sends until `stop`, then waits for every outstanding acknowledgement.
pub(crate) fn run(
    config: &ClientConfig,
    plan: &Plan,
    history: &Arc<History>,
    stop: &AtomicBool,
) -> Result<(), CheckError> {
    let producer: ThreadedProducer<Deliveries> = config
        .clone()
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        // The broker is down for a moment in every cycle: keep retrying through it.
        .set("message.timeout.ms", "60000")
        .create_with_context(Deliveries {
            history: history.clone(),
        })
        .map_err(CheckError::kafka("create a producer"))?;
    let started = Instant::now();
    let mut seq: u64 = 0;
    while !stop.load(Ordering::SeqCst) {
        if let Some((code, reason)) = producer.client().fatal_error() {
            history
                .events()
                .client_errors
                .push(format!("producer p{}: fatal {code:?}: {reason}", plan.id));
            history.sent(plan.id, seq);
            return Ok(());
        }
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let due = elapsed_ms.saturating_mul(u64::from(plan.rate)) / 1000;
        if seq >= due {
            std::thread::sleep(Duration::from_millis(1));
            continue;
        }
        let value = Value {
            producer: plan.id,
            seq,
        };
        let payload = value.encode();
        let partition =
            i32::try_from(seq % u64::try_from(plan.partitions.max(1)).unwrap_or(1)).unwrap_or(0);
        let record = BaseRecord::<(), String>::to(&plan.topic)
            .partition(partition)
            .payload(&payload);
        if let Err(error) = send_waiting(&producer, record) {
            history
                .events()
                .failed
                .push((value, format!("not sent: {error}")));
        }
        seq += 1;
    }
    history.sent(plan.id, seq);
    producer
        .flush(FLUSH_TIMEOUT)
        .map_err(CheckError::kafka("flush the producer"))
}

/// Queues `record`, waiting while the producer's queue is full; the error if it
/// cannot be queued at all.
pub(crate) fn send_waiting<C, K, P>(
    producer: &ThreadedProducer<C>,
    mut record: BaseRecord<'_, K, P, C::DeliveryOpaque>,
) -> Result<(), KafkaError>
where
    C: ProducerContext + 'static,
    K: rdkafka::message::ToBytes + ?Sized,
    P: rdkafka::message::ToBytes + ?Sized,
{
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                record = back;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((error, _)) => return Err(error),
        }
    }
}
