//! `spool bench rebalance`: what a rebalance costs under each group protocol, in one
//! run against the same broker. A group of `--members` consumers of a topic of
//! `--partitions` partitions, fed at `--rate`, goes through two changes per trial: a
//! member joins, then one of the first leaves (a clean close). For each it measures
//! how long until every partition is owned again, by exactly one member, evenly
//! (`settle`); how many partitions were revoked, and how many of those their member
//! got back (`kept revoked`: consumption that paused for nothing); and, over the
//! trial, records delivered twice. Protocols: classic `eager` (range), classic
//! `cooperative` (cooperative-sticky) and `consumer` (KIP-848, the broker's uniform
//! assignor).

mod member;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use serde::Serialize;

use self::member::{Member, Seen, lock};
use crate::BenchError;
use crate::workload::parse_property;

#[derive(Debug, Clone, clap::Args, Serialize)]
pub struct Rebalance {
    /// Partitions of the topic.
    #[arg(long, default_value_t = 100)]
    pub partitions: i32,
    /// Members before the one that joins.
    #[arg(long, default_value_t = 10)]
    pub members: usize,
    /// Trials per protocol.
    #[arg(long, default_value_t = 3)]
    pub trials: usize,
    /// Records per second produced while the group runs.
    #[arg(long, default_value_t = 1000)]
    pub rate: u64,
    /// The protocols, in order: `eager`, `cooperative`, `consumer`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "eager,cooperative,consumer"
    )]
    pub protocols: Vec<GroupProtocol>,
    /// Seconds a group may take to settle before the run fails.
    #[arg(long, default_value_t = 180)]
    pub settle_timeout: u64,
    /// A librdkafka property for every client (repeatable).
    #[arg(long = "client-config", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub client_config: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GroupProtocol {
    /// Classic protocol, range assignor: every member gives everything up.
    Eager,
    /// Classic protocol, cooperative-sticky: only what moves is given up, in two
    /// rebalances.
    Cooperative,
    /// KIP-848: the broker assigns; only what moves is given up.
    Consumer,
}

impl GroupProtocol {
    fn member_config(self, config: &mut ClientConfig) {
        match self {
            GroupProtocol::Eager => {
                config.set("partition.assignment.strategy", "range");
            }
            GroupProtocol::Cooperative => {
                config.set("partition.assignment.strategy", "cooperative-sticky");
            }
            GroupProtocol::Consumer => {
                config.set("group.protocol", "consumer");
            }
        }
    }
}

