//! Consumer lag: how far each partition's committed offset is behind its high
//! watermark, for the admin side (CLI, HTTP admin).

use crate::server::Shared;

/// One partition's lag for a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLag {
    pub topic: String,
    pub partition: i32,
    pub committed: i64,
    pub high_watermark: i64,
    /// `high_watermark - committed`, never negative.
    pub lag: i64,
}

/// The lag of every partition the group has committed an offset for, by topic and
/// partition; partitions of deleted topics are left out.
pub(crate) fn group_lag(shared: &Shared, group: &str) -> Vec<PartitionLag> {
    let mut lags: Vec<PartitionLag> = shared
        .groups
        .committed(group, None)
        .into_iter()
        .filter_map(|offset| {
            let log = shared
                .partition(&offset.topic, offset.partition, -1)
                .ok()?
                .log;
            let high_watermark = log.offsets().high_watermark.0;
            Some(PartitionLag {
                lag: (high_watermark - offset.offset).max(0),
                topic: offset.topic,
                partition: offset.partition,
                committed: offset.offset,
                high_watermark,
            })
        })
        .collect();
    lags.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    lags
}
