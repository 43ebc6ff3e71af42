//! The transactional workload (`--transactions N`), beside the idempotent one:
//!
//! - N **writers**, each a librdkafka transactional producer, write transactions of a
//!   few values over the partitions of `faultcheck-txn`, and commit three in four,
//!   abort the rest; every transaction's values and outcome (committed, aborted, or
//!   unknown when the client could not tell) go into the history. With
//!   `--check-back` each writer notes its decision for the broker's checker
//!   ([`crate::check_back`]), and a transaction's outcome is what it decided;
//! - a **reader**, a read_committed consumer of `faultcheck-txn`, records every value
//!   it sees while the brokers die;
//! - a **transformer** reads the main topic read_committed in consumer group
//!   `spool-faultcheck-ctp-<seed>` and writes each record's value to `faultcheck-ctp`,
//!   sending its offsets to the same transaction (consume-transform-produce). On any
//!   error it starts over with a new consumer and producer, which resume from the
//!   committed offsets.
//!
//! The checks are in `checker::transactions`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::producer::{
    BaseRecord, DefaultProducerContext, DeliveryResult, Producer, ProducerContext, ThreadedProducer,
};
use rdkafka::{ClientConfig, ClientContext, Message};

use crate::CheckError;
use crate::check_back::{Decision, Decisions};
use crate::history::{History, TxnOutcome, TxnRecord, Value};

/// The topic the writers write and the reader reads.
pub(crate) const TXN_TOPIC: &str = "faultcheck-txn";
/// The topic the transformer writes.
pub(crate) const CTP_TOPIC: &str = "faultcheck-ctp";

/// Values of writer `w` carry producer number `WRITER_BASE + w`.
pub(crate) const WRITER_BASE: u32 = 1_000;

/// Values per transaction of a writer.
const VALUES_PER_TXN: u64 = 5;

/// How long a client call may take: longer than a broker's death and restart.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// `transaction.timeout.ms` of the clients: a transaction a dead client left open is
/// aborted by the coordinator this long after it began.
pub(crate) const TXN_TIMEOUT_MS: u32 = 5_000;

fn transactional<C: ProducerContext + 'static>(
    config: &ClientConfig,
    id: &str,
    context: C,
) -> Result<ThreadedProducer<C>, KafkaError> {
    let producer: ThreadedProducer<C> = config
        .clone()
        .set("transactional.id", id)
        .set("transaction.timeout.ms", TXN_TIMEOUT_MS.to_string())
        .set("message.timeout.ms", TXN_TIMEOUT_MS.to_string())
        .set("linger.ms", "2")
        .create_with_context(context)?;
    producer.init_transactions(CALL_TIMEOUT)?;
    Ok(producer)
}

