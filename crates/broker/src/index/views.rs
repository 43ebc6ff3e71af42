//! What a view read asks of its source's index: where the next record that may match
//! is. A view whose filter requires a header to hold one of a few values (its tags,
//! or `h = 'v'` / `h IN (…)` terms of its expression's top-level `AND`), over a source
//! that indexes that header, jumps over the stretches the index says hold none of
//! them instead of reading them, so that a view of rare records reads in time
//! proportional to its matches.
//!
//! Only a partition led here, and only as far as its chunks and tail cover it with
//! the field (a chunk built before the field was indexed, a gap, or what the tail
//! has not read yet end the jump: the view reads on as without an index). The
//! candidates a chunk names for a filter are kept in memory, so that a consumer's
//! fetches do not read the chunk again.

use std::sync::Arc;

use spool_index::value_hash;
use spool_metadata::PartitionKey;
use spool_views::filter::Filter;

use super::state::{Indexes, KeptCandidates, lock};
use super::store::{ChunkRef, ChunkStore};
use crate::topics::Topic;

/// Offsets of candidates kept in memory over every view, at most (8 bytes each).
const KEPT_CANDIDATES: usize = 4 << 20;
/// Candidates gathered per look, at most: the jump goes as far as they cover.
const LOOK_CANDIDATES: usize = 4_096;

/// A view's filter as its source's index can answer it.
#[derive(Debug, Clone)]
pub(crate) struct IndexedFilter {
    /// The source's field (`header:NAME`).
    field: String,
    hashes: Vec<u64>,
    /// A digest of the values, to key the kept candidates.
    digest: u64,
}

/// Where the next records that may match are.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Candidates {
    /// Ascending, from the offset asked.
    pub(crate) offsets: Vec<i64>,
    /// No record from the offset asked up to here (exclusive) but these may match.
    pub(crate) covered: i64,
}

impl IndexedFilter {
    /// The filter's required header with the fewest values that `source` indexes;
    /// `None` when it indexes none of them.
    pub(crate) fn of(source: &Topic, filter: &Filter) -> Option<IndexedFilter> {
        let fields = source.index.as_ref()?;
        filter
            .required_values()
            .into_iter()
            .filter(|(header, _)| fields.position(&format!("header:{header}")).is_some())
            .min_by_key(|(_, values)| values.len())
            .map(|(header, values)| {
                let hashes: Vec<u64> = values.iter().map(|value| value_hash(value)).collect();
                let digest = hashes
                    .iter()
                    .fold(0_u64, |digest, hash| digest.rotate_left(7) ^ hash);
                IndexedFilter {
                    field: format!("header:{header}"),
                    hashes,
                    digest,
                }
            })
    }
}

impl Indexes {
    /// The candidates of `filter` in partition `key` from `from`, if this broker
    /// indexes the partition and its index covers `from` with the field. Blocking
    /// (chunks are read on the runtime).
    pub(crate) fn candidates(
        &self,
        key: PartitionKey,
        filter: &IndexedFilter,
        from: i64,
    ) -> Option<Candidates> {
        let led = self.led(key)?;
        let (chunks, memory) = {
            let led = lock(&led);
            let chunks: Vec<ChunkRef> = led
                .chunks
                .iter()
                .filter(|chunk| chunk.next > from)
                .cloned()
                .collect();
            let memory: Vec<(i64, i64, Vec<i64>)> = led
                .sealed
                .iter()
                .chain(std::iter::once(&led.tail))
                .filter(|tail| tail.next() > from)
                .map(|tail| {
                    let mut offsets = Vec::new();
                    for hash in &filter.hashes {
                        offsets.extend(tail.lookup_named(&filter.field, *hash)?);
                    }
                    Some((tail.first(), tail.next(), offsets))
                })
                .collect::<Option<_>>()?;
            (chunks, memory)
        };
        let store = self.store()?.clone();
        let runtime = self.runtime()?;
        let mut found = Candidates {
            offsets: Vec::new(),
            covered: from,
        };
        for chunk in chunks {
            if chunk.first > found.covered || found.offsets.len() >= LOOK_CANDIDATES {
                break;
            }
            let Some(offsets) = self.chunk_candidates(&runtime, &store, &chunk, filter) else {
                break;
            };
            found.offsets.extend(
                offsets
                    .iter()
                    .copied()
                    .filter(|offset| (from.max(chunk.first)..chunk.next).contains(offset)),
            );
            found.covered = chunk.next;
        }
        for (first, next, offsets) in memory {
            if first > found.covered || found.offsets.len() >= LOOK_CANDIDATES {
                break;
            }
            found.offsets.extend(
                offsets
                    .into_iter()
                    .filter(|offset| (from.max(first)..next).contains(offset)),
            );
            found.covered = next;
        }
        found.offsets.sort_unstable();
        found.offsets.dedup();
        (found.covered > from).then_some(found)
    }

    /// The offsets `chunk` names for `filter`, kept or read; `None` when the chunk
    /// does not index the field or cannot be read.
    fn chunk_candidates(
        &self,
        runtime: &tokio::runtime::Handle,
        store: &Arc<ChunkStore>,
        chunk: &ChunkRef,
        filter: &IndexedFilter,
    ) -> Option<Arc<Vec<i64>>> {
        let key = (chunk.name.clone(), filter.field.clone(), filter.digest);
        if let Some(kept) = self.kept().by_chunk.get(&key) {
            return Some(kept.clone());
        }
        let (store, chunk_read, filter_read) = (store.clone(), chunk.clone(), filter.clone());
        let (done, answer) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = done.send(read_candidates(&store, &chunk_read, &filter_read).await);
        });
        let offsets = Arc::new(answer.recv().ok()??);
        let mut kept = self.kept();
        if kept.offsets + offsets.len() > KEPT_CANDIDATES {
            *kept = KeptCandidates::default();
        }
        kept.offsets += offsets.len();
        kept.by_chunk.insert(key, offsets.clone());
        Some(offsets)
    }
}

async fn read_candidates(
    store: &ChunkStore,
    chunk: &ChunkRef,
    filter: &IndexedFilter,
) -> Option<Vec<i64>> {
    let summary = store.summary(chunk).await.ok()?;
    let mut offsets = Vec::new();
    for hash in &filter.hashes {
        if let Some(range) = summary.entry_range(&filter.field, *hash)? {
            offsets.extend(store.offsets(chunk, range).await.ok()?);
        }
    }
    offsets.sort_unstable();
    offsets.dedup();
    Some(offsets)
}
