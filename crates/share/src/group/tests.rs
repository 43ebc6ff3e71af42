use std::cell::Cell;

use spool_coordinator::consumer::TopicInfo;
use uuid::Uuid;

use super::*;
use crate::settings::ShareBrokerSettings;

struct FakeTopics {
    topics: Vec<(String, Uuid, i32)>,
    version: Cell<u64>,
}

impl Topics for FakeTopics {
    fn by_name(&self, name: &str) -> Option<TopicInfo> {
        self.topics
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, id, partitions)| TopicInfo {
                id: *id,
                partitions: *partitions,
            })
    }
    fn names(&self) -> Vec<String> {
        self.topics.iter().map(|(n, _, _)| n.clone()).collect()
    }
    fn name_of(&self, id: Uuid) -> Option<String> {
        self.topics
            .iter()
            .find(|(_, i, _)| *i == id)
            .map(|(n, _, _)| n.clone())
    }
    fn version(&self) -> u64 {
        self.version.get()
    }
}

const ONE: Uuid = Uuid::from_u128(1);
const FOUR: Uuid = Uuid::from_u128(4);

fn topics() -> FakeTopics {
    FakeTopics {
        topics: vec![("one".to_owned(), ONE, 1), ("four".to_owned(), FOUR, 4)],
        version: Cell::new(1),
    }
}

fn beat(member: &str, epoch: i32, topics: Option<&[&str]>) -> ShareHeartbeat {
    ShareHeartbeat {
        group_id: "g".to_owned(),
        member_id: member.to_owned(),
        member_epoch: epoch,
        rack_id: None,
        subscribed_topic_names: topics.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
    }
}

fn settings() -> ShareSettings {
    ShareSettings::of_broker(&ShareBrokerSettings::default())
}

fn partitions(answer: &ShareHeartbeatAnswer, topic: Uuid) -> Vec<i32> {
    answer
        .assignment
        .as_ref()
        .and_then(|a| a.get(&topic))
        .map(|p| p.iter().copied().collect())
        .unwrap_or_default()
}

#[test]
fn every_member_reads_a_one_partition_topic() {
    let (mut groups, topics, s, now) =
        (ShareGroups::default(), topics(), settings(), Instant::now());
    let a = groups.heartbeat(beat("a", JOIN, Some(&["one"])), &topics, &s, 10, now);
    let a = a.unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(a.member_epoch, 1);
    assert_eq!(partitions(&a, ONE), vec![0]);
    let b = groups
        .heartbeat(beat("b", JOIN, Some(&["one"])), &topics, &s, 10, now)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(partitions(&b, ONE), vec![0], "b shares the partition");
    assert_eq!(b.member_epoch, 2);
    let again = groups
        .heartbeat(beat("a", 1, None), &topics, &s, 10, now)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(again.assignment, None, "a's assignment did not change");
    assert_eq!(again.member_epoch, 1);
}

#[test]
fn partitions_are_spread_when_there_are_enough() {
    let (mut groups, topics, s, now) =
        (ShareGroups::default(), topics(), settings(), Instant::now());
    let _ = groups.heartbeat(beat("a", JOIN, Some(&["four"])), &topics, &s, 10, now);
    let _ = groups.heartbeat(beat("b", JOIN, Some(&["four"])), &topics, &s, 10, now);
    let a = groups
        .heartbeat(beat("a", 1, None), &topics, &s, 10, now)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(partitions(&a, FOUR), vec![0, 2]);
    assert_eq!(a.member_epoch, 2);
    let b = groups
        .group("g")
        .and_then(|g| g.members.get("b"))
        .map(|m| m.assignment.clone());
    assert_eq!(
        b.and_then(|b| b.get(&FOUR).cloned())
            .map(|p| p.into_iter().collect::<Vec<_>>()),
        Some(vec![1, 3])
    );
}

#[test]
fn unknown_and_fenced_members_and_leaving() {
    let (mut groups, topics, s, now) =
        (ShareGroups::default(), topics(), settings(), Instant::now());
    assert!(matches!(
        groups.heartbeat(beat("a", 3, None), &topics, &s, 10, now),
        Err(ShareError::UnknownMember { .. })
    ));
    assert!(
        groups.group("g").is_none(),
        "a refused heartbeat leaves no empty group"
    );
    assert!(matches!(
        groups.heartbeat(beat("a", JOIN, None), &topics, &s, 10, now),
        Err(ShareError::InvalidRequest(_))
    ));
    assert!(matches!(
        groups.heartbeat(beat("", JOIN, Some(&["one"])), &topics, &s, 10, now),
        Err(ShareError::InvalidRequest(_))
    ));
    let _ = groups.heartbeat(beat("a", JOIN, Some(&["one"])), &topics, &s, 10, now);
    assert!(matches!(
        groups.heartbeat(beat("a", 7, None), &topics, &s, 10, now),
        Err(ShareError::FencedMemberEpoch { got: 7, current: 1 })
    ));
    assert!(matches!(
        groups.heartbeat(beat("b", JOIN, Some(&["one"])), &topics, &s, 1, now),
        Err(ShareError::GroupMaxSizeReached { .. })
    ));
    let left = groups
        .heartbeat(beat("a", LEAVE, None), &topics, &s, 10, now)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(left.member_epoch, LEAVE);
    assert!(groups.group("g").is_none());
}

#[test]
fn silent_members_expire_and_new_partitions_are_assigned() {
    let (mut groups, mut topics, s, now) =
        (ShareGroups::default(), topics(), settings(), Instant::now());
    let _ = groups.heartbeat(beat("a", JOIN, Some(&["one"])), &topics, &s, 10, now);
    let _ = groups.heartbeat(beat("b", JOIN, Some(&["one"])), &topics, &s, 10, now);
    let later = now + s.session_timeout / 2;
    let _ = groups.heartbeat(beat("b", 2, None), &topics, &s, 10, later);
    assert_eq!(
        groups.expire(now + s.session_timeout, &topics),
        vec![("g".to_owned(), "a".to_owned())]
    );
    if let Some(topic) = topics.topics.first_mut() {
        topic.2 = 2;
    }
    topics.version.set(2);
    let b = groups
        .heartbeat(beat("b", 2, None), &topics, &s, 10, later)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(partitions(&b, ONE), vec![0, 1]);
    assert!(b.member_epoch > 2);
}
