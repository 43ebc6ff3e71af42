//! Databus names itself where a client would learn of a broker: it is the one broker
//! of the cluster a client sees, leader of every partition and coordinator of every
//! group and transaction, so that every request comes to it. The partition
//! counts, topic ids, configs and errors are the upstream's.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::metadata_response::MetadataResponseBroker;
use kafka_protocol::messages::{
    BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, MetadataResponse,
};
use kafka_protocol::protocol::StrBytes;

/// Where clients reach Databus.
#[derive(Debug, Clone)]
pub(crate) struct Me {
    pub(crate) node_id: i32,
    pub(crate) host: String,
    pub(crate) port: i32,
}

/// The upstream's Metadata answer with Databus as the one broker leading everything.
pub(crate) fn metadata(mut answer: MetadataResponse, me: &Me) -> MetadataResponse {
    let id = BrokerId(me.node_id);
    answer.brokers = vec![
        MetadataResponseBroker::default()
            .with_node_id(id)
            .with_host(StrBytes::from_string(me.host.clone()))
            .with_port(me.port),
    ];
    answer.controller_id = id;
    for topic in &mut answer.topics {
        for partition in &mut topic.partitions {
            if partition.leader_id.0 >= 0 {
                partition.leader_id = id;
                partition.replica_nodes = vec![id];
                partition.isr_nodes = vec![id];
            }
            partition.offline_replicas = Vec::new();
        }
    }
    answer
}

/// FindCoordinator answered locally: Databus for every key.
pub(crate) fn coordinator(
    request: &FindCoordinatorRequest,
    version: i16,
    me: &Me,
) -> FindCoordinatorResponse {
    let host = StrBytes::from_string(me.host.clone());
    if version < 4 {
        return FindCoordinatorResponse::default()
            .with_node_id(BrokerId(me.node_id))
            .with_host(host)
            .with_port(me.port);
    }
    FindCoordinatorResponse::default().with_coordinators(
        request
            .coordinator_keys
            .iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key.clone())
                    .with_node_id(BrokerId(me.node_id))
                    .with_host(host.clone())
                    .with_port(me.port)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::metadata_response::{
        MetadataResponsePartition, MetadataResponseTopic,
    };

    use super::*;

    #[test]
    fn databus_leads_every_partition_with_a_leader_and_is_the_only_broker() {
        let me = Me {
            node_id: 0,
            host: "127.0.0.1".into(),
            port: 9093,
        };
        let upstream = MetadataResponse::default()
            .with_brokers(vec![
                MetadataResponseBroker::default().with_node_id(BrokerId(1)),
                MetadataResponseBroker::default().with_node_id(BrokerId(2)),
            ])
            .with_controller_id(BrokerId(2))
            .with_topics(vec![MetadataResponseTopic::default().with_partitions(
                vec![
                MetadataResponsePartition::default()
                    .with_leader_id(BrokerId(2))
                    .with_replica_nodes(vec![BrokerId(2), BrokerId(1)]),
                MetadataResponsePartition::default().with_leader_id(BrokerId(-1)),
            ],
            )]);
        let answer = metadata(upstream, &me);
        assert_eq!(answer.brokers.len(), 1);
        assert_eq!(answer.brokers[0].port, 9093);
        assert_eq!(answer.controller_id, BrokerId(0));
        let partitions = &answer.topics[0].partitions;
        assert_eq!(partitions[0].leader_id, BrokerId(0));
        assert_eq!(partitions[0].replica_nodes, vec![BrokerId(0)]);
        assert_eq!(
            partitions[1].leader_id,
            BrokerId(-1),
            "no leader: none named"
        );
    }
}
