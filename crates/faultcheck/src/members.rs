//! Consumer-group members: librdkafka consumers that poll, commit what they consumed
//! (every few hundred milliseconds and before giving partitions up), and leave after a
//! few seconds for a new member to take their place, so that partitions change owners
//! often. Every assignment, poll and commit goes into the history.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, RebalanceProtocol,
};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};

use crate::CheckError;
use crate::history::{Commit, CommitOutcome, History, Value};

/// How often a member commits what it consumed.
const COMMIT_EVERY: Duration = Duration::from_millis(300);

/// How long a member stays in the group: a random time in this range.
const LIFETIME_MS: std::ops::Range<u64> = 2_000..6_000;

/// One member's view of its assignment.
#[derive(Debug, Default)]
struct State {
    /// The history's id of the current assignment.
    session: Option<u64>,
    /// The partitions assigned now.
    held: BTreeSet<i32>,
    /// The next offset to consume, per partition consumed in this assignment.
    positions: BTreeMap<i32, i64>,
    /// What this member last committed, per partition.
    committed: BTreeMap<i32, i64>,
}

#[derive(Debug)]
struct Member {
    name: String,
    topic: String,
    history: Arc<History>,
    state: Mutex<State>,
}

impl Member {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Commits the positions that moved since the last commit, synchronously, and
    /// records the attempt and its outcome.
    fn commit(&self, consumer: &BaseConsumer<Member>) {
        let moved: Vec<(i32, i64)> = {
            let state = self.state();
            state
                .positions
                .iter()
                .filter(|(p, next)| state.committed.get(p) != Some(next))
                .map(|(p, next)| (*p, *next))
                .collect()
        };
        if moved.is_empty() {
            return;
        }
        let mut offsets = TopicPartitionList::new();
        for (partition, next) in &moved {
            let _ = offsets.add_partition_offset(&self.topic, *partition, Offset::Offset(*next));
        }
        let attempted = self.history.tick();
        let result = consumer.commit(&offsets, CommitMode::Sync);
        let at = self.history.tick();
        let outcome = match &result {
            Ok(()) => CommitOutcome::Acknowledged(at),
            Err(KafkaError::ConsumerCommit(code)) if never_stored(*code) => {
                CommitOutcome::Refused(at)
            }
            Err(_) => CommitOutcome::Unknown(at),
        };
        let error = match &result {
            Ok(()) => None,
            Err(error) => error.rdkafka_error_code(),
        };
        if result.is_ok() {
            self.state().committed.extend(moved.iter().copied());
        }
        let mut events = self.history.events();
        events
            .commits
            .extend(moved.iter().map(|&(partition, offset)| Commit {
                partition,
                offset,
                attempted,
                outcome,
                error,
            }));
    }
}

/// Commit errors after which the offsets were not stored by the answering broker: its
/// own refusals, which it answers before storing anything. librdkafka's local errors
/// are not among them, since it may still send a commit it reported as failed. (An
/// earlier attempt that reached a broker which then died may have been stored: the
/// checker counts a refusal with a death in flight as unknown.)
fn never_stored(code: RDKafkaErrorCode) -> bool {
    matches!(
        code,
        RDKafkaErrorCode::IllegalGeneration
            | RDKafkaErrorCode::UnknownMemberId
            | RDKafkaErrorCode::RebalanceInProgress
            | RDKafkaErrorCode::FencedInstanceId
    )
}

impl ClientContext for Member {
    /// Logs as librdkafka's default does, and keeps its account of a position it moved
    /// on an error with the member, so that a poll that goes backwards or skips names
    /// its cause.
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        if fac == "OFFSET" && message.contains("offset reset") {
            self.history.reset(&self.name, message);
        }
        DefaultClientContext.log(level, fac, message);
    }
}

