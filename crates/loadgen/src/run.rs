//! The three runs: `produce` (publish throughput and latency), `consume` (reading a
//! backlog written first) and `end_to_end` (producers and consumers together, latency
//! from intended send to receipt).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use serde::Serialize;

use crate::BenchError;
use crate::consumer::ConsumerTask;
use crate::producer::{Clock, ProducerTask};
use crate::progress::Progress;
use crate::recorder::{LatencySummary, Recorder, Throughput};
use crate::topics::Topics;
use crate::workload::Workload;

/// How long consumers may take to catch up with what was produced.
const CATCH_UP: Duration = Duration::from_secs(60);

/// A run's results; what a run does not measure is absent.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub mode: &'static str,
    pub workload: Workload,
    pub produced: Option<Throughput>,
    /// From the intended send time to the producer's acknowledgement.
    pub publish_latency_ms: Option<LatencySummary>,
    pub consumed: Option<Throughput>,
    /// From the intended send time to the consumer's receipt.
    pub end_to_end_latency_ms: Option<LatencySummary>,
    /// Transactional producers: how long each commit took.
    pub commit_latency_ms: Option<LatencySummary>,
}

impl Report {
    /// The report as text for people.
    #[must_use]
    pub fn to_text(&self) -> String {
        let w = &self.workload;
        let mut lines = vec![format!(
            "{}: {} topic(s) x {} partitions, {} B messages, rate {}, {} producer(s), {} consumer(s), acks={}, {:?}, {:?} keys{}",
            self.mode,
            w.topics,
            w.partitions_per_topic,
            w.message_size,
            if w.producer_rate == 0 {
                "max".to_string()
            } else {
                format!("{} msg/s", w.producer_rate)
            },
            w.producers(),
            w.consumers(),
            w.acks,
            w.compression,
            w.key_distribution,
            if w.transaction_size > 0 {
                format!(", transactions of {}", w.transaction_size)
            } else {
                String::new()
            },
        )];
        for (name, throughput) in [("produced", &self.produced), ("consumed", &self.consumed)] {
            if let Some(t) = throughput {
                lines.push(format!(
                    "{name:<9} {:>12.0} msg/s  {:>9.1} MB/s  ({} messages in {:.1} s, {} errors)",
                    t.msg_per_s, t.mb_per_s, t.messages, t.seconds, t.errors
                ));
            }
        }
        for (name, latency) in [
            ("publish latency", &self.publish_latency_ms),
            ("end-to-end latency", &self.end_to_end_latency_ms),
            ("commit latency", &self.commit_latency_ms),
        ] {
            if let Some(l) = latency {
                lines.push(format!(
                    "{name} ms: p50 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  mean {:.3}",
                    l.p50, l.p99, l.p999, l.max, l.mean
                ));
            }
        }
        lines.join("\n")
    }
}

fn base_config(brokers: &str, workload: &Workload) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", brokers)
        .set("client.id", "spool-bench")
        .set("log_level", "3")
        // As the Java client does (TCP_NODELAY): Nagle's algorithm would hold small
        // requests back behind delayed ACKs, adding up to 40 ms.
        .set("socket.nagle.disable", "true");
    for (key, value) in &workload.client_config {
        config.set(key, value);
    }
    config
}

/// A run's clients: the configuration, the workload and the topics they work on.
#[derive(Debug)]
struct Fleet<'a> {
    config: ClientConfig,
    workload: &'a Workload,
    topics: Topics,
    /// Each topic's value framing (`--schema-registry`): magic byte and schema id.
    frames: std::collections::HashMap<String, Vec<u8>>,
}

/// What a group of threads shares: the clock, where they record, and the stop flag.
#[derive(Debug, Clone)]
struct Shared {
    clock: Clock,
    recorder: Arc<Recorder>,
    /// How long transactional producers' commits took.
    commits: Arc<Recorder>,
    stop: Arc<AtomicBool>,
}

