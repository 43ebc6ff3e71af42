//! Shared-storage mode (`--storage-url`): partition data lives in object storage and
//! the catalogue of the metadata store says what is where; the broker keeps only each
//! partition's tail (what it appended and has not yet seen committed, plus recent
//! data for readers) in the data directory, which is a cache: a broker started on an
//! empty one serves everything.
//!
//! - Opening a partition ([`SharedStorage::open_tail`]) reads its committed state from
//!   the catalogue (high watermark, producers, epochs) and starts an empty tail there.
//! - Appends go to the tail as in embedded mode; the [`uploader`] gathers every
//!   partition's appends into one object per flush and commits them; `acks=all` waits
//!   for that commit.
//! - Reads below the tail go to the [`reader`]: a bounded catalogue lookup and ranged
//!   GETs, through a local cache.
//!
//! Opening a tail is async (it reads and writes the catalogue, then creates the tail's
//! files on the blocking pool); finding a tail already open is not, and does no I/O
//! ([`SharedStorage::tail`]): the broker opens the tails a request needs before its
//! blocking work, which then only finds them. The rest of the partition seam is
//! blocking (it runs on the blocking pool): [`SharedStorage::wait_for`] runs a
//! catalogue or object read on the runtime and waits for it there.

pub mod cleaning;
pub mod compaction;
mod config;
mod counts;
mod error;
pub mod gc;
mod reader;
mod segments;
mod uploader;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use spool_log::{LogManager, PartitionLog, TailStart};
use spool_metadata::{MetadataStore, PartitionKey};
use spool_model::{Offset, TopicPartition};
use spool_objects::ObjectStorage;
use tokio::sync::watch;

pub use self::config::{CompactionConfig, StorageConfig};
pub use self::counts::StorageCounts;
pub use self::counts::{Latency, StorageStats};
pub use self::error::StorageError;
pub use self::reader::ObjectReader;
use self::uploader::Uploader;

/// The name readiness asks the object store about; no object is ever written there.
const PROBE_NAME: &str = "readiness-probe";

/// How long a failed object write counts against readiness, unless a write succeeds.
const RECENT_FAILURE: std::time::Duration = std::time::Duration::from_secs(30);

/// Object storage, the catalogue, and the tails this broker leads.
#[derive(Debug)]
pub struct SharedStorage {
    catalogue: Arc<dyn MetadataStore>,
    objects: ObjectStorage,
    /// `storage.gc.grace.ms`: how long an unreferenced object stays.
    gc_grace: std::time::Duration,
    compaction: CompactionConfig,
    /// `storage.orphan.age.ms`.
    orphan_age: std::time::Duration,
    uploader: Arc<Uploader>,
    pub reader: ObjectReader,
    pub counts: Arc<StorageCounts>,
    /// Held while a tail is opened, so that two requests open a partition once (an
    /// async lock: the opening awaits the catalogue while it holds it).
    opening: tokio::sync::Mutex<()>,
    /// Partitions being handed to another broker: no tail opens for them (see
    /// [`SharedStorage::begin_handover`]).
    handing_over: Mutex<std::collections::HashSet<TopicPartition>>,
    /// Each open tail's catalogue marks.
    marks: RwLock<HashMap<TopicPartition, Arc<TailMarks>>>,
    runtime: tokio::runtime::Handle,
    /// Tells the flush loop to take what is left and stop.
    closing: watch::Sender<bool>,
    flush_loop: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// What the catalogue says of a partition whose tail is open here, kept up to date
/// by the broker's own changes.
#[derive(Debug)]
pub struct TailMarks {
    /// The log start (the tail itself starts at the committed end it was opened at).
    pub log_start: AtomicI64,
    /// A compacted partition is clean below it in object storage: reads below it go
    /// there, not to the tail's uncleaned copy.
    pub cleaned: AtomicI64,
}

/// A partition being handed to another broker (see [`SharedStorage::begin_handover`]).
#[derive(Debug)]
pub struct Handover {
    /// Its tail, sealed, if one was open here.
    pub tail: Option<Arc<PartitionLog>>,
}

/// A partition of shared-storage mode as the partition seam hands it out.
#[derive(Debug, Clone)]
pub struct SharedPartition {
    pub key: PartitionKey,
    pub storage: Arc<SharedStorage>,
    marks: Arc<TailMarks>,
}

impl SharedPartition {
    /// The partition's log start (the catalogue's, not the tail's).
    pub fn log_start(&self) -> Offset {
        Offset(self.marks.log_start.load(Ordering::Acquire))
    }

