//! The per-batch tag index: for each source batch a view (or a lane's filter) has
//! read, the hashes of the tags and of the lanes its records carry (RocketMQ keeps a
//! tag hash per message in its consume queue for the same purpose). With it, a batch
//! no record of which matches a view's tags or a consumer's lane is skipped, and one
//! every record of which matches is sent as stored, without inflating either.
//!
//! The index lives in memory, bounded ([`TagIndex::CAPACITY`] batches, the oldest
//! dropped first), and is filled the first time any view reads a batch: the first
//! reader of a batch pays its decompression, every later one (other consumers, other
//! views of the same source) does not. A restart empties it. Entries are keyed by the
//! batch's CRC as well as its offset, so a batch rewritten in place (compaction, a
//! tail replaced after a leader move) is never judged by another's summary.

use std::collections::{HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use spool_metadata::PartitionKey;

use crate::filter::TAG_HEADER;
use crate::lanes::LANE_HEADER;

/// The distinct tags a summary keeps; a batch with more is read whenever a view with
/// tags reads it.
const MAX_DISTINCT: usize = 16;

/// What one batch's records are tagged with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchTags {
    hashes: Vec<u64>,
    overflowed: bool,
    /// Some record has no tag.
    pub untagged: bool,
}

impl BatchTags {
    /// Notes one record's tag.
    pub fn add(&mut self, tag: Option<&[u8]>) {
        let Some(tag) = tag else {
            self.untagged = true;
            return;
        };
        let hash = tag_hash(tag);
        if self.overflowed || self.hashes.contains(&hash) {
            return;
        }
        if self.hashes.len() == MAX_DISTINCT {
            self.overflowed = true;
            self.hashes = Vec::new();
        } else {
            self.hashes.push(hash);
        }
    }

    /// The distinct tags' hashes; `None` when there were too many to keep.
    pub fn hashes(&self) -> Option<&[u64]> {
        (!self.overflowed).then_some(self.hashes.as_slice())
    }
}

/// A tag's hash: 64 bits, so that two tags sharing one is not a practical concern.
pub fn tag_hash(tag: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    tag.hash(&mut hasher);
    hasher.finish()
}

/// What one batch's records carry: their tags (`spool.tag`) and their lanes
/// (`spool.lane`), each the last of its header in a record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchSummary {
    pub tags: BatchTags,
    /// "Untagged" here: some record is in the base lane.
    pub lanes: BatchTags,
}

impl BatchSummary {
    /// Notes one record's headers.
    pub fn add(&mut self, headers: &[(&[u8], Option<&[u8]>)]) {
        self.tags.add(last_value(headers, TAG_HEADER));
        self.lanes.add(last_value(headers, LANE_HEADER));
    }
}

/// The value of a record's last header `name`, if it has one with a value.
pub fn last_value<'a>(headers: &[(&[u8], Option<&'a [u8]>)], name: &str) -> Option<&'a [u8]> {
    headers
        .iter()
        .rev()
        .find(|(key, _)| *key == name.as_bytes())
        .and_then(|(_, value)| *value)
}

/// Which batch a summary is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BatchKey {
    pub partition: PartitionKey,
    pub base_offset: i64,
    pub crc: u32,
}

/// The summaries of the batches views have read, shared by every fetch.
#[derive(Debug, Default)]
pub struct TagIndex {
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    by_batch: HashMap<BatchKey, Arc<BatchSummary>>,
    /// In the order they were added, for dropping the oldest.
    order: VecDeque<BatchKey>,
}

impl TagIndex {
    /// The batches kept: at about 150 bytes each, some 40 MB.
    pub const CAPACITY: usize = 250_000;

    pub fn get(&self, key: &BatchKey) -> Option<Arc<BatchSummary>> {
        self.lock().by_batch.get(key).cloned()
    }

    pub fn insert(&self, key: BatchKey, tags: Arc<BatchSummary>) {
        let mut entries = self.lock();
        if entries.by_batch.insert(key, tags).is_none() {
            entries.order.push_back(key);
        }
        while entries.order.len() > Self::CAPACITY {
            if let Some(oldest) = entries.order.pop_front() {
                entries.by_batch.remove(&oldest);
            }
        }
    }

    /// How many batches' tags are kept.
    pub fn len(&self) -> usize {
        self.lock().by_batch.len()
    }

    /// Whether no batch's tags are kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_summaries_go_first_past_the_capacity() {
        let index = TagIndex::default();
        let key = |base_offset| BatchKey {
            partition: PartitionKey {
                topic_id: uuid::Uuid::nil(),
                partition: 0,
            },
            base_offset,
            crc: 7,
        };
        for offset in 0..=i64::try_from(TagIndex::CAPACITY).unwrap() {
            index.insert(key(offset), Arc::new(BatchSummary::default()));
        }
        assert_eq!(index.len(), TagIndex::CAPACITY);
        assert!(index.get(&key(0)).is_none());
        assert!(index.get(&key(1)).is_some());
        let other_crc = BatchKey { crc: 8, ..key(1) };
        assert!(
            index.get(&other_crc).is_none(),
            "a rewritten batch is not judged by the old summary"
        );
    }

    #[test]
    fn a_summary_gives_up_on_too_many_distinct_tags() {
        let mut tags = BatchTags::default();
        for i in 0..MAX_DISTINCT {
            tags.add(Some(format!("t{i}").as_bytes()));
            tags.add(Some(format!("t{i}").as_bytes()));
        }
        assert_eq!(tags.hashes().map(<[u64]>::len), Some(MAX_DISTINCT));
        tags.add(Some(b"one more"));
        assert_eq!(tags.hashes(), None);
        assert!(!tags.untagged);
    }
}
