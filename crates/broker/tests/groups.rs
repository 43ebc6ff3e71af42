//! Consumer-group APIs over raw requests, for what the client suites cannot reach:
//! FindCoordinator's batched and transaction keys, OffsetDelete and its guard for
//! subscribed topics, per-partition commit errors, and DescribeGroups of unknown groups.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DescribeGroupsRequest, FindCoordinatorRequest, GroupId, HeartbeatRequest,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetFetchRequest, RequestKind, ResponseKind, SyncGroupRequest,
};
use kafka_protocol::protocol::StrBytes;
use spool_broker::PartitionLag;
use spool_testkit::{BatchBuilder, RawClient, TestBroker, topic_name};

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_owned())
}

fn group(s: &str) -> GroupId {
    GroupId(text(s))
}

/// Commits `offsets` (partition, offset, metadata) of `topic` outside any membership;
/// returns the per-partition error codes.
async fn commit(client: &mut RawClient, topic: &str, offsets: &[(i32, i64, &str)]) -> Vec<i16> {
    let request = OffsetCommitRequest::default()
        .with_group_id(group("g"))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![
            OffsetCommitRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(
                    offsets
                        .iter()
                        .map(|(partition, offset, metadata)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(*partition)
                                .with_committed_offset(*offset)
                                .with_committed_metadata(Some(text(metadata)))
                        })
                        .collect(),
                ),
        ]);
    let ResponseKind::OffsetCommit(response) =
        client.call(RequestKind::OffsetCommit(request), 8).await
    else {
        panic!("not an OffsetCommit response")
    };
    response.topics[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect()
}

/// Group g's committed offsets of `partitions`, through OffsetFetch v7 and v8 (which
/// must agree).
async fn fetch(client: &mut RawClient, topic: &str, partitions: &[i32]) -> Vec<i64> {
    let request = OffsetFetchRequest::default()
        .with_group_id(group("g"))
        .with_topics(Some(vec![
            OffsetFetchRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partition_indexes(partitions.to_vec()),
        ]));
    let ResponseKind::OffsetFetch(v7) = client.call(RequestKind::OffsetFetch(request), 7).await
    else {
        panic!("not an OffsetFetch response")
    };
    let request = OffsetFetchRequest::default().with_groups(vec![
        OffsetFetchRequestGroup::default()
            .with_group_id(group("g"))
            .with_topics(Some(vec![
                OffsetFetchRequestTopics::default()
                    .with_name(topic_name(topic))
                    .with_partition_indexes(partitions.to_vec()),
            ])),
    ]);
    let ResponseKind::OffsetFetch(v8) = client.call(RequestKind::OffsetFetch(request), 8).await
    else {
        panic!("not an OffsetFetch response")
    };
    let old: Vec<i64> = v7.topics[0]
        .partitions
        .iter()
        .map(|p| p.committed_offset)
        .collect();
    let new: Vec<i64> = v8.groups[0].topics[0]
        .partitions
        .iter()
        .map(|p| p.committed_offset)
        .collect();
    assert_eq!(old, new, "v7 and v8 agree");
    old
}

async fn delete_offsets(client: &mut RawClient, topic: &str, partition: i32) -> (i16, i16) {
    let request = OffsetDeleteRequest::default()
        .with_group_id(group("g"))
        .with_topics(vec![
            OffsetDeleteRequestTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![
                    OffsetDeleteRequestPartition::default().with_partition_index(partition),
                ]),
        ]);
    let ResponseKind::OffsetDelete(response) =
        client.call(RequestKind::OffsetDelete(request), 0).await
    else {
        panic!("not an OffsetDelete response")
    };
    let partition = response.topics[0].partitions[0].error_code;
    (response.error_code, partition)
}

