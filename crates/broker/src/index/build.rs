//! A partition leader's part: read what the partition committed past its index into
//! the tail, write the tail as a chunk when it is big enough, delete chunks below the
//! log start, build again per round one chunk that the cleaner went over, or of
//! fields no longer indexed; and the
//! broker's part: delete the chunks of topics deleted or no longer indexed.
//!
//! Records are indexed up to the last stable offset (and, in embedded mode, the
//! fsynced offset), so a chunk never covers an offset that a crash could hand to
//! another record or a transaction still open; aborted transactions' records are
//! indexed too (a view read read_uncommitted shows them), and searches leave them
//! out.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use spool_index::chunk::{ChunkBuilder, ChunkSummary};
use spool_index::{IndexFields, ValueReader};
use spool_metadata::PartitionKey;
use spool_model::RecordBatchHeader;

use super::batches::{Committed, Visit, walk};
use super::source::Source;
use super::state::{LedIndex, lock};
use super::store::{ChunkRef, ChunkStore};
use super::values::RegisteredValues;
use crate::partitions::{PartitionHandle, on_blocking_pool};
use crate::shared::Shared;
use crate::topics::Topic;

/// Bytes of batches read at a time.
const READ_BYTES: u64 = 4 << 20;
/// Bytes of batches one partition reads per round: a backlog shares the broker.
const ROUND_READ_BYTES: u64 = 64 << 20;
/// Every how many rounds deleted topics' chunks are looked for.
const SWEEP_ROUNDS: u64 = 10;
/// In shared-storage mode, how old the newest chunk of a topic this broker does not
/// know (or knows unindexed) must be before its chunks are deleted: another broker
/// may know of a topic created or indexed a moment ago.
const UNKNOWN_TOPIC_AGE_MS: i64 = 10 * 60 * 1000;

/// One look at every indexed topic's partitions led here.
pub(super) async fn round(shared: &Arc<Shared>, store: &Arc<ChunkStore>, rounds: u64) {
    let mut led_now = HashSet::new();
    for topic in shared.topics().matching(|topic| topic.index.is_some()) {
        let Some(fields) = topic.index.clone() else {
            continue;
        };
        for index in 0..topic.record.partitions {
            let Some(epoch) = shared.partitions().led_epoch(&topic, index) else {
                continue;
            };
            let key = topic.partition_key(index);
            led_now.insert(key);
            // What failed is tried again next round, from where the index is: the
            // tail goes on from the last batch it took (a batch taken in part is
            // taken again: a duplicate entry costs nothing). A chunk the cleaner went
            // over whose rebuild failed is not tried again (best effort, docs/index.md):
            // its stale entries cost a read each, never a wrong answer.
            if let Err(error) = partition(shared, store, &topic, &fields, index, epoch).await {
                tracing::warn!(
                    topic = %topic.record.name,
                    partition = index,
                    %error,
                    "indexing a partition failed; it is tried again"
                );
            }
        }
    }
    let gone: Vec<PartitionKey> = shared
        .indexes()
        .led_map()
        .keys()
        .filter(|key| !led_now.contains(key))
        .copied()
        .collect();
    for key in gone {
        release(shared, store, key).await;
    }
    if rounds.is_multiple_of(SWEEP_ROUNDS) {
        sweep(shared, store).await;
    }
}

/// Writes the tails of every partition indexed here as chunks (the broker stops).
pub(super) async fn release_all(shared: &Arc<Shared>, store: &Arc<ChunkStore>) {
    let keys: Vec<PartitionKey> = shared.indexes().led_map().keys().copied().collect();
    for key in keys {
        release(shared, store, key).await;
    }
}

/// Stops indexing a partition here: its tail is written as a chunk (what it indexed
/// was committed, so the chunk is right whoever leads the partition now).
async fn release(shared: &Arc<Shared>, store: &Arc<ChunkStore>, key: PartitionKey) {
    let Some(led) = shared.indexes().led_map().remove(&key) else {
        return;
    };
    let indexed = shared
        .topics()
        .by_id(key.topic_id)
        .is_some_and(|topic| topic.index.is_some());
    if !indexed {
        // Deleted, or no longer indexed: its chunks go in the next sweep.
        return;
    }
    seal(&led);
    if let Err(error) = write_sealed(store, &led, key).await {
        tracing::warn!(%error, "writing an index tail failed: the next leader builds it again");
    }
}

