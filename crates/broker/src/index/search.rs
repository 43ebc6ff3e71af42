//! A search of a topic's index: the committed records whose field has a value, in
//! one partition or all, within a time range, newest or oldest first.
//!
//! Per partition, the offsets from the log start to the last stable offset are
//! covered by chunks (the leader's list, or the store's listing on another broker),
//! the leader's tails in memory, and what neither covers (the newest records, a
//! chunk of fields no longer indexed), which is read whole. A chunk whose bloom
//! filter says no, or whose records are all outside the time range, is skipped; the
//! others' entries name offsets, whose batches are read and whose records are kept
//! when their field has the value. A view is searched through its source, its
//! filter applied to what is found.

use std::collections::BTreeSet;
use std::sync::Arc;

use spool_index::{IndexField, value_hash};
use spool_model::TimestampType;

use super::batches::{Committed, Visit, walk};
use super::source::{Source, Unreadable};
use super::store::{ChunkRef, ChunkStore};
use super::values::RegisteredValues;
use crate::errors::code;
use crate::partitions::{PartitionError, on_blocking_pool};
use crate::shared::Shared;
use crate::topics::Topic;

/// Bytes of batches read at a time where no chunk covers.
const SCAN_READ_BYTES: u64 = 4 << 20;
/// Candidates checked per step (a step reads their batches).
const CHECK_STEP: usize = 256;

/// What to find.
#[derive(Debug, Clone)]
pub(crate) struct Search {
    pub(crate) topic: String,
    /// As `index.fields` writes it.
    pub(crate) field: String,
    pub(crate) value: Vec<u8>,
    pub(crate) partition: Option<i32>,
    pub(crate) from: i64,
    pub(crate) to: i64,
    pub(crate) limit: usize,
    pub(crate) newest_first: bool,
}

/// A record found.
#[derive(Debug, Clone)]
pub(crate) struct FoundRecord {
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) timestamp_type: TimestampType,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) value: Option<Vec<u8>>,
    pub(crate) headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// What a search found and what it read.
#[derive(Debug, Default)]
pub(crate) struct Found {
    pub(crate) records: Vec<FoundRecord>,
    pub(crate) chunks_read: u64,
    pub(crate) batches_read: u64,
    pub(crate) scanned_bytes: u64,
}

/// Why a search has no answer: a Kafka error code and a message.
#[derive(Debug)]
pub(crate) struct SearchError {
    pub(crate) code: i16,
    pub(crate) message: String,
}

impl SearchError {
    fn new(code: i16, message: impl Into<String>) -> SearchError {
        SearchError {
            code,
            message: message.into(),
        }
    }
}

/// The searched partition's part of the answer.
#[derive(Debug, Default)]
struct PartitionFound {
    records: Vec<FoundRecord>,
    chunks_read: u64,
    batches_read: u64,
    scanned_bytes: u64,
}

/// What covers a stretch of a partition's offsets.
#[derive(Debug)]
enum Cover {
    Chunk(ChunkRef),
    /// A tail in memory and the offsets it names.
    Memory(i64, i64, Vec<i64>),
    /// Nothing: read it.
    Scan(i64, i64),
}

impl Cover {
    fn range(&self) -> (i64, i64) {
        match self {
            Cover::Chunk(chunk) => (chunk.first, chunk.next),
            Cover::Memory(first, next, _) | Cover::Scan(first, next) => (*first, *next),
        }
    }
}

/// What a partition's search needs, shared by its steps.
struct Ask {
    field: IndexField,
    name: String,
    value: Vec<u8>,
    hash: u64,
    from: i64,
    to: i64,
    limit: usize,
    newest_first: bool,
    view_filter: Option<Arc<spool_views::filter::Filter>>,
    /// How records' values are read (the build's way).
    values: Arc<RegisteredValues>,
}

