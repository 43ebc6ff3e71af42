//! `spool faultcheck`: is what the broker acknowledged still there, once, in order,
//! after it was killed over and over?
//!
//! Producers (librdkafka, `acks=all`, idempotence on) send unique values to a
//! multi-partition topic while a consumer group of short-lived members reads and
//! commits. Meanwhile the broker dies at random moments and comes back, N times: by
//! SIGKILL ([`Mode::Kill`]) or by a crash of its machine that loses everything not
//! fsynced ([`Mode::Machine`]); or, in a cluster of brokers over shared storage
//! ([`Mode::Cluster`]), one broker at a time is killed, paused past its lease or
//! stopped cleanly. At the end the topic is read back whole and the history is
//! checked against it (see [`checker`]). See docs/reliability.md.

mod check_back;
pub mod checker;
mod drain;
pub mod failover;
mod fence;
pub mod history;
mod host;
mod members;
mod producer;
pub mod reads;
mod report;
mod transactions;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::KafkaError;
use spool_loadgen::workload::parse_property;

pub use report::Report;

use crate::history::History;
use crate::host::Host;

/// How the broker dies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// SIGKILL of the broker process: what was written survives in the page cache.
    Kill,
    /// A crash of the machine under an in-process broker: what was not fsynced is lost.
    Machine,
    /// Several broker processes over shared storage (`--storage-url`); each cycle one
    /// of them is killed (back at once, or after its lease lapsed), paused (SIGSTOP)
    /// past its lease, or stopped with SIGTERM.
    Cluster,
}

/// What a machine crash keeps of the bytes written since a file's last fsync.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Crash {
    /// Nothing.
    Drop,
    /// A random prefix of them: a write torn part-way.
    Tear,
    /// Random bytes of a random length in their place: sectors holding garbage.
    Garble,
}

/// The run's settings (`spool faultcheck --help`).
#[derive(Debug, Clone, clap::Args)]
pub struct FaultCheck {
    /// How the broker dies.
    #[arg(long, value_enum, default_value_t = Mode::Kill)]
    pub mode: Mode,
    /// In machine mode, what a crash keeps of the unsynced bytes.
    #[arg(long, value_enum, default_value_t = Crash::Drop)]
    pub crash: Crash,
    /// How many times the broker dies.
    #[arg(long, default_value_t = 10)]
    pub cycles: u32,
    #[arg(long, default_value_t = 4)]
    pub partitions: i32,
    #[arg(long, default_value_t = 2)]
    pub producers: u32,
    /// Group members at a time (each leaves after a few seconds and is replaced).
    #[arg(long, default_value_t = 2)]
    pub consumers: u32,
    /// Messages per second per producer.
    #[arg(long, default_value_t = 1000)]
    pub rate: u32,
    /// Shortest time the broker lives between deaths, in milliseconds.
    #[arg(long, default_value_t = 200)]
    pub up_min_ms: u64,
    /// Longest time the broker lives between deaths, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub up_max_ms: u64,
    /// Seed of the random death times (and of the faulty store); random by default.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where the broker keeps its data; a fresh temporary directory by default, removed
    /// after a run without violations.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The `spool` binary to run as the broker in kill mode; this one by default.
    #[arg(long)]
    pub spool_bin: Option<PathBuf>,
    /// A config of the topic under test, as KEY=VALUE (repeatable): `flush.ms=60000`
    /// acknowledges writes before they are fsynced, which machine mode must catch.
    #[arg(long = "topic-config", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub topic_config: Vec<(String, String)>,
    /// Kill mode over shared storage: the broker keeps its partitions at this storage
    /// URL (`s3://bucket/prefix`; credentials and endpoint from the `AWS_*` variables)
    /// and is started on an empty data directory in every life.
    #[arg(long)]
    pub storage_url: Option<String>,
    /// With `--storage-url`: where the metadata and catalogue live [default: a SQLite
    /// file next to the data directory, which every life keeps].
    #[arg(long)]
    pub metadata_url: Option<String>,
    /// Brokers in cluster mode (node ids 1 to N).
    #[arg(long, default_value_t = 3)]
    pub nodes: i32,
    /// Transactional writers; with any, also a read_committed reader of their topic
    /// and a consume-transform-produce loop over the main topic (see
    /// `crates/faultcheck/src/transactions.rs`).
    #[arg(long, default_value_t = 0)]
    pub transactions: u32,
    /// With `--transactions`: the writers' transactions are checked back (the broker
    /// asks an HTTP checker this run serves before it aborts an open one), and each
    /// must end as its writer decided, whatever its client call said (see
    /// `crates/faultcheck/src/check_back.rs`).
    #[arg(long)]
    pub check_back: bool,
    /// The group members' protocol: `classic` (JoinGroup and SyncGroup) or
    /// `consumer` (KIP-848, the broker assigns).
    #[arg(long, value_enum, default_value_t = GroupProtocol::Classic)]
    pub group_protocol: GroupProtocol,
}

