//! Reads the whole topic back after the run, from offset 0 to each partition's high
//! watermark, with a consumer outside any group.

use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
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
    for partition in 0..partitions {
        let (_, high) = consumer
            .fetch_watermarks(topic, partition, Duration::from_secs(30))
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
    let started = Instant::now();
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