pub(crate) async fn find(shared: &Arc<Shared>, search: Search) -> Result<Found, SearchError> {
    let topic = shared.topics().get(&search.topic).ok_or_else(|| {
        SearchError::new(
            code::UNKNOWN_TOPIC_OR_PARTITION,
            format!("topic {} does not exist", search.topic),
        )
    })?;
    let data = shared.partitions().source_of(&topic).ok_or_else(|| {
        SearchError::new(
            code::UNKNOWN_TOPIC_OR_PARTITION,
            format!("the source of view {} does not exist", search.topic),
        )
    })?;
    let fields = data.index.clone().ok_or_else(|| {
        SearchError::new(
            code::INVALID_REQUEST,
            format!(
                "topic {} has no index: set index.fields (docs/index.md)",
                data.record.name
            ),
        )
    })?;
    let field = fields
        .position(&search.field)
        .and_then(|i| fields.fields().get(i).cloned())
        .ok_or_else(|| {
            SearchError::new(
                code::INVALID_REQUEST,
                format!(
                    "topic {} does not index {} (index.fields={fields})",
                    data.record.name, search.field
                ),
            )
        })?;
    let partitions: Vec<i32> = match search.partition {
        Some(index) if !data.has_partition(index) => {
            return Err(SearchError::new(
                code::UNKNOWN_TOPIC_OR_PARTITION,
                format!(
                    "topic {} has partitions 0 to {}, not {index}",
                    search.topic,
                    data.record.partitions - 1
                ),
            ));
        }
        Some(index) => vec![index],
        None => (0..data.record.partitions).collect(),
    };
    let ask = Arc::new(Ask {
        name: field.to_string(),
        field,
        hash: value_hash(&search.value),
        value: search.value,
        from: search.from,
        to: search.to,
        limit: search.limit,
        newest_first: search.newest_first,
        view_filter: topic.view.as_ref().map(|view| view.filter.clone()),
        values: shared.indexes().values(shared.metadata()),
    });
    let searches = partitions
        .iter()
        .map(|index| partition(shared, &data, *index, &ask));
    let mut found = Found::default();
    for part in futures::future::join_all(searches).await {
        let part = part?;
        found.records.extend(part.records);
        found.chunks_read += part.chunks_read;
        found.batches_read += part.batches_read;
        found.scanned_bytes += part.scanned_bytes;
    }
    found
        .records
        .sort_by_key(|r| (r.timestamp, r.partition, r.offset));
    if ask.newest_first {
        found.records.reverse();
    }
    found.records.truncate(ask.limit);
    Ok(found)
}

async fn partition(
    shared: &Arc<Shared>,
    topic: &Arc<Topic>,
    index: i32,
    ask: &Arc<Ask>,
) -> Result<PartitionFound, SearchError> {
    let unreadable = |error: Unreadable| match error {
        Unreadable::Partition(error) => SearchError::new(
            error.code(),
            format!("partition {}-{index}: {error}", topic.record.name),
        ),
        Unreadable::Other(message) => SearchError::new(code::KAFKA_STORAGE_ERROR, message),
    };
    let failed = |message: String| {
        SearchError::new(
            code::KAFKA_STORAGE_ERROR,
            format!("partition {}-{index}: {message}", topic.record.name),
        )
    };
    let source = Source::open(shared, topic, index)
        .await
        .map_err(unreadable)?;
    let (log_start, stable) = source.bounds();
    let mut found = PartitionFound::default();
    if log_start >= stable {
        return Ok(found);
    }
    let key = topic.partition_key(index);
    let store = shared.indexes().store().cloned();
    let led = match &source {
        Source::Led(_) => shared.indexes().led_view(key, &ask.name, ask.hash),
        Source::Committed { .. } => None,
    };
    let (chunks, memory) = match (led, &store) {
        (Some(led), _) => (led.chunks, led.memory),
        (None, Some(store)) => (store.list(key).await.map_err(failed)?, Vec::new()),
        (None, None) => (Vec::new(), Vec::new()),
    };
    let mut covers = covers(chunks, memory, log_start, stable);
    if ask.newest_first {
        covers.reverse();
    }
    for cover in covers {
        if found.records.len() >= ask.limit {
            break;
        }
        let (first, next) = cover.range();
        let candidates = match cover {
            Cover::Scan(..) => None,
            Cover::Memory(_, _, offsets) => Some(offsets),
            Cover::Chunk(chunk) => {
                let Some(store) = &store else { continue };
                // A chunk that cannot be read (deleted as it was built again a
                // moment ago, or damaged) is read through instead.
                match chunk_offsets(store, &chunk, ask).await {
                    Ok(ChunkAnswer::Skip) => continue,
                    Ok(ChunkAnswer::Offsets(offsets)) => {
                        found.chunks_read += 1;
                        Some(offsets)
                    }
                    Ok(ChunkAnswer::Unindexed) => None,
                    Err(error) => {
                        tracing::debug!(%error, "an index chunk was read through");
                        None
                    }
                }
            }
        };
        let (source, ask) = (source.clone(), ask.clone());
        let bounds = (first.max(log_start), next.min(stable));
        let part = on_blocking_pool(move || read_cover(&source, &ask, bounds, candidates))
            .await
            .map_err(|e: PartitionError| failed(e.to_string()))?
            .map_err(&failed)?;
        found.records.extend(part.records);
        found.batches_read += part.batches_read;
        found.scanned_bytes += part.scanned_bytes;
    }
    found.records.sort_by_key(|record| record.offset);
    found.records.dedup_by_key(|record| record.offset);
    for record in &mut found.records {
        record.partition = index;
    }
    Ok(found)
}