#[tokio::test]
async fn find_coordinator_answers_groups_and_transactions() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    let request = FindCoordinatorRequest::default().with_key(text("g"));
    let ResponseKind::FindCoordinator(old) =
        client.call(RequestKind::FindCoordinator(request), 3).await
    else {
        panic!("not a FindCoordinator response")
    };
    assert_eq!((old.error_code, old.node_id.0), (0, 1));
    assert_eq!(old.port, i32::from(broker.addr().port()));
    let request =
        FindCoordinatorRequest::default().with_coordinator_keys(vec![text("a"), text("b")]);
    let ResponseKind::FindCoordinator(batched) =
        client.call(RequestKind::FindCoordinator(request), 4).await
    else {
        panic!("not a FindCoordinator response")
    };
    let keys: Vec<_> = batched
        .coordinators
        .iter()
        .map(|c| c.key.to_string())
        .collect();
    assert_eq!(keys, ["a", "b"]);
    assert!(batched.coordinators.iter().all(|c| c.error_code == 0));
    let request = FindCoordinatorRequest::default()
        .with_key_type(1)
        .with_coordinator_keys(vec![text("tx")]);
    let ResponseKind::FindCoordinator(transactions) =
        client.call(RequestKind::FindCoordinator(request), 4).await
    else {
        panic!("not a FindCoordinator response")
    };
    assert_eq!(transactions.coordinators[0].error_code, 0);
    assert_eq!(transactions.coordinators[0].port, old.port, "this broker");
    let request = FindCoordinatorRequest::default()
        .with_key_type(7)
        .with_coordinator_keys(vec![text("x")]);
    let ResponseKind::FindCoordinator(unknown) =
        client.call(RequestKind::FindCoordinator(request), 4).await
    else {
        panic!("not a FindCoordinator response")
    };
    assert_eq!(unknown.coordinators[0].error_code, 42, "INVALID_REQUEST");
}

#[tokio::test]
async fn offsets_are_committed_fetched_and_deleted() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 2).await, 0);
    assert_eq!(
        commit(&mut client, "t", &[(0, 5, "m"), (1, 7, ""), (9, 1, "")]).await,
        [0, 0, 3]
    );
    assert_eq!(commit(&mut client, "nowhere", &[(0, 1, "")]).await, [3]);
    let too_large = "x".repeat(5000);
    assert_eq!(commit(&mut client, "t", &[(0, 6, &too_large)]).await, [12]);
    assert_eq!(fetch(&mut client, "t", &[0, 1, 2]).await, [5, 7, -1]);

    assert_eq!(delete_offsets(&mut client, "t", 1).await, (0, 0));
    assert_eq!(fetch(&mut client, "t", &[0, 1]).await, [5, -1]);

    let batch = BatchBuilder::new().values(9, 10).build();
    assert_eq!(client.produce("t", 0, batch).await.0, 0);
    let lag = broker.broker().unwrap().group_lag("g");
    assert_eq!(
        lag,
        vec![PartitionLag {
            topic: "t".to_owned(),
            partition: 0,
            committed: 5,
            high_watermark: Some(9),
            lag: Some(4),
            matching: None,
        }]
    );
}

/// JoinGroup v5 with the member-id round trip; returns the response.
async fn join(client: &mut RawClient, metadata: Bytes) -> JoinGroupResponse {
    let mut member_id = String::new();
    loop {
        let request = JoinGroupRequest::default()
            .with_group_id(group("g"))
            .with_session_timeout_ms(10_000)
            .with_rebalance_timeout_ms(10_000)
            .with_member_id(text(&member_id))
            .with_protocol_type(text("consumer"))
            .with_protocols(vec![
                JoinGroupRequestProtocol::default()
                    .with_name(text("range"))
                    .with_metadata(metadata.clone()),
            ]);
        let ResponseKind::JoinGroup(response) =
            client.call(RequestKind::JoinGroup(request), 5).await
        else {
            panic!("not a JoinGroup response")
        };
        if response.error_code != 79 {
            return response;
        }
        assert!(member_id.is_empty(), "MEMBER_ID_REQUIRED only once");
        member_id = response.member_id.to_string();
    }
}

