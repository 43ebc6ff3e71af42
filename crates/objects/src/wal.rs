//! WAL objects: what a broker uploads per flush in shared-storage mode (and, with one
//! entry per block of one partition, the segment objects compaction writes). One object
//! holds the appends of every partition the broker leads (a thousand partitions are
//! one PUT, not a thousand), as Kafka record batches ready to serve unchanged, grouped
//! by partition. The catalogue records each partition's range in it (object, byte
//! position and length, offsets), so a read is a ranged GET of just those bytes; the
//! index at the front makes the object readable on its own (compaction, tools).
//!
//! Layout, big-endian (`docs/storage.md#wal-objects`):
//!
//! ```text
//! magic "SPWL" | version u8 (1) | reserved u8 (0) | count u32
//! count × (topic id [16] | partition i32 | base offset i64 | last offset i64
//!          | max timestamp i64 | length u32)                  48 bytes each
//! crc32c u32 of every byte before it
//! the entries' bytes, back to back, in index order
//! ```

use bytes::{BufMut, Bytes, BytesMut};
use uuid::Uuid;

const MAGIC: &[u8; 4] = b"SPWL";
const VERSION: u8 = 1;
const HEADER_LEN: usize = 10;
const ENTRY_LEN: usize = 48;

/// One partition's part of a WAL object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalEntry {
    pub topic_id: Uuid,
    pub partition: i32,
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    /// Where its batches start in the object, and how many bytes they take.
    pub position: u64,
    pub length: u32,
}

/// Why bytes are not a WAL object's index.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WalError {
    #[error("not a WAL object (magic or version)")]
    NotWal,
    #[error("the index is cut short: {needed} bytes needed, {present} present")]
    Short { needed: usize, present: usize },
    #[error("the index's checksum does not match")]
    Checksum,
    #[error("an entry's offsets go backwards or overlap the one before")]
    Disordered,
    #[error("a partition's bytes exceed 4 GiB")]
    TooLarge,
}

/// Gathers the appends of one flush into one object (or, for a segment object, one
/// partition's blocks).
#[derive(Debug, Default)]
pub struct WalObjectBuilder {
    /// (topic id, partition) → its entries in offset order: appends merged into the
    /// last one, blocks each an entry of their own.
    parts: std::collections::BTreeMap<(Uuid, i32), Vec<Part>>,
}

#[derive(Debug)]
struct Part {
    base_offset: i64,
    last_offset: i64,
    max_timestamp: i64,
    bytes: BytesMut,
}

impl WalObjectBuilder {
    #[must_use]
    pub fn new() -> WalObjectBuilder {
        WalObjectBuilder::default()
    }

    /// Adds a partition's batches, holding offsets `base..=last`. Appends of the same
    /// partition must follow each other's offsets.
    pub fn add(
        &mut self,
        topic_id: Uuid,
        partition: i32,
        base_offset: i64,
        last_offset: i64,
        max_timestamp: i64,
        batches: &[u8],
    ) -> Result<(), WalError> {
        let last = self
            .parts
            .get_mut(&(topic_id, partition))
            .and_then(|parts| parts.last_mut());
        let Some(part) = last else {
            return self.add_block(
                topic_id,
                partition,
                base_offset,
                last_offset,
                max_timestamp,
                batches,
            );
        };
        if last_offset < base_offset || base_offset <= part.last_offset {
            return Err(WalError::Disordered);
        }
        if part.bytes.len() + batches.len() > u32::MAX as usize {
            return Err(WalError::TooLarge);
        }
        part.last_offset = last_offset;
        part.max_timestamp = part.max_timestamp.max(max_timestamp);
        part.bytes.extend_from_slice(batches);
        Ok(())
    }

