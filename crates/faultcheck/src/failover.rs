//! `spool bench failover`: how long a partition is unavailable when its leader dies,
//! stops, drains, or when a broker joins, in a cluster of `spool serve` processes over
//! shared storage.
//!
//! One idempotent `acks=all` producer (librdkafka) sends to every partition every
//! [`SEND_EVERY`] throughout. Each trial does one thing to one broker and measures,
//! over the partitions that broker led (or, for a join, that moved to the new one), the
//! **outage**: the longest gap between two acknowledgements of one partition around
//! the event. Messages the producer gave up on are counted (there should be none: the
//! errors on the way are retriable). Object-storage GETs are read from the brokers'
//! logs: a failover copies no partition data, so with compaction held off there
//! should be none.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::client::ClientContext;
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DeliveryResult, Producer, ProducerContext, ThreadedProducer};
use spool_loadgen::workload::parse_property;
use spool_metadata::{MetadataStore, MetadataUrl};

use crate::CheckError;
use crate::host::{Host, SharedStorage};

/// How often the producer sends to each partition.
const SEND_EVERY: Duration = Duration::from_millis(5);
/// The longest a trial waits for its partitions to be served again.
const TRIAL_TIMEOUT: Duration = Duration::from_secs(30);
const TOPIC: &str = "failover";

/// `spool bench failover` settings.
#[derive(Debug, Clone, clap::Args)]
pub struct Failover {
    /// Where the brokers keep partitions (`s3://bucket/prefix`; credentials and
    /// endpoint from the `AWS_*` variables).
    #[arg(long)]
    pub storage_url: String,
    /// The brokers' metadata store [default: a SQLite file in the data directory].
    #[arg(long)]
    pub metadata_url: Option<String>,
    /// Brokers in the cluster (node ids 1 to N; a join trial adds N + 1).
    #[arg(long, default_value_t = 3)]
    pub nodes: i32,
    #[arg(long, default_value_t = 6)]
    pub partitions: i32,
    /// Trials of each kind.
    #[arg(long, default_value_t = 20)]
    pub trials: u32,
    /// The kinds of trial, in order: `kill` (SIGKILL of a leader), `term` (SIGTERM),
    /// `drain` (`spool cluster drain`), `join` (a broker starts).
    #[arg(long, value_delimiter = ',', default_value = "kill,term,drain,join")]
    pub kinds: Vec<TrialName>,
    /// A broker setting, as KEY=VALUE (repeatable), e.g. `cluster.lease.ms=2000`.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub settings: Vec<(String, String)>,
    /// Where the brokers' data directories and logs go [default: a temporary
    /// directory, removed after the run].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The `spool` binary to run as the brokers; this one by default.
    #[arg(long)]
    pub spool_bin: Option<PathBuf>,
}

/// A kind of trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrialName {
    Kill,
    Term,
    Drain,
    Join,
}

/// What one kind of trial measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TrialKind {
    pub kind: TrialName,
    pub trials: usize,
    /// The outage of each trial, in ms (see the module docs).
    pub outage_ms: Summary,
    /// For joins: from the start of the new broker until it led its share.
    pub settled_ms: Option<Summary>,
}

#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Summary {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

impl Summary {
    fn of(values: &[u64]) -> Summary {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let at = |fraction: f64| {
            let last = sorted.len().saturating_sub(1);
            // Nearest rank: the smallest value at or above the fraction.
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let index = ((fraction * sorted.len() as f64).ceil() as usize).saturating_sub(1);
            sorted.get(index.min(last)).copied().unwrap_or(0)
        };
        Summary {
            p50: at(0.50),
            p99: at(0.99),
            max: sorted.last().copied().unwrap_or(0),
        }
    }
}

