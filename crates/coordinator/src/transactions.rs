//! The transaction coordinator: InitProducerId for transactional ids,
//! AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, and the timers that
//! abort transactions past their timeout and forget idle transactional ids.
//!
//! The state lives in the metadata store ([`spool_metadata::Transactions`]); each
//! change is a compare-and-set of the transaction's version made under a lock for
//! its id, so a broker's own requests never race each other and two brokers that both
//! think they coordinate an id cannot both move it. Deciding a transaction queues
//! its markers in the same store transaction; then:
//!
//! - the coordinator writes the markers of the partitions this broker leads itself
//!   (through [`MarkerWriter`]), at once;
//! - every broker's marker loop writes the queued markers of the partitions it leads
//!   (in a cluster, those another broker decided), and removes them from the queue
//!   once they are durable;
//! - once none is left, the transaction is complete. EndTxn answers then, or after
//!   `end_wait` at the latest: the decision is durable either way, and until it is
//!   complete the producer's next requests are answered `CONCURRENT_TRANSACTIONS`,
//!   which it retries.
//!
//! An open transaction that would be aborted (its timeout passed, or a new producer
//! of its id fenced it) is first checked back when a checker answers for its id
//! ([`check_back`], RocketMQ's check-back): the application says whether it
//! committed.
//!
//! The state machine itself is pure, in [`transitions`].

pub(crate) mod check_back;
mod transitions;

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use spool_metadata::{
    CommittedOffset, MetadataError, MetadataStore, SettleOffsets, TransactionRecord, TxnMarker,
    TxnState, TxnUpdate,
};
use spool_model::Clock;
use tokio::sync::{MutexGuard, Notify, watch};
use uuid::Uuid;

use self::check_back::{CheckProgress, NoChecker, TxnChecker};
use self::transitions::{EndStep, Fence, InitStep};
use crate::coordinator::GroupCoordinator;
use crate::error::TxnError;
use crate::ownership::{Ownership, OwnershipSlot, StripedLocks};