    /// Adds a partition's batches as an entry of their own (a block of a segment
    /// object: the index then holds each block's offsets and newest timestamp, the
    /// object's offset and time index). Blocks of a partition must follow each
    /// other's offsets.
    pub fn add_block(
        &mut self,
        topic_id: Uuid,
        partition: i32,
        base_offset: i64,
        last_offset: i64,
        max_timestamp: i64,
        batches: &[u8],
    ) -> Result<(), WalError> {
        if last_offset < base_offset {
            return Err(WalError::Disordered);
        }
        if batches.len() > u32::MAX as usize {
            return Err(WalError::TooLarge);
        }
        let parts = self.parts.entry((topic_id, partition)).or_default();
        if parts
            .last()
            .is_some_and(|part| base_offset <= part.last_offset)
        {
            return Err(WalError::Disordered);
        }
        parts.push(Part {
            base_offset,
            last_offset,
            max_timestamp,
            bytes: BytesMut::from(batches),
        });
        Ok(())
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The object's bytes and its entries (what the catalogue records).
    #[must_use]
    pub fn finish(self) -> (Bytes, Vec<WalEntry>) {
        let count: usize = self.parts.values().map(Vec::len).sum();
        let index_len = HEADER_LEN + ENTRY_LEN * count + 4;
        let data_len: usize = self
            .parts
            .values()
            .flatten()
            .map(|part| part.bytes.len())
            .sum();
        let mut out = BytesMut::with_capacity(index_len + data_len);
        out.put_slice(MAGIC);
        out.put_u8(VERSION);
        out.put_u8(0);
        out.put_u32(u32::try_from(count).unwrap_or(u32::MAX));
        let mut entries = Vec::with_capacity(count);
        let mut position = index_len as u64;
        let flat = self
            .parts
            .iter()
            .flat_map(|(key, parts)| parts.iter().map(move |part| (key, part)));
        for ((topic_id, partition), part) in flat {
            let length = u32::try_from(part.bytes.len()).unwrap_or(u32::MAX);
            out.put_slice(topic_id.as_bytes());
            out.put_i32(*partition);
            out.put_i64(part.base_offset);
            out.put_i64(part.last_offset);
            out.put_i64(part.max_timestamp);
            out.put_u32(length);
            entries.push(WalEntry {
                topic_id: *topic_id,
                partition: *partition,
                base_offset: part.base_offset,
                last_offset: part.last_offset,
                max_timestamp: part.max_timestamp,
                position,
                length,
            });
            position += u64::from(length);
        }
        let crc = crc32c::crc32c(&out);
        out.put_u32(crc);
        for part in self.parts.into_values().flatten() {
            out.put_slice(&part.bytes);
        }
        (out.freeze(), entries)
    }
}

/// How many bytes from the start of an object its index takes, from its first
/// [`HEADER_LEN`] bytes (so a reader can GET exactly the index).
pub fn index_len(header: &[u8]) -> Result<usize, WalError> {
    let fixed = header.get(..HEADER_LEN).ok_or(WalError::Short {
        needed: HEADER_LEN,
        present: header.len(),
    })?;
    if fixed.get(..4) != Some(MAGIC.as_slice()) || fixed.get(4) != Some(&VERSION) {
        return Err(WalError::NotWal);
    }
    let count = fixed
        .get(6..10)
        .and_then(|bytes| bytes.try_into().ok())
        .map_or(0, u32::from_be_bytes);
    Ok(HEADER_LEN + ENTRY_LEN * count as usize + 4)
}

/// Reads an object's index from its first bytes (at least [`index_len`] of them),
/// checking its checksum and order. Counts never size anything beyond the bytes
/// present.
pub fn read_index(object: &[u8]) -> Result<Vec<WalEntry>, WalError> {
    let needed = index_len(object)?;
    let index = object.get(..needed).ok_or(WalError::Short {
        needed,
        present: object.len(),
    })?;
    let (content, crc) = index.split_last_chunk::<4>().ok_or(WalError::Checksum)?;
    if crc32c::crc32c(content) != u32::from_be_bytes(*crc) {
        return Err(WalError::Checksum);
    }
    let mut entries: Vec<WalEntry> = Vec::new();
    let mut position = needed as u64;
    for raw in content
        .get(HEADER_LEN..)
        .unwrap_or_default()
        .chunks_exact(ENTRY_LEN)
    {
        let field = |at: usize, len: usize| raw.get(at..at + len).unwrap_or_default();
        let i64_at = |at| i64::from_be_bytes(field(at, 8).try_into().unwrap_or([0; 8]));
        let entry = WalEntry {
            topic_id: Uuid::from_slice(field(0, 16)).map_err(|_| WalError::NotWal)?,
            partition: i32::from_be_bytes(field(16, 4).try_into().unwrap_or([0; 4])),
            base_offset: i64_at(20),
            last_offset: i64_at(28),
            max_timestamp: i64_at(36),
            position,
            length: u32::from_be_bytes(field(44, 4).try_into().unwrap_or([0; 4])),
        };
        let ordered = entry.base_offset <= entry.last_offset
            && entries.last().is_none_or(|before| {
                let (was, is) = (
                    (before.topic_id, before.partition),
                    (entry.topic_id, entry.partition),
                );
                was < is || (was == is && before.last_offset < entry.base_offset)
            });
        if !ordered {
            return Err(WalError::Disordered);
        }
        position += u64::from(entry.length);
        entries.push(entry);
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn blocks_of_a_partition_are_entries_of_their_own_in_offset_order() {
        let id = Uuid::from_u128(7);
        let mut builder = WalObjectBuilder::new();
        builder.add_block(id, 2, 0, 9, 100, b"first").unwrap();
        builder.add_block(id, 2, 10, 19, 300, b"second").unwrap();
        assert_eq!(
            builder.add_block(id, 2, 19, 25, 0, b"x"),
            Err(WalError::Disordered)
        );
        let (object, entries) = builder.finish();
        assert_eq!(read_index(&object).unwrap(), entries);
        let blocks: Vec<(i64, i64, i64, u32)> = entries
            .iter()
            .map(|e| (e.base_offset, e.last_offset, e.max_timestamp, e.length))
            .collect();
        assert_eq!(blocks, vec![(0, 9, 100, 5), (10, 19, 300, 6)]);
        let second = &entries[1];
        let start = usize::try_from(second.position).unwrap();
        assert_eq!(&object[start..start + 6], b"second");
        // An index whose entries of one partition overlap is refused.
        let mut overlapping = object.to_vec();
        // The second entry's base offset (entry 1, field at 20) set to 5.
        let at = HEADER_LEN + ENTRY_LEN + 20;
        overlapping[at..at + 8].copy_from_slice(&5_i64.to_be_bytes());
        let body_len = HEADER_LEN + 2 * ENTRY_LEN;
        let crc = crc32c::crc32c(&overlapping[..body_len]);
        overlapping[body_len..body_len + 4].copy_from_slice(&crc.to_be_bytes());
        assert_eq!(read_index(&overlapping), Err(WalError::Disordered));
    }

    #[test]
    fn appends_of_a_partition_merge_and_partitions_come_in_order() {
        let (a, b) = (Uuid::from_u128(2), Uuid::from_u128(1));
        let mut builder = WalObjectBuilder::new();
        builder.add(a, 0, 10, 11, 100, b"aa").unwrap();
        builder.add(b, 3, 0, 0, 50, b"b").unwrap();
        builder.add(a, 0, 12, 14, 90, b"ccc").unwrap();
        assert_eq!(
            builder.add(a, 0, 14, 15, 0, b"x"),
            Err(WalError::Disordered)
        );
        let (object, entries) = builder.finish();
        assert_eq!(read_index(&object).unwrap(), entries);
        assert_eq!(
            entries
                .iter()
                .map(|e| (e.topic_id, e.partition, e.base_offset, e.last_offset))
                .collect::<Vec<_>>(),
            vec![(b, 3, 0, 0), (a, 0, 10, 14)]
        );
        assert_eq!(entries[1].max_timestamp, 100);
        let range = |e: &WalEntry| {
            let start = usize::try_from(e.position).unwrap();
            &object[start..start + e.length as usize]
        };
        assert_eq!(range(&entries[0]), b"b");
        assert_eq!(range(&entries[1]), b"aaccc");
    }

    #[test]
    fn damaged_or_short_indexes_are_refused() {
        let mut builder = WalObjectBuilder::new();
        builder
            .add(Uuid::from_u128(1), 0, 0, 0, 0, b"batch")
            .unwrap();
        let (object, _) = builder.finish();
        assert_eq!(
            read_index(&object[..20]),
            Err(WalError::Short {
                needed: 62,
                present: 20
            })
        );
        let mut flipped = object.to_vec();
        flipped[30] ^= 1;
        assert_eq!(read_index(&flipped), Err(WalError::Checksum));
        let mut huge = object.to_vec();
        huge[6..10].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(read_index(&huge), Err(WalError::Short { .. })));
        assert_eq!(read_index(b"PAR1......"), Err(WalError::NotWal));
    }

    proptest! {
        #[test]
        fn every_partition_reads_back_its_bytes(
            appends in proptest::collection::vec((0u128..4, 0i32..3, 1i64..5, proptest::collection::vec(any::<u8>(), 0..64)), 0..40)
        ) {
            let mut builder = WalObjectBuilder::new();
            let mut expected: std::collections::BTreeMap<(Uuid, i32), (i64, i64, Vec<u8>)> = Default::default();
            for (topic, partition, records, bytes) in appends {
                let key = (Uuid::from_u128(topic), partition);
                let base = expected.get(&key).map_or(0, |(_, last, _)| last + 1);
                let last = base + records - 1;
                builder.add(key.0, key.1, base, last, 0, &bytes).unwrap();
                let part = expected.entry(key).or_insert((base, last, Vec::new()));
                part.1 = last;
                part.2.extend_from_slice(&bytes);
            }
            let (object, entries) = builder.finish();
            prop_assert_eq!(read_index(&object).unwrap(), entries.clone());
            prop_assert_eq!(entries.len(), expected.len());
            for entry in entries {
                let (base, last, bytes) = &expected[&(entry.topic_id, entry.partition)];
                prop_assert_eq!((entry.base_offset, entry.last_offset), (*base, *last));
                let start = usize::try_from(entry.position).unwrap();
                prop_assert_eq!(&object[start..start + entry.length as usize], bytes.as_slice());
            }
        }
    }
}