impl ConsumerContext for Member {
    /// Each change of the assignment starts a new one in the history, with every
    /// partition the member holds then. An eager protocol revokes everything and
    /// assigns everything; the consumer protocol (and cooperative assignors) revoke
    /// and assign only what changes, and the member goes on with what it keeps.
    fn pre_rebalance(&self, consumer: &BaseConsumer<Member>, rebalance: &Rebalance<'_>) {
        let incremental = matches!(
            consumer.rebalance_protocol(),
            RebalanceProtocol::Cooperative
        );
        match rebalance {
            Rebalance::Revoke(revoked) => {
                self.commit(consumer);
                let mut state = self.state();
                if incremental {
                    for partition in partitions_of(revoked) {
                        state.held.remove(&partition);
                        state.positions.remove(&partition);
                    }
                } else {
                    state.held.clear();
                    state.positions.clear();
                }
                state.session = (!state.held.is_empty()).then(|| {
                    self.history
                        .assigned(&self.name, state.held.iter().copied().collect())
                });
            }
            // Recorded before librdkafka assigns (and so fetches the committed offsets),
            // so that a commit acknowledged before this point was stored before the fetch.
            Rebalance::Assign(assigned) => {
                let mut state = self.state();
                if !incremental {
                    state.held.clear();
                    state.positions.clear();
                }
                state.held.extend(partitions_of(assigned));
                let held = state.held.iter().copied().collect();
                state.session = Some(self.history.assigned(&self.name, held));
            }
            Rebalance::Error(_) => {}
        }
    }
}

fn partitions_of(list: &TopicPartitionList) -> impl Iterator<Item = i32> + '_ {
    list.elements().into_iter().map(|e| e.partition())
}

/// Runs members one after another in this thread until `stop`.
pub(crate) fn run(
    config: &ClientConfig,
    slot: usize,
    topic: &str,
    group: &str,
    history: &Arc<History>,
    stop: &AtomicBool,
) -> Result<(), CheckError> {
    let mut rng = fastrand::Rng::new();
    let mut generation = 0;
    while !stop.load(Ordering::SeqCst) {
        let name = format!("member-{slot}.{generation}");
        generation += 1;
        let lifetime = Duration::from_millis(rng.u64(LIFETIME_MS));
        serve(config, &name, topic, group, history, stop, lifetime)?;
    }
    Ok(())
}

/// One member's life: join, poll and commit for `lifetime`, commit, leave.
fn serve(
    config: &ClientConfig,
    name: &str,
    topic: &str,
    group: &str,
    history: &Arc<History>,
    stop: &AtomicBool,
    lifetime: Duration,
) -> Result<(), CheckError> {
    let mut config = config.clone();
    config
        .set("group.id", group)
        .set("client.id", name)
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("max.poll.interval.ms", "20000");
    if config.get("group.protocol") != Some("consumer") {
        // With the consumer protocol the broker sets these (librdkafka refuses them).
        config
            .set("session.timeout.ms", "6000")
            .set("heartbeat.interval.ms", "500");
    }
    let consumer: BaseConsumer<Member> = config
        .create_with_context(Member {
            name: name.to_owned(),
            topic: topic.to_owned(),
            history: history.clone(),
            state: Mutex::new(State::default()),
        })
        .map_err(CheckError::kafka("create a consumer"))?;
    consumer
        .subscribe(&[topic])
        .map_err(CheckError::kafka("subscribe"))?;
    let member = consumer.context();
    let born = Instant::now();
    let mut last_commit = Instant::now();
    while !stop.load(Ordering::SeqCst) && born.elapsed() < lifetime {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(message)) => {
                let mut state = member.state();
                if let Some(session) = state.session {
                    let value = message.payload().and_then(Value::parse);
                    history.polled(session, message.partition(), message.offset(), value);
                    state
                        .positions
                        .insert(message.partition(), message.offset() + 1);
                }
            }
            Some(Err(error)) => {
                if let Some((code, reason)) = consumer.client().fatal_error() {
                    history
                        .events()
                        .client_errors
                        .push(format!("{name}: fatal {code:?}: {reason} ({error})"));
                    return Ok(());
                }
            }
            None => {}
        }
        if last_commit.elapsed() >= COMMIT_EVERY {
            member.commit(&consumer);
            last_commit = Instant::now();
        }
    }
    // Dropping the consumer leaves the group; the revocation commits first.
    member.commit(&consumer);
    Ok(())
}
