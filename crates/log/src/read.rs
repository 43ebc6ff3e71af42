//! What a read returns: byte ranges of segment files (for `sendfile`) or slices of the
//! in-memory tail cache, always whole batches.

use std::io;
use std::sync::Arc;

use bytes::Bytes;
use spool_model::Offset;

pub use crate::producers::AbortedTxn;
use spool_store::StoreFile;

/// One contiguous piece of a read.
#[derive(Debug, Clone)]
pub enum ReadChunk {
    /// `len` bytes of `file` from `position`: hand the descriptor to `sendfile`.
    File {
        file: Arc<dyn StoreFile>,
        position: u64,
        len: u64,
    },
    /// Bytes from the tail cache.
    Memory(Bytes),
}

impl ReadChunk {
    #[must_use]
    pub fn len(&self) -> u64 {
        match self {
            ReadChunk::File { len, .. } => *len,
            ReadChunk::Memory(bytes) => bytes.len() as u64,
        }
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies the chunk's bytes to the end of `out`, for callers that cannot send
    /// from a file directly.
    pub fn append_to(&self, out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            ReadChunk::Memory(bytes) => out.extend_from_slice(bytes),
            ReadChunk::File {
                file,
                position,
                len,
            } => {
                let start = out.len();
                out.resize(
                    start + usize::try_from(*len).map_err(|_| io::ErrorKind::InvalidInput)?,
                    0,
                );
                file.read_exact_at(out.get_mut(start..).unwrap_or_default(), *position)?;
            }
        }
        Ok(())
    }
}

/// Which records a read may return (a Fetch's `isolation_level`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Up to the high watermark, open transactions included.
    ReadUncommitted,
    /// Up to the last stable offset: only decided transactions.
    ReadCommitted,
}

/// The result of [`crate::PartitionLog::read`].
#[derive(Debug, Clone)]
pub struct ReadResult {
    /// Whole batches, in offset order; empty when nothing is available at the offset.
    pub chunks: Vec<ReadChunk>,
    pub log_start: Offset,
    pub high_watermark: Offset,
    pub last_stable: Offset,
    /// read_committed: the aborted transactions with records in what was read.
    pub aborted: Vec<AbortedTxn>,
}

impl ReadResult {
    #[must_use]
    pub fn len(&self) -> u64 {
        self.chunks.iter().map(ReadChunk::len).sum()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All bytes of the read, copied into one buffer.
    pub fn to_vec(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        for chunk in &self.chunks {
            chunk.append_to(&mut out)?;
        }
        Ok(out)
    }
}
