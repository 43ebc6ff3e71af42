//! The partition checkpoint: the log start offset, the recovery point (everything
//! before it was fsynced) and a snapshot of the idempotent producers' state, written
//! atomically: temp file, fsync, rename, directory fsync.
//!
//! Layout, big-endian (`docs/storage.md`):
//! `"SPCP" | version u8 = 3 | logStart i64 | recoveryOffset i64 |
//!  recoverySegmentBase i64 | recoveryPosition u64 | snapshotOffset i64 |
//!  snapshotSegmentBase i64 | snapshotPosition u64 | producer state | crc32c u32`
//! (CRC over all before it). Version 1 files, without the last four fields before the
//! CRC, are still read; they carry no producer snapshot.
#![deny(clippy::indexing_slicing)]

use std::path::Path;

use spool_model::Offset;

use crate::error::Result;
use crate::file_cache::FileCache;
use crate::producers::ProducerStates;
use crate::small_file::{self, Stored};

pub(crate) const CHECKPOINT_FILE: &str = "checkpoint";
const CHECKPOINT_TMP: &str = "checkpoint.tmp";
const MAGIC: &[u8; 4] = b"SPCP";
const VERSION_1: u8 = 1;
const VERSION_2: u8 = 2;
/// Version 3 adds the transactions to the producer state (the same layout otherwise).
const VERSION: u8 = 3;
const V1_LEN: usize = 41;
/// Magic, version and the two positions of a version 2 file.
const V2_FIXED_LEN: usize = 4 + 1 + 8 + 3 * 8 + 3 * 8;
const CRC_LEN: usize = 4;
/// A checkpoint larger than this is refused unread: at most 139 bytes per producer,
/// it would hold about 480,000 producers in one partition.
const MAX_FILE_LEN: u64 = 64 << 20;

/// A byte position in the log: an offset, the segment it falls in, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LogPosition {
    pub(crate) offset: Offset,
    pub(crate) segment_base: Offset,
    pub(crate) position: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Checkpoint {
    pub(crate) log_start: Offset,
    /// Everything before this point was durable when the checkpoint was written.
    pub(crate) recovery_point: LogPosition,
}

/// The idempotent producers' state after every batch before `at`.
#[derive(Debug, Clone)]
pub(crate) struct ProducerSnapshot {
    pub(crate) at: LogPosition,
    pub(crate) states: ProducerStates,
}

/// What a checkpoint file holds.
#[derive(Debug, Clone)]
pub(crate) struct CheckpointFile {
    pub(crate) checkpoint: Checkpoint,
    /// Absent in version 1 files.
    pub(crate) producers: Option<ProducerSnapshot>,
}

