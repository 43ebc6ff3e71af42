//! The plain records the store keeps that belong to no one interface: topics,
//! committed offsets, config changes.

use std::collections::BTreeMap;

use spool_model::TopicName;
use uuid::Uuid;

/// A topic as the metadata store keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicRecord {
    pub name: TopicName,
    /// What the topic's data, partitions and committed offsets are keyed by: a topic
    /// deleted and created again under the same name is another topic.
    pub id: Uuid,
    pub partitions: i32,
    /// The replication factor it was created with: 1 in embedded mode; in
    /// shared-storage mode the object store keeps the copies and Metadata names this
    /// many live brokers as replicas (docs/cluster.md).
    pub replication_factor: i16,
    /// The brokers a client named for each partition (CreateTopics or
    /// CreatePartitions assignments), the first the preferred leader; an empty list,
    /// or none past the end, for a partition Spool placed.
    pub replica_assignment: Vec<Vec<i32>>,
    /// Topic-level configs set explicitly, by their Kafka names.
    pub configs: BTreeMap<String, String>,
}

/// A consumer group's committed offset for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommittedOffset {
    pub group: String,
    /// The topic's name: filled in when read (from the topic the id names), not
    /// stored with the offset.
    pub topic: String,
    /// What the offset belongs to: it goes when the topic does.
    pub topic_id: Uuid,
    pub partition: i32,
    pub offset: i64,
    /// -1 when the client did not send one.
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    /// When it was committed (ms since the epoch), for expiry.
    pub commit_ms: i64,
}

/// One change of a set of configs: a key set to a value, or removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigChange {
    Set { key: String, value: String },
    Delete { key: String },
}

impl ConfigChange {
    /// The changes that turn the configs `from` into `to`, key by key.
    #[must_use]
    pub fn between(
        from: &BTreeMap<String, String>,
        to: &BTreeMap<String, String>,
    ) -> Vec<ConfigChange> {
        let removed = from
            .keys()
            .filter(|key| !to.contains_key(*key))
            .map(|key| ConfigChange::Delete { key: key.clone() });
        let set = to
            .iter()
            .filter(|(key, value)| from.get(*key) != Some(*value))
            .map(|(key, value)| ConfigChange::Set {
                key: key.clone(),
                value: value.clone(),
            });
        removed.chain(set).collect()
    }
}

/// A topic's replica assignment as the store keeps it: `1,2;2,3;` (one list per
/// partition, `;` between them, an empty one for a partition Spool placed).
#[must_use]
pub fn encode_assignment(assignment: &[Vec<i32>]) -> String {
    assignment
        .iter()
        .map(|replicas| {
            replicas
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// The assignment [`encode_assignment`] wrote (what does not parse is left out).
#[must_use]
pub fn decode_assignment(text: &str) -> Vec<Vec<i32>> {
    if text.is_empty() {
        return Vec::new();
    }
    text.split(';')
        .map(|replicas| {
            replicas
                .split(',')
                .filter_map(|node| node.parse().ok())
                .collect()
        })
        .collect()
}
