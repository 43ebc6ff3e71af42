//! Idempotent producers in the log: a retried batch is answered with its original
//! offsets and not written again, gaps and old epochs are refused, and the state is
//! rebuilt from the log when the partition is reopened.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::{open, small_config};
use spool_log::{LogConfig, LogError, ProducerError};
use spool_model::Offset;
use spool_store::{MemoryStore, Store};
use spool_testkit::BatchBuilder;

fn idempotent(producer: i64, epoch: i16, sequence: i32, records: usize) -> Vec<u8> {
    BatchBuilder::new()
        .producer(producer, epoch, sequence)
        .values(records, 10)
        .build()
}

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 20,
        ..small_config()
    }
}

#[test]
fn retries_are_not_written_twice_and_gaps_are_refused() {
    let log = open(Arc::new(MemoryStore::new()), config());
    let first = idempotent(5, 0, 0, 3);
    let appended = log.append(&[&first]).unwrap();
    assert_eq!(
        (appended.base_offset, appended.duplicate),
        (Offset(0), false)
    );
    log.append(&[&idempotent(5, 0, 3, 2)]).unwrap();
    let retried = log.append(&[&first]).unwrap();
    assert!(retried.duplicate);
    assert_eq!(
        (retried.base_offset, retried.last_offset),
        (Offset(0), Offset(2))
    );
    assert_eq!(
        log.offsets().log_end,
        Offset(5),
        "nothing written for the retry"
    );

    let gap = log.append(&[&idempotent(5, 0, 9, 1)]).unwrap_err();
    assert!(matches!(
        gap,
        LogError::Producer(ProducerError::OutOfOrderSequence {
            expected: 5,
            received: 9,
            ..
        })
    ));
    log.append(&[&idempotent(5, 1, 0, 1)]).unwrap();
    let fenced = log.append(&[&idempotent(5, 0, 5, 1)]).unwrap_err();
    assert!(matches!(
        fenced,
        LogError::Producer(ProducerError::InvalidEpoch { .. })
    ));
    let stranger = log.append(&[&idempotent(6, 0, 40, 1)]).unwrap_err();
    assert!(matches!(
        stranger,
        LogError::Producer(ProducerError::UnknownProducer { .. })
    ));
    let plain = BatchBuilder::new().values(1, 10).build();
    let crowded = log.append(&[&idempotent(5, 1, 1, 1), &plain]).unwrap_err();
    assert!(matches!(
        crowded,
        LogError::Producer(ProducerError::NotAlone { .. })
    ));
    log.append(&[&plain, &plain]).unwrap();
}

#[test]
fn producer_state_is_rebuilt_when_the_log_is_reopened() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let first = idempotent(9, 2, 0, 4);
    {
        let log = open(store.clone(), config());
        log.append(&[&first]).unwrap();
        log.append(&[&idempotent(9, 2, 4, 1)]).unwrap();
        log.sync().unwrap();
        log.close().unwrap();
    }
    let log = open(store, config());
    let retried = log.append(&[&first]).unwrap();
    assert!(retried.duplicate, "recognised after the reopen");
    assert_eq!(retried.base_offset, Offset(0));
    let next = log.append(&[&idempotent(9, 2, 5, 1)]).unwrap();
    assert_eq!((next.base_offset, next.duplicate), (Offset(5), false));
    assert!(matches!(
        log.append(&[&idempotent(9, 2, 7, 1)]).unwrap_err(),
        LogError::Producer(ProducerError::OutOfOrderSequence { expected: 6, .. })
    ));
}