/// Which group protocol the members speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupProtocol {
    Classic,
    Consumer,
}

/// Why a run could not be carried out (violations are not errors: see [`Report`]).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("{0}")]
    Invalid(String),
    #[error("cannot {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot {action}: {error}")]
    Kafka {
        action: &'static str,
        #[source]
        error: KafkaError,
    },
    #[error("{0}")]
    Broker(String),
}

impl CheckError {
    fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CheckError {
        let path = path.to_path_buf();
        move |source| CheckError::Io {
            action,
            path,
            source,
        }
    }

    fn kafka(action: &'static str) -> impl FnOnce(KafkaError) -> CheckError {
        move |error| CheckError::Kafka { action, error }
    }
}

impl FaultCheck {
    fn validate(&self) -> Result<(), CheckError> {
        let invalid = |message: &str| Err(CheckError::Invalid(message.to_owned()));
        if self.partitions < 1 {
            return invalid("--partitions must be at least 1");
        }
        if self.producers < 1 || self.rate < 1 {
            return invalid("--producers and --rate must be at least 1");
        }
        if self.up_min_ms > self.up_max_ms {
            return invalid("--up-min-ms must not exceed --up-max-ms");
        }
        if self.storage_url.is_some() && self.mode == Mode::Machine {
            return invalid("--storage-url works with --mode kill or cluster");
        }
        if self.mode == Mode::Cluster && (self.storage_url.is_none() || self.nodes < 2) {
            return invalid("--mode cluster needs --storage-url and at least 2 --nodes");
        }
        if self.check_back && self.transactions == 0 {
            return invalid("--check-back goes with --transactions");
        }
        if self.metadata_url.is_some() && self.storage_url.is_none() {
            return invalid("--metadata-url goes with --storage-url");
        }
        Ok(())
    }
}

