//! Segment objects, as compaction and the cleaner write them: one partition's batches
//! gathered into blocks of about `storage.compaction.block.bytes` ([`Blocks`]), PUT
//! under `seg/<ms>-<random id>` and swapped into the catalogue in place of the ranges
//! they replace ([`write_and_swap`]).

use bytes::{Bytes, BytesMut};
use object_store::{ObjectStoreExt, PutPayload};
use spool_metadata::{MetadataError, ObjectCommit, PartitionKey, RangeCommit, StoredRange};
use spool_objects::wal::{WalEntry, WalObjectBuilder};

use super::{SharedStorage, StorageCounts};

/// Consecutive batches of one partition: offsets `base_offset..=last_offset`.
pub(super) struct Piece {
    pub(super) base_offset: i64,
    pub(super) last_offset: i64,
    pub(super) max_timestamp: i64,
    pub(super) bytes: Bytes,
}

/// Pieces gathered into blocks of about `block_bytes` for one segment object.
pub(super) struct Blocks {
    key: PartitionKey,
    block_bytes: usize,
    builder: WalObjectBuilder,
    open: Option<(i64, i64, i64, BytesMut)>,
}

impl Blocks {
    pub(super) fn new(key: PartitionKey, block_bytes: usize) -> Blocks {
        Blocks {
            key,
            block_bytes,
            builder: WalObjectBuilder::new(),
            open: None,
        }
    }

    /// Adds a piece; an error if the object refused a block (the rewrite is
    /// abandoned: a swap without every block would lose records).
    pub(super) fn push(&mut self, piece: Piece) -> Result<(), String> {
        let (_, last, max_timestamp, data) = self.open.get_or_insert_with(|| {
            (
                piece.base_offset,
                piece.last_offset,
                piece.max_timestamp,
                BytesMut::new(),
            )
        });
        *last = piece.last_offset;
        *max_timestamp = (*max_timestamp).max(piece.max_timestamp);
        data.extend_from_slice(&piece.bytes);
        if data.len() >= self.block_bytes {
            self.close_block()?;
        }
        Ok(())
    }

    fn close_block(&mut self) -> Result<(), String> {
        let Some((base, last, max_timestamp, data)) = self.open.take() else {
            return Ok(());
        };
        let (topic_id, partition) = (self.key.topic_id, self.key.partition);
        self.builder
            .add_block(topic_id, partition, base, last, max_timestamp, &data)
            .map_err(|error| format!("a block was refused: {error}"))
    }

    /// The object's bytes and entries, every block added.
    pub(super) fn finish(mut self) -> Result<(Bytes, Vec<WalEntry>), String> {
        self.close_block()?;
        Ok(self.builder.finish())
    }
}

/// A segment object written and swapped in.
pub(super) struct Swapped {
    pub(super) name: String,
    /// Whether the catalogue took it (else the replaced ranges moved on, and the
    /// object goes as an orphan).
    pub(super) accepted: bool,
}

/// PUTs `object` (not when it has no entries: the replaced ranges only go) and swaps
/// its entries in for `replaced`, while the partition is at `leader_epoch`; `None`
/// if the PUT failed (logged; tried again later).
pub(super) async fn write_and_swap(
    storage: &SharedStorage,
    key: PartitionKey,
    leader_epoch: i32,
    replaced: &[StoredRange],
    object: Bytes,
    entries: &[WalEntry],
) -> Result<Option<Swapped>, MetadataError> {
    let name = format!(
        "seg/{:013}-{}",
        spool_model::Timestamp::now().0,
        uuid::Uuid::new_v4().simple()
    );
    let size = object.len() as u64;
    if !entries.is_empty() {
        let put = storage
            .objects
            .store
            .put(&storage.objects.path(&name), PutPayload::from(object))
            .await;
        if let Err(error) = put {
            tracing::warn!(%error, "writing a segment object failed; trying again later");
            StorageCounts::add(&storage.counts.put_failures, 1);
            return Ok(None);
        }
        StorageCounts::add(&storage.counts.puts, 1);
        StorageCounts::add(&storage.counts.put_bytes, size);
    }
    let commit = ObjectCommit {
        name: name.clone(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        ranges: entries
            .iter()
            .map(|entry| RangeCommit {
                key,
                leader_epoch,
                from_offset: entry.base_offset,
                base_offset: entry.base_offset,
                last_offset: entry.last_offset,
                max_timestamp: entry.max_timestamp,
                position: i64::try_from(entry.position).unwrap_or(i64::MAX),
                length: i64::from(entry.length),
                producer_state: None,
            })
            .collect(),
    };
    let accepted = storage
        .catalogue
        .replace_ranges(key, leader_epoch, replaced, &commit)
        .await?;
    if !accepted {
        tracing::info!(?key, object = %name, "a segment object's swap was refused (the ranges moved on); it goes as an orphan");
    }
    Ok(Some(Swapped { name, accepted }))
}