async fn partition(
    shared: &Arc<Shared>,
    store: &Arc<ChunkStore>,
    topic: &Arc<Topic>,
    fields: &Arc<IndexFields>,
    index: i32,
    epoch: i32,
) -> Result<(), String> {
    let handle = match shared.partitions().open(topic.clone(), index, -1).await {
        Ok(handle) => handle,
        Err(error) if error.is_not_leader() => return Ok(()),
        Err(error) => return Err(error.to_string()),
    };
    let key = topic.partition_key(index);
    let led = match shared
        .indexes()
        .led(key)
        .filter(|led| lock(led).epoch == epoch)
    {
        Some(led) => led,
        None => {
            let led = Arc::new(Mutex::new(start(store, key, &handle, fields, epoch).await?));
            shared.indexes().led_map().insert(key, led.clone());
            led
        }
    };
    let log_start = handle.log_start().0;
    {
        let mut led = lock(&led);
        if *led.fields != **fields {
            // The tail starts again with the new fields; older chunks are built again.
            let first = led
                .chunks
                .last()
                .map_or(log_start, |c| c.next)
                .max(log_start);
            led.fields = fields.clone();
            led.tail = ChunkBuilder::new(fields, first);
        }
    }
    drop_below(store, &led, log_start).await?;
    if topic.log.cleanup.compact {
        let cleaned = cleaned_up_to(&handle).await?;
        let mut led = lock(&led);
        let seen = led.cleaned;
        if cleaned > seen {
            let over: Vec<String> = led
                .chunks
                .iter()
                .filter(|chunk| chunk.first < cleaned && chunk.next > seen)
                .map(|chunk| chunk.name.clone())
                .collect();
            led.cleaned_over.extend(over);
            led.cleaned = cleaned;
        }
    }
    let chunk_bytes = shared.current_config().index_chunk_bytes;
    let values = shared.indexes().values(shared.metadata());
    read_forward(chunk_bytes, store, &handle, &led, key, &values).await?;
    rebuild_one(store, &handle, &led, key, &values).await
}

/// The index of a partition this broker starts leading: its chunks (those that
/// overlap an earlier one, or lie below the log start, deleted) and an empty tail
/// after them.
async fn start(
    store: &ChunkStore,
    key: PartitionKey,
    handle: &PartitionHandle,
    fields: &Arc<IndexFields>,
    epoch: i32,
) -> Result<LedIndex, String> {
    let log_start = handle.log_start().0;
    let mut chunks: Vec<ChunkRef> = Vec::new();
    for chunk in store.list(key).await? {
        let overlaps = chunks.last().is_some_and(|last| chunk.first < last.next);
        if overlaps || chunk.next <= log_start {
            store.delete(&chunk.name).await?;
        } else {
            chunks.push(chunk);
        }
    }
    let first = chunks.last().map_or(log_start, |c| c.next).max(log_start);
    Ok(LedIndex {
        epoch,
        fields: fields.clone(),
        chunks,
        sealed: Vec::new(),
        tail: ChunkBuilder::new(fields, first),
        // Chunks found here are taken as they are: only what the cleaner does from
        // now on has them built again.
        cleaned: cleaned_up_to(handle).await?,
        cleaned_over: Vec::new(),
    })
}

/// How far a compacted partition is cleaned (zero for a partition never cleaned).
async fn cleaned_up_to(handle: &PartitionHandle) -> Result<i64, String> {
    if let Some(shared) = &handle.shared {
        return Ok(shared.cleaned().0);
    }
    let log = handle.log.clone();
    on_blocking_pool(move || log.cleaned_up_to().map(|offset| offset.0))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
}

/// Deletes the chunks wholly below the log start; a tail below it starts again there.
async fn drop_below(
    store: &ChunkStore,
    led: &Mutex<LedIndex>,
    log_start: i64,
) -> Result<(), String> {
    let below: Vec<ChunkRef> = {
        let mut led = lock(led);
        if led.tail.next() < log_start {
            led.tail = ChunkBuilder::new(&led.fields.clone(), log_start);
        }
        let (below, kept) = led
            .chunks
            .drain(..)
            .partition(|chunk| chunk.next <= log_start);
        led.chunks = kept;
        below
    };
    for chunk in below {
        store.delete(&chunk.name).await?;
    }
    Ok(())
}