/// Runs the check; the report says whether anything was violated.
pub fn run(check: &FaultCheck) -> Result<Report, CheckError> {
    check.validate()?;
    let seed = check.seed.unwrap_or_else(|| fastrand::u64(..));
    let data_dir = scratch_dir(check.data_dir.as_ref(), "faultcheck");
    let binary = spool_binary(check.spool_bin.as_ref())?;
    let started = Instant::now();
    let metadata_url = check
        .metadata_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", data_dir.join("metadata.db").display()));
    let mut hosts = Vec::new();
    let nodes = if check.mode == Mode::Cluster {
        check.nodes
    } else {
        1
    };
    for node_id in 1..=nodes {
        let shared = check
            .storage_url
            .as_ref()
            .map(|storage| host::SharedStorage {
                storage_url: storage.clone(),
                metadata_url: metadata_url.clone(),
                node_id,
                settings: if check.mode == Mode::Cluster {
                    cluster_settings()
                } else {
                    Vec::new()
                },
                admin: None,
            });
        let dir = if nodes == 1 {
            data_dir.clone()
        } else {
            data_dir.join(format!("node-{node_id}"))
        };
        let mut host = Host::new(check.mode, check.crash, &dir, binary.clone(), seed, shared)?;
        host.start()?;
        hosts.push(host);
    }
    let bootstrap: Vec<String> = hosts.iter().map(|h| h.address().to_string()).collect();
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap.join(","))
        .set("reconnect.backoff.ms", "20")
        .set("reconnect.backoff.max.ms", "200")
        .set("log_level", "0");
    let topic = "faultcheck";
    create_topic(&config, topic, check.partitions, &check.topic_config)?;
    if check.transactions > 0 {
        for txn_topic in [transactions::TXN_TOPIC, transactions::CTP_TOPIC] {
            create_topic(&config, txn_topic, check.partitions, &check.topic_config)?;
        }
    }
    let transform_group = format!("spool-faultcheck-ctp-{seed}");
    let decisions = Arc::new(check_back::Decisions::default());
    let checker = if check.check_back {
        let checker = check_back::Checker::start(decisions.clone())?;
        let store = if check.storage_url.is_some() {
            metadata_url.clone()
        } else {
            format!(
                "sqlite://{}",
                data_dir.join("broker").join("metadata.db").display()
            )
        };
        check_back::register(&store, &checker)?;
        Some(checker)
    } else {
        None
    };
    let decisions = checker.as_ref().map(|_| &*decisions);

    let history = Arc::new(History::new(usize::try_from(check.producers).unwrap_or(1)));
    let stop = AtomicBool::new(false);
    let group = format!("spool-faultcheck-{seed}");
    let mut member_config = config.clone();
    if check.group_protocol == GroupProtocol::Consumer {
        member_config.set("group.protocol", "consumer");
    }
    let outcome = std::thread::scope(|scope| -> Result<(), CheckError> {
        let mut threads = Vec::new();
        for id in 0..check.producers {
            let plan = producer::Plan {
                id,
                topic: topic.to_owned(),
                partitions: check.partitions,
                rate: check.rate,
            };
            let (config, history, stop) = (&config, &history, &stop);
            let client = scope.spawn(move || producer::run(config, &plan, history, stop));
            threads.push((format!("producer-{id}"), client));
        }
        for slot in 0..check.consumers {
            let (config, history, stop, group) = (&member_config, &history, &stop, &group);
            let slot = usize::try_from(slot).unwrap_or(0);
            let client =
                scope.spawn(move || members::run(config, slot, topic, group, history, stop));
            threads.push((format!("member-{slot}"), client));
        }
        for writer in 0..check.transactions {
            let (config, history, stop) = (&config, &history, &stop);
            let partitions = check.partitions;
            let client = scope.spawn(move || {
                transactions::write(config, writer, partitions, history, decisions, stop)
            });
            threads.push((format!("txn-writer-{writer}"), client));
        }
        if check.transactions > 0 {
            let (config, history, stop) = (&config, &history, &stop);
            let client = scope.spawn(move || transactions::read(config, history, stop));
            threads.push(("txn-reader".to_owned(), client));
            let group = &transform_group;
            let client =
                scope.spawn(move || transactions::transform(config, topic, group, history, stop));
            threads.push(("transformer".to_owned(), client));
        }
        let cycles = if check.mode == Mode::Cluster {
            cluster_cycles(&mut hosts, check, seed, &history)
        } else {
            kill_cycles(&mut hosts, check, seed, &history)
        };
        // Let the clients catch up with the last life before they stop: a second, or
        // until the transactional clients got somewhere (a short run of frequent
        // deaths may leave the transformer no life long enough to join its group).
        std::thread::sleep(Duration::from_secs(1));
        let deadline = Instant::now() + PROGRESS_WAIT;
        while check.transactions > 0 && Instant::now() < deadline {
            let events = history.events();
            let committed = events
                .txns
                .iter()
                .any(|t| t.outcome == history::TxnOutcome::Committed);
            if committed && events.ctp_transactions > 0 {
                break;
            }
            drop(events);
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::SeqCst);
        let mut first_error = cycles.err();
        let deadline = Instant::now() + CLIENT_STOP_TIMEOUT;
        while threads.iter().any(|(_, t)| !t.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let stuck: Vec<&str> = threads
            .iter()
            .filter(|(_, t)| !t.is_finished())
            .map(|(name, _)| name.as_str())
            .collect();
        if !stuck.is_empty() {
            give_up_on_clients(&mut hosts, &stuck, first_error.as_ref());
        }
        for (_, thread) in threads {
            match thread.join() {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    first_error.get_or_insert(error);
                }
                Err(_) => {
                    first_error
                        .get_or_insert(CheckError::Broker("a client thread panicked".to_owned()));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    });
    outcome?;
    // One last death, so that what the last life acknowledged goes through a crash too
    // before it is read back.
    for host in &mut hosts {
        host.crash()?;
    }
    for host in &mut hosts {
        host.start()?;
    }
    let drained = drain::drain(&config, topic, check.partitions)?;
    let transactional = if check.transactions > 0 {
        let written = drain::drain_committed(&config, transactions::TXN_TOPIC, check.partitions)?;
        let transform = transform_outcome(&config, &transform_group, check.partitions, &drained)?;
        Some((written, transform))
    } else {
        None
    };
    drop(hosts);
    let events = history.events();
    let mut report = Report::new(
        check,
        seed,
        &events,
        &drained,
        transactional.as_ref(),
        started.elapsed(),
        &data_dir,
    );
    if let Some(counts) = report.transactions.as_mut() {
        counts.checked_back = decisions.map_or(0, |d| d.checks.load(Ordering::Relaxed));
    }
    if report.findings.is_clean() && check.data_dir.is_none() {
        let _ = std::fs::remove_dir_all(&data_dir);
    }
    Ok(report)
}

/// How long the clients may run on after the last death for the transactional ones
/// to get somewhere.
const PROGRESS_WAIT: Duration = Duration::from_secs(30);

/// Lets the broker live a random while, kills it and starts it again, `cycles` times.
fn kill_cycles(
    hosts: &mut [Host],
    check: &FaultCheck,
    seed: u64,
    history: &History,
) -> Result<(), CheckError> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let progress = Progress::new(check.cycles);
    for cycle in 1..=check.cycles {
        let up = rng.u64(check.up_min_ms..=check.up_max_ms);
        std::thread::sleep(Duration::from_millis(up));
        for host in hosts.iter_mut() {
            history.died();
            host.crash()?;
            host.start()?;
        }
        progress.show(cycle);
    }
    progress.done();
    Ok(())
}

/// How long the clients have to return once told to stop: their calls with a deadline
/// take at most two minutes (a producer's flush).
const CLIENT_STOP_TIMEOUT: Duration = Duration::from_secs(180);

/// A client stuck in a librdkafka call that has no deadline (a synchronous commit, or
/// `send_offsets_to_transaction`, whose wait for a coordinator is unbounded) cannot be
/// joined; nor can the run go on without it. Kills the brokers, says why, and exits.
fn give_up_on_clients(hosts: &mut [Host], stuck: &[&str], cause: Option<&CheckError>) -> ! {
    for host in hosts.iter_mut() {
        let _ = host.crash();
    }
    eprintln!(
        "spool faultcheck: {} did not return within {CLIENT_STOP_TIMEOUT:?} of being told to stop (stuck in a librdkafka call without a deadline){}",
        stuck.join(", "),
        cause.map_or_else(String::new, |error| format!(
            "; the cycles had failed: {error}"
        ))
    );
    std::process::exit(1);
}

/// `cluster.lease.ms` of the brokers in cluster mode: short, so that a cycle that
/// waits for a lease to lapse is short too.
const CLUSTER_LEASE: Duration = Duration::from_millis(1_500);

fn cluster_settings() -> Vec<String> {
    vec![
        format!("cluster.lease.ms={}", CLUSTER_LEASE.as_millis()),
        "cluster.heartbeat.ms=250".to_owned(),
    ]
}

/// Lets the cluster run a random while, then does one of these to a random broker,
/// `cycles` times: kills it and starts it again at once (its new process takes its
/// partitions back under raised epochs); kills it and starts it once its lease has
/// lapsed (the others took its partitions); pauses it past its lease and lets it run
/// again (it wakes up believing it leads partitions the others took); stops it with
/// SIGTERM (it hands over cleanly) and starts it again.
fn cluster_cycles(
    hosts: &mut [Host],
    check: &FaultCheck,
    seed: u64,
    history: &History,
) -> Result<(), CheckError> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let progress = Progress::new(check.cycles);
    let past_lease =
        |rng: &mut fastrand::Rng| CLUSTER_LEASE + Duration::from_millis(rng.u64(200..=1_500));
    for cycle in 1..=check.cycles {
        let up = rng.u64(check.up_min_ms..=check.up_max_ms);
        std::thread::sleep(Duration::from_millis(up));
        let victim = rng.usize(..hosts.len());
        let Some(host) = hosts.get_mut(victim) else {
            continue;
        };
        history.died();
        match rng.u8(..4) {
            0 => {
                host.crash()?;
                host.start()?;
            }
            1 => {
                host.crash()?;
                std::thread::sleep(past_lease(&mut rng));
                host.start()?;
            }
            2 => {
                host.pause()?;
                std::thread::sleep(past_lease(&mut rng));
                host.resume()?;
            }
            _ => {
                host.terminate()?;
                host.start()?;
            }
        }
        progress.show(cycle);
    }
    progress.done();
    Ok(())
}