/// A consumer subscription (version 0) to one topic.
fn subscription(topic: &str) -> Bytes {
    let mut bytes = BytesMut::new();
    bytes.put_i16(0);
    bytes.put_i32(1);
    bytes.put_i16(i16::try_from(topic.len()).unwrap());
    bytes.put_slice(topic.as_bytes());
    bytes.put_i32(-1);
    bytes.freeze()
}

#[tokio::test]
async fn a_members_subscription_guards_its_offsets_until_it_leaves() {
    let broker = TestBroker::start_with(&[("group.initial.rebalance.delay.ms", "0")]).await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", 1).await, 0);
    assert_eq!(commit(&mut client, "t", &[(0, 3, "")]).await, [0]);

    let joined = join(&mut client, subscription("t")).await;
    assert_eq!(joined.error_code, 0);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader, joined.member_id, "the only member leads");
    assert_eq!(joined.members.len(), 1);
    let member = joined.member_id.clone();
    let request = SyncGroupRequest::default()
        .with_group_id(group("g"))
        .with_generation_id(1)
        .with_member_id(member.clone())
        .with_assignments(vec![
            SyncGroupRequestAssignment::default()
                .with_member_id(member.clone())
                .with_assignment(Bytes::from_static(b"mine")),
        ]);
    let ResponseKind::SyncGroup(synced) = client.call(RequestKind::SyncGroup(request), 4).await
    else {
        panic!("not a SyncGroup response")
    };
    assert_eq!(
        (synced.error_code, &synced.assignment[..]),
        (0, &b"mine"[..])
    );
    let request = HeartbeatRequest::default()
        .with_group_id(group("g"))
        .with_generation_id(1)
        .with_member_id(member.clone());
    let ResponseKind::Heartbeat(beat) = client.call(RequestKind::Heartbeat(request), 4).await
    else {
        panic!("not a Heartbeat response")
    };
    assert_eq!(beat.error_code, 0);

    assert_eq!(
        delete_offsets(&mut client, "t", 0).await,
        (0, 86),
        "GROUP_SUBSCRIBED_TO_TOPIC"
    );
    let request = DescribeGroupsRequest::default().with_groups(vec![group("g"), group("nobody")]);
    let ResponseKind::DescribeGroups(described) =
        client.call(RequestKind::DescribeGroups(request), 5).await
    else {
        panic!("not a DescribeGroups response")
    };
    let g = &described.groups[0];
    assert_eq!(
        (g.group_state.as_str(), g.protocol_data.as_str()),
        ("Stable", "range")
    );
    assert_eq!(g.members[0].client_id.as_str(), "spool-test");
    assert_eq!(g.members[0].client_host.as_str(), "/127.0.0.1");
    assert_eq!(&g.members[0].member_assignment[..], b"mine");
    assert_eq!(described.groups[1].group_state.as_str(), "Dead");

    let delete = || {
        RequestKind::DeleteGroups(
            DeleteGroupsRequest::default().with_groups_names(vec![group("g")]),
        )
    };
    let ResponseKind::DeleteGroups(refused) = client.call(delete(), 2).await else {
        panic!("not a DeleteGroups response")
    };
    assert_eq!(refused.results[0].error_code, 68, "NON_EMPTY_GROUP");

    let request = LeaveGroupRequest::default()
        .with_group_id(group("g"))
        .with_member_id(member);
    let ResponseKind::LeaveGroup(left) = client.call(RequestKind::LeaveGroup(request), 2).await
    else {
        panic!("not a LeaveGroup response")
    };
    assert_eq!(left.error_code, 0);
    assert_eq!(
        delete_offsets(&mut client, "t", 0).await,
        (0, 0),
        "no member consumes it now"
    );
    let ResponseKind::DeleteGroups(deleted) = client.call(delete(), 2).await else {
        panic!("not a DeleteGroups response")
    };
    assert_eq!(deleted.results[0].error_code, 0);
    let ResponseKind::DeleteGroups(gone) = client.call(delete(), 2).await else {
        panic!("not a DeleteGroups response")
    };
    assert_eq!(gone.results[0].error_code, 69, "GROUP_ID_NOT_FOUND");
}
