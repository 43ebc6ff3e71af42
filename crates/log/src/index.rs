//! The sparse indexes of one segment, in memory and in their file format.
//!
//! `.index`: 8-byte entries `(relativeOffset: u32, position: u32)`, big-endian, one per
//! `index.interval.bytes` of log, pointing at the first byte of a batch whose base
//! offset is `segmentBase + relativeOffset`.
//!
//! `.timeindex`: 12-byte entries `(timestamp: i64, relativeOffset: u32)`: the largest
//! batch max-timestamp seen so far in the segment, and the relative base offset of the
//! batch that raised it. Timestamps strictly increase from entry to entry.
//!
//! Both lookups are binary searches, O(log n) in the number of entries.
#![deny(clippy::indexing_slicing)]

use spool_model::Timestamp;

pub(crate) const OFFSET_ENTRY_LEN: usize = 8;
pub(crate) const TIME_ENTRY_LEN: usize = 12;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OffsetEntry {
    pub(crate) relative_offset: u32,
    pub(crate) position: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimeEntry {
    pub(crate) timestamp: Timestamp,
    pub(crate) relative_offset: u32,
}

/// Both indexes of one segment.
#[derive(Debug, Default, Clone)]
pub struct SegmentIndex {
    pub(crate) offsets: Vec<OffsetEntry>,
    pub(crate) times: Vec<TimeEntry>,
}

impl SegmentIndex {
    /// The file position of the last indexed batch whose base offset is at or before
    /// `relative_offset`; 0 when none is.
    pub fn position_for(&self, relative_offset: u32) -> u32 {
        let after = self
            .offsets
            .partition_point(|e| e.relative_offset <= relative_offset);
        after
            .checked_sub(1)
            .and_then(|i| self.offsets.get(i))
            .map_or(0, |e| e.position)
    }

    /// An index of `entries` entries, one per `spacing` offsets and bytes, for the
    /// lookup benchmark.
    #[doc(hidden)]
    #[must_use]
    pub fn synthetic(entries: u32, spacing: u32) -> SegmentIndex {
        let offsets = (1..=entries)
            .map(|i| OffsetEntry {
                relative_offset: i * spacing,
                position: i * spacing,
            })
            .collect();
        SegmentIndex {
            offsets,
            times: Vec::new(),
        }
    }

    /// A relative offset at or before the first record with a timestamp at or after
    /// `target`: the batch of the last entry whose max timestamp is still below it.
    pub(crate) fn scan_start_for_timestamp(&self, target: Timestamp) -> u32 {
        let below = self.times.partition_point(|e| e.timestamp < target);
        below
            .checked_sub(1)
            .and_then(|i| self.times.get(i))
            .map_or(0, |e| e.relative_offset)
    }

    pub(crate) fn last_time(&self) -> Option<TimeEntry> {
        self.times.last().copied()
    }

    /// Bytes of memory held, for the idle-footprint accounting.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * size_of::<OffsetEntry>()
            + self.times.capacity() * size_of::<TimeEntry>()
    }
}

impl OffsetEntry {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
        out.extend_from_slice(&self.position.to_be_bytes());
    }
}

impl TimeEntry {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.0.to_be_bytes());
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
    }
}

/// Decodes an offset-index file, keeping the longest prefix that is a valid index of a
/// segment of `segment_len` bytes: offsets and positions strictly increasing, positions
/// inside the segment. A torn or garbage tail is dropped, never trusted.
pub(crate) fn decode_offset_index(bytes: &[u8], segment_len: u64) -> Vec<OffsetEntry> {
    let mut entries: Vec<OffsetEntry> = Vec::with_capacity(bytes.len() / OFFSET_ENTRY_LEN);
    for chunk in bytes.chunks_exact(OFFSET_ENTRY_LEN) {
        let (Some(rel), Some(pos)) = (be_u32(chunk, 0), be_u32(chunk, 4)) else {
            break;
        };
        let entry = OffsetEntry {
            relative_offset: rel,
            position: pos,
        };
        let increasing = entries
            .last()
            .is_none_or(|last| rel > last.relative_offset && pos > last.position);
        if !increasing || u64::from(pos) >= segment_len {
            break;
        }
        entries.push(entry);
    }
    entries
}

