//! Typed shortcuts over [`RawClient::call`] for the requests most tests make. They
//! panic on a response of the wrong kind, as a test should.
#![allow(clippy::panic)]

use bytes::Bytes;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::list_offsets_response::ListOffsetsPartitionResponse;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    BrokerId, CreateTopicsRequest, DeleteTopicsRequest, FetchRequest,
    IncrementalAlterConfigsRequest, ListOffsetsRequest, ProduceRequest, RequestKind, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::RawClient;

/// A topic name for a request.
#[must_use]
pub fn topic_name(topic: &str) -> TopicName {
    TopicName(StrBytes::from_string(topic.to_owned()))
}

/// One partition of a Fetch request.
#[derive(Debug, Clone, Copy)]
pub struct FetchAt {
    pub partition: i32,
    pub offset: i64,
    pub max_bytes: i32,
}

/// A Fetch request for some partitions of one topic.
#[must_use]
pub fn fetch_request(
    topic: &str,
    partitions: &[FetchAt],
    min_bytes: i32,
    max_wait_ms: i32,
    max_bytes: i32,
) -> RequestKind {
    RequestKind::Fetch(
        FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(max_wait_ms)
            .with_min_bytes(min_bytes)
            .with_max_bytes(max_bytes)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(topic_name(topic))
                    .with_partitions(
                        partitions
                            .iter()
                            .map(|at| {
                                FetchPartition::default()
                                    .with_partition(at.partition)
                                    .with_fetch_offset(at.offset)
                                    .with_partition_max_bytes(at.max_bytes)
                            })
                            .collect(),
                    ),
            ]),
    )
}

/// A ListOffsets request (as a consumer sends it) for one partition at `timestamp` or
/// one of Kafka's specials (-1 latest, -2 earliest, -3 max timestamp).
#[must_use]
pub fn list_offsets_request(topic: &str, partition: i32, timestamp: i64) -> ListOffsetsRequest {
    ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![
            ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    ListOffsetsPartition::default()
                        .with_partition_index(partition)
                        .with_timestamp(timestamp),
                ]),
        ])
}

/// A Produce request (acks=all) of `records` to one partition.
#[must_use]
pub fn produce_request(topic: &str, partition: i32, records: Vec<u8>) -> RequestKind {
    RequestKind::Produce(
        ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5000)
            .with_topic_data(vec![
                TopicProduceData::default()
                    .with_name(topic_name(topic))
                    .with_partition_data(vec![
                        PartitionProduceData::default()
                            .with_index(partition)
                            .with_records(Some(Bytes::from(records))),
                    ]),
            ]),
    )
}

impl RawClient {
    /// Creates `topic` (CreateTopics v7); returns the topic's error code.
    pub async fn create_topic(&mut self, topic: &str, partitions: i32) -> i16 {
        self.create_topic_with(topic, partitions, &[]).await
    }

    /// Creates `topic` with topic configs (CreateTopics v7); returns the topic's error
    /// code.
    pub async fn create_topic_with(
        &mut self,
        topic: &str,
        partitions: i32,
        configs: &[(&str, &str)],
    ) -> i16 {
        let configs = configs
            .iter()
            .map(|(name, value)| {
                CreatableTopicConfig::default()
                    .with_name(StrBytes::from_string((*name).to_owned()))
                    .with_value(Some(StrBytes::from_string((*value).to_owned())))
            })
            .collect();
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(5000)
            .with_topics(vec![
                CreatableTopic::default()
                    .with_name(topic_name(topic))
                    .with_num_partitions(partitions)
                    .with_replication_factor(1)
                    .with_configs(configs),
            ]);
        let ResponseKind::CreateTopics(response) =
            self.call(RequestKind::CreateTopics(request), 7).await
        else {
            panic!("not a CreateTopics response")
        };
        response.topics[0].error_code
    }

    /// Deletes `topic` (DeleteTopics v4); returns the topic's error code.
    pub async fn delete_topic(&mut self, topic: &str) -> i16 {
        let request = DeleteTopicsRequest::default()
            .with_timeout_ms(5000)
            .with_topic_names(vec![topic_name(topic)]);
        let ResponseKind::DeleteTopics(response) =
            self.call(RequestKind::DeleteTopics(request), 4).await
        else {
            panic!("not a DeleteTopics response")
        };
        response.responses[0].error_code
    }

    /// Sets one config of a resource (IncrementalAlterConfigs v1; resource type 2 is
    /// a topic, 4 a broker); returns the resource's error code.
    pub async fn set_config(
        &mut self,
        resource_type: i8,
        resource: &str,
        name: &str,
        value: &str,
    ) -> i16 {
        let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(resource_type)
                .with_resource_name(StrBytes::from_string(resource.to_owned()))
                .with_configs(vec![
                    AlterableConfig::default()
                        .with_name(StrBytes::from_string(name.to_owned()))
                        .with_value(Some(StrBytes::from_string(value.to_owned()))),
                ]),
        ]);
        let ResponseKind::IncrementalAlterConfigs(response) = self
            .call(RequestKind::IncrementalAlterConfigs(request), 1)
            .await
        else {
            panic!("not an IncrementalAlterConfigs response")
        };
        response.responses[0].error_code
    }

    /// Produces `records` to one partition with acks=all (Produce v9); returns
    /// (error code, base offset).
    pub async fn produce(&mut self, topic: &str, partition: i32, records: Vec<u8>) -> (i16, i64) {
        let request = produce_request(topic, partition, records);
        let ResponseKind::Produce(response) = self.call(request, 9).await else {
            panic!("not a Produce response")
        };
        let partition = &response.responses[0].partition_responses[0];
        (partition.error_code, partition.base_offset)
    }

    /// Fetches partitions of one topic at `version`, without waiting for data unless
    /// `min_bytes` asks; returns the partitions' answers in request order.
    pub async fn fetch(
        &mut self,
        version: i16,
        topic: &str,
        partitions: &[FetchAt],
        min_bytes: i32,
        max_wait_ms: i32,
        max_bytes: i32,
    ) -> Vec<PartitionData> {
        let request = fetch_request(topic, partitions, min_bytes, max_wait_ms, max_bytes);
        let ResponseKind::Fetch(response) = self.call(request, version).await else {
            panic!("not a Fetch response")
        };
        assert_eq!(response.error_code, 0);
        response
            .responses
            .into_iter()
            .flat_map(|t| t.partitions)
            .collect()
    }

    /// ListOffsets for one partition at `version`: `timestamp` is a time in ms or one
    /// of Kafka's specials (-1 latest, -2 earliest, -3 max timestamp).
    pub async fn list_offset(
        &mut self,
        version: i16,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> ListOffsetsPartitionResponse {
        let request = list_offsets_request(topic, partition, timestamp);
        let ResponseKind::ListOffsets(response) =
            self.call(RequestKind::ListOffsets(request), version).await
        else {
            panic!("not a ListOffsets response")
        };
        response
            .topics
            .into_iter()
            .flat_map(|t| t.partitions)
            .next()
            .unwrap_or_else(|| panic!("no partition in the answer"))
    }
}
