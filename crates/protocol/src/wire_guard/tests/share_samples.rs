//! Every version of every share-group request, with each field set and arrays
//! populated, for the guard's round-trip test.

use kafka_protocol::messages::alter_share_group_offsets_request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::delete_share_group_offsets_request::DeleteShareGroupOffsetsRequestTopic;
use kafka_protocol::messages::describe_share_group_offsets_request::{
    DescribeShareGroupOffsetsRequestGroup, DescribeShareGroupOffsetsRequestTopic,
};
use kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, ApiKey, DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest, GroupId, ShareAcknowledgeRequest, ShareFetchRequest,
    ShareGroupDescribeRequest, ShareGroupHeartbeatRequest, share_acknowledge_request,
    share_fetch_request,
};
use kafka_protocol::protocol::{Message, StrBytes};

use super::{encoded, name};

fn text(s: &'static str) -> StrBytes {
    StrBytes::from_static_str(s)
}

fn group() -> GroupId {
    GroupId(text("queue"))
}

/// (api key, version, encoded body) for every version of every share-group request.
pub(super) fn samples() -> Vec<(i16, i16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut add = |key: ApiKey,
                   range: kafka_protocol::protocol::VersionRange,
                   encode: &dyn Fn(i16) -> Vec<u8>| {
        for version in range.min..=range.max {
            out.push((key as i16, version, encode(version)));
        }
    };
    let topic = uuid::Uuid::from_bytes([9; 16]);
    add(
        ApiKey::ShareGroupHeartbeat,
        ShareGroupHeartbeatRequest::VERSIONS,
        &|v| {
            let request = ShareGroupHeartbeatRequest::default()
                .with_group_id(group())
                .with_member_id(text("member-1"))
                .with_member_epoch(3)
                .with_rack_id(Some(text("rack-a")))
                .with_subscribed_topic_names(Some(vec![name("orders"), name("payments")]));
            encoded(&request, v)
        },
    );
    add(
        ApiKey::ShareGroupDescribe,
        ShareGroupDescribeRequest::VERSIONS,
        &|v| {
            let request = ShareGroupDescribeRequest::default()
                .with_group_ids(vec![group(), GroupId(text("other"))])
                .with_include_authorized_operations(true);
            encoded(&request, v)
        },
    );
    add(ApiKey::ShareFetch, ShareFetchRequest::VERSIONS, &|v| {
        let batch = share_fetch_request::AcknowledgementBatch::default()
            .with_first_offset(10)
            .with_last_offset(12)
            .with_acknowledge_types(vec![1, 2, 3]);
        let partition = share_fetch_request::FetchPartition::default()
            .with_partition_index(2)
            .with_acknowledgement_batches(vec![batch]);
        let request = ShareFetchRequest::default()
            .with_group_id(Some(group()))
            .with_member_id(Some(text("member-1")))
            .with_share_session_epoch(4)
            .with_max_wait_ms(500)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_max_records(500)
            .with_batch_size(500)
            .with_topics(vec![
                share_fetch_request::FetchTopic::default()
                    .with_topic_id(topic)
                    .with_partitions(vec![partition]),
            ])
            .with_forgotten_topics_data(vec![
                share_fetch_request::ForgottenTopic::default()
                    .with_topic_id(topic)
                    .with_partitions(vec![0, 1]),
            ]);
        encoded(&request, v)
    });
    add(
        ApiKey::ShareAcknowledge,
        ShareAcknowledgeRequest::VERSIONS,
        &|v| {
            let batch = share_acknowledge_request::AcknowledgementBatch::default()
                .with_first_offset(10)
                .with_last_offset(10)
                .with_acknowledge_types(vec![1]);
            let request = ShareAcknowledgeRequest::default()
                .with_group_id(Some(group()))
                .with_member_id(Some(text("member-1")))
                .with_share_session_epoch(5)
                .with_topics(vec![
                    share_acknowledge_request::AcknowledgeTopic::default()
                        .with_topic_id(topic)
                        .with_partitions(vec![
                            share_acknowledge_request::AcknowledgePartition::default()
                                .with_partition_index(0)
                                .with_acknowledgement_batches(vec![batch]),
                        ]),
                ]);
            encoded(&request, v)
        },
    );
    add(
        ApiKey::DescribeShareGroupOffsets,
        DescribeShareGroupOffsetsRequest::VERSIONS,
        &|v| {
            let group = DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(group())
                .with_topics(Some(vec![
                    DescribeShareGroupOffsetsRequestTopic::default()
                        .with_topic_name(name("orders"))
                        .with_partitions(vec![0, 1]),
                ]));
            let all = DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(GroupId(text("other")))
                .with_topics(None);
            encoded(
                &DescribeShareGroupOffsetsRequest::default().with_groups(vec![group, all]),
                v,
            )
        },
    );
    add(
        ApiKey::AlterShareGroupOffsets,
        AlterShareGroupOffsetsRequest::VERSIONS,
        &|v| {
            let topic = AlterShareGroupOffsetsRequestTopic::default()
                .with_topic_name(name("orders"))
                .with_partitions(vec![
                    AlterShareGroupOffsetsRequestPartition::default()
                        .with_partition_index(1)
                        .with_start_offset(42),
                ]);
            let request = AlterShareGroupOffsetsRequest::default()
                .with_group_id(group())
                .with_topics(vec![topic]);
            encoded(&request, v)
        },
    );
    add(
        ApiKey::DeleteShareGroupOffsets,
        DeleteShareGroupOffsetsRequest::VERSIONS,
        &|v| {
            let request = DeleteShareGroupOffsetsRequest::default()
                .with_group_id(group())
                .with_topics(vec![
                    DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(name("orders")),
                ]);
            encoded(&request, v)
        },
    );
    out
}