/// Object-storage counts summed over the brokers' lives, from their logs.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct ObjectCounts {
    pub puts: u64,
    pub put_bytes: u64,
    pub gets: u64,
    pub get_bytes: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct FailoverReport {
    pub brokers: i32,
    pub partitions: i32,
    pub settings: Vec<String>,
    pub kinds: Vec<TrialKind>,
    /// Messages acknowledged, and given up on by the producer.
    pub acknowledged: u64,
    pub delivery_failures: u64,
    pub objects: ObjectCounts,
    pub seconds: f64,
}

impl FailoverReport {
    #[must_use]
    pub fn to_text(&self) -> String {
        use std::fmt::Write as _;
        let mut text = format!(
            "{} brokers, {} partitions, settings: {}\n",
            self.brokers,
            self.partitions,
            self.settings.join(" ")
        );
        for kind in &self.kinds {
            let _ = write!(
                text,
                "{:<6} {:>3} trials: outage p50 {} ms, p99 {} ms, max {} ms",
                format!("{:?}", kind.kind).to_lowercase(),
                kind.trials,
                kind.outage_ms.p50,
                kind.outage_ms.p99,
                kind.outage_ms.max
            );
            if let Some(settled) = kind.settled_ms {
                let _ = write!(
                    text,
                    "; led its share after p50 {} ms, p99 {} ms, max {} ms",
                    settled.p50, settled.p99, settled.max
                );
            }
            text.push('\n');
        }
        let _ = writeln!(
            text,
            "producer: {} acknowledged, {} given up on",
            self.acknowledged, self.delivery_failures
        );
        let _ = writeln!(
            text,
            "object storage (lives that logged their counts): {} PUTs ({} bytes), {} GETs ({} bytes)",
            self.objects.puts, self.objects.put_bytes, self.objects.gets, self.objects.get_bytes
        );
        let _ = write!(text, "{:.1} s", self.seconds);
        text
    }
}

/// Acknowledgement times by partition, and messages given up on.
#[derive(Debug, Default)]
struct Acks {
    times: Mutex<HashMap<i32, Vec<Instant>>>,
    acknowledged: AtomicU64,
    failed: AtomicU64,
}

impl Acks {
    fn last(&self, partition: i32) -> Option<Instant> {
        self.lock().get(&partition).and_then(|t| t.last().copied())
    }