/// What a chunk says of a search.
enum ChunkAnswer {
    /// No record of it can match (bloom filter, time range).
    Skip,
    /// The offsets that may.
    Offsets(Vec<i64>),
    /// It does not index the field: its records are read.
    Unindexed,
}

async fn chunk_offsets(
    store: &ChunkStore,
    chunk: &ChunkRef,
    ask: &Ask,
) -> Result<ChunkAnswer, String> {
    let summary = store.summary(chunk).await?;
    if !summary.may_hold_times(ask.from, ask.to) {
        return Ok(ChunkAnswer::Skip);
    }
    Ok(match summary.entry_range(&ask.name, ask.hash) {
        None => ChunkAnswer::Unindexed,
        Some(None) => ChunkAnswer::Skip,
        Some(Some(range)) => ChunkAnswer::Offsets(store.offsets(chunk, range).await?),
    })
}

/// The covers of `[log_start, stable)`, by first offset: chunks and tails where there
/// are, scans between and after.
fn covers(
    chunks: Vec<ChunkRef>,
    memory: Vec<(i64, i64, Vec<i64>)>,
    log_start: i64,
    stable: i64,
) -> Vec<Cover> {
    let mut known: Vec<Cover> = chunks
        .into_iter()
        .map(Cover::Chunk)
        .chain(
            memory
                .into_iter()
                .map(|(first, next, offsets)| Cover::Memory(first, next, offsets)),
        )
        .filter(|cover| {
            let (first, next) = cover.range();
            first < next && next > log_start && first < stable
        })
        .collect();
    known.sort_by_key(|cover| cover.range());
    let mut covers = Vec::with_capacity(known.len() * 2 + 1);
    let mut covered = log_start;
    for cover in known {
        let (first, next) = cover.range();
        if next <= covered {
            continue;
        }
        if first > covered {
            covers.push(Cover::Scan(covered, first));
        }
        covered = next;
        covers.push(cover);
    }
    if covered < stable {
        covers.push(Cover::Scan(covered, stable));
    }
    covers
}

