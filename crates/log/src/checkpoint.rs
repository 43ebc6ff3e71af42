//! The partition checkpoint: the log start offset and the recovery point (everything
//! before it was fsynced), written atomically: temp file, fsync, rename, directory fsync.
//!
//! Layout, big-endian, 41 bytes:
//! `"SPCP" | version u8 = 1 | logStart i64 | recoveryOffset i64 |
//!  recoverySegmentBase i64 | recoveryPosition u64 | crc32c u32` (CRC over all before it).
#![deny(clippy::indexing_slicing)]

use std::path::Path;

use spool_model::Offset;

use crate::error::{LogError, Result};
use crate::file_cache::FileCache;

pub(crate) const CHECKPOINT_FILE: &str = "checkpoint";
const CHECKPOINT_TMP: &str = "checkpoint.tmp";
const MAGIC: &[u8; 4] = b"SPCP";
const VERSION: u8 = 1;
const LEN: usize = 41;

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

impl Checkpoint {
    fn encode(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(LEN);
        bytes.extend_from_slice(MAGIC);
        bytes.push(VERSION);
        bytes.extend_from_slice(&self.log_start.0.to_be_bytes());
        bytes.extend_from_slice(&self.recovery_point.offset.0.to_be_bytes());
        bytes.extend_from_slice(&self.recovery_point.segment_base.0.to_be_bytes());
        bytes.extend_from_slice(&self.recovery_point.position.to_be_bytes());
        let crc = crc32c::crc32c(&bytes);
        bytes.extend_from_slice(&crc.to_be_bytes());
        bytes
    }

    fn decode(bytes: &[u8]) -> Option<Checkpoint> {
        if bytes.len() != LEN || bytes.get(..4)? != MAGIC || *bytes.get(4)? != VERSION {
            return None;
        }
        let stored = u32::from_be_bytes(bytes.get(LEN - 4..)?.try_into().ok()?);
        if crc32c::crc32c(bytes.get(..LEN - 4)?) != stored {
            return None;
        }
        let i64_at = |at: usize| -> Option<i64> {
            Some(i64::from_be_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
        };
        Some(Checkpoint {
            log_start: Offset(i64_at(5)?),
            recovery_point: LogPosition {
                offset: Offset(i64_at(13)?),
                segment_base: Offset(i64_at(21)?),
                position: u64::try_from(i64_at(29)?).ok()?,
            },
        })
    }

    /// Reads the checkpoint of the partition in `dir`. A missing, torn or corrupt one
    /// reads as `None`: recovery then scans the whole log.
    pub(crate) fn read(files: &FileCache, dir: &Path) -> Result<Option<Checkpoint>> {
        let path = dir.join(CHECKPOINT_FILE);
        if !files.store().exists(&path) {
            return Ok(None);
        }
        let file = files
            .store()
            .open(&path, spool_store::OpenMode::Read)
            .map_err(LogError::io("open", &path))?;
        let mut bytes = [0u8; LEN + 1];
        let read = file
            .read_up_to(&mut bytes, 0)
            .map_err(LogError::io("read", &path))?;
        let checkpoint = bytes.get(..read).and_then(Checkpoint::decode);
        if checkpoint.is_none() {
            tracing::warn!(path = %path.display(), "checkpoint unreadable; recovering from the whole log");
        }
        Ok(checkpoint)
    }

    /// Replaces the checkpoint atomically.
    pub(crate) fn write(&self, files: &FileCache, dir: &Path) -> Result<()> {
        let store = files.store();
        let tmp = dir.join(CHECKPOINT_TMP);
        let path = dir.join(CHECKPOINT_FILE);
        let file = store
            .open(&tmp, spool_store::OpenMode::Create)
            .map_err(LogError::io("create", &tmp))?;
        file.set_len(0).map_err(LogError::io("truncate", &tmp))?;
        file.write_at(&self.encode(), 0)
            .map_err(LogError::io("write", &tmp))?;
        file.sync().map_err(LogError::io("fsync", &tmp))?;
        store
            .rename(&tmp, &path)
            .map_err(LogError::io("rename", &tmp))?;
        store
            .sync_dir(dir)
            .map_err(LogError::io("fsync directory", dir))
    }
}

/// The name of the temporary file, which recovery removes if a crash left it behind.
pub(crate) fn is_leftover(name: &str) -> bool {
    name == CHECKPOINT_TMP
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_and_rejects_damage() {
        let checkpoint = Checkpoint {
            log_start: Offset(5),
            recovery_point: LogPosition {
                offset: Offset(900),
                segment_base: Offset(800),
                position: 4242,
            },
        };
        let bytes = checkpoint.encode();
        assert_eq!(bytes.len(), LEN);
        assert_eq!(Checkpoint::decode(&bytes), Some(checkpoint));
        for i in 0..LEN {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x10;
            assert_eq!(Checkpoint::decode(&damaged), None, "flip at byte {i}");
        }
        assert_eq!(Checkpoint::decode(&bytes[..LEN - 1]), None);
    }
}
