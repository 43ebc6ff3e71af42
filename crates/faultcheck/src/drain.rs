//! Reads the whole topic back after the run, from offset 0 to each partition's high
//! watermark, with a consumer outside any group; and a topic of transactions,
//! read_committed.

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use crate::CheckError;
use crate::checker::Drained;
use crate::history::Value;

/// How long the drain may take before the run fails.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(300);

pub(crate) fn drain(
    config: &ClientConfig,
    topic: &str,
    partitions: i32,
) -> Result<Drained, CheckError> {
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", "spool-faultcheck-drain")
        .set("enable.auto.commit", "false")
        .create()
        .map_err(CheckError::kafka("create the drain consumer"))?;
    let mut ends = Vec::new();
    let mut assignment = TopicPartitionList::new();
    let started = Instant::now();
    for partition in 0..partitions {
        let (_, high) = watermarks(&consumer, topic, partition, started)
            .map_err(CheckError::kafka("read the high watermarks"))?;
        ends.push(high);
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .map_err(CheckError::kafka("assign the partitions"))?;
    }
    consumer
        .assign(&assignment)
        .map_err(CheckError::kafka("assign the partitions"))?;
    let mut drained = Drained::new();
    let done = |drained: &Drained| {
        ends.iter().enumerate().all(|(partition, end)| {
            *end == 0
                || i32::try_from(partition)
                    .ok()
                    .and_then(|p| drained.get(&p))
                    .is_some_and(|records| {
                        records.last().is_some_and(|(offset, _)| offset + 1 >= *end)
                    })
        })
    };
    while !done(&drained) {
        if started.elapsed() > DRAIN_TIMEOUT {
            return Err(CheckError::Broker(format!(
                "the drain did not reach the high watermarks {ends:?} within {DRAIN_TIMEOUT:?}"
            )));
        }
        // Errors are transient (a connection being made); the deadline covers a broker
        // that never answers.
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(200)) {
            let payload = message.payload().unwrap_or_default();
            let value = Value::parse(payload)
                .ok_or_else(|| String::from_utf8_lossy(payload).chars().take(40).collect());
            let records = drained.entry(message.partition()).or_default();
            if let Some((last, _)) = records.last()
                && message.offset() <= *last
            {
                return Err(CheckError::Broker(format!(
                    "the drain read partition {} offset {} after offset {last}",
                    message.partition(),
                    message.offset()
                )));
            }
            records.push((message.offset(), value));
        }
    }
    Ok(drained)
}

/// Reads a topic of transactions back read_committed: first waits until every
/// transaction in it is decided (the last stable offsets reach the high watermarks:
/// the coordinator aborts what dead clients left open after their timeout), then
/// reads each partition to its end (`enable.partition.eof`: markers are never
/// delivered, so the last record read is not the last offset).
pub(crate) fn drain_committed(
    config: &ClientConfig,
    topic: &str,
    partitions: i32,
) -> Result<Vec<Value>, CheckError> {
    let client = |isolation: &str| -> Result<BaseConsumer, CheckError> {
        config
            .clone()
            .set("group.id", "spool-faultcheck-drain")
            .set("enable.auto.commit", "false")
            .set("isolation.level", isolation)
            .set("enable.partition.eof", "true")
            .create()
            .map_err(CheckError::kafka("create the drain consumer"))
    };
    let (uncommitted, committed) = (client("read_uncommitted")?, client("read_committed")?);
    let started = Instant::now();
    for partition in 0..partitions {
        loop {
            let (_, high) = watermarks(&uncommitted, topic, partition, started)
                .map_err(CheckError::kafka("read the high watermarks"))?;
            let (_, stable) = watermarks(&committed, topic, partition, started)
                .map_err(CheckError::kafka("read the last stable offsets"))?;
            if stable >= high {
                break;
            }
            if started.elapsed() > DRAIN_TIMEOUT {
                return Err(CheckError::Broker(format!(
                    "{topic} partition {partition}: a transaction stayed open (last stable offset {stable}, high watermark {high})"
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .map_err(CheckError::kafka("assign the partitions"))?;
    }
    committed
        .assign(&assignment)
        .map_err(CheckError::kafka("assign the partitions"))?;
    let mut at_end = std::collections::BTreeSet::new();
    let mut values = Vec::new();
    while at_end.len() < usize::try_from(partitions).unwrap_or(0) {
        if started.elapsed() > DRAIN_TIMEOUT {
            return Err(CheckError::Broker(format!(
                "the drain of {topic} did not reach the end within {DRAIN_TIMEOUT:?}"
            )));
        }
        match committed.poll(Duration::from_millis(200)) {
            Some(Ok(message)) => {
                if let Some(value) = message.payload().and_then(Value::parse) {
                    values.push(value);
                }
            }
            Some(Err(KafkaError::PartitionEOF(partition))) => {
                at_end.insert(partition);
            }
            _ => {}
        }
    }
    Ok(values)
}

/// How long after the drain starts a partition's watermarks may still be an error:
/// leaders settle within a few leases after the last restart.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

/// A partition's watermarks, asked again while the answer is an error (a leader that
/// just handed the partition over, a broker still joining after the last restart)
/// until [`SETTLE_TIMEOUT`] from `started`; then the last error.
fn watermarks(
    consumer: &BaseConsumer,
    topic: &str,
    partition: i32,
    started: Instant,
) -> Result<(i64, i64), KafkaError> {
    loop {
        match consumer.fetch_watermarks(topic, partition, Duration::from_secs(30)) {
            Err(_) if started.elapsed() < SETTLE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(200));
            }
            answer => return answer,
        }
    }
}
