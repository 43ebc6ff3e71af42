//! A partition's leader epoch history: the offset at which each leader epoch began.
//! OffsetForLeaderEpoch answers from it, so that a client that read up to some offset
//! under an epoch can tell whether the log still holds what it read (KIP-101, KIP-320).
//!
//! Kept in `leader-epochs` in the partition's directory, replaced whole and atomically
//! (see `small_file`): `SPLE | version | count: u32 | (epoch: i32, start: i64)* |
//! crc32c`, big-endian. An epoch is recorded when the partition first serves under it
//! (before any batch of it is written); entries that begin past the log's end after
//! recovery truncated a torn tail are dropped.

use std::path::Path;

use spool_model::Offset;

use crate::error::{LogError, Result};
use crate::file_cache::FileCache;
use crate::small_file::{checked_body, read_small, write_checked};

const FILE: &str = "leader-epochs";
const TMP: &str = "leader-epochs.tmp";
const MAGIC: &[u8; 4] = b"SPLE";
/// More epochs than any partition lives through; a larger file is damaged.
const MAX_ENTRIES: u64 = 1 << 20;
/// Kafka's UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET.
const UNDEFINED: i32 = -1;

/// One epoch and the offset its first batch got (or would get).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochStart {
    pub epoch: i32,
    pub start: Offset,
}

/// The history, by rising epoch (and so by non-decreasing start offset).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LeaderEpochs {
    entries: Vec<EpochStart>,
}

impl LeaderEpochs {
    /// The history stored in `dir`; empty if there is none.
    pub(crate) fn load(files: &FileCache, dir: &Path) -> Result<LeaderEpochs> {
        let path = dir.join(FILE);
        let Some(bytes) = read_small(files, &path, 12 * MAX_ENTRIES + 16)? else {
            return Ok(LeaderEpochs::default());
        };
        // Written atomically, so never torn: unreadable means a damaged disk.
        checked_body(&bytes, MAGIC)
            .and_then(decode)
            .ok_or(LogError::Failed { path })
    }

    /// Writes the history to `dir`, durably.
    pub(crate) fn store(&self, files: &FileCache, dir: &Path) -> Result<()> {
        let mut body = Vec::with_capacity(4 + 12 * self.entries.len());
        let count = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        body.extend_from_slice(&count.to_be_bytes());
        for entry in &self.entries {
            body.extend_from_slice(&entry.epoch.to_be_bytes());
            body.extend_from_slice(&entry.start.0.to_be_bytes());
        }
        write_checked(files, dir, TMP, FILE, MAGIC, &body)
    }

    pub(crate) fn latest(&self) -> Option<i32> {
        self.entries.last().map(|entry| entry.epoch)
    }

    pub(crate) fn entries(&self) -> &[EpochStart] {
        &self.entries
    }

    /// Records that `epoch` begins at `start`; false (and nothing changes) unless it
    /// is newer than every epoch recorded.
    pub(crate) fn begin(&mut self, epoch: i32, start: Offset) -> bool {
        if self.latest().is_some_and(|latest| latest >= epoch) {
            return false;
        }
        self.entries.push(EpochStart { epoch, start });
        true
    }

    /// The epoch under which `offset` was (or will be) written: the latest that began
    /// at or before it; -1 if none did.
    pub(crate) fn epoch_at(&self, offset: Offset) -> i32 {
        self.entries
            .iter()
            .rev()
            .find(|entry| entry.start <= offset)
            .map_or(UNDEFINED, |entry| entry.epoch)
    }

    /// Drops the epochs that begin past `log_end` (their batches were truncated);
    /// true if any was dropped.
    pub(crate) fn truncate_to(&mut self, log_end: Offset) -> bool {
        let before = self.entries.len();
        self.entries.retain(|entry| entry.start <= log_end);
        self.entries.len() != before
    }

