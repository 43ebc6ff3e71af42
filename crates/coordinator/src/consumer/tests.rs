//! The consumer protocol's state machine, heartbeat by heartbeat, on a clock the test
//! moves.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::time::Instant;
use uuid::Uuid;

use super::group::{ConsumerGroup, Settings};
use super::{
    Assignment, ConsumerGroupConfig, ConsumerGroupState, HeartbeatRequest, HeartbeatResponse,
    MemberState, TopicInfo, Topics,
};
use crate::error::GroupError;

#[derive(Default)]
struct FakeTopics {
    topics: BTreeMap<String, TopicInfo>,
    version: u64,
}

impl FakeTopics {
    fn create(&mut self, name: &str, partitions: i32) -> Uuid {
        let id = Uuid::new_v4();
        self.topics
            .insert(name.to_owned(), TopicInfo { id, partitions });
        self.version += 1;
        id
    }
}

impl Topics for FakeTopics {
    fn by_name(&self, name: &str) -> Option<TopicInfo> {
        self.topics.get(name).copied()
    }

    fn names(&self) -> Vec<String> {
        self.topics.keys().cloned().collect()
    }

    fn name_of(&self, id: Uuid) -> Option<String> {
        self.topics
            .iter()
            .find(|(_, topic)| topic.id == id)
            .map(|(name, _)| name.clone())
    }

    fn version(&self) -> u64 {
        self.version
    }
}

struct Harness {
    group: ConsumerGroup,
    topics: FakeTopics,
    config: ConsumerGroupConfig,
    now: Instant,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            group: ConsumerGroup::default(),
            topics: FakeTopics::default(),
            config: ConsumerGroupConfig::default(),
            now: Instant::now(),
        }
    }

    fn send(&mut self, request: HeartbeatRequest) -> Result<HeartbeatResponse, GroupError> {
        let settings = Settings {
            config: &self.config,
            now: self.now,
            version: 1,
        };
        self.group.heartbeat(request, &self.topics, &settings)
    }

    fn join(&mut self, member: &str, topics: &[&str]) -> HeartbeatResponse {
        self.send(join_request(member, topics)).unwrap()
    }

    /// A heartbeat that changes nothing, saying what the member owns (`None`: not
    /// said).
    fn beat(&mut self, member: &str, epoch: i32, owned: Option<Assignment>) -> HeartbeatResponse {
        self.send(HeartbeatRequest {
            group_id: "g".into(),
            member_id: member.into(),
            member_epoch: epoch,
            rebalance_timeout_ms: -1,
            owned,
            ..HeartbeatRequest::default()
        })
        .unwrap()
    }

    fn member_state(&self, member: &str) -> (MemberState, i32) {
        let described = self.group.describe(&self.config);
        let m = described
            .members
            .iter()
            .find(|m| m.member_id == member)
            .unwrap();
        (m.state, m.member_epoch)
    }
}

fn join_request(member: &str, topics: &[&str]) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: "g".into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 300_000,
        subscribed_topic_names: Some(topics.iter().map(|t| (*t).to_owned()).collect()),
        subscribed_topic_regex: Some(String::new()),
        owned: Some(Assignment::new()),
        ..HeartbeatRequest::default()
    }
}

fn partitions(topic: Uuid, list: &[i32]) -> Assignment {
    Assignment::from([(topic, list.iter().copied().collect::<BTreeSet<i32>>())])
}

#[test]
fn the_first_member_gets_every_partition_at_the_first_epoch() {
    let mut h = Harness::new();
    let t = h.topics.create("t", 4);
    let joined = h.join("a", &["t"]);
    assert_eq!(joined.member_epoch, 1);
    assert_eq!(joined.assignment, Some(partitions(t, &[0, 1, 2, 3])));
    assert_eq!(joined.heartbeat_interval, Duration::from_secs(5));
    assert_eq!(h.group.state(), ConsumerGroupState::Stable);
    // Nothing changed: no assignment in the answer.
    assert_eq!(h.beat("a", 1, None).assignment, None);
}

