//! A producer thread: sends the workload's messages, at its share of the rate or as
//! fast as the cluster takes them, and records each acknowledgement's latency from the
//! message's intended send time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::ClientConfig;
use rdkafka::client::ClientContext;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};

use crate::BenchError;
use crate::recorder::Recorder;
use crate::workload::{KeyDistribution, Workload};

/// How long a producer behind its schedule keeps sending the messages that were due
/// before the end of the run.
const LATE_GRACE: Duration = Duration::from_secs(30);

/// Where a run stands, shared by its threads: one clock for every intended time.
#[derive(Debug, Clone)]
pub(crate) struct Clock {
    pub(crate) start: Instant,
    /// The wall clock at `start`, in nanoseconds since the Unix epoch; consumers in the
    /// same process compare against it to measure end-to-end latency.
    pub(crate) wall_start_nanos: u64,
    /// Messages due before this much time after `start` are warm-up, not measured.
    pub(crate) measure_from: Duration,
    /// Producers stop sending at this much time after `start`.
    pub(crate) stop_at: Duration,
}

impl Clock {
    pub(crate) fn new(warmup: Duration, duration: Duration) -> Clock {
        Clock {
            start: Instant::now(),
            wall_start_nanos: wall_nanos(),
            measure_from: warmup,
            stop_at: warmup + duration,
        }
    }
}

/// Nanoseconds since the Unix epoch.
pub(crate) fn wall_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Records deliveries; the opaque is the intended send time, in nanoseconds after the
/// clock's start.
#[derive(Debug)]
struct Deliveries {
    clock: Clock,
    recorder: Arc<Recorder>,
    message_size: usize,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, intended_nanos: usize) {
        if result.is_err() {
            self.recorder.failed();
            return;
        }
        self.recorder.saw();
        let intended = Duration::from_nanos(intended_nanos as u64);
        if intended >= self.clock.measure_from && intended < self.clock.stop_at {
            let latency = self.clock.start.elapsed().saturating_sub(intended);
            self.recorder.measure(self.message_size, Some(latency));
        }
    }
}

/// One producer's part of the workload.
#[derive(Debug)]
pub(crate) struct ProducerTask {
    pub(crate) config: ClientConfig,
    pub(crate) topic: String,
    pub(crate) partitions: i32,
    pub(crate) workload: Workload,
    /// Messages per second for this producer; 0 for as fast as possible.
    pub(crate) rate: f64,
    pub(crate) clock: Clock,
    pub(crate) recorder: Arc<Recorder>,
    /// Set to stop early (a `consume` backlog that is full).
    pub(crate) stop: Arc<AtomicBool>,
    /// Stop after this many messages (the backlog), if set.
    pub(crate) limit: Option<u64>,
    /// Batch for latency (`e2e`) rather than throughput.
    pub(crate) low_latency: bool,
    /// Where a transactional producer records how long each commit took.
    pub(crate) commits: Arc<Recorder>,
    /// What every value starts with (Confluent's framing), before its send time.
    pub(crate) frame: Vec<u8>,
}

/// Waits until every message sent has been delivered (and its report served by the
/// producer's thread). Why: the `rdkafka` crate's `commit_transaction` flushes first,
/// and its flush, finding messages outstanding, polls for up to 100 ms; but the
/// threaded producer's own thread takes the delivery reports, so that poll sleeps its
/// full 100 ms. Commit latencies measured that way are the binding's, not the
/// broker's.
pub fn wait_for_deliveries<C: ProducerContext + 'static>(producer: &ThreadedProducer<C>) {
    let deadline = Instant::now() + TXN_CALL_TIMEOUT;
    while producer.in_flight_count() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// How long a transaction call may take.
const TXN_CALL_TIMEOUT: Duration = Duration::from_secs(60);