/// Decodes a time-index file, keeping the longest valid prefix: timestamps strictly
/// increasing, relative offsets not decreasing.
pub(crate) fn decode_time_index(bytes: &[u8]) -> Vec<TimeEntry> {
    let mut entries: Vec<TimeEntry> = Vec::with_capacity(bytes.len() / TIME_ENTRY_LEN);
    for chunk in bytes.chunks_exact(TIME_ENTRY_LEN) {
        let timestamp = chunk
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_be_bytes);
        let (Some(timestamp), Some(rel)) = (timestamp, be_u32(chunk, 8)) else {
            break;
        };
        let entry = TimeEntry {
            timestamp: Timestamp(timestamp),
            relative_offset: rel,
        };
        let increasing = entries
            .last()
            .is_none_or(|last| entry.timestamp > last.timestamp && rel >= last.relative_offset);
        if !increasing {
            break;
        }
        entries.push(entry);
    }
    entries
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(entries: &[(u32, u32)]) -> SegmentIndex {
        SegmentIndex {
            offsets: entries
                .iter()
                .map(|&(relative_offset, position)| OffsetEntry {
                    relative_offset,
                    position,
                })
                .collect(),
            times: Vec::new(),
        }
    }

    #[test]
    fn offset_lookup_at_the_boundaries() {
        let index = index(&[(10, 4096), (20, 8192), (30, 12288)]);
        assert_eq!(
            index.position_for(0),
            0,
            "before the first entry: segment start"
        );
        assert_eq!(index.position_for(9), 0);
        assert_eq!(index.position_for(10), 4096, "exactly on an entry");
        assert_eq!(index.position_for(19), 4096);
        assert_eq!(index.position_for(20), 8192);
        assert_eq!(index.position_for(30), 12288, "the last entry");
        assert_eq!(index.position_for(u32::MAX), 12288, "past the last entry");
        assert_eq!(SegmentIndex::default().position_for(5), 0, "empty index");
    }

    #[test]
    fn time_lookup_at_the_boundaries() {
        let index = SegmentIndex {
            offsets: Vec::new(),
            times: [(100, 0), (200, 5), (300, 9)]
                .iter()
                .map(|&(t, o)| TimeEntry {
                    timestamp: Timestamp(t),
                    relative_offset: o,
                })
                .collect(),
        };
        assert_eq!(index.scan_start_for_timestamp(Timestamp(50)), 0);
        assert_eq!(index.scan_start_for_timestamp(Timestamp(100)), 0);
        assert_eq!(index.scan_start_for_timestamp(Timestamp(101)), 0);
        assert_eq!(index.scan_start_for_timestamp(Timestamp(200)), 0);
        assert_eq!(index.scan_start_for_timestamp(Timestamp(201)), 5);
        assert_eq!(index.scan_start_for_timestamp(Timestamp(301)), 9);
    }

    #[test]
    fn decoding_keeps_only_the_valid_prefix() {
        let mut bytes = Vec::new();
        for (rel, pos) in [(1u32, 100u32), (5, 900), (4, 1000), (9, 2000)] {
            OffsetEntry {
                relative_offset: rel,
                position: pos,
            }
            .encode(&mut bytes);
        }
        bytes.extend_from_slice(&[1, 2, 3]); // torn entry
        let entries = decode_offset_index(&bytes, 5000);
        assert_eq!(
            entries.len(),
            2,
            "stops at the entry whose offset goes backwards"
        );
        assert_eq!(
            decode_offset_index(&bytes, 500).len(),
            1,
            "positions must lie in the segment"
        );
        assert!(
            decode_offset_index(&[0u8; 64], 5000).len() <= 1,
            "zero-filled tail is not an index"
        );

        let mut times = Vec::new();
        for (t, o) in [(10i64, 0u32), (20, 3), (20, 4)] {
            TimeEntry {
                timestamp: Timestamp(t),
                relative_offset: o,
            }
            .encode(&mut times);
        }
        assert_eq!(decode_time_index(&times).len(), 2);
    }
}
