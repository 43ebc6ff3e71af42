//! What this broker knows of the table topics whose partitions it leads: per
//! partition, the high watermark and the table's offset (the lag between them, in
//! records and in seconds since the table last had everything); per topic, the
//! files, rows and bytes written, the commits made here, and the errors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use uuid::Uuid;

/// The table topics as this broker sees them.
#[derive(Debug, Default)]
pub(crate) struct TableStatus {
    topics: Mutex<HashMap<Uuid, TopicTable>>,
}

/// One table topic, as this broker sees it (and reports it to the others, as JSON).
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct TopicTable {
    /// The partitions led here, with their lag.
    pub(crate) partitions: BTreeMap<i32, PartitionLag>,
    /// The table's offsets as last read or committed here.
    pub(crate) committed: BTreeMap<i32, i64>,
    pub(crate) files_written: u64,
    pub(crate) rows_written: u64,
    pub(crate) bytes_written: u64,
    pub(crate) commits: u64,
    pub(crate) errors: u64,
    pub(crate) last_error: Option<String>,
}

/// A partition led here.
#[derive(Debug, Default, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct PartitionLag {
    pub(crate) high_watermark: i64,
    /// Since when (ms) the table has lacked records the partition has: when the
    /// oldest record the table lacks was first seen in the partition.
    pub(crate) behind_since_ms: Option<i64>,
    /// The high watermarks seen (ms, offset), from the first the table lacks.
    #[serde(skip)]
    pub(crate) seen: std::collections::VecDeque<(i64, i64)>,
}

/// The most high watermarks kept per partition (an hour of rounds): a table further
/// behind shows an hour.
const SEEN: usize = 3_600;

impl TopicTable {
    /// Records of the partitions led here that the table does not have yet.
    pub(crate) fn lag_records(&self) -> i64 {
        self.partitions
            .iter()
            .map(|(index, lag)| {
                (lag.high_watermark - self.committed.get(index).copied().unwrap_or(0)).max(0)
            })
            .sum()
    }

    /// How long (ms, at `now_ms`) the table has lacked records of a partition led here.
    pub(crate) fn lag_ms(&self, now_ms: i64) -> i64 {
        self.partitions
            .values()
            .filter_map(|lag| lag.behind_since_ms)
            .map(|since| (now_ms - since).max(0))
            .max()
            .unwrap_or(0)
    }

    fn refresh_lag(&mut self) {
        for (index, lag) in &mut self.partitions {
            let committed = self.committed.get(index).copied().unwrap_or(0);
            while lag.seen.front().is_some_and(|(_, end)| *end <= committed) {
                lag.seen.pop_front();
            }
            lag.behind_since_ms = lag.seen.front().map(|(since, _)| *since);
        }
    }
}

impl TableStatus {
    fn with<T>(&self, id: Uuid, change: impl FnOnce(&mut TopicTable) -> T) -> T {
        let mut topics = self
            .topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        change(topics.entry(id).or_default())
    }

    /// Forgets topics that are no longer tables.
    pub(crate) fn keep_only(&self, ids: &[Uuid]) {
        self.topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|id, _| ids.contains(id));
    }

    /// The partitions of `id` led here now.
    pub(crate) fn leads(&self, id: Uuid, led: &[i32]) {
        self.with(id, |table| {
            table.partitions.retain(|index, _| led.contains(index));
            for index in led {
                table.partitions.entry(*index).or_default();
            }
        });
    }

    /// The high watermark of a partition led here, at `now_ms`.
    pub(crate) fn partition_ends(&self, id: Uuid, index: i32, high_watermark: i64, now_ms: i64) {
        self.with(id, |table| {
            let lag = table.partitions.entry(index).or_default();
            lag.high_watermark = high_watermark;
            if lag.seen.back().is_none_or(|(_, end)| *end < high_watermark) {
                if lag.seen.len() == SEEN {
                    lag.seen.pop_front();
                }
                lag.seen.push_back((now_ms, high_watermark));
            }
            table.refresh_lag();
        });
    }

    /// The table's offsets, as read (or committed) here.
    pub(crate) fn committed(&self, id: Uuid, offsets: &BTreeMap<i32, i64>, made_here: bool) {
        self.with(id, |table| {
            for (index, offset) in offsets {
                let known = table.committed.entry(*index).or_insert(*offset);
                *known = (*known).max(*offset);
            }
            table.commits += u64::from(made_here);
            table.refresh_lag();
        });
    }

    /// A file committed to the table (or a span with no record to write).
    pub(crate) fn wrote(&self, id: Uuid, rows: i64, bytes: i64, with_file: bool) {
        self.with(id, |table| {
            table.files_written += u64::from(with_file);
            table.rows_written += u64::try_from(rows).unwrap_or(0);
            table.bytes_written += u64::try_from(bytes).unwrap_or(0);
        });
    }

    /// A round of the topic's table failed.
    pub(crate) fn failed(&self, id: Uuid, error: &str) {
        self.with(id, |table| {
            table.errors += 1;
            table.last_error = Some(error.to_owned());
        });
    }

    /// The topic's table as this broker sees it.
    pub(crate) fn of(&self, id: Uuid) -> Option<TopicTable> {
        self.topics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lag_in_seconds_is_the_age_of_the_oldest_record_the_table_lacks() {
        let status = TableStatus::default();
        let id = Uuid::nil();
        status.leads(id, &[0]);
        status.partition_ends(id, 0, 10, 1_000);
        status.partition_ends(id, 0, 20, 5_000);
        status.partition_ends(id, 0, 30, 9_000);
        let lag = |status: &TableStatus| status.of(id).unwrap().lag_ms(10_000);
        assert_eq!(lag(&status), 9_000, "offsets 0-9 seen at 1 s");
        status.committed(id, &BTreeMap::from([(0, 10)]), true);
        assert_eq!(lag(&status), 5_000, "offset 10 first seen at 5 s");
        assert_eq!(status.of(id).unwrap().lag_records(), 20);
        status.committed(id, &BTreeMap::from([(0, 30)]), true);
        assert_eq!(lag(&status), 0);
        assert_eq!(status.of(id).unwrap().commits, 2);
    }
}
