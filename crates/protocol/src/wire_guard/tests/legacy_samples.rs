//! The versions Kafka 4 removed and Spool serves through `crate::legacy`: each API's
//! old versions encoded by `kafka-protocol` 0.15 (Kafka 3.9's ranges) with arrays
//! populated, for the guard's round-trip test: the guard checks them at their own
//! version before the old crate decodes them.

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol_legacy::messages::{
    CreateAclsRequest, CreateTopicsRequest, DeleteAclsRequest, DeleteTopicsRequest,
    DescribeAclsRequest, DescribeConfigsRequest, FetchRequest, GroupId, ListOffsetsRequest,
    OffsetCommitRequest, OffsetFetchRequest, OffsetForLeaderEpochRequest, ProduceRequest,
    RequestKind, TopicName,
    create_acls_request::AclCreation,
    create_topics_request::{CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig},
    delete_acls_request::DeleteAclsFilter,
    describe_configs_request::DescribeConfigsResource,
    fetch_request::{FetchPartition, FetchTopic},
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    offset_fetch_request::OffsetFetchRequestTopic,
    offset_for_leader_epoch_request::{OffsetForLeaderPartition, OffsetForLeaderTopic},
    produce_request::{PartitionProduceData, TopicProduceData},
};
use kafka_protocol_legacy::protocol::StrBytes;

use crate::legacy::{handled_as, lowest_version};

fn text(s: &'static str) -> StrBytes {
    StrBytes::from_static_str(s)
}

fn topic() -> TopicName {
    TopicName(text("orders"))
}

