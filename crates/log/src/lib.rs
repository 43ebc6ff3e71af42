//! Spool's storage engine: one append-only, segmented log per partition.
//!
//! A partition directory holds Kafka-format segments (`<baseOffset:020>.log`), a sparse
//! offset index (`.index`) and time index (`.timeindex`) per segment, and a
//! `checkpoint` written atomically. The byte layout is in `docs/storage.md`.
//!
//! - [`PartitionLog`] appends batches (many per write), reads by offset with a byte
//!   budget, looks up offsets by timestamp, rolls segments and enforces retention.
//!   Durability is separate from appending: [`PartitionLog::append`] reports the batch
//!   buffered, [`PartitionLog::sync`] makes everything buffered durable with one fsync
//!   shared by every waiter (group commit).
//! - Opening a partition recovers it: it trusts the checkpoint, scans what lies after
//!   it, truncates a torn tail and rebuilds the indexes of what it scanned.
//! - [`LogManager`] owns many partitions under one data directory: it opens them
//!   lazily, bounds open files, and runs the background flush, retention and
//!   checkpoint work.

mod checkpoint;
mod cleaner;
mod config;
mod error;
mod file_cache;
mod index;
mod leader_epochs;
mod manager;
mod partition;
mod producers;
mod read;
mod recovery;
mod scan;
mod segment;
mod small_file;
mod tail_cache;

pub use cleaner::{CleanStats, CleanerSettings, rules as cleaning};
pub use config::{Cleanup, ConfigError, FlushPolicy, LogConfig};
pub use error::LogError;
pub use file_cache::FileCache;
pub use index::SegmentIndex;
pub use leader_epochs::EpochStart;
pub use manager::{LogManager, ManagerConfig};
pub use partition::{
    AppendInfo, DiskUsage, LogOffsets, PartitionLog, TailStart, UploadChunk, UploadFailure,
};
pub use producers::{
    ProducerError, is_aborted_batch, max_producer_id_in, open_transaction_start_in,
    stable_offset_in, transactions_in,
};
pub use read::{AbortedTxn, Isolation, ReadChunk, ReadResult};
