//! Groups of the consumer protocol (KIP-848) next to classic ones, through the
//! coordinator on a real metadata store: one protocol per group id, commits checked
//! against member epochs, and listing by type.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use spool_coordinator::consumer::{Assignment, HeartbeatRequest, TopicInfo, Topics};
use spool_coordinator::{
    CommitOffset, CommitRequest, CoordinatorConfig, GroupCoordinator, GroupError, GroupState,
    GroupType, JoinRequest,
};
use spool_metadata::{MetadataStore, SqliteStore, TopicRecord};
use uuid::Uuid;

const T_ID: Uuid = Uuid::from_u128(7);

struct OneTopic;

impl Topics for OneTopic {
    fn by_name(&self, name: &str) -> Option<TopicInfo> {
        (name == "t").then_some(TopicInfo {
            id: T_ID,
            partitions: 2,
        })
    }

    fn names(&self) -> Vec<String> {
        vec!["t".to_owned()]
    }

    fn version(&self) -> u64 {
        1
    }
}

async fn coordinator() -> GroupCoordinator {
    let store = SqliteStore::in_memory().await.unwrap();
    let topic = TopicRecord {
        name: spool_model::TopicName::new("t").unwrap(),
        id: T_ID,
        partitions: 2,
        configs: BTreeMap::new(),
    };
    store.create_topic(&topic).await.unwrap();
    let store: Arc<dyn MetadataStore> = Arc::new(store);
    let config = CoordinatorConfig {
        initial_rebalance_delay: Duration::ZERO,
        ..CoordinatorConfig::default()
    };
    GroupCoordinator::open(store, config).await.unwrap()
}

fn join(member: &str) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 60_000,
        subscribed_topic_names: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..HeartbeatRequest::default()
    }
}

fn classic_join() -> JoinRequest {
    JoinRequest {
        group_id: "g".into(),
        member_id: String::new(),
        group_instance_id: None,
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout: Duration::from_secs(10),
        rebalance_timeout: Duration::from_secs(10),
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::new())],
        require_known_member_id: false,
    }
}

fn commit(member: &str, epoch: i32, api_version: i16) -> CommitRequest {
    CommitRequest {
        group_id: "g".into(),
        generation: epoch,
        member_id: member.into(),
        group_instance_id: None,
        offsets: vec![CommitOffset {
            topic: "t".into(),
            topic_id: T_ID,
            partition: 0,
            offset: 5,
            leader_epoch: -1,
            metadata: None,
        }],
        api_version,
    }
}

#[tokio::test]
async fn a_group_id_is_of_one_protocol_at_a_time() {
    let groups = coordinator().await;
    let joined = groups.consumer_heartbeat(join("m1"), 1, &OneTopic).unwrap();
    assert_eq!(joined.member_epoch, 1);

    // A classic member cannot join a consumer-protocol group with members.
    let refused = groups.join(classic_join()).await;
    assert_eq!(refused.error, Some(GroupError::InconsistentGroupProtocol));
    // DescribeGroups sees it as Dead, ListGroups as a consumer group.
    assert_eq!(groups.describe("g").unwrap().state, GroupState::Dead);
    let listed = groups.list();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].group_type, GroupType::Consumer);
    assert_eq!(listed[0].state, "Stable");

    // Once it is empty, a classic member takes the id over.
    let leave = HeartbeatRequest {
        member_epoch: -1,
        ..join("m1")
    };
    groups.consumer_heartbeat(leave, 1, &OneTopic).unwrap();
    let classic = groups.join(classic_join()).await;
    assert_eq!(classic.error, None);
    assert_eq!(groups.list()[0].group_type, GroupType::Classic);

    // And a consumer-protocol member cannot join it while it has members.
    assert_eq!(
        groups
            .consumer_heartbeat(join("m2"), 1, &OneTopic)
            .unwrap_err(),
        GroupError::GroupIdNotFound
    );
}

#[tokio::test]
async fn commits_of_a_consumer_group_are_checked_against_member_epochs() {
    let groups = coordinator().await;
    let joined = groups.consumer_heartbeat(join("m1"), 1, &OneTopic).unwrap();
    let epoch = joined.member_epoch;
    assert!(groups.commit(commit("m1", epoch, 9)).await.is_ok());
    assert_eq!(
        groups.commit(commit("m1", epoch + 1, 9)).await.unwrap_err(),
        GroupError::StaleMemberEpoch
    );
    assert_eq!(
        groups.commit(commit("m1", epoch, 8)).await.unwrap_err(),
        GroupError::UnsupportedVersion
    );
    assert_eq!(
        groups
            .commit(commit("stranger", epoch, 9))
            .await
            .unwrap_err(),
        GroupError::UnknownMemberId
    );
    assert_eq!(
        groups.check_offset_fetch_member("g", Some("m1"), epoch - 1),
        Err(GroupError::StaleMemberEpoch)
    );
    assert_eq!(groups.check_offset_fetch_member("g", None, -1), Ok(()));
    assert_eq!(groups.committed("g", None)[0].offset, 5);
}

#[tokio::test]
async fn a_heartbeat_names_a_member_and_a_known_assignor() {
    let groups = coordinator().await;
    let nameless = groups
        .consumer_heartbeat(join(""), 1, &OneTopic)
        .unwrap_err();
    assert!(
        matches!(nameless, GroupError::InvalidRequest(_)),
        "{nameless}"
    );
    let odd = HeartbeatRequest {
        server_assignor: Some("sticky".into()),
        ..join("m1")
    };
    assert_eq!(
        groups.consumer_heartbeat(odd, 1, &OneTopic).unwrap_err(),
        GroupError::UnsupportedAssignor
    );
    // An unknown group's member (e.g. after a restart) is told to rejoin.
    let stale = HeartbeatRequest {
        member_epoch: 3,
        ..join("m1")
    };
    assert_eq!(
        groups.consumer_heartbeat(stale, 1, &OneTopic).unwrap_err(),
        GroupError::UnknownMemberId
    );
}