/// One request of each bridged API at `version`, every field that version has set.
fn requests(version: i16) -> Vec<(ApiKey, RequestKind)> {
    let mut produce = ProduceRequest::default();
    produce.acks = -1;
    produce.timeout_ms = 1000;
    let mut data = TopicProduceData::default();
    data.name = topic();
    let mut partition = PartitionProduceData::default();
    partition.index = 1;
    partition.records = Some(Bytes::from_static(b"not checked here"));
    data.partition_data = vec![partition.clone(), partition];
    produce.topic_data = vec![data];

    let mut fetch = FetchRequest::default();
    fetch.max_wait_ms = 500;
    fetch.min_bytes = 1;
    fetch.max_bytes = 1 << 20;
    let mut fetch_topic = FetchTopic::default();
    fetch_topic.topic = topic();
    let mut fetch_partition = FetchPartition::default();
    fetch_partition.partition = 2;
    fetch_partition.fetch_offset = 7;
    fetch_partition.partition_max_bytes = 1 << 16;
    fetch_topic.partitions = vec![fetch_partition.clone(), fetch_partition];
    fetch.topics = vec![fetch_topic];

    let mut list = ListOffsetsRequest::default();
    let mut list_topic = ListOffsetsTopic::default();
    list_topic.name = topic();
    let mut list_partition = ListOffsetsPartition::default();
    list_partition.partition_index = 3;
    list_partition.timestamp = -1;
    list_partition.max_num_offsets = 1;
    list_topic.partitions = vec![list_partition.clone(), list_partition];
    list.topics = vec![list_topic];

    let mut commit = OffsetCommitRequest::default();
    commit.group_id = GroupId(text("payments"));
    if version >= 1 {
        commit.generation_id_or_member_epoch = 4;
        commit.member_id = text("member-1");
    }
    let mut commit_topic = OffsetCommitRequestTopic::default();
    commit_topic.name = topic();
    let mut commit_partition = OffsetCommitRequestPartition::default();
    commit_partition.partition_index = 1;
    commit_partition.committed_offset = 42;
    if version == 1 {
        commit_partition.commit_timestamp = 99;
    }
    commit_partition.committed_metadata = Some(text("meta"));
    commit_topic.partitions = vec![commit_partition.clone(), commit_partition];
    commit.topics = vec![commit_topic];

    let mut offsets = OffsetFetchRequest::default();
    offsets.group_id = GroupId(text("payments"));
    let mut offsets_topic = OffsetFetchRequestTopic::default();
    offsets_topic.name = topic();
    offsets_topic.partition_indexes = vec![0, 1, 2];
    offsets.topics = Some(vec![offsets_topic]);

    let mut epochs = OffsetForLeaderEpochRequest::default();
    let mut epochs_topic = OffsetForLeaderTopic::default();
    epochs_topic.topic = topic();
    let mut epochs_partition = OffsetForLeaderPartition::default();
    epochs_partition.partition = 1;
    epochs_partition.leader_epoch = 3;
    epochs_topic.partitions = vec![epochs_partition.clone(), epochs_partition];
    epochs.topics = vec![epochs_topic];

    let mut create = CreateTopicsRequest::default();
    create.timeout_ms = 1000;
    let mut creatable = CreatableTopic::default();
    creatable.name = topic();
    creatable.num_partitions = -1;
    creatable.replication_factor = -1;
    let mut assignment = CreatableReplicaAssignment::default();
    assignment.partition_index = 0;
    assignment.broker_ids = vec![1.into(), 2.into()];
    creatable.assignments = vec![assignment];
    let mut config = CreatableTopicConfig::default();
    config.name = text("retention.ms");
    config.value = Some(text("1000"));
    creatable.configs = vec![config];
    create.topics = vec![creatable];

    let mut delete = DeleteTopicsRequest::default();
    delete.topic_names = vec![topic(), topic()];
    delete.timeout_ms = 1000;

    let mut describe = DescribeConfigsRequest::default();
    let mut resource = DescribeConfigsResource::default();
    resource.resource_type = 2;
    resource.resource_name = text("orders");
    resource.configuration_keys = Some(vec![text("retention.ms")]);
    describe.resources = vec![resource];

    let mut creation = AclCreation::default();
    creation.resource_type = 2;
    creation.resource_name = text("orders");
    creation.resource_pattern_type = 3;
    creation.principal = text("User:alice");
    creation.host = text("*");
    creation.operation = 3;
    creation.permission_type = 3;
    let mut create_acls = CreateAclsRequest::default();
    create_acls.creations = vec![creation];

    let mut describe_acls = DescribeAclsRequest::default();
    describe_acls.resource_type_filter = 2;
    describe_acls.resource_name_filter = Some(text("orders"));
    describe_acls.pattern_type_filter = 3;
    describe_acls.principal_filter = Some(text("User:alice"));
    describe_acls.operation = 3;
    describe_acls.permission_type = 3;

    let mut filter = DeleteAclsFilter::default();
    filter.resource_type_filter = 2;
    filter.pattern_type_filter = 3;
    filter.principal_filter = Some(text("User:alice"));
    filter.operation = 3;
    filter.permission_type = 3;
    let mut delete_acls = DeleteAclsRequest::default();
    delete_acls.filters = vec![filter];

    vec![
        (ApiKey::Produce, RequestKind::Produce(produce)),
        (ApiKey::Fetch, RequestKind::Fetch(fetch)),
        (ApiKey::ListOffsets, RequestKind::ListOffsets(list)),
        (ApiKey::OffsetCommit, RequestKind::OffsetCommit(commit)),
        (ApiKey::OffsetFetch, RequestKind::OffsetFetch(offsets)),
        (
            ApiKey::OffsetForLeaderEpoch,
            RequestKind::OffsetForLeaderEpoch(epochs),
        ),
        (ApiKey::CreateTopics, RequestKind::CreateTopics(create)),
        (ApiKey::DeleteTopics, RequestKind::DeleteTopics(delete)),
        (
            ApiKey::DescribeConfigs,
            RequestKind::DescribeConfigs(describe),
        ),
        (ApiKey::CreateAcls, RequestKind::CreateAcls(create_acls)),
        (
            ApiKey::DescribeAcls,
            RequestKind::DescribeAcls(describe_acls),
        ),
        (ApiKey::DeleteAcls, RequestKind::DeleteAcls(delete_acls)),
    ]
}

/// (API key, version, bytes) of every old version of every bridged API.
pub(super) fn samples() -> Vec<(i16, i16, Vec<u8>)> {
    let mut out = Vec::new();
    for (api, _) in requests(0) {
        let lowest = lowest_version(api).unwrap_or_else(|| panic!("{api:?} is not bridged"));
        for version in lowest..handled_as(api, lowest) {
            let request = requests(version)
                .into_iter()
                .find_map(|(key, request)| (key == api).then_some(request))
                .unwrap_or_else(|| unreachable!());
            let mut bytes = BytesMut::new();
            request
                .encode(&mut bytes, version)
                .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"));
            out.push((api as i16, version, bytes.to_vec()));
        }
    }
    out
}