/// Cycles counted on a terminal, or every hundredth in a log.
struct Progress {
    cycles: u32,
    terminal: bool,
}

impl Progress {
    fn new(cycles: u32) -> Progress {
        Progress {
            cycles,
            terminal: std::io::IsTerminal::is_terminal(&std::io::stderr()),
        }
    }

    fn show(&self, cycle: u32) {
        if self.terminal {
            eprint!("\rcycle {cycle}/{}", self.cycles);
        } else if cycle.is_multiple_of(100) {
            eprintln!("cycle {cycle}/{}", self.cycles);
        }
    }

    fn done(&self) {
        if self.terminal {
            eprintln!();
        }
    }
}

/// The directory a run works in: the one given, or a new one under the temporary
/// directory named for `what`.
fn scratch_dir(given: Option<&PathBuf>, what: &str) -> PathBuf {
    given.cloned().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("spool-{what}-{}", uuid::Uuid::new_v4().simple()))
    })
}

/// The `spool` binary to run brokers with: the one given, or this one.
fn spool_binary(given: Option<&PathBuf>) -> Result<PathBuf, CheckError> {
    match given {
        Some(binary) => Ok(binary.clone()),
        None => std::env::current_exe().map_err(CheckError::io("find", Path::new("spool"))),
    }
}