#[test]
fn a_partition_moves_to_a_new_member_only_once_its_owner_released_it() {
    let mut h = Harness::new();
    let t = h.topics.create("t", 4);
    h.join("a", &["t"]);

    let b = h.join("b", &["t"]);
    assert_eq!(h.group.epoch(), 2);
    assert_eq!(b.member_epoch, 2);
    assert_eq!(b.assignment, Some(Assignment::new()), "a still holds them");
    assert_eq!(h.member_state("b").0, MemberState::UnreleasedPartitions);

    // a is told to give two up; it keeps consuming the other two throughout.
    let a = h.beat("a", 1, None);
    assert_eq!(
        a.member_epoch, 1,
        "a stays at its epoch until it releases them"
    );
    assert_eq!(a.assignment, Some(partitions(t, &[0, 1])));
    assert_eq!(h.member_state("a").0, MemberState::UnrevokedPartitions);
    assert_eq!(h.group.state(), ConsumerGroupState::Reconciling);
    assert_eq!(h.beat("b", 2, None).assignment, None, "not released yet");

    let a = h.beat("a", 1, Some(partitions(t, &[0, 1])));
    assert_eq!(a.member_epoch, 2);
    assert_eq!(a.assignment, None, "its assignment did not change");
    let b = h.beat("b", 2, None);
    assert_eq!(b.assignment, Some(partitions(t, &[2, 3])));
    assert_eq!(h.group.state(), ConsumerGroupState::Stable);
}

#[test]
fn a_member_that_leaves_hands_its_partitions_to_the_others() {
    let mut h = Harness::new();
    let t = h.topics.create("t", 2);
    h.join("a", &["t"]);
    h.join("b", &["t"]);
    h.beat("a", 1, Some(partitions(t, &[0])));
    h.beat("b", 2, None);

    let left = h
        .send(HeartbeatRequest {
            group_id: "g".into(),
            member_id: "b".into(),
            member_epoch: -1,
            rebalance_timeout_ms: -1,
            ..HeartbeatRequest::default()
        })
        .unwrap();
    assert_eq!(
        (left.member_epoch, left.heartbeat_interval),
        (-1, Duration::ZERO)
    );
    assert_eq!(h.group.epoch(), 3);
    let a = h.beat("a", 2, None);
    assert_eq!(a.member_epoch, 3);
    assert_eq!(a.assignment, Some(partitions(t, &[0, 1])));
}

#[test]
fn a_silent_member_is_fenced_when_its_session_ends() {
    let mut h = Harness::new();
    h.topics.create("t", 2);
    h.join("a", &["t"]);
    h.join("b", &["t"]);
    h.now += Duration::from_secs(30);
    h.beat("a", 1, None);
    h.now += Duration::from_secs(20);
    h.group.tick(h.now);
    let described = h.group.describe(&h.config);
    let members: Vec<&str> = described
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(
        members,
        ["a"],
        "b was silent for 50 s, past the 45 s session"
    );
    assert_eq!(
        h.send(HeartbeatRequest {
            member_epoch: 2,
            ..hb("b")
        })
        .unwrap_err(),
        GroupError::UnknownMemberId
    );
}

#[test]
fn a_member_that_does_not_give_partitions_up_in_time_is_fenced() {
    let mut h = Harness::new();
    h.topics.create("t", 2);
    h.join("a", &["t"]);
    h.join("b", &["t"]);
    h.beat("a", 1, None);
    assert_eq!(h.member_state("a").0, MemberState::UnrevokedPartitions);
    // Heartbeats keep its session, but its rebalance timeout (300 s) runs out.
    for _ in 0..10 {
        h.now += Duration::from_secs(30);
        h.beat("a", 1, None);
        h.beat("b", 2, None);
        h.group.tick(h.now);
    }
    assert_eq!(
        h.send(HeartbeatRequest {
            member_epoch: 1,
            ..hb("a")
        })
        .unwrap_err(),
        GroupError::UnknownMemberId
    );
    let b = h.beat("b", 2, None);
    assert_eq!(
        b.assignment.map(|a| super::assignor::partition_count(&a)),
        Some(2)
    );
}

fn hb(member: &str) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: "g".into(),
        member_id: member.into(),
        rebalance_timeout_ms: -1,
        ..HeartbeatRequest::default()
    }
}

