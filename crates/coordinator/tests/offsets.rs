//! Committed offsets through the coordinator, on a real metadata store: stored before
//! the answer, read back after a reopen, and expired only for groups without members.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use spool_coordinator::{
    CommitOffset, CommitRequest, CoordinatorConfig, GroupCoordinator, JoinRequest,
};
use spool_metadata::{MetadataStore, SqliteStore, TopicRecord};
use spool_model::Clock;
use uuid::Uuid;

const T_ID: Uuid = Uuid::from_u128(1);
const U_ID: Uuid = Uuid::from_u128(2);

/// The store at `path`, with topics `t` and `u` (two partitions each).
async fn store_with_topics(path: &std::path::Path) -> Arc<dyn MetadataStore> {
    let store = SqliteStore::open(path).await.unwrap();
    for (name, id) in [("t", T_ID), ("u", U_ID)] {
        let topic = TopicRecord {
            name: spool_model::TopicName::new(name).unwrap(),
            id,
            partitions: 2,
            replication_factor: 1,
            replica_assignment: Vec::new(),
            configs: std::collections::BTreeMap::new(),
        };
        match store.create_topic(&topic).await {
            Ok(()) | Err(spool_metadata::MetadataError::TopicExists(_)) => {}
            Err(error) => panic!("{error}"),
        }
    }
    Arc::new(store)
}

fn offset(partition: i32, at: i64) -> CommitOffset {
    CommitOffset {
        topic: "t".to_owned(),
        topic_id: T_ID,
        partition,
        offset: at,
        leader_epoch: -1,
        metadata: None,
    }
}

fn simple_commit(group: &str, offsets: Vec<CommitOffset>) -> CommitRequest {
    CommitRequest {
        group_id: group.to_owned(),
        generation: -1,
        member_id: String::new(),
        group_instance_id: None,
        offsets,
        api_version: 8,
    }
}

fn config(retention: Duration) -> CoordinatorConfig {
    CoordinatorConfig {
        initial_rebalance_delay: Duration::ZERO,
        min_session_timeout: Duration::from_millis(10),
        offsets_retention: retention,
        ..CoordinatorConfig::default()
    }
}

#[tokio::test]
async fn offsets_outlive_a_reopen_and_expire_only_without_members() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("metadata.db");
    {
        let store = store_with_topics(&path).await;
        let coordinator = GroupCoordinator::open(store, config(Duration::from_secs(3600)))
            .await
            .unwrap();
        let results = coordinator
            .commit(simple_commit("idle", vec![offset(0, 5), offset(1, 9)]))
            .await
            .unwrap();
        assert_eq!(results, vec![Ok(()), Ok(())]);
        coordinator
            .commit(simple_commit("busy", vec![offset(0, 2)]))
            .await
            .unwrap();
    }
    let store = store_with_topics(&path).await;
    let (clock, hand) = Clock::manual();
    let coordinator = GroupCoordinator::open(
        store.clone(),
        CoordinatorConfig {
            clock,
            ..config(Duration::from_millis(50))
        },
    )
    .await
    .unwrap();
    let committed: Vec<i64> = coordinator
        .committed("idle", None)
        .iter()
        .map(|o| o.offset)
        .collect();
    assert_eq!(committed, vec![5, 9], "read back after the reopen");

    // "busy" gets a member; "idle" has none.
    let join = JoinRequest {
        group_id: "busy".to_owned(),
        member_id: String::new(),
        group_instance_id: None,
        client_id: "c".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        session_timeout: Duration::from_secs(30),
        rebalance_timeout: Duration::from_secs(30),
        protocol_type: "consumer".to_owned(),
        protocols: vec![("range".to_owned(), Bytes::new())],
        require_known_member_id: false,
    };
    let joined = coordinator.join(join, &NoTopics).await;
    assert_eq!(joined.error, None);

    hand.advance(Duration::from_millis(100));
    coordinator.expire_offsets().await;
    assert!(coordinator.committed("idle", None).is_empty(), "expired");
    assert_eq!(
        coordinator.committed("busy", None).len(),
        1,
        "kept: it has a member"
    );
    let stored: Vec<String> = store
        .committed_offsets()
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.group)
        .collect();
    assert_eq!(stored, vec!["busy".to_owned()], "expired in the store too");
    let listed: Vec<String> = coordinator.list().into_iter().map(|g| g.group_id).collect();
    assert_eq!(listed, vec!["busy".to_owned()]);
}

