//! Groups of the consumer protocol (KIP-848) next to classic ones, through the
//! coordinator on a real metadata store: one protocol per group id, commits checked
//! against member epochs, and listing by type.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use spool_coordinator::consumer::{Assignment, HeartbeatRequest, TopicInfo, Topics, assignor};
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
    open(&store().await, CoordinatorConfig::default()).await
}

async fn store() -> Arc<dyn MetadataStore> {
    let store = SqliteStore::in_memory().await.unwrap();
    let topic = TopicRecord {
        name: spool_model::TopicName::new("t").unwrap(),
        id: T_ID,
        partitions: 2,
        configs: BTreeMap::new(),
    };
    store.create_topic(&topic).await.unwrap();
    Arc::new(store)
}

async fn open(store: &Arc<dyn MetadataStore>, config: CoordinatorConfig) -> GroupCoordinator {
    let config = CoordinatorConfig {
        initial_rebalance_delay: Duration::ZERO,
        ..config
    };
    GroupCoordinator::open(store.clone(), config).await.unwrap()
}

#[derive(Debug)]
struct OwnsEverything;

impl spool_coordinator::GroupOwnership for OwnsEverything {
    fn owns(&self, _group_id: &str) -> bool {
        true
    }
}

/// A member's steady heartbeat: its epoch and what it owns.
fn heartbeat(member: &str, epoch: i32, owned: Assignment) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: epoch,
        rebalance_timeout_ms: -1,
        owned: Some(owned),
        ..HeartbeatRequest::default()
    }
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
    let joined = groups
        .consumer_heartbeat(join("m1"), 1, &OneTopic)
        .await
        .unwrap();
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
    groups
        .consumer_heartbeat(leave, 1, &OneTopic)
        .await
        .unwrap();
    let classic = groups.join(classic_join()).await;
    assert_eq!(classic.error, None);
    assert_eq!(groups.list()[0].group_type, GroupType::Classic);

    // And a consumer-protocol member cannot join it while it has members.
    assert_eq!(
        groups
            .consumer_heartbeat(join("m2"), 1, &OneTopic)
            .await
            .unwrap_err(),
        GroupError::GroupIdNotFound
    );
}

#[tokio::test]
async fn commits_of_a_consumer_group_are_checked_against_member_epochs() {
    let groups = coordinator().await;
    let joined = groups
        .consumer_heartbeat(join("m1"), 1, &OneTopic)
        .await
        .unwrap();
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
        .await
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
        groups
            .consumer_heartbeat(odd, 1, &OneTopic)
            .await
            .unwrap_err(),
        GroupError::UnsupportedAssignor
    );
    // An unknown group's member (e.g. after a restart) is told to rejoin.
    let stale = HeartbeatRequest {
        member_epoch: 3,
        ..join("m1")
    };
    assert_eq!(
        groups
            .consumer_heartbeat(stale, 1, &OneTopic)
            .await
            .unwrap_err(),
        GroupError::UnknownMemberId
    );
}