#[test]
fn epochs_ahead_are_fenced_and_the_previous_one_is_taken_when_an_answer_was_lost() {
    let mut h = Harness::new();
    let t = h.topics.create("t", 2);
    h.join("a", &["t"]);
    assert_eq!(
        h.send(HeartbeatRequest {
            member_epoch: 5,
            ..hb("a")
        })
        .unwrap_err(),
        GroupError::FencedMemberEpoch
    );
    h.join("b", &["t"]);
    h.beat("a", 1, Some(partitions(t, &[0])));
    h.beat("b", 2, None);
    // a moved to epoch 2 but lost that answer: epoch 1 with what it owns is taken.
    let retried = h
        .send(HeartbeatRequest {
            member_epoch: 1,
            owned: Some(partitions(t, &[0])),
            ..hb("a")
        })
        .unwrap();
    assert_eq!(retried.member_epoch, 2);
    // Owning a partition that is not its own, or not saying, is fenced.
    assert_eq!(
        h.send(HeartbeatRequest {
            member_epoch: 1,
            owned: Some(partitions(t, &[1])),
            ..hb("a")
        })
        .unwrap_err(),
        GroupError::FencedMemberEpoch
    );
}

#[test]
fn a_fenced_member_rejoining_with_epoch_zero_is_taken_back() {
    let mut h = Harness::new();
    let t = h.topics.create("t", 2);
    h.join("a", &["t"]);
    let rejoined = h.join("a", &["t"]);
    assert_eq!(rejoined.member_epoch, 1);
    assert_eq!(rejoined.assignment, Some(partitions(t, &[0, 1])));
    assert_eq!(h.group.describe(&h.config).members.len(), 1);
}

#[test]
fn a_static_member_comes_back_to_its_partitions_without_a_new_epoch() {
    let mut h = Harness::new();
    let t = h.topics.create("t", 2);
    let static_join = |member: &str| HeartbeatRequest {
        instance_id: Some("instance-1".into()),
        ..join_request(member, &["t"])
    };
    h.send(static_join("s1")).unwrap();
    h.join("b", &["t"]);
    h.beat("s1", 1, Some(partitions(t, &[0])));
    h.beat("b", 2, None);
    let epoch = h.group.epoch();

    // Another incarnation while the first still holds the instance id.
    assert_eq!(
        h.send(static_join("s2")).unwrap_err(),
        GroupError::UnreleasedInstanceId
    );

    let left = h
        .send(HeartbeatRequest {
            member_epoch: -2,
            instance_id: Some("instance-1".into()),
            ..hb("s1")
        })
        .unwrap();
    assert_eq!(left.member_epoch, -2);
    assert_eq!(h.group.epoch(), epoch, "a temporary leave is no rebalance");

    let back = h.send(static_join("s2")).unwrap();
    assert_eq!(back.member_epoch, epoch);
    assert_eq!(back.assignment, Some(partitions(t, &[0])));
    assert_eq!(h.group.epoch(), epoch);
    assert_eq!(
        h.send(HeartbeatRequest {
            member_epoch: epoch,
            instance_id: Some("instance-1".into()),
            ..hb("s1")
        })
        .unwrap_err(),
        GroupError::FencedInstanceId
    );
}

#[test]
fn a_regular_expression_picks_up_a_topic_created_later() {
    let mut h = Harness::new();
    let first = h.topics.create("orders-eu", 1);
    h.topics.create("payments", 1);
    let joined = h
        .send(HeartbeatRequest {
            subscribed_topic_names: Some(Vec::new()),
            subscribed_topic_regex: Some("orders-.*".into()),
            ..join_request("a", &[])
        })
        .unwrap();
    assert_eq!(joined.assignment, Some(partitions(first, &[0])));

    let second = h.topics.create("orders-us", 2);
    let a = h.beat("a", joined.member_epoch, None);
    assert_eq!(a.member_epoch, joined.member_epoch + 1);
    let mut expected = partitions(first, &[0]);
    expected.extend(partitions(second, &[0, 1]));
    assert_eq!(a.assignment, Some(expected));

    let bad = HeartbeatRequest {
        subscribed_topic_regex: Some("orders-(".into()),
        ..join_request("b", &[])
    };
    assert_eq!(
        h.send(bad).unwrap_err(),
        GroupError::InvalidRegularExpression
    );
}

