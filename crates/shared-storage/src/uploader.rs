//! The write path of shared-storage mode: every `storage.flush.ms` (or as soon as
//! `storage.flush.bytes` wait), the appends of **all** partitions this broker leads
//! go into one WAL object, PUT under a name never used before; then one catalogue
//! transaction commits every partition's range, checking each one's leader epoch and
//! high watermark. Up to `storage.uploads.in.flight` objects are written at once;
//! their commits happen one after another, in the order the objects were made, so a
//! partition's ranges are committed in offset order.
//!
//! Outcomes, per partition: committed — its tail's high watermark moves and
//! `acks=all` waiters are answered; refused by the catalogue — the tail is fenced
//! (`NOT_LEADER_OR_FOLLOWER`); PUT failed or commit outcome unknown — the tail fails
//! with a retriable error, and the next request opens a new one from the catalogue,
//! which is the truth either way (an idempotent producer's retry of a batch that did
//! commit is recognised from the producer state committed with it).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use object_store::{ObjectStoreExt, PutPayload};
use spool_log::{PartitionLog, UploadChunk, UploadFailure};
use spool_metadata::{MetadataStore, ObjectCommit, PartitionKey, RangeCommit};
use spool_objects::ObjectStorage;
use spool_objects::wal::WalObjectBuilder;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, oneshot, watch};

use super::counts::StorageCounts;
use crate::StorageConfig;

/// Gathers appends and runs the flush loop.
#[derive(Debug)]
pub(super) struct Uploader {
    pending: Mutex<Pending>,
    wake: Notify,
    flush_after: Duration,
    flush_bytes: u64,
    /// `storage.tail.bytes`: what a tail keeps of its committed data.
    tail_bytes: u64,
    /// `storage.orphan.age.ms`: an object is committed within half of it, or never.
    orphan_age: Duration,
    /// A flush is wanted now, not `flush_after` from the oldest append (a partition
    /// is being handed over and waits for its last commit).
    urgent: std::sync::atomic::AtomicBool,
    /// Objects made, and objects whose commit (or failure) is done.
    started: AtomicU64,
    finished: watch::Sender<u64>,
}

/// Partitions with appends not yet taken.
#[derive(Debug, Default)]
struct Pending {
    logs: HashMap<PartitionKey, Weak<PartitionLog>>,
    bytes: u64,
    /// When the oldest append still waiting was made.
    since: Option<Instant>,
}

/// What the flush loop hands an upload task.
struct Upload {
    name: String,
    object: Bytes,
    parts: Vec<Part>,
    /// The commit of the object made before this one.
    after: Option<oneshot::Receiver<()>>,
    done: oneshot::Sender<()>,
    _permit: OwnedSemaphorePermit,
}

struct Part {
    log: Arc<PartitionLog>,
    range: RangeCommit,
    chunk: UploadChunk,
}

impl Uploader {
    pub(super) fn start(
        objects: ObjectStorage,
        catalogue: Arc<dyn MetadataStore>,
        settings: &StorageConfig,
        counts: Arc<StorageCounts>,
        stopped: watch::Receiver<bool>,
    ) -> (Arc<Uploader>, tokio::task::JoinHandle<()>) {
        let uploader = Arc::new(Uploader {
            pending: Mutex::new(Pending::default()),
            wake: Notify::new(),
            flush_after: settings.flush,
            flush_bytes: settings.flush_bytes,
            tail_bytes: settings.tail_bytes,
            orphan_age: settings.orphan_age,
            urgent: std::sync::atomic::AtomicBool::new(false),
            started: AtomicU64::new(0),
            finished: watch::Sender::new(0),
        });
        let in_flight = Arc::new(Semaphore::new(settings.uploads_in_flight.max(1)));
        let flusher = FlushLoop {
            uploader: uploader.clone(),
            objects,
            catalogue,
            counts,
            in_flight,
        };
        let flush_loop = tokio::spawn(flusher.run(stopped));
        (uploader, flush_loop)
    }

    /// Notes an append of `bytes` to `log`'s tail.
    pub(super) fn note(&self, key: PartitionKey, log: &Arc<PartitionLog>, bytes: usize) {
        let mut pending = self.lock();
        // A reopened tail replaces the failed one: its appends are the ones to take.
        pending.logs.insert(key, Arc::downgrade(log));
        pending.bytes += bytes as u64;
        let first = pending.since.is_none();
        pending.since.get_or_insert_with(Instant::now);
        let full = pending.bytes >= self.flush_bytes;
        drop(pending);
        if first || full {
            self.wake.notify_one();
        }
    }