impl ProducerTask {
    pub(crate) fn run(self) -> Result<(), BenchError> {
        let mut config = self.config.clone();
        config
            .set("acks", &self.workload.acks)
            .set("compression.codec", self.workload.compression.codec())
            .set("message.timeout.ms", "120000");
        if self.low_latency {
            // librdkafka waits 5 ms to fill batches; for latency runs, 1 ms (as the
            // OpenMessaging Benchmark's Kafka driver does).
            config.set("linger.ms", "1");
        }
        if self.workload.transaction_size > 0 {
            let id = format!("spool-bench-{}", uuid::Uuid::new_v4().simple());
            config
                .set("transactional.id", id)
                // At least message.timeout.ms, as librdkafka requires.
                .set("transaction.timeout.ms", "120000");
        }
        for (key, value) in &self.workload.producer_config {
            config.set(key, value);
        }
        let producer: ThreadedProducer<Deliveries> = config
            .create_with_context(Deliveries {
                clock: self.clock.clone(),
                recorder: self.recorder.clone(),
                message_size: self.workload.message_size,
            })
            .map_err(BenchError::kafka("create a producer"))?;
        let transaction_size = self.workload.transaction_size;
        if transaction_size > 0 {
            producer
                .init_transactions(TXN_CALL_TIMEOUT)
                .map_err(BenchError::kafka("initialise transactions"))?;
            producer
                .begin_transaction()
                .map_err(BenchError::kafka("begin a transaction"))?;
        }
        let time_at = self.frame.len();
        let mut payload = vec![0u8; self.workload.message_size.max(time_at + 8)];
        fastrand::fill(&mut payload);
        if let Some(head) = payload.get_mut(..time_at) {
            head.copy_from_slice(&self.frame);
        }
        let mut rng = fastrand::Rng::new();
        let interval = (self.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / self.rate));
        let mut sent = 0u64;
        loop {
            let now = self.clock.start.elapsed();
            if (interval.is_none() && now >= self.clock.stop_at)
                || self.stop.load(Ordering::Relaxed)
                || self.limit.is_some_and(|limit| sent >= limit)
            {
                break;
            }
            let intended = match interval {
                Some(interval) => {
                    let due = interval.mul_f64(sent as f64);
                    // A producer running behind still sends every message due before
                    // the end: those are the slowest, and leaving them out would
                    // flatter the percentiles. Past a grace period it gives up.
                    if due >= self.clock.stop_at || now >= self.clock.stop_at + LATE_GRACE {
                        break;
                    }
                    if due > now {
                        std::thread::sleep(due - now);
                    }
                    due
                }
                None => now,
            };
            let intended_nanos = u64::try_from(intended.as_nanos()).unwrap_or(u64::MAX);
            // 8 bytes (after the framing, if any) carry the intended send time on the
            // wall clock, for end-to-end latency.
            let wall = self.clock.wall_start_nanos + intended_nanos;
            if let Some(head) = payload.get_mut(time_at..time_at + 8) {
                head.copy_from_slice(&wall.to_be_bytes());
            }
            let key = match self.workload.key_distribution {
                KeyDistribution::NoKey => None,
                KeyDistribution::RoundRobin => {
                    Some((sent % self.partitions.max(1) as u64).to_string())
                }
                KeyDistribution::Random => Some(rng.u64(..).to_string()),
            };
            let payload_len = self.workload.message_size.min(payload.len());
            let value = payload.get(..payload_len).unwrap_or_default();
            loop {
                let mut record = BaseRecord::<str, [u8], usize>::with_opaque_to(
                    &self.topic,
                    usize::try_from(intended_nanos).unwrap_or(usize::MAX),
                )
                .payload(value);
                if let Some(key) = &key {
                    record = record.key(key.as_str());
                }
                match producer.send(record) {
                    Ok(()) => break,
                    Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), _)) => {
                        // The queue is full: wait for acknowledgements. The intended
                        // time stays, so this wait counts in the latency.
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    Err((error, _)) => {
                        return Err(BenchError::Kafka {
                            what: "produce",
                            error,
                        });
                    }
                }
            }
            sent += 1;
            if transaction_size > 0 && sent.is_multiple_of(transaction_size) {
                self.commit(&producer, true)?;
            }
        }
        if transaction_size > 0 && !sent.is_multiple_of(transaction_size) {
            self.commit(&producer, false)?;
        }
        producer
            .flush(Duration::from_secs(120))
            .map_err(BenchError::kafka("flush the producer"))
    }

    /// Commits the open transaction, recording how long that took when it falls in
    /// the measured window, and begins the next one if `again`.
    fn commit(
        &self,
        producer: &ThreadedProducer<Deliveries>,
        again: bool,
    ) -> Result<(), BenchError> {
        let started = self.clock.start.elapsed();
        wait_for_deliveries(producer);
        producer
            .commit_transaction(TXN_CALL_TIMEOUT)
            .map_err(BenchError::kafka("commit a transaction"))?;
        if started >= self.clock.measure_from && started < self.clock.stop_at {
            let took = self.clock.start.elapsed().saturating_sub(started);
            self.commits.measure(0, Some(took));
        }
        if again {
            producer
                .begin_transaction()
                .map_err(BenchError::kafka("begin a transaction"))?;
        }
        Ok(())
    }
}
