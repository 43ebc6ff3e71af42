//! The message index of a topic (`index.fields`, BMQ's Index; docs/index.md): which
//! records carry a given key, header value or JSON field value, without reading the
//! topic.
//!
//! - [`field`]: what a topic indexes (`key`, `header:NAME`, `value:$.path`) and the
//!   values a record has for it;
//! - [`chunk`]: an index chunk, the index of one offset range of a partition: its
//!   byte format, built by [`chunk::ChunkBuilder`] as records are read, looked up
//!   through its [`chunk::ChunkSummary`] (header, bloom filters and hash buckets,
//!   small enough to keep in memory) and one ranged read of its entries;
//! - [`bloom`]: the per-field bloom filters that let a lookup skip a chunk.
//!
//! The index is a hint, never the truth: every record it names is read back and its
//! field compared before it is answered, so a hash collision, a record compacted
//! away or a stale chunk costs a read, not a wrong answer. Building and storing
//! chunks, and the queries, are the broker's (`crates/broker/src/index/`).

pub mod bloom;
pub mod chunk;
mod error;
pub mod field;
mod json_path;

pub use self::error::IndexError;
pub use self::field::{IndexField, IndexFields, JsonValues, RecordView, ValueReader};
pub use self::json_path::JsonPath;

/// The hash of an indexed value, as chunks store it.
#[must_use]
pub fn value_hash(value: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot_with_seed(0x5350_4f4f_4c49_4458, value)
}