    /// The longest gap between consecutive acknowledgements of `partition` that
    /// reaches past `event`, measured up to `until` if none came after it.
    fn outage(&self, partition: i32, event: Instant, until: Instant) -> Duration {
        let times = self.lock();
        let times = times.get(&partition).map_or(&[][..], Vec::as_slice);
        let first_after = times.partition_point(|t| *t < event);
        let mut previous = times
            .get(first_after.wrapping_sub(1))
            .copied()
            .unwrap_or(event);
        let mut longest = Duration::ZERO;
        for at in times.get(first_after..).unwrap_or_default() {
            if previous > until {
                break;
            }
            longest = longest.max(at.duration_since(previous));
            previous = *at;
        }
        if previous < until {
            longest = longest.max(until.duration_since(previous));
        }
        longest
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<i32, Vec<Instant>>> {
        self.times
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

struct Recorder(Arc<Acks>);

impl ClientContext for Recorder {
    /// Brokers going away is what this benchmark does: their connection errors are
    /// not news.
    fn log(&self, _: rdkafka::config::RDKafkaLogLevel, _: &str, _: &str) {}
}

impl ProducerContext for Recorder {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(message) => {
                self.0.acknowledged.fetch_add(1, Ordering::Relaxed);
                self.0
                    .lock()
                    .entry(message.partition())
                    .or_default()
                    .push(Instant::now());
            }
            Err(_) => {
                self.0.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The cluster under test and how to reach it.
struct Bench {
    hosts: BTreeMap<i32, Host>,
    dir: PathBuf,
    binary: PathBuf,
    storage_url: String,
    metadata_url: String,
    settings: Vec<String>,
    store: Arc<dyn MetadataStore>,
    runtime: tokio::runtime::Runtime,
    topic_id: uuid::Uuid,
}

impl Bench {
    /// Starts broker `node_id` (again, on the same port, if it ran before).
    fn start_broker(&mut self, node_id: i32) -> Result<(), CheckError> {
        if let Some(host) = self.hosts.get_mut(&node_id) {
            return host.start();
        }
        let shared = SharedStorage {
            storage_url: self.storage_url.clone(),
            metadata_url: self.metadata_url.clone(),
            node_id,
            settings: self.settings.clone(),
            admin: None,
        };
        let dir = self.dir.join(format!("node-{node_id}"));
        let mut host = Host::new(
            crate::Mode::Cluster,
            crate::Crash::Drop,
            &dir,
            self.binary.clone(),
            0,
            Some(shared),
        )?;
        host.start()?;
        self.hosts.insert(node_id, host);
        Ok(())
    }

    /// Each partition's leader (-1: none), by partition index.
    fn leaders(&self) -> Result<Vec<i32>, CheckError> {
        let leaderships = self
            .runtime
            .block_on(self.store.leaderships())
            .map_err(|e| CheckError::Broker(format!("cannot read the leaders: {e}")))?;
        Ok(leaderships
            .into_iter()
            .filter(|l| l.key.topic_id == self.topic_id)
            .map(|l| l.leader)
            .collect())
    }

    /// Waits until every partition is led by one of `nodes`, evenly, and has been
    /// acknowledged since then; returns the leaders and when they were first seen so.
    fn wait_balanced(&self, nodes: &[i32], acks: &Acks) -> Result<(Vec<i32>, Instant), CheckError> {
        let deadline = Instant::now() + TRIAL_TIMEOUT;
        let mut balanced_since: Option<(Vec<i32>, Instant)> = None;
        loop {
            let leaders = self.leaders()?;
            let mut counts: BTreeMap<i32, usize> = nodes.iter().map(|n| (*n, 0)).collect();
            for leader in &leaders {
                if let Some(count) = counts.get_mut(leader) {
                    *count += 1;
                }
            }
            let (low, high) = (
                counts.values().min().copied().unwrap_or(0),
                counts.values().max().copied().unwrap_or(0),
            );
            let all_led = leaders.iter().all(|l| nodes.contains(l));
            if all_led && high <= low + 1 {
                let first_seen = match &balanced_since {
                    Some((seen, at)) if *seen == leaders => *at,
                    _ => Instant::now(),
                };
                balanced_since = Some((leaders.clone(), first_seen));
                // Served, not only assigned: an acknowledgement of every partition
                // since they were seen so.
                let served = (0..)
                    .zip(&leaders)
                    .all(|(p, _)| acks.last(p).is_some_and(|t| t > first_seen));
                if served {
                    return Ok((leaders, first_seen));
                }
            } else {
                balanced_since = None;
            }
            if Instant::now() > deadline {
                return Err(CheckError::Broker(format!(
                    "the cluster did not settle on brokers {nodes:?}: leaders {leaders:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until each of `partitions` is acknowledged after `event` and led by none
    /// of `not_by`; returns when that was.
    fn wait_served(
        &self,
        partitions: &[i32],
        not_by: i32,
        event: Instant,
        acks: &Acks,
    ) -> Result<Instant, CheckError> {
        let deadline = event + TRIAL_TIMEOUT;
        loop {
            let leaders = self.leaders()?;
            let moved = partitions.iter().all(|p| {
                usize::try_from(*p)
                    .ok()
                    .and_then(|i| leaders.get(i))
                    .is_some_and(|l| *l != not_by && *l >= 0)
            });
            let now = Instant::now();
            if moved
                && partitions
                    .iter()
                    .all(|p| acks.last(*p).is_some_and(|t| t > event))
            {
                // Acknowledged after the move, not only before it.
                let moved_at = now;
                std::thread::sleep(Duration::from_millis(200));
                if partitions
                    .iter()
                    .all(|p| acks.last(*p).is_some_and(|t| t > moved_at))
                {
                    return Ok(Instant::now());
                }
            }
            if now > deadline {
                return Err(CheckError::Broker(format!(
                    "partitions {partitions:?} were not served again within {TRIAL_TIMEOUT:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs the benchmark.
pub fn run(bench: &Failover) -> Result<FailoverReport, CheckError> {
    if bench.nodes < 2 || bench.partitions < 1 || bench.trials < 1 {
        return Err(CheckError::Invalid(
            "--nodes must be at least 2, --partitions and --trials at least 1".to_owned(),
        ));
    }
    let started = Instant::now();
    let dir = crate::scratch_dir(bench.data_dir.as_ref(), "failover");
    std::fs::create_dir_all(&dir).map_err(CheckError::io("create", &dir))?;
    let binary = crate::spool_binary(bench.spool_bin.as_ref())?;
    let metadata_url = bench
        .metadata_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.join("metadata.db").display()));
    // Compaction reads objects back; held off, every GET would be a failover's.
    let mut settings = vec!["storage.compaction.min.ranges=100000".to_owned()];
    settings.extend(bench.settings.iter().map(|(k, v)| format!("{k}={v}")));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(CheckError::io("start", Path::new("a runtime")))?;
    let url = MetadataUrl::parse(&metadata_url)
        .map_err(|e| CheckError::Invalid(format!("--metadata-url: {e}")))?;
    let mut cluster = Bench {
        hosts: BTreeMap::new(),
        dir: dir.clone(),
        binary,
        storage_url: bench.storage_url.clone(),
        metadata_url,
        settings: settings.clone(),
        store: runtime
            .block_on(spool_metadata::open(&url))
            .map_err(|e| CheckError::Broker(format!("cannot open the metadata store: {e}")))?,
        runtime,
        topic_id: uuid::Uuid::nil(),
    };
    let nodes: Vec<i32> = (1..=bench.nodes).collect();
    for node in &nodes {
        cluster.start_broker(*node)?;
    }
    let bootstrap: Vec<String> = cluster
        .hosts
        .values()
        .map(|h| h.address().to_string())
        .collect();
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap.join(","))
        .set("reconnect.backoff.ms", "20")
        .set("reconnect.backoff.max.ms", "200")
        .set("log_level", "0");
    crate::create_topic(&config, TOPIC, bench.partitions, &[])?;
    cluster.topic_id = topic_id(&cluster)?;

    let acks = Arc::new(Acks::default());
    let stop = AtomicBool::new(false);
    let outcome = std::thread::scope(|scope| -> Result<Vec<TrialKind>, CheckError> {
        let producer = scope.spawn(|| produce(&config, bench.partitions, &acks, &stop));
        let kinds = trials(&mut cluster, &nodes, bench, &acks);
        stop.store(true, Ordering::SeqCst);
        let produced = producer
            .join()
            .map_err(|_| CheckError::Broker("the producer thread panicked".to_owned()))?;
        produced?;
        kinds
    });
    // Clean stops, so that every broker logs its final counts.
    for host in cluster.hosts.values_mut() {
        host.terminate()?;
    }
    let kinds = outcome?;
    let objects = object_counts(&dir, &nodes);
    let report = FailoverReport {
        brokers: bench.nodes,
        partitions: bench.partitions,
        settings,
        kinds,
        acknowledged: acks.acknowledged.load(Ordering::Relaxed),
        delivery_failures: acks.failed.load(Ordering::Relaxed),
        objects,
        seconds: started.elapsed().as_secs_f64(),
    };
    if bench.data_dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(report)
}

/// The trials of every kind, one broker at a time, round robin.
fn trials(
    cluster: &mut Bench,
    nodes: &[i32],
    bench: &Failover,
    acks: &Acks,
) -> Result<Vec<TrialKind>, CheckError> {
    let count = bench.trials;
    let started = Instant::now();
    let mut kinds = Vec::new();
    for kind in bench.kinds.iter().copied() {
        let mut outages = Vec::new();
        let mut settled = Vec::new();
        for trial in 0..count {
            let (leaders, _) = cluster.wait_balanced(nodes, acks)?;
            let index = usize::try_from(trial).unwrap_or(0) % nodes.len();
            let victim = nodes.get(index).copied().unwrap_or(1);
            let led: Vec<i32> = (0..)
                .zip(&leaders)
                .filter(|(_, l)| **l == victim)
                .map(|(p, _)| p)
                .collect();
            let event = Instant::now();
            let (moved, not_by) = match kind {
                TrialName::Kill | TrialName::Term => {
                    let host = cluster
                        .hosts
                        .get_mut(&victim)
                        .ok_or_else(|| CheckError::Broker(format!("no broker {victim}")))?;
                    if kind == TrialName::Kill {
                        host.crash()?;
                    } else {
                        host.terminate()?;
                    }
                    (led, victim)
                }
                TrialName::Drain => {
                    set_draining(cluster, victim, true)?;
                    (led, victim)
                }
                TrialName::Join => {
                    let joiner = nodes.iter().max().copied().unwrap_or(0) + 1;
                    cluster.start_broker(joiner)?;
                    let mut all = nodes.to_vec();
                    all.push(joiner);
                    let (after, balanced_at) = cluster.wait_balanced(&all, acks)?;
                    settled.push(millis(balanced_at.duration_since(event)));
                    let moved: Vec<i32> = (0..)
                        .zip(&after)
                        .filter(|(_, l)| **l == joiner)
                        .map(|(p, _)| p)
                        .collect();
                    if moved.is_empty() {
                        return Err(CheckError::Invalid(format!(
                            "a join moves nothing with {} partitions over {} brokers: use more partitions",
                            bench.partitions, bench.nodes
                        )));
                    }
                    (moved, -1)
                }
            };
            let served = cluster.wait_served(&moved, not_by, event, acks)?;
            let outage = moved
                .iter()
                .map(|p| acks.outage(*p, event, served))
                .max()
                .unwrap_or_default();
            outages.push(millis(outage));
            // Back as it was.
            match kind {
                TrialName::Kill | TrialName::Term => cluster.start_broker(victim)?,
                TrialName::Drain => set_draining(cluster, victim, false)?,
                TrialName::Join => {
                    let joiner = nodes.iter().max().copied().unwrap_or(0) + 1;
                    if let Some(host) = cluster.hosts.get_mut(&joiner) {
                        host.terminate()?;
                    }
                }
            }
            eprintln!(
                "{:>7.1} s {kind:?} {}/{count}: broker {victim}, partitions {moved:?}, outage {} ms",
                event.duration_since(started).as_secs_f64(),
                trial + 1,
                millis(outage)
            );
        }
        kinds.push(TrialKind {
            kind,
            trials: outages.len(),
            outage_ms: Summary::of(&outages),
            settled_ms: (!settled.is_empty()).then(|| Summary::of(&settled)),
        });
    }
    cluster.wait_balanced(nodes, acks)?;
    Ok(kinds)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn set_draining(cluster: &Bench, node: i32, draining: bool) -> Result<(), CheckError> {
    cluster
        .runtime
        .block_on(cluster.store.set_draining(node, draining))
        .map_err(|e| CheckError::Broker(format!("cannot mark broker {node} draining: {e}")))?;
    Ok(())
}

fn topic_id(cluster: &Bench) -> Result<uuid::Uuid, CheckError> {
    let topics = cluster
        .runtime
        .block_on(cluster.store.topics())
        .map_err(|e| CheckError::Broker(format!("cannot read the topics: {e}")))?;
    topics
        .into_iter()
        .find(|t| t.name.as_str() == TOPIC)
        .map(|t| t.id)
        .ok_or_else(|| CheckError::Broker(format!("topic {TOPIC} is not in the store")))
}

/// Sends to every partition every [`SEND_EVERY`] until `stop`.
fn produce(
    config: &ClientConfig,
    partitions: i32,
    acks: &Arc<Acks>,
    stop: &AtomicBool,
) -> Result<(), CheckError> {
    let producer: ThreadedProducer<Recorder> = config
        .clone()
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "1")
        .set("message.timeout.ms", "60000")
        .create_with_context(Recorder(acks.clone()))
        .map_err(CheckError::kafka("create a producer"))?;
    let payload = [0_u8; 100];
    while !stop.load(Ordering::SeqCst) {
        let round = Instant::now();
        for partition in 0..partitions {
            let record = BaseRecord::<(), [u8]>::to(TOPIC)
                .partition(partition)
                .payload(&payload[..]);
            if crate::producer::send_waiting(&producer, record).is_err() {
                acks.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        std::thread::sleep(SEND_EVERY.saturating_sub(round.elapsed()));
    }
    producer
        .flush(Duration::from_secs(60))
        .map_err(CheckError::kafka("flush the producer"))
}

/// The object-storage counts of every broker life that logged them (each life logs
/// its counts every ten seconds and when it stops: a killed life's last seconds are
/// missing), summed.
fn object_counts(dir: &Path, nodes: &[i32]) -> ObjectCounts {
    let mut total = ObjectCounts::default();
    let joiner = nodes.iter().max().copied().unwrap_or(0) + 1;
    for node in nodes.iter().copied().chain([joiner]) {
        let log = dir.join(format!("node-{node}")).join("broker.log");
        let Ok(text) = std::fs::read_to_string(&log) else {
            continue;
        };
        let mut life = ObjectCounts::default();
        for line in text.lines() {
            if line.contains("joined the cluster") {
                add(&mut total, life);
                life = ObjectCounts::default();
            } else if line.contains("object storage") {
                life = ObjectCounts {
                    puts: field(line, "puts"),
                    put_bytes: field(line, "put_bytes"),
                    gets: field(line, "gets"),
                    get_bytes: field(line, "get_bytes"),
                };
            }
        }
        add(&mut total, life);
    }
    total
}

fn add(total: &mut ObjectCounts, life: ObjectCounts) {
    total.puts += life.puts;
    total.put_bytes += life.put_bytes;
    total.gets += life.gets;
    total.get_bytes += life.get_bytes;
}

/// The number after `name=` in a log line (colours stripped), 0 if absent.
fn field(line: &str, name: &str) -> u64 {
    let plain: String = strip_colours(line);
    let key = format!(" {name}=");
    plain
        .find(&key)
        .map(|at| &plain[at + key.len()..])
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
        })
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(0)
}

/// `line` without ANSI colour sequences.
fn strip_colours(line: &str) -> String {
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for end in chars.by_ref() {
                if end == 'm' {
                    break;
                }
            }
        } else {
            plain.push(c);
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outage_is_the_longest_gap_around_the_event() {
        let acks = Acks::default();
        let base = Instant::now();
        let at = |ms| base + Duration::from_millis(ms);
        acks.lock()
            .insert(0, vec![at(0), at(10), at(20), at(1_020), at(1_030)]);
        assert_eq!(
            acks.outage(0, at(15), at(1_100)),
            Duration::from_millis(1_000)
        );
        assert_eq!(
            acks.outage(1, at(15), at(500)),
            Duration::from_millis(485),
            "nothing acknowledged: the whole wait"
        );
        assert_eq!(Summary::of(&[5, 1, 3]).p50, 3);
        assert_eq!(Summary::of(&[5, 1, 3]).max, 5);
    }

    #[test]
    fn counts_are_read_from_coloured_log_lines() {
        let line = "\u{1b}[32m INFO\u{1b}[0m object storage \u{1b}[3mputs\u{1b}[0m\u{1b}[2m=\u{1b}[0m12 \u{1b}[3mput_bytes\u{1b}[0m\u{1b}[2m=\u{1b}[0m3400 gets=0";
        assert_eq!(field(line, "puts"), 12);
        assert_eq!(field(line, "put_bytes"), 3400);
        assert_eq!(field(line, "gets"), 0);
        assert_eq!(field(line, "get_bytes"), 0);
    }
}
