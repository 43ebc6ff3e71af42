//! A partition log as the tail of shared-storage mode: durable and visible only when
//! an upload is committed, refusing everything after a failed one, and reopened from
//! the catalogue's state (committed end, producers, epochs) with nothing else.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use common::small_config;
use spool_log::{FileCache, LogError, PartitionLog, TailStart, UploadFailure};
use spool_model::Offset;
use spool_store::MemoryStore;
use spool_testkit::BatchBuilder;

fn tail(files: &Arc<FileCache>, start: TailStart) -> PartitionLog {
    PartitionLog::open_tail(
        files.clone(),
        PathBuf::from(common::DIR),
        small_config(),
        start,
    )
    .unwrap()
}

fn idempotent(sequence: i32, records: usize) -> Vec<u8> {
    BatchBuilder::new()
        .producer(9, 0, sequence)
        .timestamp(1_000 + i64::from(sequence))
        .values(records, 10)
        .build()
}

#[tokio::test]
async fn appends_become_visible_only_when_their_upload_is_committed() {
    let files = Arc::new(FileCache::new(Arc::new(MemoryStore::new()), 16));
    let start = TailStart {
        next_offset: Offset(100),
        producer_state: None,
        epochs: vec![(3, Offset(0)), (4, Offset(100))],
    };
    let log = tail(&files, start);
    assert!(log.is_tail());
    let offsets = log.offsets();
    assert_eq!(
        (offsets.log_start, offsets.high_watermark),
        (Offset(100), Offset(100))
    );
    assert_eq!(log.end_offset_for_epoch(3).unwrap(), (3, Offset(100)));
    log.sync().unwrap();
    assert_eq!(
        log.offsets().high_watermark,
        Offset(100),
        "a sync is not durability"
    );
    assert!(log.take_for_upload().is_none());

    let info = log.append(&[&idempotent(0, 3)]).unwrap();
    assert_eq!(info.base_offset, Offset(100));
    log.append(&[&idempotent(3, 2)]).unwrap();
    assert_eq!(log.offsets().high_watermark, Offset(100));
    let chunk = log.take_for_upload().unwrap();
    assert_eq!(
        (chunk.base_offset, chunk.last_offset),
        (Offset(100), Offset(104))
    );
    assert_eq!(chunk.batches.len(), 2);
    assert_eq!(chunk.max_timestamp.0, 1_003);
    assert_eq!(chunk.leader_epoch, 4);
    assert!(chunk.producer_state.is_some());
    assert!(log.take_for_upload().is_none(), "taken once");
    let waiting = log.wait_durable(Offset(105));
    log.uploaded(&chunk);
    waiting.await.unwrap();
    assert_eq!(log.offsets().high_watermark, Offset(105));

    // A tail opened from that chunk's state recognises the producer's retries.
    let reopened = tail(
        &files,
        TailStart {
            next_offset: Offset(105),
            producer_state: chunk.producer_state.clone(),
            epochs: vec![(4, Offset(100))],
        },
    );
    let retried = reopened.append(&[&idempotent(3, 2)]).unwrap();
    assert!(retried.duplicate);
    assert_eq!(retried.base_offset, Offset(103));
    assert_eq!(
        reopened.append(&[&idempotent(5, 1)]).unwrap().base_offset,
        Offset(105)
    );
}

#[tokio::test]
async fn a_failed_upload_fails_its_waiters_and_everything_after_it() {
    let files = Arc::new(FileCache::new(Arc::new(MemoryStore::new()), 16));
    let log = tail(&files, TailStart::default());
    log.append(&[&idempotent(0, 1)]).unwrap();
    let first = log.take_for_upload().unwrap();
    log.append(&[&idempotent(1, 1)]).unwrap();
    log.upload_failed(UploadFailure::Storage);
    assert!(matches!(
        log.wait_durable(Offset(1)).await,
        Err(LogError::Failed { .. })
    ));
    assert!(matches!(
        log.append(&[&idempotent(2, 1)]),
        Err(LogError::Failed { .. })
    ));
    log.uploaded(&first);
    assert_eq!(
        log.offsets().high_watermark,
        Offset(0),
        "nothing after a failure"
    );
    assert!(log.has_failed());

    let fenced = tail(&files, TailStart::default());
    fenced.append(&[&idempotent(0, 1)]).unwrap();
    fenced.take_for_upload().unwrap();
    fenced.upload_failed(UploadFailure::Fenced);
    assert!(matches!(
        fenced.wait_durable(Offset(1)).await,
        Err(LogError::NotLeader { .. })
    ));
}

#[test]
fn committed_segments_leave_the_tail_beyond_its_budget() {
    let files = Arc::new(FileCache::new(Arc::new(MemoryStore::new()), 16));
    let log = tail(&files, TailStart::default());
    for _ in 0..40 {
        log.append(&[&common::batch(5, 50, 1_000)]).unwrap();
    }
    // Nothing committed yet: nothing leaves, whatever the budget.
    assert_eq!(log.trim_tail(0).unwrap(), Offset(0));
    let chunk = log.take_for_upload().unwrap();
    log.uploaded(&chunk);
    let start = log.trim_tail(4096).unwrap();
    assert!(start > Offset(100), "{start:?}");
    let offsets = log.offsets();
    assert_eq!(offsets.log_start, start);
    assert_eq!(offsets.high_watermark, Offset(200));
    assert!(matches!(
        log.read(Offset(0), 1 << 20),
        Err(LogError::OffsetBelowLogStart { .. })
    ));
    assert!(!log.read(start, 1 << 20).unwrap().is_empty());
    // The active segment always stays.
    let last = log.trim_tail(0).unwrap();
    assert!(last <= Offset(200));
    assert_eq!(
        log.append(&[&common::batch(1, 10, 1_000)])
            .unwrap()
            .base_offset,
        Offset(200)
    );
}

#[test]
fn a_sealed_tail_refuses_appends_and_settles_once_its_uploads_are_committed() {
    let files = Arc::new(FileCache::new(Arc::new(MemoryStore::new()), 16));
    let log = tail(&files, TailStart::default());
    assert!(log.is_settled(), "nothing appended");
    log.append(&[&idempotent(0, 2)]).unwrap();
    let first = log.take_for_upload().unwrap();
    log.append(&[&idempotent(2, 1)]).unwrap();
    log.seal();
    assert!(matches!(
        log.append(&[&idempotent(3, 1)]),
        Err(LogError::NotLeader { .. })
    ));
    assert!(!log.is_settled());
    log.uploaded(&first);
    assert!(!log.is_settled(), "one append still waits for its upload");
    let second = log.take_for_upload().unwrap();
    assert_eq!(
        second.base_offset,
        Offset(2),
        "what was buffered is still taken"
    );
    assert!(
        matches!(
            log.append(&[&idempotent(3, 1)]),
            Err(LogError::NotLeader { .. })
        ),
        "a take keeps the seal"
    );
    log.uploaded(&second);
    assert!(log.is_settled());
    log.unseal();
    assert_eq!(
        log.append(&[&idempotent(3, 1)]).unwrap().base_offset,
        Offset(3)
    );
}