impl Checkpoint {
    fn encode(&self, producers: &ProducerSnapshot) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(V2_FIXED_LEN + CRC_LEN + 4);
        bytes.extend_from_slice(MAGIC);
        bytes.push(VERSION);
        bytes.extend_from_slice(&self.log_start.0.to_be_bytes());
        for point in [self.recovery_point, producers.at] {
            bytes.extend_from_slice(&point.offset.0.to_be_bytes());
            bytes.extend_from_slice(&point.segment_base.0.to_be_bytes());
            bytes.extend_from_slice(&point.position.to_be_bytes());
        }
        producers.states.encode_into(&mut bytes);
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes
    }

    fn decode(bytes: &[u8]) -> Option<CheckpointFile> {
        let (body, crc) = bytes.split_last_chunk::<CRC_LEN>()?;
        if body.get(..4)? != MAGIC || crc32c::crc32c(body) != u32::from_be_bytes(*crc) {
            return None;
        }
        let version = *body.get(4)?;
        let i64_at = |at: usize| -> Option<i64> {
            Some(i64::from_be_bytes(body.get(at..at + 8)?.try_into().ok()?))
        };
        let position_at = |at: usize| -> Option<LogPosition> {
            Some(LogPosition {
                offset: Offset(i64_at(at)?),
                segment_base: Offset(i64_at(at + 8)?),
                position: u64::try_from(i64_at(at + 16)?).ok()?,
            })
        };
        let checkpoint = Checkpoint {
            log_start: Offset(i64_at(5)?),
            recovery_point: position_at(13)?,
        };
        let producers = match version {
            VERSION_1 if bytes.len() == V1_LEN => None,
            VERSION_2 | VERSION => Some(ProducerSnapshot {
                at: position_at(37)?,
                states: ProducerStates::decode(body.get(V2_FIXED_LEN..)?)?,
            }),
            _ => return None,
        };
        Some(CheckpointFile {
            checkpoint,
            producers,
        })
    }

    /// Reads the checkpoint of the partition in `dir`. A missing, torn or corrupt one
    /// reads as `None`: recovery then scans the whole log.
    pub(crate) fn read(files: &FileCache, dir: &Path) -> Result<Option<CheckpointFile>> {
        let path = dir.join(CHECKPOINT_FILE);
        let bytes = match small_file::read(files, &path, MAX_FILE_LEN)? {
            Stored::Missing => return Ok(None),
            Stored::TooLarge(len) => {
                tracing::warn!(path = %path.display(), len, "checkpoint too large; recovering from the whole log");
                return Ok(None);
            }
            Stored::Bytes(bytes) => bytes,
        };
        let checkpoint = Checkpoint::decode(&bytes);
        if checkpoint.is_none() {
            tracing::warn!(path = %path.display(), "checkpoint unreadable; recovering from the whole log");
        }
        Ok(checkpoint)
    }

    /// Replaces the checkpoint atomically.
    pub(crate) fn write(
        &self,
        producers: &ProducerSnapshot,
        files: &FileCache,
        dir: &Path,
    ) -> Result<()> {
        let bytes = self.encode(producers);
        small_file::replace(files, dir, CHECKPOINT_TMP, CHECKPOINT_FILE, &bytes)
    }
}

/// The name of the temporary file, which recovery removes if a crash left it behind.
pub(crate) fn is_leftover(name: &str) -> bool {
    name == CHECKPOINT_TMP
}

#[cfg(test)]
mod tests {
    use crate::producers::tests::header;

    use super::*;

    fn sample() -> (Checkpoint, ProducerSnapshot) {
        let checkpoint = Checkpoint {
            log_start: Offset(5),
            recovery_point: LogPosition {
                offset: Offset(900),
                segment_base: Offset(800),
                position: 4242,
            },
        };
        let mut states = ProducerStates::default();
        states.record(&header(3, 1, 0, 4, 890));
        let producers = ProducerSnapshot {
            at: LogPosition {
                offset: Offset(910),
                segment_base: Offset(800),
                position: 5000,
            },
            states,
        };
        (checkpoint, producers)
    }

    #[test]
    fn encodes_and_rejects_damage() {
        let (checkpoint, producers) = sample();
        let bytes = checkpoint.encode(&producers);
        let decoded = Checkpoint::decode(&bytes).expect("decodes");
        assert_eq!(decoded.checkpoint, checkpoint);
        let snapshot = decoded.producers.expect("has producers");
        assert_eq!(snapshot.at, producers.at);
        assert_eq!(snapshot.states.len(), 1);
        for i in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x10;
            assert!(Checkpoint::decode(&damaged).is_none(), "flip at byte {i}");
        }
        for cut in 0..bytes.len() {
            assert!(Checkpoint::decode(&bytes[..cut]).is_none(), "cut at {cut}");
        }
    }

    #[test]
    fn version_1_files_are_read_without_producers() {
        let (checkpoint, _) = sample();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(MAGIC);
        bytes.push(VERSION_1);
        bytes.extend_from_slice(&5i64.to_be_bytes());
        for value in [900i64, 800, 4242] {
            bytes.extend_from_slice(&value.to_be_bytes());
        }
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_be_bytes());
        assert_eq!(bytes.len(), V1_LEN);
        let decoded = Checkpoint::decode(&bytes).expect("decodes");
        assert_eq!(decoded.checkpoint, checkpoint);
        assert!(decoded.producers.is_none());
    }
}
