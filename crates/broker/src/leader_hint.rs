//! KIP-951: a broker that refuses a Produce or a Fetch because another broker leads the
//! partition names that leader and its epoch, and (in the versions that carry it) the
//! leader's address, so that the client sends there at once instead of first
//! refreshing its metadata. Only a cluster has such refusals: in embedded mode this
//! broker leads every partition.

use spool_metadata::{BrokerRecord, PartitionKey};

use crate::shared::Shared;
use crate::topics::Topic;

/// The live broker that leads a partition this broker was asked for, and its epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeaderHint {
    pub(crate) leader: i32,
    pub(crate) epoch: i32,
}

impl Shared {
    /// The partition's leader, when it is another live broker.
    pub(crate) fn leader_hint(&self, topic: &Topic, index: i32) -> Option<LeaderHint> {
        let view = self.cluster()?;
        let leadership = view.leader_of(PartitionKey {
            topic_id: topic.record.id,
            partition: index,
        })?;
        let live = view
            .live_brokers()
            .iter()
            .any(|broker| broker.node_id == leadership.leader);
        (leadership.leader != view.node_id && live).then_some(LeaderHint {
            leader: leadership.leader,
            epoch: leadership.leader_epoch,
        })
    }

    /// The live brokers among `nodes`, by node id, at their endpoints on `listener`,
    /// for a response's endpoints.
    pub(crate) fn hinted_brokers(
        &self,
        nodes: impl IntoIterator<Item = i32>,
        listener: &str,
    ) -> Vec<BrokerRecord> {
        let mut wanted: Vec<i32> = nodes.into_iter().collect();
        // Every produce and fetch asks: most name nobody, and cost nothing then.
        let Some(view) = self.cluster().filter(|_| !wanted.is_empty()) else {
            return Vec::new();
        };
        wanted.sort_unstable();
        wanted.dedup();
        view.live_brokers()
            .into_iter()
            .filter(|broker| wanted.binary_search(&broker.node_id).is_ok())
            .filter_map(|broker| broker.on_listener(listener))
            .collect()
    }
}