impl Shared {
    fn new(clock: Clock) -> Shared {
        Shared {
            clock,
            recorder: Arc::new(Recorder::new()),
            commits: Arc::new(Recorder::new()),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }
}

type Threads = Vec<JoinHandle<Result<(), BenchError>>>;

impl<'a> Fleet<'a> {
    fn new(brokers: &str, workload: &'a Workload) -> Result<Fleet<'a>, BenchError> {
        workload.validate().map_err(BenchError::Invalid)?;
        let config = base_config(brokers, workload);
        let topics = Topics::create(&config, workload)?;
        let mut frames = std::collections::HashMap::new();
        if let Some(url) = &workload.schema_registry {
            let registry = crate::registry::RegistryClient::new(url);
            for topic in &topics.names {
                let id = registry.register(&format!("{topic}-value"), r#""bytes""#)?;
                let mut frame = vec![0];
                frame.extend_from_slice(&id.to_be_bytes());
                frames.insert(topic.clone(), frame);
            }
        }
        Ok(Fleet {
            config,
            workload,
            topics,
            frames,
        })
    }

    /// Starts the producers: `producers_per_topic` per topic, sharing the rate; with
    /// a `limit`, they stop after that many messages together.
    fn start_producers(&self, shared: &Shared, limit: Option<u64>, low_latency: bool) -> Threads {
        let workload = self.workload;
        let producers = workload.producers();
        let rate = workload.producer_rate as f64 / producers as f64;
        let mut handles = Vec::with_capacity(producers);
        for topic in &self.topics.names {
            for _ in 0..workload.producers_per_topic.max(1) {
                let task = ProducerTask {
                    config: self.config.clone(),
                    topic: topic.clone(),
                    partitions: workload.partitions_per_topic,
                    workload: workload.clone(),
                    rate,
                    clock: shared.clock.clone(),
                    recorder: shared.recorder.clone(),
                    stop: shared.stop.clone(),
                    limit: limit.map(|l| l.div_ceil(producers as u64)),
                    low_latency,
                    commits: shared.commits.clone(),
                    frame: self.frames.get(topic).cloned().unwrap_or_default(),
                };
                handles.push(std::thread::spawn(move || task.run()));
            }
        }
        handles
    }

    /// Starts the consumers: `consumers_per_topic` per topic, partitions dealt round
    /// robin.
    fn start_consumers(&self, shared: &Shared, end_to_end: bool) -> Threads {
        let workload = self.workload;
        let per_topic = workload.consumers_per_topic.max(1);
        let mut handles = Vec::new();
        for topic in &self.topics.names {
            for consumer in 0..per_topic {
                let partitions: Vec<i32> = (0..workload.partitions_per_topic)
                    .filter(|p| usize::try_from(*p).unwrap_or(0) % per_topic == consumer)
                    .collect();
                if partitions.is_empty() {
                    continue;
                }
                let task = ConsumerTask {
                    config: self.config.clone(),
                    topic: topic.clone(),
                    partitions,
                    clock: shared.clock.clone(),
                    recorder: shared.recorder.clone(),
                    end_to_end,
                    stop: shared.stop.clone(),
                    extra_config: workload.consumer_config.clone(),
                    frame_len: workload.frame_len(),
                };
                handles.push(std::thread::spawn(move || task.run()));
            }
        }
        handles
    }
}

fn join_all(handles: Vec<JoinHandle<Result<(), BenchError>>>) -> Result<(), BenchError> {
    let mut first_error = None;
    for handle in handles {
        let result = handle
            .join()
            .unwrap_or_else(|_| Err(BenchError::Stalled("a benchmark thread panicked".into())));
        if let Err(error) = result {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Waits until `recorder` has seen `target` messages; false on timeout or when every
/// consumer thread has ended.
fn wait_for(
    recorder: &Recorder,
    target: u64,
    timeout: Duration,
    consumers: &[JoinHandle<Result<(), BenchError>>],
) -> bool {
    let deadline = Instant::now() + timeout;
    while recorder.seen.load(Ordering::Relaxed) < target {
        if Instant::now() > deadline || consumers.iter().all(JoinHandle::is_finished) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Producers only: publish throughput and latency.
pub fn produce(brokers: &str, workload: &Workload) -> Result<Report, BenchError> {
    let fleet = Fleet::new(brokers, workload)?;
    let acked = Shared::new(Clock::new(workload.warmup(), workload.duration()));
    let progress = Progress::start(
        "produce",
        workload.message_size,
        vec![("acked", acked.recorder.clone())],
    );
    join_all(fleet.start_producers(&acked, None, false))?;
    drop(progress);
    Ok(Report {
        mode: "produce",
        workload: workload.clone(),
        produced: Some(acked.recorder.throughput(workload.duration())),
        publish_latency_ms: acked.recorder.latency(),
        consumed: None,
        end_to_end_latency_ms: None,
        commit_latency_ms: acked.commits.latency(),
    })
}

/// Writes `backlog_bytes`, then reads it all back from the beginning.
pub fn consume(brokers: &str, workload: &Workload) -> Result<Report, BenchError> {
    let fleet = Fleet::new(brokers, workload)?;
    let messages = (workload.backlog_bytes / workload.message_size.max(1) as u64).max(1);
    // Writing the backlog: no warm-up, no time limit, every message counted.
    let unlimited = || Clock::new(Duration::ZERO, Duration::from_secs(24 * 3600));
    let written = Shared::new(unlimited());
    let fill_started = Instant::now();
    {
        let _progress = Progress::start(
            "writing the backlog",
            workload.message_size,
            vec![("acked", written.recorder.clone())],
        );
        join_all(fleet.start_producers(&written, Some(messages), false))?;
    }
    let produced = written.recorder.throughput(fill_started.elapsed());
    let target = written.recorder.seen.load(Ordering::Relaxed);

    let read = Shared::new(unlimited());
    let started = Instant::now();
    let progress = Progress::start(
        "consume",
        workload.message_size,
        vec![("read", read.recorder.clone())],
    );
    let consumers = fleet.start_consumers(&read, false);
    // Allow the backlog to be read at 5 MB/s at least before calling it stalled.
    let patience = CATCH_UP.max(Duration::from_secs(workload.backlog_bytes / 5_000_000));
    let caught_up = wait_for(&read.recorder, target, patience, &consumers);
    let elapsed = started.elapsed();
    read.stop.store(true, Ordering::Relaxed);
    join_all(consumers)?;
    drop(progress);
    if !caught_up {
        return Err(BenchError::Stalled(format!(
            "consumers read {} of {target} messages before giving up",
            read.recorder.seen.load(Ordering::Relaxed)
        )));
    }
    Ok(Report {
        mode: "consume",
        workload: workload.clone(),
        produced: Some(produced),
        publish_latency_ms: None,
        consumed: Some(read.recorder.throughput(elapsed)),
        end_to_end_latency_ms: None,
        commit_latency_ms: written.commits.latency(),
    })
}

/// Producers and consumers together: throughput, publish and end-to-end latency.
pub fn end_to_end(brokers: &str, workload: &Workload) -> Result<Report, BenchError> {
    let fleet = Fleet::new(brokers, workload)?;
    let clock = Clock::new(workload.warmup(), workload.duration());
    let acked = Shared::new(clock.clone());
    let received = Shared::new(clock);
    let progress = Progress::start(
        "e2e",
        workload.message_size,
        vec![
            ("acked", acked.recorder.clone()),
            ("received", received.recorder.clone()),
        ],
    );
    let consumers = fleet.start_consumers(&received, true);
    let produced = join_all(fleet.start_producers(&acked, None, true));
    let target = acked.recorder.seen.load(Ordering::Relaxed);
    let caught_up = wait_for(&received.recorder, target, CATCH_UP, &consumers);
    received.stop.store(true, Ordering::Relaxed);
    let consumed = join_all(consumers);
    drop(progress);
    produced?;
    consumed?;
    if !caught_up {
        return Err(BenchError::Stalled(format!(
            "consumers received {} of {target} acknowledged messages within {} s",
            received.recorder.seen.load(Ordering::Relaxed),
            CATCH_UP.as_secs()
        )));
    }
    Ok(Report {
        mode: "e2e",
        workload: workload.clone(),
        produced: Some(acked.recorder.throughput(workload.duration())),
        publish_latency_ms: acked.recorder.latency(),
        consumed: Some(received.recorder.throughput(workload.duration())),
        end_to_end_latency_ms: received.recorder.latency(),
        commit_latency_ms: acked.commits.latency(),
    })
}