/// Heartbeats m1 (which joined first, with both partitions) and m2 (which joined
/// after) until both are at epoch 2 with a partition each; what each owns then.
async fn settle(groups: &GroupCoordinator) -> (Assignment, Assignment) {
    let all = Assignment::from([(T_ID, [0, 1].into())]);
    let revoking = groups
        .consumer_heartbeat(heartbeat("m1", 1, all), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(revoking.member_epoch, 1, "m1 gives a partition up first");
    let m1_owns = revoking.assignment.unwrap();
    let m1 = groups
        .consumer_heartbeat(heartbeat("m1", 1, m1_owns.clone()), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(m1.member_epoch, 2);
    let m2 = groups
        .consumer_heartbeat(heartbeat("m2", 2, Assignment::new()), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(m2.member_epoch, 2);
    let m2_owns = m2.assignment.unwrap();
    assert_eq!(assignor::partition_count(&m2_owns), 1);
    (m1_owns, m2_owns)
}

#[tokio::test]
async fn members_carry_on_with_their_epochs_after_a_restart() {
    let store = store().await;
    let before = open(&store, CoordinatorConfig::default()).await;
    before
        .consumer_heartbeat(join("m1"), 1, &OneTopic)
        .await
        .unwrap();
    before
        .consumer_heartbeat(join("m2"), 1, &OneTopic)
        .await
        .unwrap();
    let (m1_owns, m2_owns) = settle(&before).await;
    assert!(
        before.commit(commit("m1", 1, 9)).await.is_err(),
        "epoch 1 is stale"
    );
    drop(before);

    // A new coordinator on the same store: the group, its epochs and assignment are
    // as they were; a member heartbeating with its epoch is not sent back to join.
    let after = open(&store, CoordinatorConfig::default()).await;
    let described = after.consumer_describe("g").await.unwrap();
    assert_eq!(described.group_epoch, 2);
    assert_eq!(described.members.len(), 2);
    let again = after
        .consumer_heartbeat(heartbeat("m1", 2, m1_owns.clone()), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(again.member_epoch, 2);
    let again = after
        .consumer_heartbeat(heartbeat("m2", 2, m2_owns), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(again.member_epoch, 2);
    // An old incarnation's late commit stays refused; the current one is taken.
    assert_eq!(
        after.commit(commit("m1", 1, 9)).await.unwrap_err(),
        GroupError::StaleMemberEpoch
    );
    assert!(after.commit(commit("m1", 2, 9)).await.is_ok());
    // A third member joins at the next epoch, not at 1.
    let m3 = after
        .consumer_heartbeat(join("m3"), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(m3.member_epoch, 3);
}

#[tokio::test]
async fn a_member_silent_past_its_session_is_fenced_in_the_store_too() {
    let store = store().await;
    let (clock, time) = spool_model::Clock::manual();
    let config = || CoordinatorConfig {
        clock: clock.clone(),
        ..CoordinatorConfig::default()
    };
    let groups = open(&store, config()).await;
    groups
        .consumer_heartbeat(join("m1"), 1, &OneTopic)
        .await
        .unwrap();
    groups
        .consumer_heartbeat(join("m2"), 1, &OneTopic)
        .await
        .unwrap();
    let (m1_owns, _) = settle(&groups).await;
    time.advance(Duration::from_secs(30));
    groups
        .consumer_heartbeat(heartbeat("m1", 2, m1_owns), 1, &OneTopic)
        .await
        .unwrap();
    time.advance(Duration::from_secs(20));
    groups.tick();
    groups.save_timed_changes().await;
    assert_eq!(
        groups.consumer_describe("g").await.unwrap().members.len(),
        1
    );
    drop(groups);
    let after = open(&store, config()).await;
    let described = after.consumer_describe("g").await.unwrap();
    assert_eq!(
        described
            .members
            .iter()
            .map(|m| m.member_id.as_str())
            .collect::<Vec<_>>(),
        vec!["m1"]
    );

    // Once the last member leaves and nothing was committed, the group is forgotten,
    // in the store as well.
    let leave = HeartbeatRequest {
        member_epoch: -1,
        ..join("m1")
    };
    after.consumer_heartbeat(leave, 1, &OneTopic).await.unwrap();
    after.tick();
    after.save_timed_changes().await;
    assert_eq!(store.group_state("g").await.unwrap(), None);
}

#[tokio::test]
async fn a_coordinator_takes_a_group_on_from_the_store_and_fences_the_one_before() {
    let store = store().await;
    let first = open(&store, CoordinatorConfig::default()).await;
    first.set_ownership(Arc::new(OwnsEverything));
    let m1 = first
        .consumer_heartbeat(join("m1"), 1, &OneTopic)
        .await
        .unwrap();
    let owned = m1.assignment.unwrap();

    // The group moves: the second coordinator describes it as stored, and takes it
    // on (claiming it) once a member comes.
    let second = open(&store, CoordinatorConfig::default()).await;
    second.set_ownership(Arc::new(OwnsEverything));
    assert_eq!(
        second.consumer_describe("g").await.unwrap().members.len(),
        1
    );
    let carried_on = second
        .consumer_heartbeat(
            heartbeat("m1", m1.member_epoch, owned.clone()),
            1,
            &OneTopic,
        )
        .await
        .unwrap();
    assert_eq!(carried_on.member_epoch, m1.member_epoch);
    let m2 = second
        .consumer_heartbeat(join("m2"), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(m2.member_epoch, 2);

    // The first coordinator's next change is refused: it no longer holds the group.
    assert_eq!(
        first
            .consumer_heartbeat(join("m3"), 1, &OneTopic)
            .await
            .unwrap_err(),
        GroupError::NotCoordinator
    );
    // Both describe the group as the second stored it: m3 never joined.
    assert_eq!(first.consumer_describe("g").await.unwrap().members.len(), 2);
    assert_eq!(
        second.consumer_describe("g").await.unwrap().members.len(),
        2
    );
}

#[tokio::test]
async fn an_expression_cannot_escape_its_anchors() {
    let groups = coordinator().await;
    let escaping = HeartbeatRequest {
        subscribed_topic_names: None,
        subscribed_topic_regex: Some("a)|(b".into()),
        ..join("m1")
    };
    assert_eq!(
        groups
            .consumer_heartbeat(escaping, 1, &OneTopic)
            .await
            .unwrap_err(),
        GroupError::InvalidRegularExpression
    );
    // The refused join left no group behind.
    assert!(groups.list().is_empty());
    let whole_names = HeartbeatRequest {
        subscribed_topic_names: None,
        subscribed_topic_regex: Some("t|x".into()),
        ..join("m1")
    };
    let joined = groups
        .consumer_heartbeat(whole_names, 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(
        assignor::partition_count(&joined.assignment.unwrap()),
        2,
        "t matches"
    );
}

#[tokio::test]
async fn a_groups_own_configs_set_its_heartbeat_and_session() {
    let groups = coordinator().await;
    let overrides = spool_coordinator::consumer::GroupOverrides {
        heartbeat_interval: Some(Duration::from_secs(7)),
        session_timeout: Some(Duration::from_secs(50)),
    };
    let configs = BTreeMap::from([(
        "consumer.heartbeat.interval.ms".to_owned(),
        "7000".to_owned(),
    )]);
    groups.set_group_configs("g", configs.clone(), overrides);
    assert_eq!(groups.group_configs("g"), configs);
    let joined = groups
        .consumer_heartbeat(join("m1"), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(joined.heartbeat_interval, Duration::from_secs(7));
    // Dropped: the broker's settings again, for the group already in memory too.
    groups.replace_group_configs(Vec::new());
    let again = groups
        .consumer_heartbeat(heartbeat("m1", 1, joined.assignment.unwrap()), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(again.heartbeat_interval, Duration::from_secs(5));
    assert!(groups.group_configs("g").is_empty());
}
