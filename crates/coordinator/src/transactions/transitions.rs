//! The transaction state machine, pure: each function takes a transaction's record
//! (as stored), a request and the time, and says what the record becomes or why the
//! request is refused. Kafka's rules (`TransactionCoordinator`, KIP-98, KIP-360,
//! KIP-588); the coordinator stores the result by compare-and-set.

use std::collections::BTreeSet;

use spool_metadata::{TransactionRecord, TxnState};
use uuid::Uuid;

use crate::error::TxnError;

/// The last epoch a producer id may have: past it the producer gets a new id.
const LAST_EPOCH: i16 = i16::MAX - 1;

/// A new transactional id's record: producer `producer_id` at epoch 0, no
/// transaction.
pub(crate) fn new_record(
    transactional_id: &str,
    producer_id: i64,
    timeout_ms: i32,
    now_ms: i64,
) -> TransactionRecord {
    TransactionRecord {
        transactional_id: transactional_id.to_owned(),
        producer_id,
        producer_epoch: 0,
        last_producer_epoch: -1,
        state: TxnState::Empty,
        timeout_ms,
        partitions: BTreeSet::new(),
        groups: BTreeSet::new(),
        started_ms: -1,
        updated_ms: now_ms,
        version: 0,
    }
}

/// What InitProducerId does to an existing transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum InitStep {
    /// Store this record and answer with its producer id and epoch.
    Store(TransactionRecord),
    /// Answer with the record as it is: a retry of a bump whose answer was lost.
    AsItIs,
    /// The producer's epoch is spent: give it a new producer id (at epoch 0).
    NewProducerId,
    /// A transaction is open: abort it under this record (its epoch raised, which
    /// fences the producer that opened it), and have the client retry.
    AbortFirst(TransactionRecord),
}

/// InitProducerId of a transactional id that has a record. `expected` is the
/// producer id and epoch a producer names when it asks for a bump of its own
/// (KIP-360), `None` for a producer starting up (which fences any other).
pub(crate) fn init(
    record: &TransactionRecord,
    expected: Option<(i64, i16)>,
    timeout_ms: i32,
    now_ms: i64,
) -> Result<InitStep, TxnError> {
    if let Some((producer_id, _)) = expected
        && producer_id != record.producer_id
    {
        return Err(TxnError::InvalidProducerIdMapping);
    }
    match record.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => {
            return Err(TxnError::ConcurrentTransactions);
        }
        TxnState::Ongoing => {
            if let Some((_, epoch)) = expected
                && epoch != record.producer_epoch
            {
                return Err(TxnError::ProducerFenced);
            }
            return Ok(InitStep::AbortFirst(fenced_abort(
                record,
                Fence::NewProducer,
                now_ms,
            )));
        }
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {}
    }
    let (epoch, last) = match expected {
        None => (record.producer_epoch.saturating_add(1), -1),
        Some((_, epoch)) if epoch == record.producer_epoch => (
            record.producer_epoch.saturating_add(1),
            record.producer_epoch,
        ),
        Some((_, epoch))
            if record.last_producer_epoch >= 0 && epoch == record.last_producer_epoch =>
        {
            return Ok(InitStep::AsItIs);
        }
        Some(_) => return Err(TxnError::ProducerFenced),
    };
    if epoch > LAST_EPOCH {
        return Ok(InitStep::NewProducerId);
    }
    Ok(InitStep::Store(TransactionRecord {
        producer_epoch: epoch,
        last_producer_epoch: last,
        state: TxnState::Empty,
        timeout_ms,
        partitions: BTreeSet::new(),
        groups: BTreeSet::new(),
        started_ms: -1,
        updated_ms: now_ms,
        ..record.clone()
    }))
}

/// Why an open transaction is aborted under a raised epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fence {
    /// A new producer of the id started: the old one must never write again.
    NewProducer,
    /// The transaction outlived its timeout: its producer may recover (KIP-588).
    Timeout,
}

/// The record aborting its open transaction under a raised epoch. The markers carry
/// the new epoch, so the old producer's writes are refused from then on. After a
/// timeout the producer may recover with InitProducerId naming its old epoch; after
/// a new producer fenced it, it may not (Kafka forgets the old epoch then too).
pub(crate) fn fenced_abort(
    record: &TransactionRecord,
    fence: Fence,
    now_ms: i64,
) -> TransactionRecord {
    TransactionRecord {
        producer_epoch: record.producer_epoch.saturating_add(1),
        last_producer_epoch: match fence {
            Fence::NewProducer => -1,
            Fence::Timeout => record.producer_epoch,
        },
        state: TxnState::PrepareAbort,
        updated_ms: now_ms,
        ..record.clone()
    }
}