    /// Below it the partition is clean in object storage (compacted topics).
    pub fn cleaned(&self) -> Offset {
        Offset(self.marks.cleaned.load(Ordering::Acquire))
    }

    /// Moves the log start to `offset` (DeleteRecords, retention) in the catalogue
    /// and in the tail; returns the new log start.
    pub fn advance_log_start(
        &self,
        log: &PartitionLog,
        offset: Offset,
    ) -> Result<Offset, StorageError> {
        // An open transaction's records stay until it is decided.
        let last_stable = log.stable_offset();
        if offset > last_stable {
            return Err(spool_log::LogError::OffsetBeyondStableOffset {
                requested: offset,
                last_stable,
            }
            .into());
        }
        let catalogue = self.storage.catalogue.clone();
        let key = self.key;
        let start = self
            .storage
            .wait_for(async move { catalogue.advance_log_start(key, offset.0).await })??;
        self.marks.log_start.fetch_max(start, Ordering::AcqRel);
        let local = log.offsets();
        if start > local.log_start.0 {
            log.advance_log_start(Offset(start).min(local.high_watermark))?;
        }
        Ok(Offset(start))
    }

    /// Notes an append to the tail: the uploader takes it with the next flush.
    pub fn appended(&self, log: &Arc<PartitionLog>, bytes: usize) {
        self.storage.uploader.note(self.key, log, bytes);
    }
}

impl SharedStorage {
    /// The object store and the prefix under which Spool keeps its objects (others
    /// keep theirs beside `wal/` and `seg/`: the index's `index/`).
    pub fn objects(&self) -> &ObjectStorage {
        &self.objects
    }

    /// The catalogue: what is where in object storage, per partition.
    pub fn catalogue(&self) -> &Arc<dyn MetadataStore> {
        &self.catalogue
    }

    /// Starts the uploader, until [`SharedStorage::close`].
    pub fn start(
        objects: ObjectStorage,
        catalogue: Arc<dyn MetadataStore>,
        settings: &StorageConfig,
    ) -> Arc<SharedStorage> {
        let counts = Arc::new(StorageCounts::default());
        let (closing, closed) = watch::channel(false);
        let (uploader, flush_loop) = Uploader::start(
            objects.clone(),
            catalogue.clone(),
            settings,
            counts.clone(),
            closed,
        );
        tokio::spawn(log_stats(counts.clone(), closing.subscribe()));
        Arc::new(SharedStorage {
            gc_grace: settings.gc_grace,
            compaction: settings.compaction,
            orphan_age: settings.orphan_age,
            objects: objects.clone(),
            reader: ObjectReader::new(
                objects,
                catalogue.clone(),
                counts.clone(),
                settings.cache_bytes,
            ),
            catalogue,
            uploader,
            counts,
            opening: tokio::sync::Mutex::new(()),
            handing_over: Mutex::new(std::collections::HashSet::new()),
            marks: RwLock::new(HashMap::new()),
            runtime: tokio::runtime::Handle::current(),
            closing,
            flush_loop: Mutex::new(Some(flush_loop)),
        })
    }

    /// Uploads what is waiting, waits for every upload to be committed (or to
    /// fail), and stops the uploader.
    pub async fn close(&self) {
        let _ = self.closing.send(true);
        let flush_loop = self
            .flush_loop
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(flush_loop) = flush_loop {
            let _ = flush_loop.await;
        }
        self.uploader.drain().await;
    }