#[test]
fn a_changed_subscription_gives_up_the_topics_no_longer_read() {
    let mut h = Harness::new();
    let t = h.topics.create("t", 1);
    let u = h.topics.create("u", 1);
    let joined = h.join("a", &["t", "u"]);
    let mut both = partitions(t, &[0]);
    both.extend(partitions(u, &[0]));
    assert_eq!(joined.assignment, Some(both));
    let changed = h
        .send(HeartbeatRequest {
            member_epoch: 1,
            subscribed_topic_names: Some(vec!["t".into()]),
            ..hb("a")
        })
        .unwrap();
    assert_eq!(changed.assignment, Some(partitions(t, &[0])));
    assert_eq!(changed.member_epoch, 1, "until it says it let u go");
    let released = h.beat("a", 1, Some(partitions(t, &[0])));
    assert_eq!((released.member_epoch, released.assignment), (2, None));
}

#[test]
fn commits_must_name_the_members_current_epoch() {
    let mut h = Harness::new();
    h.topics.create("t", 1);
    h.join("a", &["t"]);
    assert_eq!(h.group.check_offsets_member("a", 1, true), Ok(()));
    assert_eq!(
        h.group.check_offsets_member("a", 0, true),
        Err(GroupError::StaleMemberEpoch)
    );
    assert_eq!(
        h.group.check_offsets_member("x", 1, true),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(
        h.group.check_offsets_member("a", 1, false),
        Err(GroupError::UnsupportedVersion)
    );
    assert_eq!(
        h.group.check_offsets_member("", -1, true),
        Err(GroupError::UnknownMemberId)
    );
}

#[test]
fn a_v0_member_is_given_an_id_and_a_full_group_refuses_newcomers() {
    let mut h = Harness::new();
    h.topics.create("t", 1);
    h.config.max_size = 1;
    let settings = Settings {
        config: &h.config,
        now: h.now,
        version: 0,
    };
    let joined = h
        .group
        .heartbeat(join_request("", &["t"]), &h.topics, &settings)
        .unwrap();
    assert!(!joined.member_id.is_empty());
    assert_eq!(
        h.group
            .heartbeat(join_request("", &["t"]), &h.topics, &settings)
            .unwrap_err(),
        GroupError::GroupMaxSizeReached
    );
}

#[test]
fn settings_are_checked_against_their_bounds() {
    assert_eq!(ConsumerGroupConfig::default().check(), Ok(()));
    let short = ConsumerGroupConfig {
        session_timeout: Duration::from_secs(10),
        ..ConsumerGroupConfig::default()
    };
    assert!(
        short
            .check()
            .unwrap_err()
            .contains("group.consumer.min.session.timeout.ms")
    );
    let slow = ConsumerGroupConfig {
        heartbeat_interval: Duration::from_secs(50),
        max_heartbeat_interval: Duration::from_secs(60),
        ..ConsumerGroupConfig::default()
    };
    assert!(slow.check().unwrap_err().contains("less than"));
    let none = ConsumerGroupConfig {
        assignors: Vec::new(),
        ..ConsumerGroupConfig::default()
    };
    assert!(none.check().is_err());
}

#[test]
fn a_join_without_its_fields_is_taken_from_a_known_member_and_sends_a_stranger_back() {
    let mut h = Harness::new();
    let t = h.topics.create("t", 2);
    let bare_join = |member: &str| HeartbeatRequest {
        member_epoch: 0,
        ..hb(member)
    };
    // librdkafka retrying a join whose answer was lost (here: the broker restarted).
    assert_eq!(
        h.send(bare_join("a")).unwrap_err(),
        GroupError::UnknownMemberId
    );
    h.join("a", &["t"]);
    let again = h.send(bare_join("a")).unwrap();
    assert_eq!(again.member_epoch, 1);
    assert_eq!(
        again.assignment,
        Some(partitions(t, &[0, 1])),
        "its subscription is kept"
    );
}
