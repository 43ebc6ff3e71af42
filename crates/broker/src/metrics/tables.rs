//! The table topics' series: for each table topic with partitions led here, the
//! files, rows and bytes this broker wrote, its commits and errors, and the table's
//! lag behind those partitions in records and seconds.

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::labels::Text;
use crate::shared::Shared;
use crate::tables::TopicTable;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TopicLabels {
    topic: Text,
}

/// `spool_table_*`.
pub(super) fn encode(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let tables: Vec<(String, TopicTable)> = shared
        .topics()
        .all()
        .iter()
        .filter_map(|topic| {
            let table = shared.tables().of(topic.record.id)?;
            Some((topic.record.name.to_string(), table))
        })
        .collect();
    for (name, help, value) in [
        (
            "table_files_written",
            "Parquet files of a table topic committed to its table by this broker",
            (|t: &TopicTable| t.files_written) as fn(&_) -> u64,
        ),
        (
            "table_rows_written",
            "Records of a table topic committed to its table by this broker",
            |t| t.rows_written,
        ),
        (
            "table_bytes_written",
            "Bytes of Parquet of a table topic committed to its table by this broker",
            |t| t.bytes_written,
        ),
        (
            "table_commits",
            "Snapshots this broker committed to a table topic's table",
            |t| t.commits,
        ),
        (
            "table_errors",
            "Failed rounds of a table topic on this broker (the catalogue, the store or a file)",
            |t| t.errors,
        ),
    ] {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (topic, table) in &tables {
            ConstCounter::new(value(table)).encode(family.encode_family(&labels(topic))?)?;
        }
    }
    let now = shared.clock().now_ms();
    let mut records = encoder.encode_descriptor(
        "table_lag_records",
        "Records the partitions of a table topic led here have and its table not yet",
        None,
        MetricType::Gauge,
    )?;
    for (topic, table) in &tables {
        ConstGauge::new(table.lag_records()).encode(records.encode_family(&labels(topic))?)?;
    }
    let mut seconds = encoder.encode_descriptor(
        "table_lag_seconds",
        "How long a table topic's table has lacked records of a partition led here (0 when it has them all)",
        None,
        MetricType::Gauge,
    )?;
    for (topic, table) in &tables {
        ConstGauge::new(table.lag_ms(now) / 1000).encode(seconds.encode_family(&labels(topic))?)?;
    }
    Ok(())
}

fn labels(topic: &str) -> TopicLabels {
    TopicLabels {
        topic: Text(topic.to_owned()),
    }
}
