//! A consumer thread: reads its share of the partitions from the beginning and
//! records each message, with its end-to-end latency when asked (now, on the wall
//! clock, minus the intended send time the producer wrote into the value).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use crate::BenchError;
use crate::producer::{Clock, wall_nanos};
use crate::recorder::Recorder;

#[derive(Debug)]
pub(crate) struct ConsumerTask {
    pub(crate) config: ClientConfig,
    pub(crate) topic: String,
    pub(crate) partitions: Vec<i32>,
    pub(crate) clock: Clock,
    pub(crate) recorder: Arc<Recorder>,
    /// Record end-to-end latency (the `e2e` run), or only count (`consume`).
    pub(crate) end_to_end: bool,
    /// Set when the consumers should stop.
    pub(crate) stop: Arc<AtomicBool>,
    /// The workload's `--consumer-config` properties.
    pub(crate) extra_config: Vec<(String, String)>,
    /// The bytes before each value's send time (Confluent's framing).
    pub(crate) frame_len: usize,
}

impl ConsumerTask {
    pub(crate) fn run(self) -> Result<(), BenchError> {
        let mut config = self.config.clone();
        config
            .set("group.id", "spool-bench")
            .set("enable.auto.commit", "false")
            .set("fetch.wait.max.ms", "1");
        for (key, value) in &self.extra_config {
            config.set(key, value);
        }
        let consumer: BaseConsumer = config
            .create()
            .map_err(BenchError::kafka("create a consumer"))?;
        let mut assignment = TopicPartitionList::new();
        for partition in &self.partitions {
            assignment
                .add_partition_offset(&self.topic, *partition, Offset::Beginning)
                .map_err(BenchError::kafka("assign partitions"))?;
        }
        consumer
            .assign(&assignment)
            .map_err(BenchError::kafka("assign partitions"))?;
        while !self.stop.load(Ordering::Relaxed) {
            let Some(message) = consumer.poll(Duration::from_millis(50)) else {
                continue;
            };
            let message = match message {
                Ok(message) => message,
                Err(error @ rdkafka::error::KafkaError::MessageConsumptionFatal(_)) => {
                    return Err(BenchError::Kafka {
                        what: "consume",
                        error,
                    });
                }
                // Transient (a broker connection lost and being re-established):
                // librdkafka retries by itself.
                Err(_) => {
                    self.recorder.failed();
                    continue;
                }
            };
            self.recorder.saw();
            let value = message.payload().unwrap_or_default();
            if !self.end_to_end {
                self.recorder.measure(value.len(), None);
                continue;
            }
            let Some(sent) = value
                .get(self.frame_len..self.frame_len + 8)
                .and_then(|head| head.try_into().ok())
                .map(u64::from_be_bytes)
            else {
                continue;
            };
            let intended = Duration::from_nanos(sent.saturating_sub(self.clock.wall_start_nanos));
            if intended >= self.clock.measure_from && intended < self.clock.stop_at {
                let latency = Duration::from_nanos(wall_nanos().saturating_sub(sent));
                self.recorder.measure(value.len(), Some(latency));
            }
        }
        Ok(())
    }
}
