//! Compaction of shared-storage mode: a partition's small ranges (one per flush that
//! touched it, spread over WAL objects shared with other partitions) are rewritten
//! into one **segment object** of its own, as blocks of about
//! `storage.compaction.block.bytes`, and swapped in the catalogue in one transaction
//! (`Catalogue::replace_ranges`, checked against the leader epoch and refused if
//! retention or DeleteRecords took any of the ranges meanwhile). The partition's
//! catalogue rows then number about its bytes over the block size, not its flushes;
//! WAL objects whose every range moved are collected as any unreferenced object.
//!
//! A segment object has the WAL object layout with one entry per block (its index is
//! the segment's offset and time index), under `seg/<ms>-<random id>`. A swap that is
//! refused leaves an object the catalogue never knew, deleted as an orphan.

use bytes::BytesMut;
use object_store::{ObjectStoreExt, PutPayload};
use spool_metadata::{MetadataError, ObjectCommit, PartitionKey, RangeCommit, StoredRange};
use spool_objects::wal::WalObjectBuilder;

use super::{SharedStorage, StorageCounts};

/// Bytes rewritten into one segment object at most.
const SEGMENT_OBJECT_BYTES: i64 = 64 << 20;

/// Rewrites the partition's first run of small ranges, if it is long enough; returns
/// how many ranges it replaced.
pub(super) async fn compact(
    storage: &SharedStorage,
    key: PartitionKey,
    leader_epoch: i32,
    ranges: &[StoredRange],
) -> Result<usize, MetadataError> {
    let block_bytes = i64::try_from(storage.compaction.block_bytes).unwrap_or(i64::MAX);
    let run = small_run(ranges, block_bytes / 2, SEGMENT_OBJECT_BYTES);
    if run.len() < storage.compaction.min_ranges {
        return Ok(0);
    }
    let mut builder = WalObjectBuilder::new();
    let mut block: Option<(i64, i64, i64, BytesMut)> = None;
    for range in run {
        let bytes = match storage.reader.range_bytes(range).await {
            Ok(bytes) => bytes,
            Err(error) => {
                tracing::warn!(%error, "compaction could not read a range; trying again later");
                return Ok(0);
            }
        };
        let (_, last, max_timestamp, data) = block.get_or_insert_with(|| {
            (
                range.base_offset,
                range.last_offset,
                range.max_timestamp,
                BytesMut::new(),
            )
        });
        *last = range.last_offset;
        *max_timestamp = (*max_timestamp).max(range.max_timestamp);
        data.extend_from_slice(&bytes);
        if i64::try_from(data.len()).unwrap_or(i64::MAX) >= block_bytes
            && let Some((base, last, max_timestamp, data)) = block.take()
            && !add_block(&mut builder, key, base, last, max_timestamp, &data)
        {
            return Ok(0);
        }
    }
    if let Some((base, last, max_timestamp, data)) = block.take()
        && !add_block(&mut builder, key, base, last, max_timestamp, &data)
    {
        return Ok(0);
    }
    let (object, entries) = builder.finish();
    let name = format!(
        "seg/{:013}-{}",
        spool_model::Timestamp::now().0,
        uuid::Uuid::new_v4().simple()
    );
    let size = object.len() as u64;
    if let Err(error) = storage
        .objects
        .store
        .put(&storage.objects.path(&name), PutPayload::from(object))
        .await
    {
        tracing::warn!(%error, "writing a segment object failed; trying again later");
        StorageCounts::add(&storage.counts.put_failures, 1);
        return Ok(0);
    }
    StorageCounts::add(&storage.counts.puts, 1);
    StorageCounts::add(&storage.counts.put_bytes, size);
    let commit = ObjectCommit {
        name: name.clone(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        ranges: entries
            .iter()
            .map(|entry| RangeCommit {
                key,
                leader_epoch,
                base_offset: entry.base_offset,
                last_offset: entry.last_offset,
                max_timestamp: entry.max_timestamp,
                position: i64::try_from(entry.position).unwrap_or(i64::MAX),
                length: i64::from(entry.length),
                producer_state: None,
            })
            .collect(),
    };
    if storage
        .catalogue
        .replace_ranges(key, leader_epoch, run, &commit)
        .await?
    {
        tracing::debug!(?key, ranges = run.len(), blocks = entries.len(), object = %name, "compacted");
        Ok(run.len())
    } else {
        tracing::info!(?key, object = %name, "a compaction swap was refused (the ranges moved on); its object goes as an orphan");
        Ok(0)
    }
}

/// Adds a block; `false` (and the compaction is abandoned: a swap without every
/// block would leave a gap) if the builder refuses it.
fn add_block(
    builder: &mut WalObjectBuilder,
    key: PartitionKey,
    base: i64,
    last: i64,
    max_timestamp: i64,
    data: &[u8],
) -> bool {
    match builder.add_block(key.topic_id, key.partition, base, last, max_timestamp, data) {
        Ok(()) => true,
        Err(error) => {
            tracing::error!(?key, %error, "a compaction block was refused; compaction abandoned");
            false
        }
    }
}

/// The first run of consecutive ranges each smaller than `small` bytes, up to
/// `budget` bytes in all.
pub(super) fn small_run(ranges: &[StoredRange], small: i64, budget: i64) -> &[StoredRange] {
    let Some(start) = ranges.iter().position(|r| r.length < small) else {
        return &[];
    };
    let mut total = 0;
    let mut end = start;
    for range in ranges.get(start..).unwrap_or_default() {
        if range.length >= small || total + range.length > budget {
            break;
        }
        total += range.length;
        end += 1;
    }
    ranges.get(start..end).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(base: i64, length: i64) -> StoredRange {
        StoredRange {
            base_offset: base,
            last_offset: base + 9,
            max_timestamp: 0,
            object: format!("wal/{base}"),
            position: 0,
            length,
        }
    }

    #[test]
    fn the_first_run_of_small_ranges_within_the_budget() {
        let ranges = [
            range(0, 900),
            range(10, 10),
            range(20, 10),
            range(30, 500),
            range(40, 10),
        ];
        let run: Vec<i64> = small_run(&ranges, 100, 1_000)
            .iter()
            .map(|r| r.base_offset)
            .collect();
        assert_eq!(run, vec![10, 20]);
        let run: Vec<i64> = small_run(&ranges, 100, 15)
            .iter()
            .map(|r| r.base_offset)
            .collect();
        assert_eq!(run, vec![10]);
        assert!(small_run(&ranges, 5, 1_000).is_empty());
        assert!(small_run(&[], 100, 1_000).is_empty());
    }
}
