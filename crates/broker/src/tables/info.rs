//! A table topic's table as the REST API, the console and `spool topic describe`
//! show it: what every broker leading a partition of it reported, joined.

use std::collections::BTreeMap;

use spool_admin::{PartitionTableInfo, TableInfo};

use super::status::TopicTable;
use crate::shared::Shared;
use crate::topics::Topic;

/// A report older than this is a broker that stopped: left out.
const REPORT_STALE_MS: i64 = 10_000;

/// The table of `topic` (a table topic), from the brokers' reports.
pub(crate) async fn table_info(shared: &Shared, topic: &Topic) -> Option<TableInfo> {
    let settings = topic.table.as_ref()?;
    let now = shared.clock().now_ms();
    let reports: Vec<(i32, TopicTable)> =
        match shared.metadata().table_statuses(topic.record.id).await {
            Ok(reports) => reports
                .into_iter()
                .filter(|report| now - report.updated_ms <= REPORT_STALE_MS)
                .filter_map(|report| {
                    Some((report.node_id, serde_json::from_str(&report.status).ok()?))
                })
                .collect(),
            Err(error) => {
                tracing::debug!(%error, "reading the tables' reports failed");
                Vec::new()
            }
        };
    let mut info = merged(&reports, now);
    info.table = format!("{}.{}", settings.namespace, topic.record.name);
    Some(info)
}

/// The brokers' reports (node id, report) as one: counts summed, each partition as
/// its leader reported it, the table's offsets the furthest any broker saw.
fn merged(reports: &[(i32, TopicTable)], now_ms: i64) -> TableInfo {
    let mut info = TableInfo::default();
    let mut committed: BTreeMap<i32, i64> = BTreeMap::new();
    for (_, report) in reports {
        for (index, offset) in &report.committed {
            let known = committed.entry(*index).or_insert(*offset);
            *known = (*known).max(*offset);
        }
    }
    for (node, report) in reports {
        info.files_written += report.files_written;
        info.rows_written += report.rows_written;
        info.bytes_written += report.bytes_written;
        info.commits += report.commits;
        info.errors += report.errors;
        if let Some(error) = &report.last_error {
            info.last_error = Some(format!("broker {node}: {error}"));
        }
        let seen = TopicTable {
            committed: committed.clone(),
            ..report.clone()
        };
        info.lag_ms = info.lag_ms.max(seen.lag_ms(now_ms));
        for (index, lag) in &report.partitions {
            let committed_offset = committed.get(index).copied().unwrap_or(0);
            let lag_records = (lag.high_watermark - committed_offset).max(0);
            info.lag_records += lag_records;
            info.partitions.push(PartitionTableInfo {
                partition: *index,
                committed_offset,
                high_watermark: lag.high_watermark,
                lag_records,
            });
        }
    }
    info.partitions.sort_by_key(|partition| partition.partition);
    info.partitions
        .dedup_by_key(|partition| partition.partition);
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::status::PartitionLag;

    #[test]
    fn reports_join_into_one_table_with_the_furthest_offsets_seen() {
        let leader_of = |index: i32, high_watermark: i64, since: Option<i64>| {
            BTreeMap::from([(
                index,
                PartitionLag {
                    high_watermark,
                    behind_since_ms: since,
                    ..PartitionLag::default()
                },
            )])
        };
        let first = TopicTable {
            partitions: leader_of(0, 100, None),
            committed: BTreeMap::from([(0, 100), (1, 20)]),
            files_written: 2,
            rows_written: 100,
            commits: 3,
            ..TopicTable::default()
        };
        let second = TopicTable {
            partitions: leader_of(1, 50, Some(9_000)),
            committed: BTreeMap::from([(0, 90), (1, 10)]),
            files_written: 1,
            rows_written: 20,
            errors: 1,
            last_error: Some("the store did not answer".to_owned()),
            ..TopicTable::default()
        };
        let info = merged(&[(1, first), (2, second)], 10_000);
        assert_eq!(info.files_written, 3);
        assert_eq!(info.rows_written, 120);
        assert_eq!(info.commits, 3);
        assert_eq!(info.lag_records, 30, "partition 1: 50 against 20");
        assert_eq!(info.lag_ms, 1_000);
        assert_eq!(
            info.last_error.as_deref(),
            Some("broker 2: the store did not answer")
        );
        let partitions: Vec<(i32, i64, i64)> = info
            .partitions
            .iter()
            .map(|p| (p.partition, p.committed_offset, p.lag_records))
            .collect();
        assert_eq!(partitions, vec![(0, 100, 0), (1, 20, 30)]);
    }
}
