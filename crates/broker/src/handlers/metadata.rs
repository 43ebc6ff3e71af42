//! Metadata (key 3): the brokers and the topics with each partition's leader — this
//! broker for every partition in embedded mode, the cluster's leaders in
//! shared-storage mode. Unknown topics are auto-created when allowed. Topics the
//! principal may not DESCRIBE are left out of "all topics" and refused when named;
//! auto-creation needs CREATE on the cluster or the topic. A partition's replicas (and
//! in-sync replicas) are its leader and, in a cluster with racks, the broker the
//! leader names to each other rack's consumers (KIP-392): a client may only be sent to
//! a replica.

use std::collections::HashSet;
use std::sync::Arc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, MetadataRequest, MetadataResponse, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::consumer_offsets;
use crate::errors::code;
use crate::replica_reads::preferred::ReplicaLists;
use crate::shared::Shared;
use crate::topics::{self, Topic};
use spool_security::acl::{CLUSTER_NAME, Operation, ResourceType};

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::Metadata,
    min: 0,
    max: 12,
};

pub(crate) async fn handle(
    request: MetadataRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let shared = Arc::clone(shared);
    let node = BrokerId(shared.started_config().node_id);
    let brokers = brokers(&shared, &context.listener);
    // A partition whose leader is not among them is told leaderless, as Kafka does
    // (its leader died and the controller has not moved it yet).
    let listed: HashSet<i32> = brokers.iter().map(|broker| broker.node_id.0).collect();
    let replica_lists = replica_lists(&shared, &listed, &context.listener);
    // v0: an empty list means all topics; v1+: a null list means all topics.
    let requested = match request.topics {
        None => None,
        Some(topics) if topics.is_empty() && version == 0 => None,
        Some(topics) => Some(topics),
    };
    let allow_auto_create = version < 4 || request.allow_auto_topic_creation;
    let access = &context.access;
    // The authorized-operations bitfields, when asked for.
    let topic_operations = version >= 8 && request.include_topic_authorized_operations;
    let operations = |topic: &Topic| {
        topic_operations.then(|| access.operations(ResourceType::Topic, topic.record.name.as_str()))
    };
    let mut topics = Vec::new();
    match requested {
        None => {
            // Topics the principal may not describe are left out.
            for topic in shared.topics().all() {
                if access.topic(Operation::Describe, topic.record.name.as_str()) {
                    topics.push(describe(
                        &shared,
                        &listed,
                        &replica_lists,
                        &topic,
                        version,
                        operations(&topic),
                    ));
                }
            }
        }
        Some(requested) => {
            for wanted in requested {
                let by_id = (version >= 10 && !wanted.topic_id.is_nil()).then_some(wanted.topic_id);
                let may_describe = |name: &str| access.topic(Operation::Describe, name);
                let denied = MetadataResponseTopic::default()
                    .with_name(wanted.name.clone())
                    .with_error_code(code::TOPIC_AUTHORIZATION_FAILED);
                let offsets_topic = match (&wanted.name, by_id) {
                    (_, Some(id)) => consumer_offsets::with_id(id),
                    (Some(name), None) => consumer_offsets::named(&shared, name.0.as_str()),
                    (None, None) => false,
                };
                if offsets_topic {
                    topics.push(if may_describe(consumer_offsets::NAME) {
                        let operations = topic_operations.then(|| {
                            access.operations(ResourceType::Topic, consumer_offsets::NAME)
                        });
                        consumer_offsets::describe(
                            &shared,
                            replica_lists.writers(),
                            version,
                            operations,
                        )
                    } else {
                        denied
                    });
                    continue;
                }
                let found = match (&wanted.name, by_id) {
                    (_, Some(id)) => shared.topics().by_id(id),
                    (Some(name), None) if !may_describe(name.0.as_str()) => {
                        topics.push(denied);
                        continue;
                    }
                    (Some(name), None) => {
                        let name = name.0.as_str();
                        let may_create = access.cluster(Operation::Create)
                            || access.topic(Operation::Create, name);
                        let found = topics::get_or_auto_create(
                            &shared,
                            name,
                            allow_auto_create && may_create,
                        )
                        .await;
                        if found.is_none()
                            && allow_auto_create
                            && !may_create
                            && shared.current_config().auto_create_topics
                        {
                            topics.push(denied);
                            continue;
                        }
                        found
                    }
                    (None, None) => None,
                };
                if found
                    .as_ref()
                    .is_some_and(|topic| !may_describe(topic.record.name.as_str()))
                {
                    topics.push(denied);
                    continue;
                }
                // A name Kafka would refuse is told so, so that a producer fails its
                // messages at once instead of waiting for the topic to appear.
                let illegal = |name: Option<&TopicName>| {
                    by_id.is_none() && name.is_some_and(|n| topics::is_illegal_name(n.0.as_str()))
                };
                let response = match found {
                    Some(topic) => describe(
                        &shared,
                        &listed,
                        &replica_lists,
                        &topic,
                        version,
                        operations(&topic),
                    ),
                    None if illegal(wanted.name.as_ref()) => MetadataResponseTopic::default()
                        .with_name(wanted.name)
                        .with_error_code(code::INVALID_TOPIC_EXCEPTION),
                    None => MetadataResponseTopic::default()
                        .with_name(wanted.name)
                        .with_topic_id(if version >= 10 {
                            wanted.topic_id
                        } else {
                            uuid::Uuid::nil()
                        })
                        .with_error_code(if by_id.is_some() {
                            code::UNKNOWN_TOPIC_ID
                        } else {
                            code::UNKNOWN_TOPIC_OR_PARTITION
                        }),
                };
                topics.push(response);
            }
        }
    }
    let mut response = MetadataResponse::default()
        .with_brokers(brokers)
        .with_topics(topics);
    if version >= 1 {
        let controller = shared
            .cluster()
            .map_or(node, |view| BrokerId(view.controller_for_clients()));
        response = response.with_controller_id(controller);
    }
    if version >= 2 {
        response =
            response.with_cluster_id(Some(StrBytes::from_string(shared.cluster_id().to_owned())));
    }
    if (8..=10).contains(&version) && request.include_cluster_authorized_operations {
        response = response.with_cluster_authorized_operations(
            access.operations(ResourceType::Cluster, CLUSTER_NAME),
        );
    }
    ResponseKind::Metadata(response)
}

