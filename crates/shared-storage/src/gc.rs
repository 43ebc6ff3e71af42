//! Shared storage's upkeep that needs no topic: where retention moves a partition's
//! log start to ([`retention_start`]), and garbage collection ([`collect`]):
//!
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
//!
//! The broker's maintenance pass calls both, every `log.retention.check.interval.ms`.

use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use spool_metadata::{MetadataError, StoredRange};

use crate::{SharedStorage, StorageCounts};

/// Objects deleted per pass at most (the rest wait for the next).
const DELETIONS_PER_PASS: i64 = 1_000;

/// Where retention moves the log start to, if anywhere: past every leading range
/// older than `retention_ms`, and past leading ranges while those after them hold
/// more than `retention_bytes`; the last range always stays.
pub fn retention_start(
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

/// Collection, then orphans: see the module's documentation.
pub async fn collect(storage: &SharedStorage, now: i64) -> Result<(), MetadataError> {
    collect_unreferenced(storage, now).await?;
    delete_orphans(storage).await
}

/// Notes unreferenced objects, deletes those noted a grace period ago.
async fn collect_unreferenced(storage: &SharedStorage, now: i64) -> Result<(), MetadataError> {
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
async fn delete(storage: &SharedStorage, names: Vec<String>) -> Vec<String> {
    let mut gone = Vec::with_capacity(names.len());
    for name in names {
        match storage
            .objects
            .store
            .delete(&storage.objects.path(&name))
            .await
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {
                StorageCounts::add(&storage.counts.deletes, 1);
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
async fn delete_orphans(storage: &SharedStorage) -> Result<(), MetadataError> {
    for directory in ["wal", "seg"] {
        delete_orphans_in(storage, directory).await?;
    }
    Ok(())
}

async fn delete_orphans_in(storage: &SharedStorage, directory: &str) -> Result<(), MetadataError> {
    let prefix = storage.objects.path(directory);
    let age = i64::try_from(storage.orphan_age.as_millis()).unwrap_or(i64::MAX);
    // Compared with the object store's last-modified times, which follow real time,
    // not the broker's clock.
    let cutoff = spool_model::Timestamp::now().0.saturating_sub(age);
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