/// A checker said an open transaction committed in the application: it commits under
/// a raised epoch, so that its producer can no longer write to it or end it.
pub(crate) fn fenced_commit(
    record: &TransactionRecord,
    fence: Fence,
    now_ms: i64,
) -> TransactionRecord {
    TransactionRecord {
        state: TxnState::PrepareCommit,
        ..fenced_abort(record, fence, now_ms)
    }
}

/// Checks that a request comes from the transaction's current producer.
pub(crate) fn check_producer(
    record: &TransactionRecord,
    producer_id: i64,
    producer_epoch: i16,
) -> Result<(), TxnError> {
    if producer_id != record.producer_id {
        return Err(TxnError::InvalidProducerIdMapping);
    }
    if producer_epoch != record.producer_epoch {
        return Err(TxnError::ProducerFenced);
    }
    Ok(())
}

/// AddPartitionsToTxn and AddOffsetsToTxn: the record with the partitions and groups
/// added and the transaction ongoing; `None` when it has them all already.
pub(crate) fn add(
    record: &TransactionRecord,
    producer_id: i64,
    producer_epoch: i16,
    partitions: &[(Uuid, i32)],
    group: Option<&str>,
    now_ms: i64,
) -> Result<Option<TransactionRecord>, TxnError> {
    check_producer(record, producer_id, producer_epoch)?;
    if record.state.is_preparing() {
        return Err(TxnError::ConcurrentTransactions);
    }
    let ongoing = record.state == TxnState::Ongoing;
    let has_all = partitions.iter().all(|p| record.partitions.contains(p))
        && group.is_none_or(|g| record.groups.contains(g));
    if ongoing && has_all {
        return Ok(None);
    }
    let mut next = record.clone();
    if !ongoing {
        next.partitions.clear();
        next.groups.clear();
        next.started_ms = now_ms;
        next.state = TxnState::Ongoing;
    }
    next.partitions.extend(partitions.iter().copied());
    next.groups.extend(group.map(str::to_owned));
    next.updated_ms = now_ms;
    Ok(Some(next))
}

/// What EndTxn does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EndStep {
    /// Decide: store this record (PrepareCommit or PrepareAbort), then write markers.
    Prepare(TransactionRecord),
    /// The transaction was decided this way already: a retry. Answer once it is
    /// complete.
    Decided,
}

/// EndTxn: commit (`commit`) or abort the producer's transaction.
pub(crate) fn end(
    record: &TransactionRecord,
    producer_id: i64,
    producer_epoch: i16,
    commit: bool,
    now_ms: i64,
) -> Result<EndStep, TxnError> {
    check_producer(record, producer_id, producer_epoch)?;
    let decided = match record.state {
        TxnState::Ongoing => {
            return Ok(EndStep::Prepare(TransactionRecord {
                state: if commit {
                    TxnState::PrepareCommit
                } else {
                    TxnState::PrepareAbort
                },
                updated_ms: now_ms,
                ..record.clone()
            }));
        }
        TxnState::Empty => return Err(TxnError::InvalidTxnState),
        TxnState::PrepareCommit | TxnState::CompleteCommit => true,
        TxnState::PrepareAbort | TxnState::CompleteAbort => false,
    };
    if decided == commit {
        Ok(EndStep::Decided)
    } else {
        Err(TxnError::InvalidTxnState)
    }
}

/// The record once every marker of its decided transaction is written.
pub(crate) fn complete(record: &TransactionRecord, now_ms: i64) -> TransactionRecord {
    let state = match record.state {
        TxnState::PrepareCommit => TxnState::CompleteCommit,
        TxnState::PrepareAbort => TxnState::CompleteAbort,
        other => other,
    };
    TransactionRecord {
        state,
        partitions: BTreeSet::new(),
        groups: BTreeSet::new(),
        updated_ms: now_ms,
        ..record.clone()
    }
}