#[tokio::test]
async fn a_restart_does_not_expire_offsets_of_groups_it_has_not_seen_yet() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_topics(&dir.path().join("metadata.db")).await;
    // Committed long ago by a consumer that is still running, on an idle topic.
    let old = spool_metadata::CommittedOffset {
        group: "quiet".to_owned(),
        topic: "t".to_owned(),
        topic_id: T_ID,
        partition: 0,
        offset: 4,
        leader_epoch: -1,
        metadata: None,
        commit_ms: 0,
    };
    let epoch = store.claim_group("quiet", 1).await.unwrap();
    store.commit_offsets("quiet", epoch, &[old]).await.unwrap();
    let coordinator = GroupCoordinator::open(store.clone(), config(Duration::from_secs(3600)))
        .await
        .unwrap();
    coordinator.expire_offsets().await;
    assert_eq!(
        coordinator.committed("quiet", None).len(),
        1,
        "the group may still have members: they get a retention period to rejoin"
    );
}

#[tokio::test]
async fn refused_commits_leave_no_group_and_deleted_topics_take_their_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_topics(&dir.path().join("metadata.db")).await;
    let coordinator = GroupCoordinator::open(store.clone(), config(Duration::from_secs(3600)))
        .await
        .unwrap();
    let mut too_large = offset(0, 1);
    too_large.metadata = Some("x".repeat(10_000));
    let results = coordinator
        .commit(simple_commit("ghost", vec![too_large]))
        .await
        .unwrap();
    assert_eq!(
        results,
        vec![Err(spool_coordinator::GroupError::OffsetMetadataTooLarge)]
    );
    coordinator.tick();
    assert!(coordinator.list().is_empty(), "nothing stored, no group");

    let mut other = offset(0, 8);
    other.topic = "u".to_owned();
    other.topic_id = U_ID;
    coordinator
        .commit(simple_commit("g", vec![offset(0, 3), offset(1, 4), other]))
        .await
        .unwrap();
    store.delete_topic(T_ID).await.unwrap();
    coordinator.forget_topic("t").await;
    let left: Vec<String> = coordinator
        .committed("g", None)
        .into_iter()
        .map(|o| o.topic)
        .collect();
    assert_eq!(left, vec!["u".to_owned()]);
    assert_eq!(
        store.committed_offsets().await.unwrap().len(),
        1,
        "gone from the store with the topic"
    );
}

#[tokio::test]
async fn a_deposed_coordinator_cannot_overwrite_committed_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_topics(&dir.path().join("metadata.db")).await;
    let open = || GroupCoordinator::open(store.clone(), config(Duration::from_secs(3600)));
    let (deposed, current) = (open().await.unwrap(), open().await.unwrap());
    deposed
        .commit(simple_commit("g", vec![offset(0, 1)]))
        .await
        .unwrap();
    current
        .commit(simple_commit("g", vec![offset(0, 5)]))
        .await
        .unwrap();
    assert_eq!(
        deposed.commit(simple_commit("g", vec![offset(0, 2)])).await,
        Err(spool_coordinator::GroupError::NotCoordinator)
    );
    let stored: Vec<i64> = store
        .committed_offsets()
        .await
        .unwrap()
        .iter()
        .map(|o| o.offset)
        .collect();
    assert_eq!(stored, vec![5], "the current coordinator's commit stands");
    let cached: Vec<i64> = deposed
        .committed("g", None)
        .iter()
        .map(|o| o.offset)
        .collect();
    assert_eq!(cached, vec![5], "the fenced one reads what the store holds");
}

/// Both brokers believe they coordinate every group, as two brokers whose views of
/// the membership differ (a heartbeat apart) may.
#[derive(Debug)]
struct OwnsEverything;