/// How transactions are run. Defaults are Kafka's, but for the marker loop.
#[derive(Debug, Clone)]
pub struct TxnConfig {
    /// `transaction.max.timeout.ms`: a producer asking for more is refused.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: an id with no transaction open and no
    /// change for this long is forgotten.
    pub id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`: how often
    /// transactions are checked for their timeout (and ids for expiry).
    pub timeout_check_interval: Duration,
    /// How often the queue of markers is read for those of partitions this broker
    /// leads that another coordinator decided (cluster) or that were left by a crash.
    pub marker_interval: Duration,
    /// How long EndTxn waits for other brokers to write their markers.
    pub end_wait: Duration,
    /// `transaction.check.interval.ms`: how long after a checker answered UNKNOWN
    /// (or nothing) the transaction is checked again.
    pub check_interval: Duration,
    /// `transaction.check.max.attempts`: checks before the transaction is aborted.
    pub check_max_attempts: u32,
    /// The broker's clock: transaction start and update times, timeouts, expiry.
    pub clock: Clock,
}

impl Default for TxnConfig {
    fn default() -> Self {
        TxnConfig {
            max_timeout_ms: 900_000,
            id_expiration_ms: 7 * 24 * 3600 * 1000,
            timeout_check_interval: Duration::from_secs(10),
            marker_interval: Duration::from_secs(1),
            end_wait: Duration::from_secs(5),
            // RocketMQ's: every 30 s, 15 times.
            check_interval: Duration::from_secs(30),
            check_max_attempts: 15,
            clock: Clock::System,
        }
    }
}

/// Where new producer ids come from (the broker's allocator).
#[async_trait::async_trait]
pub trait ProducerIdSource: Send + Sync + std::fmt::Debug {
    /// A producer id never handed out before.
    async fn new_producer_id(&self) -> Result<i64, MetadataError>;
}

/// What became of a marker the writer was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerOutcome {
    /// It is durable in its partition.
    Written,
    /// Another broker leads the partition: its marker loop writes it.
    NotLeader,
    /// It could not be written now: try again later.
    Failed,
}

/// Writes markers into partitions (the broker's partitions).
#[async_trait::async_trait]
pub trait MarkerWriter: Send + Sync + std::fmt::Debug {
    /// Writes `marker` into its partition if this broker leads it, and waits until
    /// it is durable.
    async fn write(&self, marker: &TxnMarker) -> MarkerOutcome;
}

/// Stripes of the locks per transactional id and per partition.
const LOCK_STRIPES: usize = 64;

/// The transaction coordinator of this broker.
#[derive(Debug)]
pub struct TransactionCoordinator {
    config: TxnConfig,
    store: Arc<dyn MetadataStore>,
    ids: Arc<dyn ProducerIdSource>,
    markers: Arc<dyn MarkerWriter>,
    groups: Arc<GroupCoordinator>,
    /// Which ids this broker coordinates in a cluster.
    ownership: OwnershipSlot,
    locks: StripedLocks,
    /// Locks per partition, striped, held while a marker is written into it.
    marker_locks: StripedLocks,
    /// The transactions this broker's coordinator is deciding or finishing.
    finishing: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Woken whenever the marker loop wrote markers.
    marker_progress: Notify,
    /// Asks applications about open transactions before they are aborted.
    checker: Arc<dyn TxnChecker>,
    /// The checks answered UNKNOWN so far, by transactional id.
    checks: std::sync::Mutex<std::collections::HashMap<String, CheckProgress>>,
}

impl TransactionCoordinator {
    #[must_use]
    pub fn new(
        config: TxnConfig,
        store: Arc<dyn MetadataStore>,
        ids: Arc<dyn ProducerIdSource>,
        markers: Arc<dyn MarkerWriter>,
        groups: Arc<GroupCoordinator>,
    ) -> TransactionCoordinator {
        TransactionCoordinator {
            config,
            store,
            ids,
            markers,
            groups,
            ownership: OwnershipSlot::default(),
            locks: StripedLocks::new(LOCK_STRIPES),
            marker_locks: StripedLocks::new(LOCK_STRIPES),
            finishing: std::sync::Mutex::new(std::collections::HashSet::new()),
            marker_progress: Notify::new(),
            checker: Arc::new(NoChecker),
            checks: std::sync::Mutex::new(std::collections::HashMap::new()),
        }
    }

    /// The coordinator with `checker` asking about open transactions before they are
    /// aborted.
    #[must_use]
    pub fn with_checker(mut self, checker: Arc<dyn TxnChecker>) -> TransactionCoordinator {
        self.checker = checker;
        self
    }

    #[must_use]
    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// Makes this coordinator answer only for the ids `owns` says.
    pub fn set_ownership(&self, owns: Ownership) {
        self.ownership.set(owns);
    }

    /// Whether this broker coordinates `transactional_id`.
    #[must_use]
    pub fn owns(&self, transactional_id: &str) -> bool {
        self.ownership.owns(transactional_id)
    }

    async fn lock(&self, transactional_id: &str) -> MutexGuard<'_, ()> {
        self.locks.lock(&transactional_id).await
    }

    /// The record of an id this broker coordinates.
    async fn record(&self, transactional_id: &str) -> Result<Option<TransactionRecord>, TxnError> {
        if transactional_id.is_empty() {
            return Err(TxnError::InvalidTransactionalId);
        }
        if !self.owns(transactional_id) {
            return Err(TxnError::NotCoordinator);
        }
        self.store
            .transaction(transactional_id)
            .await
            .map_err(|error| storage_failed(transactional_id, &error))
    }

    /// Stores a change; a concurrent one (another broker's) is `CONCURRENT_TRANSACTIONS`.
    async fn store(&self, update: TxnUpdate) -> Result<TransactionRecord, TxnError> {
        let id = update.record.transactional_id.clone();
        match self.store.update_transaction(&update).await {
            Ok(stored) => Ok(stored),
            Err(MetadataError::Conflict(reason)) => {
                tracing::info!(transactional_id = %id, %reason, "a concurrent change of the transaction won");
                Err(TxnError::ConcurrentTransactions)
            }
            Err(error) => Err(storage_failed(&id, &error)),
        }
    }

    /// InitProducerId with a transactional id: the producer id and epoch the
    /// producer writes with. `expected` is what a producer names to have its own
    /// epoch bumped (KIP-360).
    pub async fn init_producer_id(
        &self,
        transactional_id: &str,
        timeout_ms: i32,
        expected: Option<(i64, i16)>,
    ) -> Result<(i64, i16), TxnError> {
        if timeout_ms <= 0 || timeout_ms > self.config.max_timeout_ms {
            return Err(TxnError::InvalidTransactionTimeout);
        }
        let _lock = self.lock(transactional_id).await;
        let now = self.config.clock.now_ms();
        let Some(record) = self.record(transactional_id).await? else {
            if expected.is_some() {
                return Err(TxnError::InvalidProducerIdMapping);
            }
            let producer_id = self.new_producer_id(transactional_id).await?;
            let record = transitions::new_record(transactional_id, producer_id, timeout_ms, now);
            let stored = self.store(plain_update(record, true)).await?;
            return Ok((stored.producer_id, stored.producer_epoch));
        };
        let step = transitions::init(&record, expected, timeout_ms, now)?;
        match step {
            InitStep::AsItIs => Ok((record.producer_id, record.producer_epoch)),
            InitStep::Store(next) => {
                let stored = self.store(plain_update(next, false)).await?;
                Ok((stored.producer_id, stored.producer_epoch))
            }
            InitStep::NewProducerId => {
                let producer_id = self.new_producer_id(transactional_id).await?;
                let mut next =
                    transitions::new_record(transactional_id, producer_id, timeout_ms, now);
                next.version = record.version;
                let stored = self.store(plain_update(next, false)).await?;
                Ok((stored.producer_id, stored.producer_epoch))
            }
            InitStep::AbortFirst(_) => {
                // Asked again when the producer retries, once the interval passed.
                let Some(decided) = self.settle_open(&record, Fence::NewProducer, now).await else {
                    return Err(TxnError::ConcurrentTransactions);
                };
                let _finishing = self.finishing(transactional_id);
                tracing::info!(
                    transactional_id,
                    epoch = decided.producer_epoch,
                    state = decided.state.as_str(),
                    "a new producer fenced an open transaction: deciding it"
                );
                let stored = self.decide(decided).await?;
                self.finish(stored, true).await;
                Err(TxnError::ConcurrentTransactions)
            }
        }
    }

    async fn new_producer_id(&self, transactional_id: &str) -> Result<i64, TxnError> {
        self.ids
            .new_producer_id()
            .await
            .map_err(|error| storage_failed(transactional_id, &error))
    }

    /// AddPartitionsToTxn: the partitions (topic id, index) join the transaction.
    pub async fn add_partitions(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &[(Uuid, i32)],
    ) -> Result<(), TxnError> {
        self.add(
            transactional_id,
            producer_id,
            producer_epoch,
            partitions,
            None,
        )
        .await
    }

    /// AddOffsetsToTxn: the transaction will commit offsets of `group`.
    pub async fn add_offsets(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        group: &str,
    ) -> Result<(), TxnError> {
        self.add(
            transactional_id,
            producer_id,
            producer_epoch,
            &[],
            Some(group),
        )
        .await
    }

    async fn add(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &[(Uuid, i32)],
        group: Option<&str>,
    ) -> Result<(), TxnError> {
        let _lock = self.lock(transactional_id).await;
        let record = self
            .record(transactional_id)
            .await?
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        if let Some(next) = transitions::add(
            &record,
            producer_id,
            producer_epoch,
            partitions,
            group,
            self.config.clock.now_ms(),
        )? {
            self.store(plain_update(next, false)).await?;
        }
        Ok(())
    }

    /// TxnOffsetCommit (after the group coordinator checked the member): the offsets
    /// are pending in the transaction until it commits.
    pub async fn commit_offsets(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        offsets: &[CommittedOffset],
    ) -> Result<(), TxnError> {
        let stored = self
            .store
            .add_txn_offsets(transactional_id, producer_id, producer_epoch, offsets)
            .await;
        match stored {
            Ok(()) => Ok(()),
            Err(MetadataError::Conflict(_)) => {
                // Say why, from the record (held by whichever broker coordinates it).
                let record = self
                    .store
                    .transaction(transactional_id)
                    .await
                    .map_err(|error| storage_failed(transactional_id, &error))?
                    .ok_or(TxnError::InvalidProducerIdMapping)?;
                transitions::check_producer(&record, producer_id, producer_epoch)?;
                Err(if record.state.is_preparing() {
                    TxnError::ConcurrentTransactions
                } else {
                    TxnError::InvalidTxnState
                })
            }
            Err(MetadataError::UnknownTopic(_)) => Err(TxnError::UnknownTopicOrPartition),
            Err(error) => Err(storage_failed(transactional_id, &error)),
        }
    }

    /// EndTxn: commits or aborts the producer's transaction; answers once its markers
    /// are written, or after `end_wait`.
    pub async fn end(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        commit: bool,
    ) -> Result<(), TxnError> {
        let _lock = self.lock(transactional_id).await;
        let record = self
            .record(transactional_id)
            .await?
            .ok_or(TxnError::InvalidProducerIdMapping)?;
        let _finishing = self.finishing(transactional_id);
        let decided = match transitions::end(
            &record,
            producer_id,
            producer_epoch,
            commit,
            self.config.clock.now_ms(),
        )? {
            EndStep::Prepare(next) => self.decide(next).await?,
            EndStep::Decided => record,
        };
        if decided.state.is_preparing() {
            self.finish(decided, true).await;
        }
        Ok(())
    }

    /// Stores a decision (PrepareCommit or PrepareAbort) with its markers queued and
    /// its offsets settled, and makes settled offsets visible to this broker's groups.
    async fn decide(&self, record: TransactionRecord) -> Result<TransactionRecord, TxnError> {
        let commit = record.state == TxnState::PrepareCommit;
        let markers = markers_of(&record);
        let update = TxnUpdate {
            offsets: if commit {
                SettleOffsets::Commit
            } else {
                SettleOffsets::Abort
            },
            markers,
            ..plain_update(record, false)
        };
        let stored = self.store(update).await?;
        if commit {
            for group in &stored.groups {
                self.groups.reload_offsets(group).await;
            }
        }
        tracing::debug!(transactional_id = %stored.transactional_id, state = stored.state.as_str(), partitions = stored.partitions.len(), "transaction decided");
        Ok(stored)
    }

    /// Writes the decided transaction's markers that this broker can, waits (up to
    /// `end_wait`) for the rest, and completes it once none is left. The caller holds
    /// a [`Finishing`] mark of the transaction from before its decision was stored.
    async fn finish(&self, record: TransactionRecord, wait: bool) {
        // Side by side: each waits for its partition's data to be durable.
        let markers = markers_of(&record);
        let outcomes =
            futures::future::join_all(markers.iter().map(|marker| self.write_marker(marker))).await;
        let written: Vec<TxnMarker> = markers
            .iter()
            .zip(&outcomes)
            .filter(|(_, outcome)| **outcome == MarkerOutcome::Written)
            .map(|(marker, _)| marker.clone())
            .collect();
        if written.len() == markers.len() {
            // The usual case when this broker leads every partition: completed and
            // taken off the queue in one store transaction.
            self.complete(&record).await;
            return;
        }
        if let Err(error) = self.store.markers_written(&written).await {
            tracing::warn!(transactional_id = %record.transactional_id, %error, "taking written markers off the queue failed; they are written again");
        }
        let deadline = tokio::time::Instant::now()
            + if wait {
                self.config.end_wait
            } else {
                Duration::ZERO
            };
        loop {
            let pending = match self.store.pending_markers().await {
                Ok(pending) => pending
                    .iter()
                    .any(|m| m.transactional_id == record.transactional_id),
                Err(error) => {
                    tracing::warn!(transactional_id = %record.transactional_id, %error, "reading the pending markers failed");
                    true
                }
            };
            if !pending {
                self.complete(&record).await;
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::info!(transactional_id = %record.transactional_id, "markers still pending; the transaction completes when they are written");
                return;
            }
            let wait = self.config.marker_interval.min(Duration::from_millis(20));
            let _ = tokio::time::timeout(wait, self.marker_progress.notified()).await;
        }
    }

    /// Moves a transaction whose markers are all written to complete, taking them off
    /// the queue.
    async fn complete(&self, record: &TransactionRecord) {
        let done = TxnUpdate {
            clear_markers: true,
            ..plain_update(
                transitions::complete(record, self.config.clock.now_ms()),
                false,
            )
        };
        if let Err(error) = self.store(done).await {
            tracing::info!(transactional_id = %record.transactional_id, %error, "completing the transaction failed; the sweep retries");
        }
    }

    /// Writes one marker of a transaction this broker's coordinator is finishing, if
    /// this broker leads its partition, under the partition's marker lock. When
    /// brokers share the ids out, another broker may have believed for a moment that
    /// it coordinated the id and finished the transaction; so the marker is written
    /// only while it is still queued (once off the queue, the producer may have begun
    /// its next transaction in the partition, which the marker would end).
    async fn write_marker(&self, marker: &TxnMarker) -> MarkerOutcome {
        let _partition = self.marker_lock(marker).await;
        if self.ownership.is_shared() {
            match self.store.marker_pending(marker).await {
                Ok(true) => {}
                Ok(false) => return MarkerOutcome::Written,
                Err(_) => return MarkerOutcome::Failed,
            }
        }
        self.markers.write(marker).await
    }

    async fn marker_lock(&self, marker: &TxnMarker) -> MutexGuard<'_, ()> {
        self.marker_locks
            .lock(&(marker.topic_id, marker.partition))
            .await
    }

    /// Writes the queued markers of the partitions this broker leads, of transactions
    /// no coordinator on this broker is finishing.
    ///
    /// Why the checks: a marker written after its transaction completed would end the
    /// producer's next transaction in that partition. A transaction completes only
    /// once its markers are off the queue, and its coordinator marks it finishing
    /// before its decision (and so its markers) is stored; so a marker found queued,
    /// of a transaction not finishing here, under the partition's marker lock (which
    /// this broker's own writes of the partition's markers take too), is still due.
    pub async fn write_pending_markers(&self) {
        let pending = match self.store.pending_markers().await {
            Ok(pending) => pending,
            Err(error) => {
                tracing::warn!(%error, "reading the pending markers failed");
                return;
            }
        };
        let outcomes = futures::future::join_all(pending.iter().map(|marker| async move {
            let _partition = self.marker_lock(marker).await;
            // In this order: a coordinator marks a transaction finishing before its
            // markers are queued, and takes them off the queue before the mark goes.
            if self.is_finishing(&marker.transactional_id) {
                return MarkerOutcome::Failed;
            }
            match self.store.marker_pending(marker).await {
                Ok(true) => self.markers.write(marker).await,
                _ => MarkerOutcome::Failed,
            }
        }))
        .await;
        let written: Vec<TxnMarker> = pending
            .into_iter()
            .zip(outcomes)
            .filter(|(_, outcome)| *outcome == MarkerOutcome::Written)
            .map(|(marker, _)| marker)
            .collect();
        if written.is_empty() {
            return;
        }
        if let Err(error) = self.store.markers_written(&written).await {
            tracing::warn!(%error, "taking written markers off the queue failed; they are written again");
        }
        self.marker_progress.notify_waiters();
    }

    fn is_finishing(&self, transactional_id: &str) -> bool {
        self.finishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(transactional_id)
    }

    /// Marks a transaction as being finished by this broker until the mark drops.
    fn finishing(&self, transactional_id: &str) -> Finishing<'_> {
        self.finishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(transactional_id.to_owned());
        Finishing {
            coordinator: self,
            transactional_id: transactional_id.to_owned(),
        }
    }

    /// Aborts the transactions this broker coordinates that passed their timeout,
    /// completes decided ones whose markers are all written, and forgets ids idle
    /// past `transactional.id.expiration.ms`.
    pub async fn sweep(&self) {
        let records = match self.store.transactions().await {
            Ok(records) => records,
            Err(error) => {
                tracing::warn!(%error, "reading the transactions failed");
                return;
            }
        };
        let now = self.config.clock.now_ms();
        for record in records {
            if !self.owns(&record.transactional_id) {
                continue;
            }
            self.sweep_one(&record.transactional_id, now).await;
        }
    }

    async fn sweep_one(&self, transactional_id: &str, now: i64) {
        let _lock = self.lock(transactional_id).await;
        // Read again under the lock: a request may have moved it.
        let Ok(Some(record)) = self.store.transaction(transactional_id).await else {
            return;
        };
        if transitions::timed_out(&record, now) {
            let Some(decided) = self.settle_open(&record, Fence::Timeout, now).await else {
                return;
            };
            let _finishing = self.finishing(transactional_id);
            tracing::info!(
                transactional_id,
                timeout_ms = record.timeout_ms,
                state = decided.state.as_str(),
                "the transaction timed out: deciding it"
            );
            if let Ok(stored) = self.decide(decided).await {
                self.finish(stored, false).await;
            }
            return;
        }
        if record.state != TxnState::Ongoing {
            // Its producer ended what was being checked.
            self.forget_check(transactional_id);
        }
        let _finishing = self.finishing(transactional_id);
        if record.state.is_preparing() {
            self.finish(record, false).await;
        } else if record.state != TxnState::Ongoing
            && now.saturating_sub(record.updated_ms) > self.config.id_expiration_ms
        {
            match self
                .store
                .delete_transaction(transactional_id, record.version)
                .await
            {
                Ok(true) => tracing::info!(transactional_id, "transactional id expired"),
                Ok(false) => {}
                Err(error) => tracing::warn!(transactional_id, %error, "expiring failed"),
            }
        }
    }

    /// Every transaction (DescribeTransactions, ListTransactions).
    pub async fn transactions(&self) -> Result<Vec<TransactionRecord>, TxnError> {
        self.store
            .transactions()
            .await
            .map_err(|error| storage_failed("(all)", &error))
    }

    /// One transaction, for DescribeTransactions: `NotCoordinator` unless this broker
    /// coordinates it.
    pub async fn describe(
        &self,
        transactional_id: &str,
    ) -> Result<Option<TransactionRecord>, TxnError> {
        self.record(transactional_id).await
    }

    /// The marker loop and the timeout sweep, until `stop` turns true.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        // Apart, so that a slow sweep never holds the markers up.
        let sweeps = tokio::spawn(self.clone().sweep_periodically(stop.clone()));
        let mut markers = tokio::time::interval(self.config.marker_interval);
        markers.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                _ = markers.tick() => self.write_pending_markers().await,
            }
        }
        let _ = sweeps.await;
    }

    /// The timeout sweep, until `stop`. The first runs at once: a crash may have left
    /// decided transactions.
    async fn sweep_periodically(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut sweeps = tokio::time::interval(self.config.timeout_check_interval);
        sweeps.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                _ = sweeps.tick() => self.sweep().await,
            }
        }
    }
}

/// A transaction this broker's coordinator is deciding or finishing: the marker loop
/// leaves its markers alone.
struct Finishing<'a> {
    coordinator: &'a TransactionCoordinator,
    transactional_id: String,
}

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        self.coordinator
            .finishing
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.transactional_id);
    }
}

/// A change with no markers and the offsets left as they are.
fn plain_update(record: TransactionRecord, create: bool) -> TxnUpdate {
    TxnUpdate {
        record,
        create,
        markers: Vec::new(),
        clear_markers: false,
        offsets: SettleOffsets::Keep,
    }
}

/// The markers of a decided transaction: one per partition.
fn markers_of(record: &TransactionRecord) -> Vec<TxnMarker> {
    let commit = record.state == TxnState::PrepareCommit;
    let partitions: &BTreeSet<(Uuid, i32)> = &record.partitions;
    partitions
        .iter()
        .map(|(topic_id, partition)| TxnMarker {
            transactional_id: record.transactional_id.clone(),
            topic_id: *topic_id,
            partition: *partition,
            producer_id: record.producer_id,
            producer_epoch: record.producer_epoch,
            commit,
        })
        .collect()
}

fn storage_failed(transactional_id: &str, error: &MetadataError) -> TxnError {
    tracing::error!(transactional_id, %error, "the transaction store failed");
    TxnError::StorageFailed
}