/// The matching records of `bounds`: of the candidate offsets when there are, else of
/// every record. Blocking.
fn read_cover(
    source: &Source,
    ask: &Ask,
    bounds: (i64, i64),
    candidates: Option<Vec<i64>>,
) -> Result<PartitionFound, String> {
    let mut found = PartitionFound::default();
    let (first, next) = bounds;
    match candidates {
        None => {
            let mut visit = Matches::new(ask, None);
            let mut at = first;
            while at < next {
                let (bytes, aborted) = source.read(at, SCAN_READ_BYTES)?;
                let walked = walk(&bytes, &aborted, at, next, true, &mut visit)?;
                found.scanned_bytes += walked.bytes;
                if walked.next <= at {
                    if walked.beyond {
                        break;
                    }
                    return Err(format!("nothing could be read at offset {at}"));
                }
                at = walked.next;
            }
            found.records = visit.found;
            if ask.newest_first {
                found.records.reverse();
            }
            found.records.truncate(ask.limit);
        }
        Some(mut offsets) => {
            offsets.retain(|offset| (first..next).contains(offset));
            if ask.newest_first {
                offsets.reverse();
            }
            for step in offsets.chunks(CHECK_STEP) {
                let mut step: Vec<i64> = step.to_vec();
                step.sort_unstable();
                let wanted: BTreeSet<i64> = step.iter().copied().collect();
                let mut visit = Matches::new(ask, Some(&wanted));
                let mut at = None;
                for offset in step {
                    if at.is_some_and(|end| offset < end) {
                        continue;
                    }
                    let (bytes, aborted) = source.read(offset, 1)?;
                    let walked = walk(&bytes, &aborted, offset, next, true, &mut visit)?;
                    found.batches_read += 1;
                    at = Some(walked.next.max(offset + 1));
                }
                let mut records = visit.found;
                if ask.newest_first {
                    records.reverse();
                }
                found.records.extend(records);
                if found.records.len() >= ask.limit {
                    break;
                }
            }
        }
    }
    Ok(found)
}

/// Keeps the records (of the wanted offsets, if given) whose field has the value,
/// in the time range, that the view's filter lets through.
struct Matches<'a> {
    ask: &'a Ask,
    wanted: Option<&'a BTreeSet<i64>>,
    found: Vec<FoundRecord>,
}

impl<'a> Matches<'a> {
    fn new(ask: &'a Ask, wanted: Option<&'a BTreeSet<i64>>) -> Matches<'a> {
        Matches {
            ask,
            wanted,
            found: Vec::new(),
        }
    }
}

impl Visit for Matches<'_> {
    fn batch_done(&mut self, _next: i64, _bytes: u64) {}

    fn record(&mut self, record: &Committed<'_>) -> Result<(), String> {
        let ask = self.ask;
        if self
            .wanted
            .is_some_and(|wanted| !wanted.contains(&record.offset))
            || record.timestamp < ask.from
            || record.timestamp > ask.to
            || ask
                .view_filter
                .as_ref()
                .is_some_and(|filter| !filter.matches(record.view.headers))
            || !ask
                .field
                .matches(&record.view, &ask.value, &*ask.values)
                .map_err(|error| format!("offset {}: {error}", record.offset))?
        {
            return Ok(());
        }
        self.found.push(FoundRecord {
            partition: 0,
            offset: record.offset,
            timestamp: record.timestamp,
            timestamp_type: record.header.timestamp_type(),
            key: record.record.key.map(<[u8]>::to_vec),
            value: record.record.value.map(<[u8]>::to_vec),
            headers: record
                .view
                .headers
                .iter()
                .map(|(key, value)| (key.to_vec(), value.map(<[u8]>::to_vec)))
                .collect(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(first: i64, next: i64) -> ChunkRef {
        ChunkRef {
            first,
            next,
            size: 0,
            name: format!("{first}-{next}"),
        }
    }

    fn ranges(covers: &[Cover]) -> Vec<(char, i64, i64)> {
        covers
            .iter()
            .map(|cover| {
                let kind = match cover {
                    Cover::Chunk(_) => 'c',
                    Cover::Memory(..) => 'm',
                    Cover::Scan(..) => 's',
                };
                let (first, next) = cover.range();
                (kind, first, next)
            })
            .collect()
    }

    #[test]
    fn covers_leave_no_offset_unread() {
        let found = covers(
            vec![
                chunk(0, 100),
                chunk(100, 200),
                chunk(250, 300),
                chunk(120, 180),
            ],
            vec![(300, 350, vec![])],
            50,
            400,
        );
        assert_eq!(
            ranges(&found),
            [
                ('c', 0, 100),
                ('c', 100, 200),
                ('s', 200, 250),
                ('c', 250, 300),
                ('m', 300, 350),
                ('s', 350, 400)
            ]
        );
        assert_eq!(ranges(&covers(vec![], vec![], 10, 20)), [('s', 10, 20)]);
        assert_eq!(
            ranges(&covers(vec![chunk(0, 10)], vec![], 20, 30)),
            [('s', 20, 30)]
        );
    }
}
