//! Metadata (key 3): this broker, and the topics and partitions it holds (it leads
//! them all: a single node).

use std::collections::BTreeMap;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, MetadataRequest, MetadataResponse, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::ApiDecl;
use crate::server::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::Metadata,
    min: 0,
    max: 12,
};

/// Kafka's UNKNOWN_TOPIC_OR_PARTITION error code.
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;

pub(crate) fn handle(request: MetadataRequest, version: i16, shared: &Shared) -> ResponseKind {
    let node = BrokerId(shared.config.node_id);
    let (host, port) = &shared.advertised;
    let broker = MetadataResponseBroker::default()
        .with_node_id(node)
        .with_host(StrBytes::from_string(host.clone()))
        .with_port(*port);

    let mut partitions_by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for partition in shared.logs.partitions() {
        partitions_by_topic
            .entry(partition.topic.as_str().to_owned())
            .or_default()
            .push(partition.partition.0);
    }
    // v0: an empty list means all topics; v1+: a null list means all topics.
    let requested: Option<Vec<String>> = match request.topics {
        None => None,
        Some(topics) if topics.is_empty() && version == 0 => None,
        Some(topics) => Some(
            topics
                .into_iter()
                .filter_map(|t| t.name.map(|n| n.0.to_string()))
                .collect(),
        ),
    };
    let names: Vec<String> =
        requested.unwrap_or_else(|| partitions_by_topic.keys().cloned().collect());
    let topics = names
        .into_iter()
        .map(|name| {
            let topic = MetadataResponseTopic::default()
                .with_name(Some(TopicName(StrBytes::from_string(name.clone()))));
            match partitions_by_topic.get(&name) {
                None => topic.with_error_code(UNKNOWN_TOPIC_OR_PARTITION),
                Some(partitions) => topic.with_partitions(
                    partitions
                        .iter()
                        .map(|&index| {
                            MetadataResponsePartition::default()
                                .with_partition_index(index)
                                .with_leader_id(node)
                                .with_leader_epoch(0)
                                .with_replica_nodes(vec![node])
                                .with_isr_nodes(vec![node])
                        })
                        .collect(),
                ),
            }
        })
        .collect();
    let mut response = MetadataResponse::default()
        .with_brokers(vec![broker])
        .with_topics(topics);
    if version >= 1 {
        response = response.with_controller_id(node);
    }
    if version >= 2 {
        response = response.with_cluster_id(Some(StrBytes::from_string(shared.cluster_id.clone())));
    }
    ResponseKind::Metadata(response)
}