/// This broker alone in embedded mode; the live brokers of the cluster (this one
/// always among them) in shared-storage mode, each at its endpoint on `listener`
/// (one without that listener is left out, as Kafka does, and the partitions it
/// leads answer `LEADER_NOT_AVAILABLE`).
fn brokers(shared: &Shared, listener: &str) -> Vec<MetadataResponseBroker> {
    let node = shared.started_config().node_id;
    // This broker's endpoint on the listener the request came in on.
    let (host, port) = shared.advertised_on(listener);
    let me = MetadataResponseBroker::default()
        .with_node_id(BrokerId(node))
        .with_host(StrBytes::from_string(host))
        .with_port(port)
        .with_rack(
            shared
                .started_config()
                .reads
                .rack
                .clone()
                .map(StrBytes::from_string),
        );
    let Some(view) = shared.cluster() else {
        return vec![me];
    };
    let mut brokers: Vec<MetadataResponseBroker> = view
        .live_brokers()
        .into_iter()
        .filter(|broker| broker.node_id != node)
        .filter_map(|broker| broker.on_listener(listener))
        .map(|broker| {
            MetadataResponseBroker::default()
                .with_node_id(BrokerId(broker.node_id))
                .with_host(StrBytes::from_string(broker.host))
                .with_port(broker.port)
                .with_rack(broker.rack.map(StrBytes::from_string))
        })
        .collect();
    brokers.push(me);
    brokers.sort_by_key(|broker| broker.node_id);
    brokers
}

/// The brokers each partition's replicas may include besides its leader: in a
/// cluster, the live writers listed (up to the topic's replication factor) and, when
/// leaders name preferred read replicas (`broker.read.preferred`), every live one.
fn replica_lists(shared: &Shared, listed: &HashSet<i32>, listener: &str) -> ReplicaLists {
    let Some(view) = shared.cluster() else {
        return ReplicaLists::default();
    };
    let live: Vec<_> = view
        .live_brokers()
        .into_iter()
        .filter(|broker| listed.contains(&broker.node_id))
        .collect();
    let writers = live
        .iter()
        .filter(|broker| !broker.reader)
        .map(|broker| broker.node_id)
        .collect();
    let preferring = if shared.current_config().reads.preferred_replicas {
        live
    } else {
        Vec::new()
    };
    ReplicaLists::new(preferring, writers, listener)
}

fn describe(
    shared: &Shared,
    listed: &HashSet<i32>,
    replica_lists: &ReplicaLists,
    topic: &Topic,
    version: i16,
    operations: Option<i32>,
) -> MetadataResponseTopic {
    let partitions = (0..topic.record.partitions)
        .map(|index| {
            let described = MetadataResponsePartition::default().with_partition_index(index);
            match shared
                .partitions()
                .leadership(topic, index)
                .filter(|(leader, _)| listed.contains(leader))
            {
                Some((leader, epoch)) => {
                    let assigned = usize::try_from(index)
                        .ok()
                        .and_then(|index| topic.record.replica_assignment.get(index))
                        .map_or(&[][..], Vec::as_slice);
                    let replicas = replica_lists.of(
                        topic.partition_key(index),
                        leader,
                        topic.record.replication_factor,
                        assigned,
                    );
                    let in_sync = replica_lists.in_sync(&replicas, leader);
                    described
                        .with_leader_id(BrokerId(leader))
                        .with_leader_epoch(epoch)
                        .with_replica_nodes(replicas.into_iter().map(BrokerId).collect())
                        .with_isr_nodes(in_sync.into_iter().map(BrokerId).collect())
                }
                // Not assigned yet (a new partition the controller has not seen), or
                // its leader is gone.
                None => described
                    .with_error_code(code::LEADER_NOT_AVAILABLE)
                    .with_leader_id(BrokerId(-1))
                    .with_leader_epoch(-1),
            }
        })
        .collect();
    let name = TopicName(StrBytes::from_string(topic.record.name.as_str().to_owned()));
    let mut described = MetadataResponseTopic::default()
        .with_name(Some(name))
        .with_partitions(partitions);
    if let Some(operations) = operations {
        described = described.with_topic_authorized_operations(operations);
    }
    if version >= 10 {
        described.with_topic_id(topic.record.id)
    } else {
        described
    }
}