    /// OffsetForLeaderEpoch: the largest epoch at most `requested` and the offset at
    /// which the epoch after it began (the log end for the latest epoch); Kafka's
    /// (-1, -1) for an undefined epoch or one newer than any recorded.
    pub(crate) fn end_offset_for(&self, requested: i32, log_end: Offset) -> (i32, Offset) {
        let undefined = (UNDEFINED, Offset(-1));
        if requested == UNDEFINED {
            return undefined;
        }
        if self.latest() == Some(requested) {
            return (requested, log_end);
        }
        let Some(next) = self.entries.iter().find(|entry| entry.epoch > requested) else {
            return undefined;
        };
        let floor = self
            .entries
            .iter()
            .rev()
            .find(|entry| entry.epoch <= requested);
        // An epoch older than any recorded ends where the first recorded one begins.
        (floor.map_or(requested, |entry| entry.epoch), next.start)
    }
}

fn decode(body: &[u8]) -> Option<LeaderEpochs> {
    let (count, mut rest) = body.split_first_chunk::<4>()?;
    let count = u32::from_be_bytes(*count);
    let mut entries = Vec::new();
    for _ in 0..count {
        let (epoch, after) = rest.split_first_chunk::<4>()?;
        let (start, after) = after.split_first_chunk::<8>()?;
        entries.push(EpochStart {
            epoch: i32::from_be_bytes(*epoch),
            start: Offset(i64::from_be_bytes(*start)),
        });
        rest = after;
    }
    let ordered = entries
        .windows(2)
        .all(|pair| matches!(pair, [a, b] if a.epoch < b.epoch && a.start <= b.start));
    (rest.is_empty() && ordered).then_some(LeaderEpochs { entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn history(entries: &[(i32, i64)]) -> LeaderEpochs {
        let mut epochs = LeaderEpochs::default();
        for (epoch, start) in entries {
            assert!(epochs.begin(*epoch, Offset(*start)));
        }
        epochs
    }

    #[test]
    fn end_offsets_answer_as_kafka_does() {
        let epochs = history(&[(1, 0), (3, 10), (4, 25)]);
        let end = Offset(40);
        assert_eq!(epochs.end_offset_for(4, end), (4, Offset(40)), "the latest");
        assert_eq!(epochs.end_offset_for(3, end), (3, Offset(25)));
        assert_eq!(epochs.end_offset_for(2, end), (1, Offset(10)), "a gap");
        assert_eq!(
            epochs.end_offset_for(0, end),
            (0, Offset(0)),
            "older than any"
        );
        assert_eq!(
            epochs.end_offset_for(5, end),
            (-1, Offset(-1)),
            "newer than any"
        );
        assert_eq!(epochs.end_offset_for(-1, end), (-1, Offset(-1)));
        assert_eq!(
            LeaderEpochs::default().end_offset_for(0, end),
            (-1, Offset(-1))
        );
    }

    #[test]
    fn only_newer_epochs_begin_and_truncation_drops_later_ones() {
        let mut epochs = history(&[(1, 0), (2, 10)]);
        assert!(!epochs.begin(2, Offset(12)));
        assert!(!epochs.begin(1, Offset(12)));
        assert!(epochs.begin(5, Offset(12)));
        assert!(epochs.truncate_to(Offset(11)));
        assert_eq!(epochs, history(&[(1, 0), (2, 10)]));
        assert!(
            !epochs.truncate_to(Offset(10)),
            "an epoch may begin at the end"
        );
        assert_eq!(epochs.epoch_at(Offset(9)), 1);
        assert_eq!(epochs.epoch_at(Offset(10)), 2);
        assert_eq!(history(&[(3, 5)]).epoch_at(Offset(4)), -1);
    }

    #[test]
    fn the_history_round_trips_and_damage_is_refused() {
        let epochs = history(&[(0, 0), (7, 3), (9, 3)]);
        let mut body = Vec::new();
        body.extend_from_slice(&3u32.to_be_bytes());
        for entry in epochs.entries() {
            body.extend_from_slice(&entry.epoch.to_be_bytes());
            body.extend_from_slice(&entry.start.0.to_be_bytes());
        }
        assert_eq!(decode(&body), Some(epochs));
        assert_eq!(decode(body.get(..body.len() - 1).unwrap()), None, "short");
        let mut huge = body.clone();
        huge.splice(0..4, u32::MAX.to_be_bytes());
        assert_eq!(decode(&huge), None, "a count larger than the bytes present");
        let mut unordered = body;
        unordered.splice(4..8, 8i32.to_be_bytes());
        assert_eq!(decode(&unordered), None);
    }
}
