//! Every version of every consumer-group request, with each field its version has set
//! and arrays populated, for the guard's round-trip test.

use bytes::Bytes;
use kafka_protocol::messages::{
    ApiKey, ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, DeleteGroupsRequest,
    DescribeGroupsRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest, ListGroupsRequest,
    OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest, ProducerId, SyncGroupRequest,
    TransactionalId,
    join_group_request::JoinGroupRequestProtocol,
    leave_group_request::MemberIdentity,
    offset_commit_request::{OffsetCommitRequestPartition, OffsetCommitRequestTopic},
    offset_delete_request::{OffsetDeleteRequestPartition, OffsetDeleteRequestTopic},
    offset_fetch_request::{
        OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
    },
    sync_group_request::SyncGroupRequestAssignment,
};
use kafka_protocol::protocol::{Message, StrBytes};

use super::{encoded, name};

fn text(s: &'static str) -> StrBytes {
    StrBytes::from_static_str(s)
}

fn group() -> GroupId {
    GroupId(text("payments"))
}

/// (api key, version, encoded body) for every version of every group request.
pub(super) fn samples() -> Vec<(i16, i16, Vec<u8>)> {
    let mut out = Vec::new();
    let mut add = |key: ApiKey,
                   range: kafka_protocol::protocol::VersionRange,
                   encode: &dyn Fn(i16) -> Vec<u8>| {
        for version in range.min..=range.max {
            out.push((key as i16, version, encode(version)));
        }
    };
    add(
        ApiKey::FindCoordinator,
        FindCoordinatorRequest::VERSIONS,
        &|v| {
            let request =
                FindCoordinatorRequest::default().with_key_type(if v >= 1 { 1 } else { 0 });
            let request = if v >= 4 {
                request.with_coordinator_keys(vec![text("a"), text("b")])
            } else {
                request.with_key(text("a"))
            };
            encoded(&request, v)
        },
    );
    add(ApiKey::JoinGroup, JoinGroupRequest::VERSIONS, &|v| {
        let mut request = JoinGroupRequest::default()
            .with_group_id(group())
            .with_session_timeout_ms(10_000)
            .with_member_id(text("member-1"))
            .with_protocol_type(text("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(text("range"))
                    .with_metadata(Bytes::from_static(&[0, 1, 2, 3])),
                JoinGroupRequestProtocol::default().with_name(text("roundrobin")),
            ]);
        if v >= 1 {
            request = request.with_rebalance_timeout_ms(30_000);
        }
        if v >= 5 {
            request = request.with_group_instance_id(Some(text("instance-1")));
        }
        if v >= 8 {
            request = request.with_reason(Some(text("because")));
        }
        encoded(&request, v)
    });
    add(ApiKey::SyncGroup, SyncGroupRequest::VERSIONS, &|v| {
        let mut request = SyncGroupRequest::default()
            .with_group_id(group())
            .with_generation_id(3)
            .with_member_id(text("member-1"))
            .with_assignments(vec![
                SyncGroupRequestAssignment::default()
                    .with_member_id(text("member-1"))
                    .with_assignment(Bytes::from_static(&[9; 12])),
                SyncGroupRequestAssignment::default().with_member_id(text("member-2")),
            ]);
        if v >= 3 {
            request = request.with_group_instance_id(Some(text("instance-1")));
        }
        if v >= 5 {
            request = request
                .with_protocol_type(Some(text("consumer")))
                .with_protocol_name(Some(text("range")));
        }
        encoded(&request, v)
    });
    add(ApiKey::Heartbeat, HeartbeatRequest::VERSIONS, &|v| {
        let mut request = HeartbeatRequest::default()
            .with_group_id(group())
            .with_generation_id(3)
            .with_member_id(text("member-1"));
        if v >= 3 {
            request = request.with_group_instance_id(Some(text("instance-1")));
        }
        encoded(&request, v)
    });
    add(ApiKey::LeaveGroup, LeaveGroupRequest::VERSIONS, &|v| {
        let request = LeaveGroupRequest::default().with_group_id(group());
        let request = if v >= 3 {
            let mut member = MemberIdentity::default()
                .with_member_id(text("member-1"))
                .with_group_instance_id(Some(text("instance-1")));
            if v >= 5 {
                member = member.with_reason(Some(text("bye")));
            }
            request.with_members(vec![
                member,
                MemberIdentity::default().with_member_id(text("m2")),
            ])
        } else {
            request.with_member_id(text("member-1"))
        };
        encoded(&request, v)
    });
    add(ApiKey::OffsetCommit, OffsetCommitRequest::VERSIONS, &|v| {
        let mut partition = OffsetCommitRequestPartition::default()
            .with_partition_index(2)
            .with_committed_offset(42)
            .with_committed_metadata(Some(text("meta")));
        if v >= 6 {
            partition = partition.with_committed_leader_epoch(5);
        }
        let mut request = OffsetCommitRequest::default()
            .with_group_id(group())
            .with_generation_id_or_member_epoch(3)
            .with_member_id(text("member-1"))
            .with_topics(vec![
                OffsetCommitRequestTopic::default()
                    .with_name(name("orders"))
                    .with_partitions(vec![partition.clone(), partition]),
            ]);
        if v >= 7 {
            request = request.with_group_instance_id(Some(text("instance-1")));
        }
        if v <= 4 {
            request = request.with_retention_time_ms(60_000);
        }
        encoded(&request, v)
    });
    add(ApiKey::OffsetFetch, OffsetFetchRequest::VERSIONS, &|v| {
        let mut request = if v >= 8 {
            let mut one = OffsetFetchRequestGroup::default()
                .with_group_id(group())
                .with_topics(Some(vec![
                    OffsetFetchRequestTopics::default()
                        .with_name(name("orders"))
                        .with_partition_indexes(vec![0, 1, 2]),
                ]));
            if v >= 9 {
                one = one
                    .with_member_id(Some(text("member-1")))
                    .with_member_epoch(4);
            }
            OffsetFetchRequest::default().with_groups(vec![
                one,
                OffsetFetchRequestGroup::default().with_group_id(GroupId(text("all"))),
            ])
        } else {
            OffsetFetchRequest::default()
                .with_group_id(group())
                .with_topics(Some(vec![
                    OffsetFetchRequestTopic::default()
                        .with_name(name("orders"))
                        .with_partition_indexes(vec![0, 1, 2]),
                ]))
        };
        if v >= 7 {
            request = request.with_require_stable(true);
        }
        encoded(&request, v)
    });
    add(ApiKey::ListGroups, ListGroupsRequest::VERSIONS, &|v| {
        let mut request = ListGroupsRequest::default();
        if v >= 4 {
            request = request.with_states_filter(vec![text("Stable"), text("Empty")]);
        }
        if v >= 5 {
            request = request.with_types_filter(vec![text("classic")]);
        }
        encoded(&request, v)
    });
    add(
        ApiKey::DescribeGroups,
        DescribeGroupsRequest::VERSIONS,
        &|v| {
            let mut request =
                DescribeGroupsRequest::default().with_groups(vec![group(), GroupId(text("other"))]);
            if v >= 3 {
                request = request.with_include_authorized_operations(true);
            }
            encoded(&request, v)
        },
    );
    add(
        ApiKey::ConsumerGroupHeartbeat,
        ConsumerGroupHeartbeatRequest::VERSIONS,
        &|v| {
            let owned = kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions::default()
                .with_topic_id(uuid::Uuid::from_bytes([7; 16]))
                .with_partitions(vec![0, 3]);
            let mut request = ConsumerGroupHeartbeatRequest::default()
                .with_group_id(group())
                .with_member_id(text("member-1"))
                .with_member_epoch(4)
                .with_instance_id(Some(text("instance-1")))
                .with_rack_id(Some(text("rack-a")))
                .with_rebalance_timeout_ms(300_000)
                .with_subscribed_topic_names(Some(vec![name("orders"), name("payments")]))
                .with_server_assignor(Some(text("uniform")))
                .with_topic_partitions(Some(vec![owned]));
            if v >= 1 {
                request = request.with_subscribed_topic_regex(Some(text("orders-.*")));
            }
            encoded(&request, v)
        },
    );
    add(
        ApiKey::ConsumerGroupDescribe,
        ConsumerGroupDescribeRequest::VERSIONS,
        &|v| {
            let request = ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![group(), GroupId(text("other"))])
                .with_include_authorized_operations(true);
            encoded(&request, v)
        },
    );
    add(ApiKey::DeleteGroups, DeleteGroupsRequest::VERSIONS, &|v| {
        let request =
            DeleteGroupsRequest::default().with_groups_names(vec![group(), GroupId(text("b"))]);
        encoded(&request, v)
    });
    add(ApiKey::OffsetDelete, OffsetDeleteRequest::VERSIONS, &|v| {
        let request = OffsetDeleteRequest::default()
            .with_group_id(group())
            .with_topics(vec![
                OffsetDeleteRequestTopic::default()
                    .with_name(name("orders"))
                    .with_partitions(vec![
                        OffsetDeleteRequestPartition::default().with_partition_index(1),
                    ]),
            ]);
        encoded(&request, v)
    });
    add(
        ApiKey::InitProducerId,
        InitProducerIdRequest::VERSIONS,
        &|v| {
            let mut request = InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(text("tx"))))
                .with_transaction_timeout_ms(60_000);
            if v >= 3 {
                request = request
                    .with_producer_id(ProducerId(42))
                    .with_producer_epoch(3);
            }
            encoded(&request, v)
        },
    );
    out
}
