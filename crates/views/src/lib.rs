//! View topics (`view.source.topic`): read-only topics that show the records of a
//! source topic that match a filter, at the source's offsets, the others as gaps.
//! See `docs/views.md`.
//!
//! - [`filter`]: what a view lets through (tags, and an expression over headers);
//! - [`sql`]: the expression language;
//! - [`tag_index`]: the per-batch tag and lane summaries that spare reading records;
//! - [`lanes`]: a record's and a client's lane, and what a lane's consumers see;
//! - [`selection`]: a read's filters together (a view's and a consumer's lanes);
//! - a fetch from a view is the broker's (`view_reader`), which reads the source.
//!
//! A view has no data of its own: each of its partitions is its source's partition of
//! the same index, led by the same broker under the same epoch, with the same offsets,
//! watermarks and timestamps. The partition routing does that in one place
//! (`Partitions::partition_of` and `Partitions::leadership` in the broker follow a view
//! to its source), so
//! ListOffsets, OffsetForLeaderEpoch and lag need nothing of their own; Fetch filters;
//! writes are refused.

pub mod filter;
pub mod lanes;
pub mod selection;
pub mod sql;
pub mod tag_index;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use uuid::Uuid;

use self::filter::Filter;
use self::tag_index::TagIndex;

/// A view topic's definition, from its configs.
#[derive(Debug, Clone)]
pub struct View {
    /// `view.source.topic`.
    pub source: String,
    pub filter: Arc<Filter>,
}

impl View {
    /// The view the configs define, `None` when `view.source.topic` is not set; the
    /// message says what is wrong with the filters.
    pub fn from_configs(source: &str, tags: &str, sql: &str) -> Result<Option<View>, String> {
        let filter = Filter::parse(tags, sql)?;
        if source.trim().is_empty() {
            if !filter.passes_everything() {
                return Err("view.filter and view.filter.sql need view.source.topic".to_owned());
            }
            return Ok(None);
        }
        Ok(Some(View {
            source: source.trim().to_owned(),
            filter: Arc::new(filter),
        }))
    }
}

/// What the views have read, shared by every fetch: the tag index and each view's
/// match counts.
#[derive(Debug, Default)]
pub struct Views {
    pub index: TagIndex,
    stats: RwLock<HashMap<Uuid, Arc<ViewStats>>>,
}

impl Views {
    /// The match counts of the view `id`.
    pub fn stats(&self, id: Uuid) -> Arc<ViewStats> {
        if let Some(stats) = self.read().get(&id) {
            return stats.clone();
        }
        self.stats
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(id)
            .or_default()
            .clone()
    }

    /// The share of the source's records the view `id` has let through so far (1 for
    /// a view not read yet).
    pub fn match_ratio(&self, id: Uuid) -> f64 {
        self.read().get(&id).map_or(1.0, |stats| stats.ratio())
    }

    /// Every view's counts, by view id.
    pub fn all(&self) -> Vec<(Uuid, Arc<ViewStats>)> {
        self.read()
            .iter()
            .map(|(id, stats)| (*id, stats.clone()))
            .collect()
    }

    /// Forgets a deleted view's counts.
    pub fn forget(&self, id: Uuid) {
        self.stats
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Uuid, Arc<ViewStats>>> {
        self.stats
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// How many source records a view has looked at and let through (for estimating how
/// many of a consumer's lag it will show), and what became of the batches, for
/// `/metrics`.
#[derive(Debug, Default)]
pub struct ViewStats {
    records: AtomicU64,
    matched: AtomicU64,
    /// By [`Outcome`].
    batches: [AtomicU64; 3],
    /// Batches whose records had to be read (the tag index could not decide).
    inflated: AtomicU64,
    /// Stretches of the source jumped over with its message index, unread.
    index_jumps: AtomicU64,
}

/// What a view made of a source batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Sent as stored: every record matched.
    Sent = 0,
    /// Rewritten with the matching records.
    Rewritten = 1,
    /// Part of a gap: no record matched.
    Skipped = 2,
}

impl Outcome {
    pub const ALL: [Outcome; 3] = [Outcome::Sent, Outcome::Rewritten, Outcome::Skipped];

    pub fn label(self) -> &'static str {
        match self {
            Outcome::Sent => "sent",
            Outcome::Rewritten => "rewritten",
            Outcome::Skipped => "skipped",
        }
    }
}

impl ViewStats {
    pub fn note(&self, outcome: Outcome, records: u64, matched: u64) {
        self.records.fetch_add(records, Ordering::Relaxed);
        self.matched.fetch_add(matched, Ordering::Relaxed);
        if let Some(batches) = self.batches.get(outcome as usize) {
            batches.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub fn note_inflated(&self) {
        self.inflated.fetch_add(1, Ordering::Relaxed);
    }

    pub fn batches(&self, outcome: Outcome) -> u64 {
        self.batches
            .get(outcome as usize)
            .map_or(0, |batches| batches.load(Ordering::Relaxed))
    }

    pub fn inflated(&self) -> u64 {
        self.inflated.load(Ordering::Relaxed)
    }

    pub fn note_index_jump(&self) {
        self.index_jumps.fetch_add(1, Ordering::Relaxed);
    }

    pub fn index_jumps(&self) -> u64 {
        self.index_jumps.load(Ordering::Relaxed)
    }

    /// The records let through.
    pub fn matched(&self) -> u64 {
        self.matched.load(Ordering::Relaxed)
    }

    #[allow(clippy::cast_precision_loss)]
    pub fn ratio(&self) -> f64 {
        let records = self.records.load(Ordering::Relaxed);
        if records == 0 {
            return 1.0;
        }
        self.matched.load(Ordering::Relaxed) as f64 / records as f64
    }
}