/// Takes the committed records past the tail into it, a chunk written whenever it
/// covers `index.chunk.bytes`.
async fn read_forward(
    chunk_bytes: u64,
    store: &ChunkStore,
    handle: &PartitionHandle,
    led: &Arc<Mutex<LedIndex>>,
    key: PartitionKey,
    values: &Arc<RegisteredValues>,
) -> Result<(), String> {
    let mut read = 0_u64;
    while read < ROUND_READ_BYTES {
        let (from, fields) = {
            let led = lock(led);
            (led.tail.next(), led.fields.clone())
        };
        let end = indexable_end(handle);
        if from >= end {
            break;
        }
        let (reader, into, values) = (handle.clone(), led.clone(), values.clone());
        let walked = on_blocking_pool(move || {
            let (bytes, _) = Source::Led(reader).read(from, READ_BYTES)?;
            let mut led = lock(&into);
            let mark = led.tail.mark();
            let mut visit = TailVisit {
                fields: &fields,
                tail: &mut led.tail,
                values: &*values,
            };
            let walked = walk(&bytes, &[], from, end, fields.reads_headers(), &mut visit);
            if walked.is_err() {
                // A batch taken in part is taken again whole in a later round.
                led.tail.rollback(&mark);
            }
            walked
        })
        .await
        .map_err(|e| e.to_string())??;
        read += walked.bytes;
        let full = lock(led).tail.data_bytes() >= chunk_bytes;
        if full || walked.stopped {
            seal(led);
            write_sealed(store, led, key).await?;
        }
        if walked.next <= from && !walked.stopped {
            break;
        }
    }
    Ok(())
}

/// Where indexing stops for now: the last stable offset, and in embedded mode the
/// fsynced offset.
fn indexable_end(handle: &PartitionHandle) -> i64 {
    let stable = handle.log.stable_offset().0;
    if handle.shared.is_some() {
        stable
    } else {
        stable.min(handle.log.offsets().durable.0)
    }
}

/// Finishes the tail (if it covers anything) and starts the next after it.
fn seal(led: &Mutex<LedIndex>) {
    let mut led = lock(led);
    if led.tail.next() > led.tail.first() {
        let next = ChunkBuilder::new(&led.fields.clone(), led.tail.next());
        let sealed = std::mem::replace(&mut led.tail, next);
        led.sealed.push(sealed);
    }
}

/// Writes the sealed tails as chunks, oldest first.
async fn write_sealed(
    store: &ChunkStore,
    led: &Mutex<LedIndex>,
    key: PartitionKey,
) -> Result<(), String> {
    loop {
        let Some(sealed) = lock(led).sealed.first().cloned() else {
            return Ok(());
        };
        let (first, next) = (sealed.first(), sealed.next());
        let name = ChunkStore::name(key, first, next);
        let bytes = on_blocking_pool(move || sealed.finish())
            .await
            .map_err(|e| e.to_string())?;
        let size = store.put(&name, bytes).await?;
        let mut led = lock(led);
        led.sealed.remove(0);
        led.chunks.push(ChunkRef {
            first,
            next,
            size,
            name,
        });
        led.chunks.sort_by_key(|chunk| chunk.first);
    }
}

/// Builds again the first chunk that lacks a field now indexed, or the first gap
/// between chunks (a chunk deleted as damaged), from the log.
async fn rebuild_one(
    store: &ChunkStore,
    handle: &PartitionHandle,
    led: &Arc<Mutex<LedIndex>>,
    key: PartitionKey,
    values: &Arc<RegisteredValues>,
) -> Result<(), String> {
    let (chunks, fields, tail_first, cleaned_over) = {
        let mut led = lock(led);
        let over = led.cleaned_over.pop();
        (
            led.chunks.clone(),
            led.fields.clone(),
            led.tail.first(),
            over,
        )
    };
    if let Some(chunk) = cleaned_over.and_then(|name| chunks.iter().find(|c| c.name == name)) {
        return rebuild(
            store,
            handle,
            led,
            key,
            (chunk.first, chunk.next),
            Some(chunk),
            values,
        )
        .await;
    }
    let names: Vec<String> = fields.fields().iter().map(ToString::to_string).collect();
    let mut previous_end = None;
    for chunk in &chunks {
        if let Some(end) = previous_end
            && end < chunk.first
        {
            return rebuild(store, handle, led, key, (end, chunk.first), None, values).await;
        }
        previous_end = Some(chunk.next);
        let summary = match store.summary(chunk).await {
            Ok(summary) => summary,
            Err(error) => {
                tracing::warn!(%error, "an index chunk cannot be read: it is built again");
                return rebuild(
                    store,
                    handle,
                    led,
                    key,
                    (chunk.first, chunk.next),
                    Some(chunk),
                    values,
                )
                .await;
            }
        };
        if !same_fields(&summary, &names) {
            return rebuild(
                store,
                handle,
                led,
                key,
                (chunk.first, chunk.next),
                Some(chunk),
                values,
            )
            .await;
        }
    }
    if let Some(end) = previous_end
        && end < tail_first
    {
        return rebuild(store, handle, led, key, (end, tail_first), None, values).await;
    }
    Ok(())
}

