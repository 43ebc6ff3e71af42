//! Shared-storage mode's settings (`storage.*`); the broker's settings table reads
//! and writes them.

use std::time::Duration;

/// Shared-storage mode's settings: with a URL, partition data lives in object storage
/// and the data directory holds only a cache.
#[derive(Debug, Clone)]
pub struct StorageConfig {
    /// `--storage-url`, `storage.url`: `None` keeps partitions in the data directory.
    pub url: Option<spool_objects::StorageUrl>,
    /// `storage.flush.ms`: how long appends wait to share one object.
    pub flush: Duration,
    /// `storage.flush.bytes`: an object is written as soon as this much is waiting.
    pub flush_bytes: u64,
    /// `storage.uploads.in.flight`: objects being written at the same time.
    pub uploads_in_flight: usize,
    /// `storage.cache.bytes`: the local cache of object bytes read.
    pub cache_bytes: u64,
    /// `storage.tail.bytes`: committed bytes a partition's tail keeps locally (for
    /// readers near the end) before its oldest segments leave it.
    pub tail_bytes: u64,
    /// `storage.gc.grace.ms`: how long an object nothing refers to any more stays
    /// before it is deleted (reads that found it just before finish).
    pub gc_grace: Duration,
    /// When and how small ranges are rewritten into segment objects.
    pub compaction: CompactionConfig,
    /// `storage.orphan.age.ms`: how old (by the object store's clock) an object that
    /// no commit made visible must be before it is deleted; the uploader commits an
    /// object within half of it or not at all.
    pub orphan_age: Duration,
    /// `storage.s3.endpoint`, `storage.s3.region`, `storage.s3.allow.http`: override
    /// the `AWS_*` variables (credentials come from the environment only).
    pub s3: spool_objects::S3Options,
}

/// `storage.compaction.*`: a partition's run of at least `min_ranges` ranges smaller
/// than half a block is rewritten into a segment object of blocks of `block_bytes`.
#[derive(Debug, Clone, Copy)]
pub struct CompactionConfig {
    /// `storage.compaction.block.bytes`.
    pub block_bytes: u64,
    /// `storage.compaction.min.ranges`.
    pub min_ranges: usize,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            block_bytes: 1 << 20,
            min_ranges: 16,
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            url: None,
            flush: Duration::from_millis(100),
            flush_bytes: 8 << 20,
            uploads_in_flight: 4,
            cache_bytes: 256 << 20,
            gc_grace: Duration::from_secs(60),
            tail_bytes: 64 << 20,
            compaction: CompactionConfig::default(),
            orphan_age: Duration::from_secs(15 * 60),
            s3: spool_objects::S3Options::default(),
        }
    }
}
