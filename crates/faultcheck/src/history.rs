//! What the clients did and saw, in the order they did it: every value sent and
//! acknowledged, every record a group member polled, every offset commit. The checker
//! judges this history against what the log holds at the end.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// A unique value: the producer that sent it and its place in that producer's sequence.
/// On the wire it is the record's value, as `p<producer>-<seq>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Value {
    pub producer: u32,
    pub seq: u64,
}

impl Value {
    #[must_use]
    pub fn encode(self) -> String {
        self.to_string()
    }

    /// The value a record carries, if it is one of ours.
    #[must_use]
    pub fn parse(bytes: &[u8]) -> Option<Value> {
        let text = std::str::from_utf8(bytes).ok()?;
        let (producer, seq) = text.strip_prefix('p')?.split_once('-')?;
        Some(Value {
            producer: producer.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}-{}", self.producer, self.seq)
    }
}

/// A point in the run's order of events: one counter shared by every client thread,
/// so that "acknowledged before that assignment" means what it says.
pub type Tick = u64;

/// A write the broker acknowledged.
#[derive(Debug, Clone, Copy)]
pub struct Ack {
    pub value: Value,
    pub partition: i32,
    pub offset: i64,
}

/// A record a group member polled, in the assignment it held then.
#[derive(Debug, Clone, Copy)]
pub struct Poll {
    pub session: u64,
    pub partition: i32,
    pub offset: i64,
    /// `None` if the record's value is not one of ours.
    pub value: Option<Value>,
    pub at: Tick,
}

/// One assignment received by one group member: its polls until the next one.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: u64,
    pub member: String,
    pub partitions: Vec<i32>,
    pub at: Tick,
}

/// An offset commit of one partition, and what became of it.
#[derive(Debug, Clone, Copy)]
pub struct Commit {
    pub partition: i32,
    pub offset: i64,
    pub attempted: Tick,
    pub outcome: CommitOutcome,
    /// librdkafka's error, when it failed.
    pub error: Option<rdkafka::error::RDKafkaErrorCode>,
}

/// What the client learnt of a commit, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOutcome {
    /// The broker acknowledged it.
    Acknowledged(Tick),
    /// The broker refused it (an old generation, an unknown member, a rebalance) or it
    /// was never sent: it cannot have been stored.
    Refused(Tick),
    /// It failed in a way that leaves it unknown (a connection cut, a timeout): it may
    /// have been stored.
    Unknown(Tick),
}

impl Commit {
    /// When it was acknowledged, if it was.
    #[must_use]
    pub fn acknowledged(&self) -> Option<Tick> {
        match self.outcome {
            CommitOutcome::Acknowledged(at) => Some(at),
            _ => None,
        }
    }
}

/// What a transactional writer learnt of one of its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum TxnOutcome {
    /// The commit was acknowledged.
    Committed,
    /// The abort was acknowledged.
    Aborted,
    /// A call failed: it may have committed or not, but all of it or none.
    Unknown,
}

/// One transaction of a writer.
#[derive(Debug, Clone)]
pub struct TxnRecord {
    pub values: Vec<Value>,
    pub outcome: TxnOutcome,
}

/// Everything recorded in a run.
#[derive(Debug, Default)]
pub struct Events {
    /// Values sent, per producer: producer `i` sent sequence numbers `0..sent[i]`.
    pub sent: Vec<u64>,
    pub acked: Vec<Ack>,
    /// Values whose delivery failed; each may or may not be in the log.
    pub failed: Vec<(Value, String)>,
    /// Errors that stopped a client (librdkafka's fatal errors).
    pub client_errors: Vec<String>,
    pub sessions: Vec<Session>,
    pub polls: Vec<Poll>,
    pub commits: Vec<Commit>,
    /// The transactional writers' transactions.
    pub txns: Vec<TxnRecord>,
    /// Values a read_committed consumer of the writers' topic saw during the run.
    pub txn_reads: Vec<Value>,
    /// Transactions the transformer committed, and how often it started over.
    pub ctp_transactions: u64,
    pub ctp_restarts: u64,
    /// When a broker was killed, paused or stopped.
    pub deaths: Vec<Tick>,
    /// librdkafka's accounts of positions it moved on an error, per member.
    pub resets: Vec<Reset>,
}

/// A group member's position moved by librdkafka itself (`offset reset` in its log:
/// an out-of-range fetch, a failed offset validation), in its own words.
#[derive(Debug, Clone)]
pub struct Reset {
    pub member: String,
    pub message: String,
    pub at: Tick,
}

/// The history, shared by the client threads.
#[derive(Debug, Default)]
pub struct History {
    clock: AtomicU64,
    events: Mutex<Events>,
}

impl History {
    #[must_use]
    pub fn new(producers: usize) -> History {
        History {
            clock: AtomicU64::new(0),
            events: Mutex::new(Events {
                sent: vec![0; producers],
                ..Events::default()
            }),
        }
    }

    pub fn tick(&self) -> Tick {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }

    /// Notes that a broker is about to die (be killed, paused or stopped).
    pub fn died(&self) {
        let at = self.tick();
        self.events().deaths.push(at);
    }

    pub fn events(&self) -> MutexGuard<'_, Events> {
        self.events
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Producer `producer` handed sequence numbers `0..count` to librdkafka.
    pub fn sent(&self, producer: u32, count: u64) {
        let mut events = self.events();
        if let Some(sent) = usize::try_from(producer)
            .ok()
            .and_then(|p| events.sent.get_mut(p))
        {
            *sent = count;
        }
    }

    /// Starts a new assignment of `member`; returns its session id.
    pub fn assigned(&self, member: &str, partitions: Vec<i32>) -> u64 {
        let at = self.tick();
        let mut events = self.events();
        let id = events.sessions.len() as u64;
        events.sessions.push(Session {
            id,
            member: member.to_owned(),
            partitions,
            at,
        });
        id
    }

    /// librdkafka moved `member`'s position and said why.
    pub fn reset(&self, member: &str, message: &str) {
        let at = self.tick();
        self.events().resets.push(Reset {
            member: member.to_owned(),
            message: message.to_owned(),
            at,
        });
    }

    pub fn polled(&self, session: u64, partition: i32, offset: i64, value: Option<Value>) {
        let at = self.tick();
        self.events().polls.push(Poll {
            session,
            partition,
            offset,
            value,
            at,
        });
    }
}
