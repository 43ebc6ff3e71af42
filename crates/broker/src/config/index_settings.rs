//! How message indexes are kept (`index.*`, docs/index.md). Rows of the broker's one
//! settings table (`super::all_settings`).

use super::{Setting, between};

/// `index.chunk.bytes` by default: a chunk covers 64 MiB of batches.
pub(super) const DEFAULT_INDEX_CHUNK_BYTES: u64 = 64 << 20;

pub(super) const INDEX_SETTINGS: [Setting; 1] = [Setting {
    name: "index.chunk.bytes",
    dynamic: false,
    get: |c| c.index_chunk_bytes.to_string(),
    set: |c, v| {
        c.index_chunk_bytes = between(v, 1 << 10, 1 << 30)?;
        Ok(())
    },
}];
