//! A share-partition as the metadata store keeps it (one JSON text per group and
//! partition): the start offset and, above it, the records whose state or delivery
//! count the next leader must know. Acquired records are kept as available with
//! their delivery count (this delivery counted): a lock does not outlive its leader,
//! and a record given to a member before a crash is given again. A backoff is not
//! kept (a record waiting out its backoff is available at once after a restart).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{InFlight, RecordState, SharePartition};

/// The widest window a stored form may describe: more than any lock limit allows,
/// so a damaged text cannot make the broker fill memory.
const MAX_WINDOW: i64 = 100_000;

/// The stored form: `batches` are runs of records with one state and count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPartition {
    pub start: i64,
    pub batches: Vec<StoredBatch>,
}

/// Records `first..=last`, all in `state` (`available`, `acknowledged` or
/// `archived`) and delivered `delivery_count` times.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBatch {
    pub first: i64,
    pub last: i64,
    pub state: StoredState,
    pub delivery_count: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoredState {
    Available,
    Acknowledged,
    Archived,
}

impl StoredPartition {
    /// The text the store keeps.
    #[must_use]
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The stored form from the store's text.
    pub fn from_text(text: &str) -> Result<StoredPartition, String> {
        serde_json::from_str(text)
            .map_err(|error| format!("unreadable share-partition state: {error}"))
    }
}

impl SharePartition {
    /// What the store is to keep of it.
    #[must_use]
    pub fn stored(&self) -> StoredPartition {
        let mut batches: Vec<StoredBatch> = Vec::new();
        for (&offset, record) in &self.records {
            let state = match record.state {
                RecordState::Available | RecordState::Acquired => StoredState::Available,
                RecordState::Acknowledged => StoredState::Acknowledged,
                RecordState::Archived => StoredState::Archived,
            };
            match batches.last_mut() {
                Some(batch)
                    if batch.last + 1 == offset
                        && batch.state == state
                        && batch.delivery_count == record.delivery_count =>
                {
                    batch.last = offset;
                }
                _ => batches.push(StoredBatch {
                    first: offset,
                    last: offset,
                    state,
                    delivery_count: record.delivery_count,
                }),
            }
        }
        StoredPartition {
            start: self.start,
            batches,
        }
    }

    /// The share-partition a new leader takes on from the store: every record kept
    /// above the start, none of them acquired.
    #[must_use]
    pub fn restore(stored: &StoredPartition) -> SharePartition {
        let mut records = BTreeMap::new();
        for batch in &stored.batches {
            let state = match batch.state {
                StoredState::Available => RecordState::Available,
                StoredState::Acknowledged => RecordState::Acknowledged,
                StoredState::Archived => RecordState::Archived,
            };
            let last = batch.last.min(stored.start.saturating_add(MAX_WINDOW));
            for offset in batch.first.max(stored.start)..=last {
                records.insert(
                    offset,
                    InFlight {
                        state,
                        delivery_count: batch.delivery_count,
                        owner: None,
                        until: None,
                    },
                );
            }
        }
        let end = records
            .last_key_value()
            .map_or(stored.start, |(offset, _)| offset + 1);
        let mut partition = SharePartition {
            start: stored.start,
            end,
            records,
        };
        partition.fill_gaps();
        partition.advance();
        partition
    }

    /// Offsets inside the window that the stored form had no record of (it is
    /// written whole, so there are none unless it was edited): available, never
    /// delivered.
    fn fill_gaps(&mut self) {
        for offset in self.start..self.end {
            self.records.entry(offset).or_insert(InFlight {
                state: RecordState::Available,
                delivery_count: 0,
                owner: None,
                until: None,
            });
        }
    }
}
