//! Background work of shared-storage mode, every `log.retention.check.interval.ms`:
//!
//! - **retention**: per partition of a topic whose `cleanup.policy` has `delete`, the
//!   log start moves past the oldest ranges whose newest record is older than
//!   `retention.ms`, and past the oldest ranges while the rest is larger than
//!   `retention.bytes` (the last range always stays, as Kafka keeps the active
//!   segment); the catalogue forgets the ranges below it;
//! - **compaction** of small ranges into segment objects (see `compaction`), except
//!   for compacted topics, which the cleaner rewrites (see `cleaning`);
//! - **collection**: objects no range refers to any more (all their ranges expired,
//!   deleted or refused at commit) are noted, and deleted from the object store
//!   `storage.gc.grace.ms` later (a reader that looked a range up just before keeps
//!   its GET), then forgotten;
//! - **orphans**: objects under `wal/` that the catalogue never knew (a PUT whose
//!   commit never happened: the broker died, or the commit failed), and under `seg/`
//!   (a compaction swap that was refused), are deleted once
//!   `storage.orphan.age.ms` old by the object store's own clock (its last-modified
//!   time); the uploader never commits an object after half that age, so no commit
//!   can follow the deletion.

use std::sync::Arc;

use spool_metadata::{MetadataError, PartitionKey};
use tokio::sync::watch;

use spool_shared_storage::SharedStorage;
use spool_shared_storage::gc::retention_start;

use crate::shared::Shared;

/// Ranges of a partition looked at per retention pass.
const RANGES_PER_PASS: i64 = 100_000;

/// Runs the passes until the broker stops.
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let interval = shared.started_config().retention_check_interval;
    loop {
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = stopped.changed() => return,
        }
        if let Err(error) = pass(&shared).await {
            tracing::warn!(%error, "object storage maintenance failed; trying again later");
        }
    }
}

/// One pass of retention, collection and orphan deletion.
pub(crate) async fn pass(shared: &Arc<Shared>) -> Result<(), MetadataError> {
    let Some(storage) = shared.storage() else {
        return Ok(());
    };
    let now = shared.clock().now_ms();
    let cleaner_enabled = shared.started_config().cleaner.enabled;
    for topic in shared.topics().all() {
        let retains = topic.log.cleanup.delete
            && (topic.log.retention_ms.is_some() || topic.log.retention_bytes.is_some());
        let retention_ms = topic
            .log
            .retention_ms
            .map(|ms| i64::try_from(ms).unwrap_or(i64::MAX));
        let retention_bytes = topic
            .log
            .retention_bytes
            .map(|b| i64::try_from(b).unwrap_or(i64::MAX));
        for partition in 0..topic.record.partitions {
            // A partition's leader keeps it (in a cluster, each broker its own).
            let Some(epoch) = shared.partitions().led_epoch(&topic, partition) else {
                continue;
            };
            let key = PartitionKey {
                topic_id: topic.record.id,
                partition,
            };
            let Some(state) = storage.catalogue().partition_state(key).await? else {
                continue;
            };
            let mut ranges = storage
                .catalogue()
                .ranges_from(key, state.log_start, i64::MAX, RANGES_PER_PASS)
                .await?;
            // Never past an open transaction: its records stay until it is decided.
            let last_stable = stable_offset(shared, storage, &topic, partition, &state).await;
            let start = retains
                .then(|| retention_start(&ranges, now, retention_ms, retention_bytes))
                .flatten()
                .map(|start| start.min(last_stable))
                .filter(|start| *start > state.log_start);
            if let Some(start) = start {
                let start = storage.catalogue().advance_log_start(key, start).await?;
                note_log_start(shared, storage, &topic, partition, start).await;
                tracing::debug!(topic = %topic.record.name, partition, start, "retention moved the log start");
                ranges.retain(|range| range.last_offset >= start);
            }
            // The cleaner rewrites a compacted topic's ranges into segment objects
            // itself.
            if !(topic.log.cleanup.compact && cleaner_enabled) {
                spool_shared_storage::compaction::compact(storage, key, epoch, &ranges).await?;
            }
        }
    }
    spool_shared_storage::gc::collect(storage, now).await
}

/// The partition's last stable offset: its tail's, if open here, or by the producer
/// state committed with it (the log start if that cannot be read: nothing moves).
async fn stable_offset(
    shared: &Arc<Shared>,
    storage: &SharedStorage,
    topic: &crate::topics::Topic,
    partition: i32,
    state: &spool_metadata::PartitionState,
) -> i64 {
    let high_watermark = spool_model::Offset(state.high_watermark);
    if let Some(log_key) = topic.log_partition(partition)
        && storage.marks_of(&log_key).is_some()
    {
        let shared = shared.clone();
        let tail =
            crate::partitions::on_blocking_pool(move || shared.logs().partition(&log_key)).await;
        if let Ok(Ok(Some(log))) = tail
            && log.is_tail()
        {
            return log.stable_offset().0;
        }
    }
    match &state.producer_state {
        None => high_watermark.0,
        Some(encoded) => spool_log::stable_offset_in(encoded, high_watermark)
            .map_or(state.log_start, |stable| stable.0),
    }
}

/// Moves the log start of the partition's tail, if this broker has one open, to the
/// catalogue's new one.
async fn note_log_start(
    shared: &Arc<Shared>,
    storage: &SharedStorage,
    topic: &crate::topics::Topic,
    partition: i32,
    start: i64,
) {
    let Some(log_key) = topic.log_partition(partition) else {
        return;
    };
    let Some(marks) = storage.marks_of(&log_key) else {
        return;
    };
    marks
        .log_start
        .fetch_max(start, std::sync::atomic::Ordering::AcqRel);
    let shared = shared.clone();
    let trimmed = crate::partitions::on_blocking_pool(move || {
        let Ok(Some(log)) = shared.logs().partition(&log_key) else {
            return Ok(());
        };
        let local = log.offsets();
        if log.is_tail() && start > local.log_start.0 {
            log.advance_log_start(spool_model::Offset(start).min(local.high_watermark))?;
        }
        Ok::<_, spool_log::LogError>(())
    })
    .await;
    if let Ok(Err(error)) = trimmed {
        tracing::warn!(%error, "moving a tail's log start failed");
    }
}