    /// Why the last object write failed, if that was within the last 30 s and none
    /// succeeded since.
    pub fn write_failure(&self) -> Option<String> {
        self.counts.write_failure(RECENT_FAILURE)
    }

    /// Whether the object store answers: a HEAD of a name no object has (not found
    /// is an answer). Readiness asks it, under its own timeout.
    pub async fn probe(&self) -> Result<(), String> {
        let path = self.objects.path(PROBE_NAME);
        match object_store::ObjectStoreExt::head(&self.objects.store, &path).await {
            Ok(_) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(error.to_string()),
        }
    }

    /// The counts of the write and read paths.
    pub fn stats(&self) -> StorageStats {
        self.counts.snapshot()
    }

    /// The partition's tail if one is open here under `leader_epoch` (or a newer one)
    /// and has not failed: no I/O, no wait. `None`: [`SharedStorage::open_tail`] opens
    /// one.
    pub fn tail(
        self: &Arc<Self>,
        logs: &LogManager,
        log_key: &TopicPartition,
        key: PartitionKey,
        leader_epoch: i32,
    ) -> Option<(Arc<PartitionLog>, SharedPartition)> {
        let log = logs.opened_partition(log_key).filter(|log| {
            log.is_tail() && !log.has_failed() && log.leader_epoch() >= leader_epoch
        })?;
        let marks = self.marks_of(log_key)?;
        Some((
            log,
            SharedPartition {
                key,
                storage: self.clone(),
                marks,
            },
        ))
    }

    /// The partition's tail, opened from the catalogue if this broker has none (or
    /// its tail failed). `leader_epoch` is the epoch this broker leads the partition
    /// under; a catalogue at another epoch means another leader has it. The tail's
    /// files are created on the blocking pool (`logs` is shared with that task).
    pub async fn open_tail(
        self: &Arc<Self>,
        logs: &Arc<LogManager>,
        log_key: &TopicPartition,
        key: PartitionKey,
        leader_epoch: i32,
    ) -> Result<(Arc<PartitionLog>, SharedPartition), StorageError> {
        if let Some(open) = self.tail(logs, log_key, key, leader_epoch) {
            return Ok(open);
        }
        if logs
            .opened_partition(log_key)
            .is_some_and(|log| log.is_tail())
        {
            // Replacing a failed tail, or one of an older leader epoch (the partition
            // moved away and back): its uploads still in flight commit (or fail)
            // first, so that the catalogue's end is final when the new tail starts
            // there (else the new tail's first commits would be refused). Waited for
            // outside the lock below, which other partitions' opens take.
            self.uploader.drain().await;
        }
        let _opening = self.opening.lock().await;
        if let Some(open) = self.tail(logs, log_key, key, leader_epoch) {
            return Ok(open);
        }
        if self.is_handing_over(log_key) {
            return Err(StorageError::NotLeader);
        }
        let state = self
            .catalogue
            .partition_state(key)
            .await?
            .ok_or(StorageError::UnknownTopicOrPartition)?;
        if state.leader_epoch != leader_epoch {
            return Err(StorageError::NotLeader);
        }
        if state.epochs.last().is_none_or(|(e, _)| *e < leader_epoch) {
            self.catalogue
                .begin_epoch(key, leader_epoch, state.high_watermark)
                .await?;
        }
        let mut epochs: Vec<(i32, Offset)> = state
            .epochs
            .iter()
            .map(|(epoch, start)| (*epoch, Offset(*start)))
            .collect();
        if epochs.last().is_none_or(|(e, _)| *e < leader_epoch) {
            epochs.push((leader_epoch, Offset(state.high_watermark)));
        }
        let start = TailStart {
            next_offset: Offset(state.high_watermark),
            producer_state: state.producer_state,
            epochs,
        };
        let log = {
            let (logs, log_key) = (logs.clone(), log_key.clone());
            tokio::task::spawn_blocking(move || {
                let log = logs.open_tail(&log_key, start)?;
                log.become_leader(leader_epoch)?;
                Ok::<_, StorageError>(log)
            })
            .await
            .map_err(|error| StorageError::Interrupted(error.to_string()))??
        };
        let marks = Arc::new(TailMarks {
            log_start: AtomicI64::new(state.log_start),
            cleaned: AtomicI64::new(state.cleaned_offset),
        });
        self.marks
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(log_key.clone(), marks.clone());
        tracing::debug!(partition = %log_key, high_watermark = state.high_watermark, "opened a tail");
        let shared = SharedPartition {
            key,
            storage: self.clone(),
            marks,
        };
        Ok((log, shared))
    }