    /// Flushes what waits now rather than when it is due.
    pub(super) fn flush_now(&self) {
        self.urgent.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    /// Waits until every object made so far is committed or failed.
    pub(super) async fn drain(&self) {
        let target = self.started.load(Ordering::Acquire);
        let mut finished = self.finished.subscribe();
        let _ = finished.wait_for(|done| *done >= target).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

struct FlushLoop {
    uploader: Arc<Uploader>,
    objects: ObjectStorage,
    catalogue: Arc<dyn MetadataStore>,
    counts: Arc<StorageCounts>,
    in_flight: Arc<Semaphore>,
}

impl FlushLoop {
    async fn run(self, mut stopped: watch::Receiver<bool>) {
        let mut previous: Option<oneshot::Receiver<()>> = None;
        loop {
            let stopping = self.wait_for_flush(&mut stopped).await;
            if let Some(upload) = self.next_object(&mut previous).await {
                let context = (
                    self.objects.clone(),
                    self.catalogue.clone(),
                    self.counts.clone(),
                );
                let uploader = self.uploader.clone();
                tokio::spawn(async move {
                    let committed = upload_and_commit(upload, context, uploader.orphan_age).await;
                    uploader.finished.send_modify(|done| *done += 1);
                    trim_tails(committed, uploader.tail_bytes).await;
                });
            }
            if stopping {
                return;
            }
        }
    }

    /// Waits until a flush is due: `flush.ms` after the oldest waiting append, or as
    /// soon as `flush.bytes` wait. Returns whether the broker is stopping (a last
    /// flush then takes what is left).
    async fn wait_for_flush(&self, stopped: &mut watch::Receiver<bool>) -> bool {
        loop {
            let (since, bytes) = {
                let pending = self.uploader.lock();
                (pending.since, pending.bytes)
            };
            if *stopped.borrow() {
                return true;
            }
            let Some(since) = since else {
                tokio::select! {
                    () = self.uploader.wake.notified() => {}
                    _ = stopped.changed() => {}
                }
                continue;
            };
            let due = since + self.uploader.flush_after;
            let urgent = self.uploader.urgent.swap(false, Ordering::AcqRel);
            if urgent || bytes >= self.uploader.flush_bytes || Instant::now() >= due {
                return false;
            }
            tokio::select! {
                () = self.uploader.wake.notified() => {}
                () = tokio::time::sleep_until(due.into()) => {}
                _ = stopped.changed() => {}
            }
        }
    }

    /// Takes every waiting append into one object, once an upload slot is free.
    async fn next_object(&self, previous: &mut Option<oneshot::Receiver<()>>) -> Option<Upload> {
        let permit = self.in_flight.clone().acquire_owned().await.ok()?;
        let (logs, since) = {
            let mut pending = self.uploader.lock();
            // Counted before any chunk is taken, so that a drain started from now on
            // waits for this object (balanced below if it turns out empty).
            let taken = std::mem::take(&mut *pending);
            (taken.logs, taken.since)
        };
        if let Some(since) = since {
            self.counts.flush_waited(since.elapsed());
        }
        let mut builder = WalObjectBuilder::new();
        let mut taken = Vec::with_capacity(logs.len());
        for (key, log) in logs {
            let Some(log) = log.upgrade() else { continue };
            let Some(chunk) = log.take_for_upload() else {
                continue;
            };
            let mut bytes = Vec::with_capacity(chunk.len());
            chunk
                .batches
                .iter()
                .for_each(|b| bytes.extend_from_slice(b));
            let added = builder.add(
                key.topic_id,
                key.partition,
                chunk.base_offset.0,
                chunk.last_offset.0,
                chunk.max_timestamp.0,
                &bytes,
            );
            if let Err(error) = added {
                tracing::error!(?key, %error, "a partition's appends cannot go into an object");
                log.upload_failed(UploadFailure::Storage);
                continue;
            }
            taken.push((key, log, chunk));
        }
        if builder.is_empty() {
            self.uploader.finished.send_modify(|done| *done += 1);
            return None;
        }
        let (object, entries) = builder.finish();
        let mut by_key: HashMap<PartitionKey, (Arc<PartitionLog>, UploadChunk)> = taken
            .into_iter()
            .map(|(key, log, chunk)| (key, (log, chunk)))
            .collect();
        let parts = entries
            .into_iter()
            .filter_map(|entry| {
                let key = PartitionKey {
                    topic_id: entry.topic_id,
                    partition: entry.partition,
                };
                let (log, chunk) = by_key.remove(&key)?;
                let range = RangeCommit {
                    key,
                    leader_epoch: chunk.leader_epoch,
                    from_offset: chunk.from_offset.0,
                    base_offset: chunk.base_offset.0,
                    last_offset: chunk.last_offset.0,
                    max_timestamp: chunk.max_timestamp.0,
                    position: i64::try_from(entry.position).unwrap_or(i64::MAX),
                    length: i64::from(entry.length),
                    producer_state: chunk.producer_state.clone(),
                };
                Some(Part { log, range, chunk })
            })
            .collect();
        let (done, next) = oneshot::channel();
        self.uploader.started.fetch_add(1, Ordering::AcqRel);
        Some(Upload {
            name: object_name(),
            object,
            parts,
            after: previous.replace(next),
            done,
            _permit: permit,
        })
    }
}

/// A name no object had before: the time (so that listings sort by age) and a random
/// id (so that two brokers, or two runs, never collide).
fn object_name() -> String {
    format!(
        "wal/{:013}-{}",
        spool_model::Timestamp::now().0,
        uuid::Uuid::new_v4().simple()
    )
}

/// Drops the committed data that tails hold beyond `keep_bytes` (it is in objects).
async fn trim_tails(logs: Vec<Arc<PartitionLog>>, keep_bytes: u64) {
    if logs.is_empty() {
        return;
    }
    let trimmed = tokio::task::spawn_blocking(move || {
        for log in logs {
            if let Err(error) = log.trim_tail(keep_bytes) {
                tracing::warn!(dir = %log.dir().display(), %error, "trimming a tail failed");
            }
        }
    });
    let _ = trimmed.await;
}

/// PUTs an object and commits it after the one before; returns the tails whose
/// range was committed.
async fn upload_and_commit(
    upload: Upload,
    (objects, catalogue, counts): (ObjectStorage, Arc<dyn MetadataStore>, Arc<StorageCounts>),
    orphan_age: Duration,
) -> Vec<Arc<PartitionLog>> {
    let Upload {
        name,
        object,
        parts,
        after,
        done,
        _permit,
    } = upload;
    let size = object.len() as u64;
    let started = Instant::now();
    let put = objects
        .store
        .put(&objects.path(&name), PutPayload::from(object))
        .await;
    counts.put_took(started.elapsed());
    // Commits in the order the objects were made, whatever order the PUTs end in.
    if let Some(after) = after {
        let _ = after.await;
    }
    let fail_all = |parts: &[Part]| {
        for part in parts {
            part.log.upload_failed(UploadFailure::Storage);
        }
    };
    if let Err(error) = put {
        tracing::warn!(object = %name, %error, "writing an object failed; its partitions answer a retriable error and reopen");
        StorageCounts::add(&counts.put_failures, 1);
        counts.note_write(Some(error.to_string()));
        fail_all(&parts);
        let _ = done.send(());
        return Vec::new();
    }
    StorageCounts::add(&counts.puts, 1);
    StorageCounts::add(&counts.put_bytes, size);
    counts.note_write(None);
    // An object older than half the orphan age is never committed: the collection
    // of orphans (by the store's own time of the object) may be about to delete it.
    let deadline = orphan_age / 2;
    if started.elapsed() >= deadline {
        tracing::warn!(object = %name, "an object waited too long for its commit; its partitions reopen");
        StorageCounts::add(&counts.commit_failures, 1);
        fail_all(&parts);
        let _ = done.send(());
        return Vec::new();
    }
    let commit = ObjectCommit {
        name: name.clone(),
        size: i64::try_from(size).unwrap_or(i64::MAX),
        ranges: parts.iter().map(|part| part.range.clone()).collect(),
    };
    let commit_started = Instant::now();
    let mut committed = Vec::new();
    let outcome = tokio::time::timeout(
        deadline.saturating_sub(started.elapsed()),
        catalogue.commit_object(&commit),
    )
    .await
    .unwrap_or_else(|_| {
        Err(spool_metadata::MetadataError::Retriable(
            "the commit took too long".to_owned(),
        ))
    });
    match outcome {
        Ok(accepted) => {
            counts.commit_took(commit_started.elapsed());
            StorageCounts::add(&counts.commits, 1);
            for (part, accepted) in parts.iter().zip(accepted) {
                if accepted {
                    part.log.uploaded(&part.chunk);
                    committed.push(part.log.clone());
                } else {
                    StorageCounts::add(&counts.fenced_ranges, 1);
                    tracing::warn!(key = ?part.range.key, "the catalogue refused a range: the partition moved on (another leader, or an earlier upload of it failed); its tail reopens");
                    part.log.upload_failed(UploadFailure::Fenced);
                }
            }
        }
        Err(error) => {
            // The commit may or may not have happened: the tails reopen from the
            // catalogue, which knows.
            tracing::warn!(object = %name, %error, "committing an object failed; its partitions reopen from the catalogue");
            StorageCounts::add(&counts.commit_failures, 1);
            fail_all(&parts);
        }
    }
    let _ = done.send(());
    committed
}