/// Whether an open transaction has outlived its timeout at `now_ms`.
pub(crate) fn timed_out(record: &TransactionRecord, now_ms: i64) -> bool {
    record.state == TxnState::Ongoing
        && record.started_ms >= 0
        && now_ms.saturating_sub(record.started_ms) > i64::from(record.timeout_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ongoing() -> TransactionRecord {
        let record = new_record("t", 7, 1000, 1);
        add(&record, 7, 0, &[(Uuid::nil(), 0)], None, 5)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn a_producer_starting_up_bumps_the_epoch_and_fences_an_open_transaction() {
        let record = new_record("t", 7, 1000, 1);
        let InitStep::Store(bumped) = init(&record, None, 1000, 2).unwrap() else {
            panic!()
        };
        assert_eq!((bumped.producer_epoch, bumped.last_producer_epoch), (1, -1));
        let open = ongoing();
        let InitStep::AbortFirst(aborting) = init(&open, None, 1000, 9).unwrap() else {
            panic!()
        };
        assert_eq!(aborting.state, TxnState::PrepareAbort);
        assert_eq!(aborting.producer_epoch, 1);
        assert_eq!(
            aborting.partitions, open.partitions,
            "markers go where it wrote"
        );
        assert_eq!(
            init(&aborting, None, 1000, 9),
            Err(TxnError::ConcurrentTransactions)
        );
        assert_eq!(
            end(&aborting, 7, 0, true, 9),
            Err(TxnError::ProducerFenced),
            "the fenced producer can never commit"
        );
        let aborted = complete(&aborting, 10);
        assert_eq!(
            init(&aborted, Some((7, 0)), 1000, 11),
            Err(TxnError::ProducerFenced),
            "nor get the new epoch by naming its old one"
        );
    }

    #[test]
    fn a_producer_naming_its_epoch_is_bumped_once_and_a_retry_gets_the_same() {
        let record = new_record("t", 7, 1000, 1);
        let InitStep::Store(bumped) = init(&record, Some((7, 0)), 1000, 2).unwrap() else {
            panic!()
        };
        assert_eq!((bumped.producer_epoch, bumped.last_producer_epoch), (1, 0));
        assert_eq!(init(&bumped, Some((7, 0)), 1000, 3), Ok(InitStep::AsItIs));
        assert_eq!(
            init(&bumped, Some((8, 1)), 1000, 3),
            Err(TxnError::InvalidProducerIdMapping)
        );
        let mut newer = bumped.clone();
        newer.producer_epoch = 5;
        newer.last_producer_epoch = 4;
        assert_eq!(
            init(&newer, Some((7, 1)), 1000, 3),
            Err(TxnError::ProducerFenced)
        );
        newer.producer_epoch = LAST_EPOCH;
        assert_eq!(init(&newer, None, 1000, 3), Ok(InitStep::NewProducerId));
    }

    #[test]
    fn a_timed_out_transaction_is_aborted_and_its_producer_may_recover() {
        let open = ongoing();
        assert!(!timed_out(&open, 1000));
        assert!(timed_out(&open, 1006));
        let aborting = fenced_abort(&open, Fence::Timeout, 1006);
        let done = complete(&aborting, 1007);
        assert_eq!(done.state, TxnState::CompleteAbort);
        assert!(done.partitions.is_empty());
        assert_eq!(end(&done, 7, 0, true, 1008), Err(TxnError::ProducerFenced));
        assert_eq!(
            init(&done, Some((7, 0)), 1000, 1008),
            Ok(InitStep::AsItIs),
            "KIP-588: its old epoch gets the current one"
        );
    }

    #[test]
    fn adds_and_ends_follow_the_state() {
        let open = ongoing();
        assert_eq!(add(&open, 7, 0, &[(Uuid::nil(), 0)], None, 6), Ok(None));
        let with_group = add(&open, 7, 0, &[], Some("g"), 6).unwrap().unwrap();
        assert_eq!(
            with_group.started_ms, 5,
            "the transaction began at its first add"
        );
        assert_eq!(
            add(&open, 7, 1, &[], None, 6),
            Err(TxnError::ProducerFenced)
        );
        let EndStep::Prepare(committing) = end(&with_group, 7, 0, true, 7).unwrap() else {
            panic!()
        };
        assert_eq!(committing.state, TxnState::PrepareCommit);
        assert_eq!(
            add(&committing, 7, 0, &[], None, 8),
            Err(TxnError::ConcurrentTransactions)
        );
        assert_eq!(end(&committing, 7, 0, true, 8), Ok(EndStep::Decided));
        assert_eq!(
            end(&committing, 7, 0, false, 8),
            Err(TxnError::InvalidTxnState)
        );
        let done = complete(&committing, 9);
        assert_eq!(end(&done, 7, 0, true, 10), Ok(EndStep::Decided));
        let next = add(&done, 7, 0, &[(Uuid::nil(), 1)], None, 11)
            .unwrap()
            .unwrap();
        assert_eq!(next.partitions.len(), 1, "a new transaction starts empty");
        assert_eq!(next.started_ms, 11);
        let fresh = new_record("t", 7, 1000, 1);
        assert_eq!(end(&fresh, 7, 0, true, 2), Err(TxnError::InvalidTxnState));
    }
}
