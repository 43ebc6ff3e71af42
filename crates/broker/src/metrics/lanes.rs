//! The lanes' series: members in each lane of each group (as this broker last found
//! them across the cluster), what filtered fetches made of the batches, the records
//! they let through, and lane producers' batches that got the lane's header.

use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::labels::Text;
use crate::shared::Shared;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct GroupLaneLabels {
    group: Text,
    lane: Text,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct GroupLabels {
    group: Text,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TopicLaneLabels {
    topic: Text,
    lane: Text,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct OutcomeLabels {
    topic: Text,
    lane: Text,
    outcome: &'static str,
}

/// `spool_lane_*`.
pub(super) fn encode(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let directory = shared.lanes().directory();
    let mut family = encoder.encode_descriptor(
        "lane_members",
        "Live members of a consumer group in a lane (its part G;lane=X), across the cluster",
        None,
        MetricType::Gauge,
    )?;
    for (group, lane, members) in directory.lane_members() {
        let labels = GroupLaneLabels {
            group: Text(group.to_owned()),
            lane: Text(lane.to_owned()),
        };
        let members = i64::try_from(members).unwrap_or(i64::MAX);
        ConstGauge::new(members).encode(family.encode_family(&labels)?)?;
    }
    let mut family = encoder.encode_descriptor(
        "lane_base_clients",
        "Clients (client id and host) of a group's base members, for groups with members in a lane: the base consumers whose fetches leave those lanes out",
        None,
        MetricType::Gauge,
    )?;
    for (group, clients) in directory.base_clients() {
        let labels = GroupLabels {
            group: Text(group.to_owned()),
        };
        let clients = i64::try_from(clients).unwrap_or(i64::MAX);
        ConstGauge::new(clients).encode(family.encode_family(&labels)?)?;
    }
    let reads = shared.lanes().all_reads();
    let mut family = encoder.encode_descriptor(
        "lane_batches",
        "Batches fetches filtered by lane took: sent as stored, rewritten with the lane's records, or skipped as a gap",
        None,
        MetricType::Counter,
    )?;
    for ((topic, lane), stats) in &reads {
        for outcome in spool_views::Outcome::ALL {
            let labels = OutcomeLabels {
                topic: Text(topic.clone()),
                lane: Text(lane.clone()),
                outcome: outcome.label(),
            };
            ConstCounter::new(stats.batches(outcome)).encode(family.encode_family(&labels)?)?;
        }
    }
    let mut family = encoder.encode_descriptor(
        "lane_records_fetched",
        "Records fetches filtered by lane let through, by the consumer's lane",
        None,
        MetricType::Counter,
    )?;
    for ((topic, lane), stats) in &reads {
        let labels = TopicLaneLabels {
            topic: Text(topic.clone()),
            lane: Text(lane.clone()),
        };
        ConstCounter::new(stats.matched()).encode(family.encode_family(&labels)?)?;
    }
    let mut family = encoder.encode_descriptor(
        "lane_batches_stamped",
        "Batches of lane producers whose records got the lane's header from the broker",
        None,
        MetricType::Counter,
    )?;
    for ((topic, lane), count) in shared.lanes().all_stamped() {
        let labels = TopicLaneLabels {
            topic: Text(topic),
            lane: Text(lane),
        };
        ConstCounter::new(count).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}
