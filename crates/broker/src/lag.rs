//! Consumer lag: how far each partition's committed offset is behind its high
//! watermark, for the admin side (CLI, `/metrics`, the REST API and console).

use std::sync::Arc;

use crate::shared::Shared;
use crate::topics::Topic;

/// One partition's committed offset for a group, and its lag where known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionLag {
    pub topic: String,
    pub partition: i32,
    pub committed: i64,
    /// The partition's high watermark; `None` where this broker does not know it (in
    /// a cluster, a partition another broker leads).
    pub high_watermark: Option<i64>,
    /// `high_watermark - committed`, never negative; `None` with the high watermark.
    pub lag: Option<i64>,
    /// On a view, the records of the lag it is expected to show: the lag (in the
    /// source's offsets) times the share of the source the view has let through so
    /// far. `None` on other topics, where every offset of the lag is a record.
    pub matching: Option<i64>,
}

/// Every partition the group has committed an offset for, by topic and partition;
/// partitions of deleted topics are left out. Blocking: in embedded mode a partition
/// is opened on first use; in shared-storage mode the lag is known where this broker
/// has the partition's tail open (it leads it and serves it), unknown elsewhere.
pub(crate) fn group_lag(shared: &Shared, group: &str) -> Vec<PartitionLag> {
    group_lag_with(shared, group, |topic, index| {
        shared
            .partitions()
            .partition_of(topic.clone(), index, -1)
            .ok()
            .map(|partition| partition.log.offsets().high_watermark.0)
    })
}

/// [`group_lag`], with each partition's high watermark from `high_watermark`.
pub(crate) fn group_lag_with(
    shared: &Shared,
    group: &str,
    high_watermark: impl Fn(&Arc<Topic>, i32) -> Option<i64>,
) -> Vec<PartitionLag> {
    let mut lags: Vec<PartitionLag> = shared
        .groups()
        .committed(group, None)
        .into_iter()
        .filter_map(|offset| {
            let topic = shared.topics().get(&offset.topic)?;
            let high_watermark = high_watermark(&topic, offset.partition);
            let lag = high_watermark.map(|hw| (hw - offset.offset).max(0));
            let matching = topic
                .view
                .as_ref()
                .and(lag)
                .map(|lag| estimate(lag, shared.views().match_ratio(topic.record.id)));
            Some(PartitionLag {
                lag,
                matching,
                high_watermark,
                topic: offset.topic,
                partition: offset.partition,
                committed: offset.offset,
            })
        })
        .collect();
    lags.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    lags
}

#[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
fn estimate(lag: i64, ratio: f64) -> i64 {
    (lag as f64 * ratio.clamp(0.0, 1.0)).round() as i64
}
