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
    GroupType, JoinRequest, SyncRequest,
};
use spool_metadata::{MetadataStore, SqliteStore, TopicRecord};
use spool_protocol::consumer_protocol;
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

    fn name_of(&self, id: Uuid) -> Option<String> {
        (id == T_ID).then(|| "t".to_owned())
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
        replication_factor: 1,
        replica_assignment: Vec::new(),
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

/// A classic member's subscription to `t` (ConsumerProtocolSubscription v0).
fn subscribed_to_t() -> Bytes {
    let mut metadata = vec![0, 0, 0, 0, 0, 1, 0, 1, b't'];
    metadata.extend_from_slice(&(-1i32).to_be_bytes());
    Bytes::from(metadata)
}

fn classic_sync(member: &str, generation: i32) -> SyncRequest {
    SyncRequest {
        group_id: "g".into(),
        generation,
        member_id: member.into(),
        group_instance_id: None,
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: Vec::new(),
    }
}

fn assigned(response: &spool_coordinator::SyncResponse) -> Vec<(String, Vec<i32>)> {
    consumer_protocol::assigned_partitions(&response.assignment).unwrap()
}

#[tokio::test]
async fn a_classic_group_migrates_to_the_consumer_protocol_and_back() {
    let groups = coordinator().await;
    // A classic group of one member, which assigned itself both partitions.
    let classic = JoinRequest {
        protocols: vec![("range".into(), subscribed_to_t())],
        ..classic_join()
    };
    let joined = groups.join(classic.clone(), &OneTopic).await;
    assert_eq!(joined.error, None);
    let c1 = joined.member_id.clone();
    let both = consumer_protocol::encode_assignment(&[("t".into(), vec![0, 1])]);
    let sync = SyncRequest {
        assignments: vec![(c1.clone(), Bytes::from(both))],
        ..classic_sync(&c1, joined.generation)
    };
    groups.sync(sync, &OneTopic).await.unwrap();
    assert_eq!(groups.list()[0].group_type, GroupType::Classic);

    // A consumer-protocol member joins: the group is converted in place, the
    // classic member keeps its partitions until it rejoins.
    let m1 = groups
        .consumer_heartbeat(join("m1"), 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(groups.list()[0].group_type, GroupType::Consumer);
    assert_eq!(
        m1.assignment,
        Some(Assignment::new()),
        "c1 still holds both"
    );
    let described = groups.consumer_describe("g").await.unwrap();
    assert_eq!(described.members.len(), 2);
    assert!(
        described
            .members
            .iter()
            .any(|m| m.classic && m.member_id == c1)
    );

    // The classic member is told to rejoin; it gives up what it must.
    assert_eq!(
        groups.heartbeat("g", &c1, None, joined.generation),
        Err(GroupError::RebalanceInProgress)
    );
    let rejoined = groups
        .join(
            JoinRequest {
                member_id: c1.clone(),
                ..classic.clone()
            },
            &OneTopic,
        )
        .await;
    assert_eq!(rejoined.error, None);
    assert_eq!(rejoined.leader, "", "the broker assigns");
    assert!(rejoined.generation > joined.generation);
    let synced = groups
        .sync(classic_sync(&c1, rejoined.generation), &OneTopic)
        .await
        .unwrap();
    let kept = assigned(&synced);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].1.len(), 1, "one partition each");
    assert_eq!(
        groups.heartbeat("g", &c1, None, rejoined.generation),
        Ok(())
    );
    assert!(
        groups
            .commit(commit(&c1, rejoined.generation, 8))
            .await
            .is_ok()
    );
    assert_eq!(
        groups
            .commit(commit(&c1, joined.generation, 8))
            .await
            .unwrap_err(),
        GroupError::IllegalGeneration
    );
    // The consumer-protocol member gets the partition c1 gave up.
    let m1 = groups
        .consumer_heartbeat(
            heartbeat("m1", m1.member_epoch, Assignment::new()),
            1,
            &OneTopic,
        )
        .await
        .unwrap();
    assert_eq!(
        assignor::partition_count(&m1.assignment.clone().unwrap()),
        1
    );

    // The last consumer-protocol member leaves: a classic group again, which
    // rebalances; the classic member rejoins it as it would any.
    let leave = HeartbeatRequest {
        member_epoch: -1,
        ..join("m1")
    };
    groups
        .consumer_heartbeat(leave, 1, &OneTopic)
        .await
        .unwrap();
    assert_eq!(groups.list()[0].group_type, GroupType::Classic);
    assert_eq!(
        groups.heartbeat("g", &c1, None, rejoined.generation),
        Err(GroupError::RebalanceInProgress)
    );
    let back = groups
        .join(
            JoinRequest {
                member_id: c1.clone(),
                ..classic
            },
            &OneTopic,
        )
        .await;
    assert_eq!(back.error, None);
    assert_eq!(back.leader, c1, "a classic group's leader assigns");
    assert_eq!(
        groups.describe("g", &OneTopic).unwrap().state,
        GroupState::CompletingRebalance.name()
    );
}

#[tokio::test]
async fn an_empty_group_changes_protocol_with_its_next_member() {
    let groups = coordinator().await;
    let leave = HeartbeatRequest {
        member_epoch: -1,
        ..join("m1")
    };
    groups
        .consumer_heartbeat(join("m1"), 1, &OneTopic)
        .await
        .unwrap();
    groups
        .consumer_heartbeat(leave, 1, &OneTopic)
        .await
        .unwrap();
    let classic = groups.join(classic_join(), &OneTopic).await;
    assert_eq!(classic.error, None);
    assert_eq!(groups.list()[0].group_type, GroupType::Classic);
    // Members of another protocol type (Connect, say) cannot be converted.
    let connect = JoinRequest {
        group_id: "workers".into(),
        protocol_type: "connect".into(),
        ..classic_join()
    };
    assert_eq!(groups.join(connect, &OneTopic).await.error, None);
    let refused = HeartbeatRequest {
        group_id: "workers".into(),
        ..join("m2")
    };
    assert_eq!(
        groups
            .consumer_heartbeat(refused, 1, &OneTopic)
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
