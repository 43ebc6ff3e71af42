//! The mirror's series: each link's copied bytes and errors, each partition copied
//! here with its lag in records and seconds.

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::labels::Text;
use crate::shared::Shared;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LinkLabels {
    link: Text,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct MirrorPartitionLabels {
    link: Text,
    topic: Text,
    partition: i32,
}

/// `spool_mirror_*`.
pub(super) fn encode(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let status = shared.mirror();
    let links = status.all_links();
    for (name, help, value) in [
        (
            "mirror_copied_bytes",
            "Bytes of record batches a mirror link copied to this broker",
            (|s: &crate::mirror::LinkStatus| s.copied_bytes) as fn(&_) -> u64,
        ),
        (
            "mirror_errors",
            "Failures of a mirror link on this broker (source unreachable, refused, a copy failed)",
            |s| s.errors,
        ),
        (
            "mirror_offsets_copied",
            "Committed group offsets a mirror link copied here",
            |s| s.offsets_copied,
        ),
        (
            "mirror_skipped_records",
            "Records the source removed (retention, DeleteRecords) before a mirror link copied them",
            |s| s.skipped_records,
        ),
    ] {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (link, link_status) in &links {
            ConstCounter::new(value(link_status)).encode(family.encode_family(&LinkLabels {
                link: Text(link.clone()),
            })?)?;
        }
    }
    let now = shared.clock().now_ms();
    let partitions = status.partitions_of(None);
    let mut records = encoder.encode_descriptor(
        "mirror_lag_records",
        "Records the source partition has and its mirror here not yet",
        None,
        MetricType::Gauge,
    )?;
    for (key, state) in &partitions {
        ConstGauge::new(state.lag_records()).encode(records.encode_family(&labels(key))?)?;
    }
    let mut seconds = encoder.encode_descriptor(
        "mirror_lag_seconds",
        "How long a mirror partition here has been behind its source (0 when caught up)",
        None,
        MetricType::Gauge,
    )?;
    for (key, state) in &partitions {
        ConstGauge::new(state.lag_ms(now) / 1000).encode(seconds.encode_family(&labels(key))?)?;
    }
    Ok(())
}

fn labels(key: &crate::mirror::PartitionKey) -> MirrorPartitionLabels {
    MirrorPartitionLabels {
        link: Text(key.link.clone()),
        topic: Text(key.topic.clone()),
        partition: key.partition,
    }
}
