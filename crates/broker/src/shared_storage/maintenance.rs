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

use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use spool_metadata::{MetadataError, PartitionKey, StoredRange};
use spool_model::Timestamp;
use tokio::sync::watch;

use crate::server::Shared;

/// Objects deleted per pass at most (the rest wait for the next).
const DELETIONS_PER_PASS: i64 = 1_000;

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
    let Some(storage) = &shared.storage else {
        return Ok(());
    };
    let now = Timestamp::now().0;
    let cleaner_enabled = shared.started_config().cleaner.enabled;
    for topic in shared.topics.all() {
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
            let Some(epoch) = shared.led_epoch(&topic, partition) else {
                continue;
            };
            let key = PartitionKey {
                topic_id: topic.record.id,
                partition,
            };
            let Some(state) = storage.catalogue.partition_state(key).await? else {
                continue;
            };
            let mut ranges = storage
                .catalogue
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
                let start = storage.catalogue.advance_log_start(key, start).await?;
                note_log_start(shared, storage, &topic, partition, start).await;
                tracing::debug!(topic = %topic.record.name, partition, start, "retention moved the log start");
                ranges.retain(|range| range.last_offset >= start);
            }
            // The cleaner rewrites a compacted topic's ranges into segment objects
            // itself.
            if !(topic.log.cleanup.compact && cleaner_enabled) {
                super::compaction::compact(storage, key, epoch, &ranges).await?;
            }
        }
    }
    collect(storage, now).await?;
    delete_orphans(storage, now).await
}

/// The partition's last stable offset: its tail's, if open here, or by the producer
/// state committed with it (the log start if that cannot be read: nothing moves).
async fn stable_offset(
    shared: &Arc<Shared>,
    storage: &super::SharedStorage,
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
            crate::partitions::on_blocking_pool(move || shared.logs.partition(&log_key)).await;
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
    storage: &super::SharedStorage,
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
        let Ok(Some(log)) = shared.logs.partition(&log_key) else {
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

/// Where retention moves the log start to, if anywhere: past every leading range
/// older than `retention_ms`, and past leading ranges while those after them hold
/// more than `retention_bytes`; the last range always stays.
pub(crate) fn retention_start(
    ranges: &[StoredRange],
    now: i64,
    retention_ms: Option<i64>,
    retention_bytes: Option<i64>,
) -> Option<i64> {
    let (_, keep) = ranges.split_last()?;
    let expired_by_time = retention_ms.map_or(0, |ms| {
        let cutoff = now.saturating_sub(ms);
        keep.iter().take_while(|r| r.max_timestamp < cutoff).count()
    });
    let expired_by_size = retention_bytes.map_or(0, |limit| {
        let mut total: i64 = ranges.iter().map(|r| r.length).sum();
        keep.iter()
            .take_while(|r| {
                let over = total > limit;
                total -= r.length;
                over
            })
            .count()
    });
    let expired = expired_by_time.max(expired_by_size);
    ranges
        .get(expired)
        .filter(|_| expired > 0)
        .map(|r| r.base_offset)
}

/// Notes unreferenced objects, deletes those noted a grace period ago.
async fn collect(storage: &super::SharedStorage, now: i64) -> Result<(), MetadataError> {
    storage.catalogue.note_unreferenced_objects(now).await?;
    let grace = i64::try_from(storage.gc_grace.as_millis()).unwrap_or(i64::MAX);
    let doomed = storage
        .catalogue
        .unreferenced_objects(now.saturating_sub(grace), DELETIONS_PER_PASS)
        .await?;
    let deleted = delete(storage, doomed).await;
    storage.catalogue.forget_objects(&deleted).await
}

/// Deletes objects from the store; returns those that are gone (deleted now, or
/// already).
async fn delete(storage: &super::SharedStorage, names: Vec<String>) -> Vec<String> {
    let mut gone = Vec::with_capacity(names.len());
    for name in names {
        match storage
            .objects
            .store
            .delete(&storage.objects.path(&name))
            .await
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                super::StorageCounts::add(&storage.counts.deletes, 1);
                gone.push(name);
            }
            Err(error) => {
                tracing::warn!(object = %name, %error, "deleting an object failed; trying again later");
            }
        }
    }
    gone
}

/// Deletes the objects under `wal/` and `seg/` that the catalogue does not know and
/// that are older than `storage.orphan.age.ms`.
async fn delete_orphans(storage: &super::SharedStorage, now: i64) -> Result<(), MetadataError> {
    for directory in ["wal", "seg"] {
        delete_orphans_in(storage, directory, now).await?;
    }
    Ok(())
}

async fn delete_orphans_in(
    storage: &super::SharedStorage,
    directory: &str,
    now: i64,
) -> Result<(), MetadataError> {
    let prefix = storage.objects.path(directory);
    let age = i64::try_from(storage.orphan_age.as_millis()).unwrap_or(i64::MAX);
    let cutoff = now.saturating_sub(age);
    let listed: Vec<object_store::ObjectMeta> = match storage
        .objects
        .store
        .list(Some(&prefix))
        .try_collect()
        .await
    {
        Ok(listed) => listed,
        Err(error) => {
            tracing::warn!(%error, "listing objects failed; orphans wait for the next pass");
            return Ok(());
        }
    };
    let old: Vec<String> = listed
        .iter()
        .filter_map(|meta| {
            let name = meta.location.prefix_match(&storage.objects.prefix)?;
            let name = name
                .map(|part| part.as_ref().to_owned())
                .collect::<Vec<_>>()
                .join("/");
            let in_directory = name.starts_with(&format!("{directory}/"));
            (in_directory && meta.last_modified.timestamp_millis() < cutoff).then_some(name)
        })
        .collect();
    if old.is_empty() {
        return Ok(());
    }
    let known = storage.catalogue.known_objects(&old).await?;
    let orphans: Vec<String> = old
        .into_iter()
        .filter(|name| !known.contains(name))
        .collect();
    if !orphans.is_empty() {
        tracing::info!(
            count = orphans.len(),
            "deleting objects no commit made visible"
        );
        delete(storage, orphans).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(base: i64, max_timestamp: i64, length: i64) -> StoredRange {
        StoredRange {
            base_offset: base,
            last_offset: base + 9,
            max_timestamp,
            object: format!("wal/{base}"),
            position: 0,
            length,
        }
    }

    #[test]
    fn retention_moves_past_old_and_excess_ranges_but_keeps_the_last() {
        let ranges = [range(0, 100, 10), range(10, 200, 10), range(20, 300, 10)];
        assert_eq!(retention_start(&ranges, 1_000, Some(850), None), Some(10));
        assert_eq!(retention_start(&ranges, 1_000, Some(750), None), Some(20));
        assert_eq!(
            retention_start(&ranges, 1_000, Some(1), None),
            Some(20),
            "the last stays"
        );
        assert_eq!(retention_start(&ranges, 1_000, Some(5_000), None), None);
        assert_eq!(retention_start(&ranges, 1_000, None, Some(30)), None);
        assert_eq!(retention_start(&ranges, 1_000, None, Some(25)), Some(10));
        assert_eq!(retention_start(&ranges, 1_000, None, Some(0)), Some(20));
        assert_eq!(
            retention_start(&ranges, 1_000, Some(850), Some(15)),
            Some(20)
        );
        assert_eq!(retention_start(&[], 1_000, Some(1), Some(0)), None);
        // A newer range before an old one stops time retention (Kafka's rule).
        let mixed = [range(0, 900, 10), range(10, 100, 10), range(20, 300, 10)];
        assert_eq!(retention_start(&mixed, 1_000, Some(500), None), None);
    }
}