fn same_fields(summary: &ChunkSummary, names: &[String]) -> bool {
    summary.field_names().eq(names.iter().map(String::as_str))
}

/// Builds the chunk of `range` from the log with the fields indexed now, in place of
/// `replaced`.
async fn rebuild(
    store: &ChunkStore,
    handle: &PartitionHandle,
    led: &Arc<Mutex<LedIndex>>,
    key: PartitionKey,
    range: (i64, i64),
    replaced: Option<&ChunkRef>,
    values: &Arc<RegisteredValues>,
) -> Result<(), String> {
    let fields = lock(led).fields.clone();
    let first = range.0.max(handle.log_start().0);
    let (reader, fields_read, values) = (handle.clone(), fields.clone(), values.clone());
    let builder = on_blocking_pool(move || {
        let source = Source::Led(reader);
        let mut builder = ChunkBuilder::new(&fields_read, first);
        while builder.next() < range.1 {
            let from = builder.next();
            let (bytes, _) = source.read(from, READ_BYTES)?;
            let mut visit = TailVisit {
                fields: &fields_read,
                tail: &mut builder,
                values: &*values,
            };
            let walked = walk(
                &bytes,
                &[],
                from,
                range.1,
                fields_read.reads_headers(),
                &mut visit,
            )?;
            if walked.stopped {
                return Err(format!("offsets {first} to {} span too many", range.1));
            }
            if walked.next <= from {
                // Nothing left before the range's end (the cleaner emptied it), or
                // nothing read: the chunk would claim offsets it never saw.
                if walked.beyond {
                    break;
                }
                return Err(format!("nothing could be read at offset {from}"));
            }
        }
        Ok(builder)
    })
    .await
    .map_err(|e| e.to_string())??;
    let next = builder.next().max(range.1);
    let name = ChunkStore::name(key, first, next);
    let bytes = on_blocking_pool(move || builder.finish())
        .await
        .map_err(|e| e.to_string())?;
    let size = store.put(&name, bytes).await?;
    {
        let mut led = lock(led);
        led.chunks
            .retain(|chunk| Some(&chunk.name) != replaced.map(|r| &r.name));
        led.chunks.push(ChunkRef {
            first,
            next,
            size,
            name,
        });
        led.chunks.sort_by_key(|chunk| chunk.first);
    }
    // A search that listed the old chunk a moment ago reads its range instead.
    if let Some(old) = replaced {
        store.delete(&old.name).await?;
    }
    Ok(())
}

/// Deletes the chunks of topics that no longer exist or are no longer indexed.
async fn sweep(shared: &Arc<Shared>, store: &ChunkStore) {
    let topics = match store.topics().await {
        Ok(topics) => topics,
        Err(error) => {
            tracing::warn!(%error, "listing the indexes failed");
            return;
        }
    };
    let now = shared.clock().now_ms();
    for (id, newest) in topics {
        let indexed = shared
            .topics()
            .by_id(id)
            .is_some_and(|topic| topic.index.is_some());
        let settled = shared.storage().is_none() || now - newest > UNKNOWN_TOPIC_AGE_MS;
        if !indexed && settled {
            match store.delete_topic(id).await {
                Ok(()) => {
                    tracing::info!(topic_id = %id, "deleted the index of a topic deleted or no longer indexed")
                }
                Err(error) => tracing::warn!(%error, "deleting an index failed"),
            }
        }
    }
}

/// Takes a walk's records into a builder, stopping before a batch past its range.
struct TailVisit<'a> {
    fields: &'a IndexFields,
    tail: &'a mut ChunkBuilder,
    values: &'a dyn ValueReader,
}

impl Visit for TailVisit<'_> {
    fn wants(&mut self, header: &RecordBatchHeader) -> bool {
        self.tail.takes(header.last_offset().0)
    }

    fn batch_done(&mut self, next: i64, bytes: u64) {
        self.tail.covered(next, bytes);
    }

    fn record(&mut self, record: &Committed<'_>) -> Result<(), String> {
        self.tail
            .add_record(
                self.fields,
                record.offset,
                record.timestamp,
                &record.view,
                self.values,
            )
            .map_err(|error| format!("offset {}: {error}", record.offset))
    }
}