impl spool_coordinator::GroupOwnership for OwnsEverything {
    fn owns(&self, _group_id: &str) -> bool {
        true
    }
}

#[tokio::test]
async fn a_coordinator_another_claimed_the_group_from_reads_the_newer_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_topics(&dir.path().join("metadata.db")).await;
    let open = || async {
        let coordinator = GroupCoordinator::open(store.clone(), config(Duration::from_secs(3600)))
            .await
            .unwrap();
        coordinator.set_ownership(Arc::new(OwnsEverything));
        coordinator
    };
    let (stale, current) = (open().await, open().await);
    stale
        .commit(simple_commit("g", vec![offset(0, 1)]))
        .await
        .unwrap();
    current
        .commit(simple_commit("g", vec![offset(0, 5)]))
        .await
        .unwrap();
    // The first has not written since it was fenced, so it does not know it was.
    let fetched: Vec<i64> = stale
        .fetch_committed("g", None)
        .await
        .unwrap()
        .iter()
        .map(|o| o.offset)
        .collect();
    assert_eq!(
        fetched,
        vec![5],
        "the offset stored last, not the one cached"
    );
}

#[tokio::test]
async fn offsets_another_node_claimed_are_not_expired_here() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_topics(&dir.path().join("metadata.db")).await;
    let on = |node_id| {
        GroupCoordinator::open(
            store.clone(),
            CoordinatorConfig {
                node_id,
                ..config(Duration::ZERO)
            },
        )
    };
    let (here, there) = (on(1).await.unwrap(), on(2).await.unwrap());
    there
        .commit(simple_commit("theirs", vec![offset(0, 3)]))
        .await
        .unwrap();
    here.commit(simple_commit("mine", vec![offset(0, 4)]))
        .await
        .unwrap();
    // Seen by `here` only from the store, as a restarted broker would.
    let here = on(1).await.unwrap();
    here.expire_offsets().await;
    let left: Vec<String> = store
        .committed_offsets()
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.group)
        .collect();
    assert_eq!(
        left,
        vec!["theirs".to_owned()],
        "node 2's group is node 2's to expire"
    );
}

#[tokio::test]
async fn a_member_that_stops_heartbeating_is_removed_when_its_session_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_topics(&dir.path().join("metadata.db")).await;
    let (clock, hand) = Clock::manual();
    let coordinator = GroupCoordinator::open(
        store,
        CoordinatorConfig {
            clock,
            ..config(Duration::from_secs(3600))
        },
    )
    .await
    .unwrap();
    let joined = coordinator
        .join(
            JoinRequest {
                group_id: "g".to_owned(),
                member_id: String::new(),
                group_instance_id: None,
                client_id: "c".to_owned(),
                client_host: "/127.0.0.1".to_owned(),
                session_timeout: Duration::from_secs(10),
                rebalance_timeout: Duration::from_secs(30),
                protocol_type: "consumer".to_owned(),
                protocols: vec![("range".to_owned(), Bytes::new())],
                require_known_member_id: false,
            },
            &NoTopics,
        )
        .await;
    assert_eq!(joined.error, None);
    let members = |coordinator: &GroupCoordinator| {
        coordinator
            .describe("g", &NoTopics)
            .map_or(0, |group| group.members.len())
    };

    hand.advance(Duration::from_secs(9));
    coordinator.tick();
    assert_eq!(members(&coordinator), 1, "within its session");

    hand.advance(Duration::from_secs(2));
    coordinator.tick();
    assert_eq!(members(&coordinator), 0, "its session timed out");
}

/// Classic groups resolve no topics.
struct NoTopics;

impl spool_coordinator::consumer::Topics for NoTopics {
    fn by_name(&self, _name: &str) -> Option<spool_coordinator::consumer::TopicInfo> {
        None
    }

    fn names(&self) -> Vec<String> {
        Vec::new()
    }

    fn name_of(&self, _id: Uuid) -> Option<String> {
        None
    }

    fn version(&self) -> u64 {
        0
    }
}