    /// Begins handing the partition over, unless that is under way already (`None`):
    /// from now on no tail opens for it, and the tail already open under
    /// `leader_epoch`, if any, is sealed (it refuses appends and uploads what it holds
    /// at once) and returned. Under the opening lock, so that a tail being opened
    /// concurrently is either found and sealed here or not opened.
    pub async fn begin_handover(
        &self,
        logs: &LogManager,
        log_key: &TopicPartition,
        leader_epoch: i32,
    ) -> Option<Handover> {
        let _opening = self.opening.lock().await;
        let begun = self
            .handing_over
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(log_key.clone());
        if !begun {
            return None;
        }
        let tail = self.marks_of(log_key).and_then(|_| {
            logs.opened_partition(log_key)
                .filter(|log| log.is_tail() && log.leader_epoch() == leader_epoch)
        });
        if let Some(tail) = &tail {
            tail.seal();
            self.uploader.flush_now();
        }
        Some(Handover { tail })
    }

    /// The handover of the partition is over (done or abandoned): a tail may open
    /// for it again (the catalogue refuses one under an epoch that moved on).
    pub fn end_handover(&self, log_key: &TopicPartition) {
        self.handing_over
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(log_key);
    }

    /// Whether the partition is being handed over (see
    /// [`SharedStorage::begin_handover`]).
    pub fn is_handing_over(&self, log_key: &TopicPartition) -> bool {
        self.handing_over
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(log_key)
    }

    /// The catalogue marks of the partition's open tail, if it has one.
    pub fn marks_of(&self, log_key: &TopicPartition) -> Option<Arc<TailMarks>> {
        self.marks
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(log_key)
            .cloned()
    }

    /// Runs `work` on the runtime and waits for it: for the blocking partition seam.
    /// Not to be called from an async task of a single-threaded runtime, which would
    /// wait for itself.
    pub fn wait_for<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = T> + Send + 'static,
    ) -> Result<T, StorageError> {
        let (done, answer) = std::sync::mpsc::sync_channel(1);
        self.runtime.spawn(async move {
            let _ = done.send(work.await);
        });
        answer
            .recv()
            .map_err(|_| StorageError::Interrupted("the runtime stopped".to_owned()))
    }
}

/// Logs the counts every ten seconds while they move (operators and benchmarks read
/// them there until the broker serves metrics), and once more at the end.
async fn log_stats(counts: Arc<StorageCounts>, mut closing: watch::Receiver<bool>) {
    let mut last = StorageStats::default();
    loop {
        let stopping = tokio::select! {
            () = tokio::time::sleep(std::time::Duration::from_secs(10)) => false,
            _ = closing.changed() => true,
        };
        let stats = counts.snapshot();
        if stats != last {
            tracing::info!(
                puts = stats.puts,
                put_bytes = stats.put_bytes,
                put_failures = stats.put_failures,
                gets = stats.gets,
                get_bytes = stats.get_bytes,
                cache_hits = stats.cache_hits,
                cache_misses = stats.cache_misses,
                commits = stats.commits,
                commit_failures = stats.commit_failures,
                fenced_ranges = stats.fenced_ranges,
                flush_wait_p99_us = stats.flush_wait.p99_us,
                put_p50_us = stats.put.p50_us,
                put_p99_us = stats.put.p99_us,
                commit_p50_us = stats.commit.p50_us,
                commit_p99_us = stats.commit.p99_us,
                "object storage"
            );
            last = stats;
        }
        if stopping {
            return;
        }
    }
}