/// One change's cost, per trial.
#[derive(Debug, Clone, Serialize)]
pub struct ChangeCost {
    pub settle_ms: u64,
    pub revoked: u64,
    pub moved: u64,
    pub kept_revoked: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProtocolResult {
    pub protocol: GroupProtocol,
    pub join: Vec<ChangeCost>,
    pub leave: Vec<ChangeCost>,
    /// Records delivered more than once, over all trials.
    pub consumed_twice: u64,
    /// Records produced, over all trials.
    pub produced: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RebalanceReport {
    pub settings: Rebalance,
    pub results: Vec<ProtocolResult>,
}

/// Runs every trial of every protocol against `brokers`.
pub fn run(brokers: &str, settings: &Rebalance) -> Result<RebalanceReport, BenchError> {
    if settings.members == 0 || settings.partitions <= 0 || settings.trials == 0 {
        return Err(BenchError::Invalid(
            "--members, --partitions and --trials must be positive".to_owned(),
        ));
    }
    let mut base = ClientConfig::new();
    base.set("bootstrap.servers", brokers);
    for (key, value) in &settings.client_config {
        base.set(key, value);
    }
    let mut results = Vec::new();
    for &protocol in &settings.protocols {
        let mut result = ProtocolResult {
            protocol,
            join: Vec::new(),
            leave: Vec::new(),
            consumed_twice: 0,
            produced: 0,
        };
        for _ in 0..settings.trials {
            let trial = trial(&base, settings, protocol)?;
            result.join.push(trial.join);
            result.leave.push(trial.leave);
            result.consumed_twice += trial.consumed_twice;
            result.produced += trial.produced;
        }
        results.push(result);
    }
    Ok(RebalanceReport {
        settings: settings.clone(),
        results,
    })
}

struct Trial {
    join: ChangeCost,
    leave: ChangeCost,
    consumed_twice: u64,
    produced: u64,
}

fn trial(
    base: &ClientConfig,
    settings: &Rebalance,
    protocol: GroupProtocol,
) -> Result<Trial, BenchError> {
    let id = uuid::Uuid::new_v4().simple().to_string();
    let id = id.get(..8).unwrap_or(&id);
    let topic = format!("spool-rebalance-{id}");
    let admin: AdminClient<DefaultClientContext> = base
        .create()
        .map_err(BenchError::kafka("create an admin client"))?;
    let new = NewTopic::new(&topic, settings.partitions, TopicReplication::Fixed(1));
    let created = futures_executor::block_on(admin.create_topics([&new], &AdminOptions::new()))
        .map_err(BenchError::kafka("create the topic"))?;
    if let Some(Err((topic, code))) = created.into_iter().next() {
        return Err(BenchError::TopicRefused {
            topic,
            code: format!("{code:?}"),
        });
    }
    let mut member_config = base.clone();
    member_config
        .set("group.id", format!("spool-rebalance-{id}"))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false");
    protocol.member_config(&mut member_config);

    let stop = Arc::new(AtomicBool::new(false));
    let feeder = feed(base, &topic, settings, &stop)?;
    let seen = Arc::new(Seen::default());
    let mut members = (0..settings.members)
        .map(|_| Member::start(&member_config, &topic, &seen))
        .collect::<Result<Vec<Member>, BenchError>>()?;
    let timeout = Duration::from_secs(settings.settle_timeout);
    settle(&members, settings.partitions, timeout, "the group to form")?;

    let before = owners(&members);
    take_revoked(&members);
    let started = Instant::now();
    members.push(Member::start(&member_config, &topic, &seen)?);
    settle(&members, settings.partitions, timeout, "a joining member")?;
    let join = cost(started, &before, &members);

    let leaving = members.remove(0);
    let before = owners(&members);
    take_revoked(&members);
    let started = Instant::now();
    leaving.stop()?;
    settle(&members, settings.partitions, timeout, "a member leaving")?;
    let leave = cost(started, &before, &members);

    stop.store(true, Ordering::Relaxed);
    let produced = feeder
        .join()
        .map_err(|_| BenchError::Failed("the producer panicked".to_owned()))??;
    std::thread::sleep(Duration::from_secs(1));
    for member in members {
        member.stop()?;
    }
    let _ = futures_executor::block_on(admin.delete_topics(&[&topic], &AdminOptions::new()));
    Ok(Trial {
        join,
        leave,
        consumed_twice: seen.twice(),
        produced,
    })
}

/// Produces `settings.rate` records a second over every partition until `stop`;
/// how many were acknowledged.
fn feed(
    base: &ClientConfig,
    topic: &str,
    settings: &Rebalance,
    stop: &Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<Result<u64, BenchError>>, BenchError> {
    let producer: BaseProducer = base
        .clone()
        .set("linger.ms", "5")
        .create()
        .map_err(BenchError::kafka("create a producer"))?;
    let (topic, stop) = (topic.to_owned(), stop.clone());
    let (rate, partitions) = (settings.rate.max(1), settings.partitions);
    Ok(std::thread::spawn(move || {
        let started = Instant::now();
        let mut sent: u64 = 0;
        while !stop.load(Ordering::Relaxed) {
            let due = Duration::from_secs_f64(sent as f64 / rate as f64);
            if started.elapsed() < due {
                producer.poll(Duration::from_millis(1));
                continue;
            }
            let partition = i32::try_from(sent % u64::from(partitions.unsigned_abs())).unwrap_or(0);
            let value = sent.to_be_bytes();
            let record = BaseRecord::<(), [u8]>::to(&topic)
                .partition(partition)
                .payload(&value);
            if producer.send(record).is_err() {
                producer.poll(Duration::from_millis(10));
                continue;
            }
            sent += 1;
        }
        producer
            .flush(Duration::from_secs(30))
            .map_err(BenchError::kafka("flush the producer"))?;
        Ok(sent)
    }))
}

/// Waits until every partition is held by exactly one member and the members hold
/// as many as each other, give or take one.
fn settle(
    members: &[Member],
    partitions: i32,
    timeout: Duration,
    what: &str,
) -> Result<(), BenchError> {
    let deadline = Instant::now() + timeout;
    loop {
        let counts: Vec<usize> = members
            .iter()
            .map(|m| lock(&m.holdings).held.len())
            .collect();
        let owned = owners(members);
        let total: usize = counts.iter().sum();
        let (least, most) = (
            counts.iter().min().copied().unwrap_or(0),
            counts.iter().max().copied().unwrap_or(0),
        );
        let every = usize::try_from(partitions).unwrap_or(0);
        if owned.len() == every && total == every && most - least <= 1 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(BenchError::Stalled(format!(
                "waiting for {what}: {} of {every} partitions owned, members hold {counts:?}",
                owned.len()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Each partition's owner, by member index.
fn owners(members: &[Member]) -> BTreeMap<i32, usize> {
    let mut owners = BTreeMap::new();
    for (index, member) in members.iter().enumerate() {
        for partition in &lock(&member.holdings).held {
            owners.insert(*partition, index);
        }
    }
    owners
}

fn take_revoked(members: &[Member]) -> u64 {
    members
        .iter()
        .map(|m| std::mem::take(&mut lock(&m.holdings).revoked))
        .sum()
}

fn cost(started: Instant, before: &BTreeMap<i32, usize>, members: &[Member]) -> ChangeCost {
    let settle_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let after = owners(members);
    let revoked = take_revoked(members);
    // Member indexes shift when the first member leaves: compare by holdings.
    let moved = after
        .iter()
        .filter(|(partition, owner)| before.get(partition) != Some(owner))
        .count() as u64;
    ChangeCost {
        settle_ms,
        revoked,
        moved,
        kept_revoked: revoked.saturating_sub(moved),
    }
}

impl RebalanceReport {
    /// The table `docs/performance.md` shows.
    #[must_use]
    pub fn to_text(&self) -> String {
        let s = &self.settings;
        let mut text = format!(
            "rebalance: {} partitions, {} members (+1 joins, then 1 leaves), {} trial(s), {} records/s\n\
             protocol     change  settle p50   settle p99  revoked  moved  kept-revoked  consumed twice\n",
            s.partitions, s.members, s.trials, s.rate
        );
        for result in &self.results {
            for (change, costs) in [("join", &result.join), ("leave", &result.leave)] {
                let mut settles: Vec<u64> = costs.iter().map(|c| c.settle_ms).collect();
                settles.sort_unstable();
                let mean = |f: fn(&ChangeCost) -> u64| {
                    costs.iter().map(f).sum::<u64>() / (costs.len().max(1) as u64)
                };
                text.push_str(&format!(
                    "{:<12} {:<7} {:>8} ms  {:>8} ms  {:>7}  {:>5}  {:>12}  {:>14}\n",
                    format!("{:?}", result.protocol).to_lowercase(),
                    change,
                    percentile(&settles, 500),
                    percentile(&settles, 990),
                    mean(|c| c.revoked),
                    mean(|c| c.moved),
                    mean(|c| c.kept_revoked),
                    if change == "join" {
                        format!("{} of {}", result.consumed_twice, result.produced)
                    } else {
                        String::new()
                    },
                ));
            }
        }
        text
    }
}

/// The value at `per_mille`/1000 of sorted `values` (nearest rank).
fn percentile(values: &[u64], per_mille: usize) -> u64 {
    let rank = (per_mille * values.len()).div_ceil(1000);
    values
        .get(rank.saturating_sub(1).min(values.len().saturating_sub(1)))
        .copied()
        .unwrap_or(0)
}