/// The transformer's run as read back: its output (read_committed), and the main
/// topic's records below and at or past the group's final committed offsets.
fn transform_outcome(
    config: &ClientConfig,
    group: &str,
    partitions: i32,
    drained: &checker::Drained,
) -> Result<checker::transactions::TransformOutcome, CheckError> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let outputs = drain::drain_committed(config, transactions::CTP_TOPIC, partitions)?;
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", group)
        .set("isolation.level", "read_committed")
        .set("enable.auto.commit", "false")
        .create()
        .map_err(CheckError::kafka(
            "create a consumer of the transformer's group",
        ))?;
    let mut wanted = rdkafka::TopicPartitionList::new();
    for partition in 0..partitions {
        wanted.add_partition("faultcheck", partition);
    }
    let committed = consumer
        .committed_offsets(wanted, Duration::from_secs(60))
        .map_err(CheckError::kafka(
            "read the transformer's committed offsets",
        ))?;
    let mut outcome = checker::transactions::TransformOutcome {
        outputs,
        ..Default::default()
    };
    for (partition, records) in drained {
        let below = committed
            .find_partition("faultcheck", *partition)
            .and_then(|p| p.offset().to_raw())
            .unwrap_or(0);
        for (offset, value) in records {
            if let Ok(value) = value {
                if *offset < below {
                    outcome.consumed.insert(*value);
                } else {
                    outcome.unconsumed.insert(*value);
                }
            }
        }
    }
    Ok(outcome)
}

/// Creates `topic` with `partitions` and the topic configs given.
fn create_topic(
    config: &ClientConfig,
    topic: &str,
    partitions: i32,
    topic_config: &[(String, String)],
) -> Result<(), CheckError> {
    let admin: AdminClient<DefaultClientContext> = config
        .create()
        .map_err(CheckError::kafka("create an admin client"))?;
    let mut new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    for (key, value) in topic_config {
        new = new.set(key, value);
    }
    let results = futures_executor::block_on(admin.create_topics(&[new], &AdminOptions::new()))
        .map_err(CheckError::kafka("create the topic"))?;
    for result in results {
        if let Err((topic, code)) = result {
            return Err(CheckError::Broker(format!(
                "the broker refused to create topic {topic}: {code:?}"
            )));
        }
    }
    Ok(())
}
