//! The transaction coordinator's state: per transactional id, the producer id and
//! epoch, the state, the partitions and groups of the transaction in progress; the
//! markers a decided transaction still has to have written; and the offsets a
//! transaction committed for groups, pending until it commits.
//!
//! Every change is a compare-and-set on the transaction's version, so that two
//! brokers that both believe they coordinate an id (while their views of the cluster
//! differ) cannot both move it: the second change is refused (`Conflict`). Deciding a
//! transaction queues its markers and settles its offsets in the same store
//! transaction, so a coordinator that dies just after leaves nothing undone that
//! another cannot finish.

use std::collections::BTreeSet;

use uuid::Uuid;

use crate::{CommittedOffset, Result};

/// Where a transaction is (Kafka's coordinator states).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnState {
    /// No transaction in progress (a producer just initialised).
    Empty,
    /// Partitions or groups were added: records may be written.
    Ongoing,
    /// Decided to commit; markers are being written.
    PrepareCommit,
    /// Decided to abort; markers are being written.
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
}

impl TxnState {
    /// The name Kafka's tools show (DescribeTransactions, ListTransactions).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
        }
    }

    #[must_use]
    pub fn parse(name: &str) -> Option<TxnState> {
        [
            TxnState::Empty,
            TxnState::Ongoing,
            TxnState::PrepareCommit,
            TxnState::PrepareAbort,
            TxnState::CompleteCommit,
            TxnState::CompleteAbort,
        ]
        .into_iter()
        .find(|state| state.as_str() == name)
    }

    /// Decided, with markers still to write.
    #[must_use]
    pub fn is_preparing(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }
}

/// One transactional id's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionRecord {
    pub transactional_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last bump (-1 for none): a producer that retries its
    /// InitProducerId after a lost answer names it, and gets the current epoch again.
    pub last_producer_epoch: i16,
    pub state: TxnState,
    pub timeout_ms: i32,
    /// The partitions of the transaction in progress, by topic id.
    pub partitions: BTreeSet<(Uuid, i32)>,
    /// The groups whose offsets the transaction in progress commits.
    pub groups: BTreeSet<String>,
    /// When the transaction in progress began (ms since the epoch; -1 for none).
    pub started_ms: i64,
    /// When the state last changed (ms since the epoch).
    pub updated_ms: i64,
    /// Raised by every change; a change names the version it was made from.
    pub version: i64,
}

/// A marker that a decided transaction still has to have written into a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarker {
    pub transactional_id: String,
    pub topic_id: Uuid,
    pub partition: i32,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
}

/// What becomes of a transaction's pending group offsets with a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleOffsets {
    /// They stay pending.
    Keep,
    /// They become the groups' committed offsets.
    Commit,
    /// They are dropped.
    Abort,
}

/// A change of one transaction (see [`Transactions::update_transaction`]).
#[derive(Debug, Clone)]
pub struct TxnUpdate {
    /// The new state; its `version` is the one the change was made from (ignored
    /// when `create`).
    pub record: TransactionRecord,
    /// The id is new: there must be no transaction of it yet.
    pub create: bool,
    /// Markers to queue.
    pub markers: Vec<TxnMarker>,
    /// Take every queued marker of the transaction off the queue (they are written).
    pub clear_markers: bool,
    pub offsets: SettleOffsets,
}

/// The transaction coordinator's state in the metadata store.
#[async_trait::async_trait]
pub trait Transactions: Send + Sync {
    /// The transaction of `transactional_id`, if there is one.
    async fn transaction(&self, transactional_id: &str) -> Result<Option<TransactionRecord>>;
    /// Every transaction.
    async fn transactions(&self) -> Result<Vec<TransactionRecord>>;
    /// Stores `update.record` if the stored transaction is still at its version (or,
    /// with `create`, if there is none), at the next version; `Conflict` otherwise.
    /// In the same store transaction, queues `update.markers` and settles the
    /// transaction's pending offsets. Returns the record as stored.
    async fn update_transaction(&self, update: &TxnUpdate) -> Result<TransactionRecord>;
    /// Forgets a transactional id (expiry) if it is still at `version`, with what is
    /// pending of it; whether it was.
    async fn delete_transaction(&self, transactional_id: &str, version: i64) -> Result<bool>;
    /// The markers still to be written, of every transaction.
    async fn pending_markers(&self) -> Result<Vec<TxnMarker>>;
    /// The markers are in their partitions: they are no longer pending (each only as
    /// queued: a newer marker of the same partition stays).
    async fn markers_written(&self, markers: &[TxnMarker]) -> Result<()>;
    /// Whether `marker` is still queued.
    async fn marker_pending(&self, marker: &TxnMarker) -> Result<bool>;
    /// Stores `offsets` as pending in the transaction of `transactional_id`, if it is
    /// ongoing with that producer id and epoch and has their group; `Conflict`
    /// otherwise (the transaction moved on).
    async fn add_txn_offsets(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        offsets: &[CommittedOffset],
    ) -> Result<()>;
    /// The partitions (topic id, index) of `group` with offsets pending in a
    /// transaction.
    async fn pending_txn_offsets(&self, group: &str) -> Result<Vec<(Uuid, i32)>>;
}