/// Counts the deliveries that failed: a writer decides to commit only when none of
/// its transaction's did.
#[derive(Debug, Default, Clone)]
struct Deliveries {
    failed: Arc<std::sync::atomic::AtomicU64>,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _opaque: ()) {
        if result.is_err() {
            self.failed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// A writer: transactions until `stop`, each recorded with its outcome (with
/// `decisions`, the one it decided, which the broker's checker is told).
pub(crate) fn write(
    config: &ClientConfig,
    writer: u32,
    partitions: i32,
    history: &Arc<History>,
    decisions: Option<&Decisions>,
    stop: &AtomicBool,
) -> Result<(), CheckError> {
    let id = format!("{}{writer}", crate::check_back::PREFIX);
    let deliveries = Deliveries::default();
    let mut seq = 0_u64;
    let mut round = 0_u64;
    while !stop.load(Ordering::SeqCst) {
        let producer = match transactional(config, &id, deliveries.clone()) {
            Ok(producer) => producer,
            Err(_) => {
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        while !stop.load(Ordering::SeqCst) {
            round += 1;
            let values: Vec<Value> = (0..VALUES_PER_TXN)
                .map(|i| Value {
                    producer: WRITER_BASE + writer,
                    seq: seq + i,
                })
                .collect();
            seq += VALUES_PER_TXN;
            let commit = !round.is_multiple_of(4);
            // With check-back, every fifth transaction's writer "dies" once it
            // decided: it leaves the transaction open for the broker to check back.
            let walk_away = decisions.is_some() && round % 5 == 2;
            let note = |decision| {
                if let Some(decisions) = decisions {
                    decisions.note(&id, decision);
                }
            };
            note(Decision::Open);
            let failed_before = deliveries.failed.load(Ordering::SeqCst);
            let delivered = || deliveries.failed.load(Ordering::SeqCst) == failed_before;
            let (learnt, decided) = one_transaction(
                &producer,
                &values,
                partitions,
                (commit, walk_away),
                delivered,
                note,
            );
            let outcome = match (decisions, learnt, decided) {
                // Checked back: what was decided is what happens.
                (Some(_), TxnOutcome::Unknown, Decision::Commit) => TxnOutcome::Committed,
                (Some(_), TxnOutcome::Unknown, _) => TxnOutcome::Aborted,
                (_, learnt, _) => learnt,
            };
            history.events().txns.push(TxnRecord { values, outcome });
            if learnt == TxnOutcome::Unknown {
                // Start over: a new producer fences this one and settles what it left
                // (aborts it, or has it checked back).
                break;
            }
        }
    }
    Ok(())
}

/// Writes `values` in one transaction and commits or aborts it: what the client
/// learnt of the outcome, and what was decided (noted through `note` before the
/// client is asked to commit or abort). It commits only if `commit` and every record
/// was `delivered`; with `walk_away` it asks the client nothing once it decided (the
/// outcome is unknown: the broker checks the transaction back).
fn one_transaction(
    producer: &ThreadedProducer<Deliveries>,
    values: &[Value],
    partitions: i32,
    (commit, walk_away): (bool, bool),
    delivered: impl Fn() -> bool,
    note: impl Fn(Decision),
) -> (TxnOutcome, Decision) {
    let rollback = || {
        note(Decision::Rollback);
        if walk_away {
            return (TxnOutcome::Unknown, Decision::Rollback);
        }
        (abort(producer), Decision::Rollback)
    };
    if producer.begin_transaction().is_err() {
        note(Decision::Rollback);
        return (TxnOutcome::Unknown, Decision::Rollback);
    }
    for (i, value) in values.iter().enumerate() {
        let payload = value.encode();
        let partition = i32::try_from(i).unwrap_or(0) % partitions.max(1);
        let record = BaseRecord::<(), String>::to(TXN_TOPIC)
            .partition(partition)
            .payload(&payload);
        if crate::producer::send_waiting(producer, record).is_err() {
            return rollback();
        }
    }
    // Sent before the decision, so that an abort has records to hide.
    if producer.flush(CALL_TIMEOUT).is_err() {
        return rollback();
    }
    spool_loadgen::wait_for_deliveries(producer);
    if !commit || producer.in_flight_count() > 0 || !delivered() {
        return rollback();
    }
    note(Decision::Commit);
    if walk_away {
        return (TxnOutcome::Unknown, Decision::Commit);
    }
    match producer.commit_transaction(CALL_TIMEOUT) {
        Ok(()) => (TxnOutcome::Committed, Decision::Commit),
        Err(_) => (TxnOutcome::Unknown, Decision::Commit),
    }
}

fn abort<C: ProducerContext + 'static>(producer: &ThreadedProducer<C>) -> TxnOutcome {
    match producer.abort_transaction(CALL_TIMEOUT) {
        Ok(()) => TxnOutcome::Aborted,
        Err(_) => TxnOutcome::Unknown,
    }
}

/// The reader: records every value a read_committed consumer sees until `stop`.
pub(crate) fn read(
    config: &ClientConfig,
    history: &Arc<History>,
    stop: &AtomicBool,
) -> Result<(), CheckError> {
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", "spool-faultcheck-txn-reader")
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .map_err(CheckError::kafka("create the transaction reader"))?;
    consumer
        .subscribe(&[TXN_TOPIC])
        .map_err(CheckError::kafka("subscribe the transaction reader"))?;
    while !stop.load(Ordering::SeqCst) {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100))
            && let Some(value) = message.payload().and_then(Value::parse)
        {
            history.events().txn_reads.push(value);
        }
    }
    Ok(())
}

/// The transformer: consume-transform-produce from `input` in `group` until `stop`.
pub(crate) fn transform(
    config: &ClientConfig,
    input: &str,
    group: &str,
    history: &Arc<History>,
    stop: &AtomicBool,
) -> Result<(), CheckError> {
    while !stop.load(Ordering::SeqCst) {
        if transform_session(config, input, group, history, stop).is_err() {
            history.events().ctp_restarts += 1;
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

fn transform_session(
    config: &ClientConfig,
    input: &str,
    group: &str,
    history: &Arc<History>,
    stop: &AtomicBool,
) -> Result<(), KafkaError> {
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", group)
        .set("isolation.level", "read_committed")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()?;
    consumer.subscribe(&[input])?;
    let producer = transactional(config, "faultcheck-transformer", DefaultProducerContext)?;
    while !stop.load(Ordering::SeqCst) {
        let mut batch = Vec::new();
        while batch.len() < 100 {
            match consumer.poll(Duration::from_millis(if batch.is_empty() {
                100
            } else {
                5
            })) {
                Some(Ok(message)) => batch.push((
                    message.partition(),
                    message.payload().unwrap_or_default().to_vec(),
                )),
                Some(Err(_)) | None => break,
            }
        }
        if batch.is_empty() {
            continue;
        }
        producer.begin_transaction()?;
        for (partition, payload) in &batch {
            let record = BaseRecord::<(), Vec<u8>>::to(CTP_TOPIC)
                .partition(*partition)
                .payload(payload);
            crate::producer::send_waiting(&producer, record)?;
        }
        let positions = consumer.position()?;
        let metadata = consumer.group_metadata().ok_or(KafkaError::Canceled)?;
        producer.send_offsets_to_transaction(&positions, &metadata, CALL_TIMEOUT)?;
        spool_loadgen::wait_for_deliveries(&producer);
        producer.commit_transaction(CALL_TIMEOUT)?;
        history.events().ctp_transactions += 1;
    }
    Ok(())
}
