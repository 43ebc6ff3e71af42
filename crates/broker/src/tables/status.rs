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
    /// Since when (ms) the table has lacked records the partition has.
    pub(crate) behind_since_ms: Option<i64>,
}

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

    fn refresh_lag(&mut self, now_ms: i64) {
        for (index, lag) in &mut self.partitions {
            let committed = self.committed.get(index).copied().unwrap_or(0);
            if committed >= lag.high_watermark {
                lag.behind_since_ms = None;
            } else if lag.behind_since_ms.is_none() {
                lag.behind_since_ms = Some(now_ms);
            }
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
            table.partitions.entry(index).or_default().high_watermark = high_watermark;
            table.refresh_lag(now_ms);
        });
    }

    /// The table's offsets, as read (or committed) at `now_ms`.
    pub(crate) fn committed(
        &self,
        id: Uuid,
        offsets: &BTreeMap<i32, i64>,
        made_here: bool,
        now_ms: i64,
    ) {
        self.with(id, |table| {
            table.committed.clone_from(offsets);
            table.commits += u64::from(made_here);
            table.refresh_lag(now_ms);
        });
    }

    /// A file written (or a span with no record to write).
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
