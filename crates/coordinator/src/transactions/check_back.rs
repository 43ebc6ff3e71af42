//! Check-back (RocketMQ's transactional messages on Kafka's transactions): before an
//! open transaction is aborted — its timeout passed, or a new producer of its id
//! fenced it — the application is asked whether its own (database) transaction
//! committed. COMMIT commits the Kafka transaction, ROLLBACK aborts it, UNKNOWN (or no
//! answer) asks again after `transaction.check.interval.ms`, up to
//! `transaction.check.max.attempts` times, then aborts. A transaction whose id no
//! checker answers for is aborted at once, as Kafka does.
//!
//! The coordinator holds the transaction's lock while it asks, and acts only on the
//! transaction it asked about: a producer that ended it meanwhile, or a new epoch,
//! makes the answer moot. The count of UNKNOWN answers lives in the coordinator's
//! memory: a coordinator that takes an id over starts counting again.

use std::sync::PoisonError;

use spool_metadata::TransactionRecord;

use super::TransactionCoordinator;
use super::transitions::{self, Fence};

/// What an application's checker answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckAnswer {
    Commit,
    Rollback,
    /// Not known yet, or no answer (the checker is down, timed out, answered nonsense).
    Unknown,
}

/// Asks applications about their open transactions (the broker's HTTP checkers).
#[async_trait::async_trait]
pub trait TxnChecker: Send + Sync + std::fmt::Debug {
    /// Asks about `record`'s open transaction, for the `attempt`th time (from 1);
    /// `None` when no checker answers for its transactional id.
    async fn check(&self, record: &TransactionRecord, attempt: u32) -> Option<CheckAnswer>;
}

/// No checkers: every transaction is Kafka's.
#[derive(Debug)]
pub struct NoChecker;

#[async_trait::async_trait]
impl TxnChecker for NoChecker {
    async fn check(&self, _record: &TransactionRecord, _attempt: u32) -> Option<CheckAnswer> {
        None
    }
}

/// The UNKNOWN answers a transaction got so far.
#[derive(Debug, Clone, Copy)]
pub(super) struct CheckProgress {
    producer_id: i64,
    producer_epoch: i16,
    attempts: u32,
    /// When it may be asked again (ms since the epoch).
    next_ms: i64,
}

/// What becomes of an open transaction that would be aborted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Commit,
    Abort,
    /// It stays open: asked again later.
    Later,
}

impl TransactionCoordinator {
    /// Forgets the UNKNOWN answers about `transactional_id`'s transaction (ended).
    pub(super) fn forget_check(&self, transactional_id: &str) {
        self.checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(transactional_id);
    }

    /// What the open transaction of `record`, about to be aborted for `fence`,
    /// becomes (the caller holds its lock): committed or aborted under a raised epoch
    /// as its checker says (aborted without one), or `None` while the checker does
    /// not know yet.
    pub(super) async fn settle_open(
        &self,
        record: &TransactionRecord,
        fence: Fence,
        now: i64,
    ) -> Option<TransactionRecord> {
        match self.check_back(record, now).await {
            Some(Verdict::Later) => None,
            Some(Verdict::Commit) => Some(transitions::fenced_commit(record, fence, now)),
            Some(Verdict::Abort) | None => Some(transitions::fenced_abort(record, fence, now)),
        }
    }

    /// Checks back the open transaction of `record` (the caller holds its lock):
    /// `None` when no checker answers for its id.
    async fn check_back(&self, record: &TransactionRecord, now: i64) -> Option<Verdict> {
        let id = record.transactional_id.as_str();
        let progress = self
            .checks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .copied()
            .filter(|p| {
                p.producer_id == record.producer_id && p.producer_epoch == record.producer_epoch
            });
        if progress.is_some_and(|p| p.next_ms > now) {
            return Some(Verdict::Later);
        }
        let attempt = progress.map_or(1, |p| p.attempts + 1);
        let answer = self.checker.check(record, attempt).await;
        let max = self.config.check_max_attempts;
        let verdict = match answer {
            None => None,
            Some(CheckAnswer::Commit) => Some(Verdict::Commit),
            Some(CheckAnswer::Rollback) => Some(Verdict::Abort),
            Some(CheckAnswer::Unknown) if attempt >= max => {
                tracing::warn!(
                    transactional_id = id,
                    attempts = attempt,
                    "the checker never knew: aborting the transaction"
                );
                Some(Verdict::Abort)
            }
            Some(CheckAnswer::Unknown) => Some(Verdict::Later),
        };
        if let Some(answer) = answer {
            tracing::info!(
                transactional_id = id,
                producer_id = record.producer_id,
                epoch = record.producer_epoch,
                attempt,
                ?answer,
                "transaction checked back"
            );
        }
        let mut checks = self.checks.lock().unwrap_or_else(PoisonError::into_inner);
        if verdict == Some(Verdict::Later) {
            let interval =
                i64::try_from(self.config.check_interval.as_millis()).unwrap_or(i64::MAX);
            checks.insert(
                id.to_owned(),
                CheckProgress {
                    producer_id: record.producer_id,
                    producer_epoch: record.producer_epoch,
                    attempts: attempt,
                    next_ms: now.saturating_add(interval),
                },
            );
        } else {
            checks.remove(id);
        }
        verdict
    }
}
