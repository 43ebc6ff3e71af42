use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{Assignment, Assignor, MemberSpec, partition_count};

fn topic(n: u8) -> Uuid {
    Uuid::from_bytes([n; 16])
}

fn members(count: usize, topics: &[Uuid]) -> BTreeMap<String, MemberSpec> {
    (0..count)
        .map(|m| {
            let spec = MemberSpec {
                subscribed: topics.iter().copied().collect(),
                current: Assignment::new(),
            };
            (format!("member-{m:03}"), spec)
        })
        .collect()
}

/// Every partition of the topics exactly once, each to a member subscribed to it.
fn assert_complete(
    assignments: &BTreeMap<String, Assignment>,
    members: &BTreeMap<String, MemberSpec>,
    counts: &BTreeMap<Uuid, i32>,
) {
    let mut seen = BTreeSet::new();
    for (id, assignment) in assignments {
        for (topic, partitions) in assignment {
            assert!(
                members[id].subscribed.contains(topic),
                "{id} got a topic it does not read"
            );
            for partition in partitions {
                assert!(
                    seen.insert((*topic, *partition)),
                    "{topic}/{partition} twice"
                );
            }
        }
    }
    let expected: usize = counts.values().map(|c| usize::try_from(*c).unwrap()).sum();
    assert_eq!(seen.len(), expected);
}

fn sizes(assignments: &BTreeMap<String, Assignment>) -> Vec<usize> {
    assignments.values().map(partition_count).collect()
}

/// Carries each member's assignment over as its current one.
fn carry_over(
    members: &mut BTreeMap<String, MemberSpec>,
    assignments: &BTreeMap<String, Assignment>,
) {
    for (id, spec) in members.iter_mut() {
        spec.current = assignments.get(id).cloned().unwrap_or_default();
    }
}

fn kept(before: &Assignment, after: &Assignment) -> usize {
    before
        .iter()
        .map(|(topic, partitions)| {
            after
                .get(topic)
                .map_or(0, |now| partitions.intersection(now).count())
        })
        .sum()
}

#[test]
fn uniform_balances_a_new_group_and_keeps_partitions_when_a_member_joins_or_leaves() {
    let counts = BTreeMap::from([(topic(1), 60), (topic(2), 40)]);
    let mut group = members(10, &[topic(1), topic(2)]);
    let first = Assignor::Uniform.assign(&group, &counts);
    assert_complete(&first, &group, &counts);
    assert_eq!(sizes(&first), vec![10; 10]);

    carry_over(&mut group, &first);
    group.insert(
        "member-new".into(),
        MemberSpec {
            subscribed: [topic(1), topic(2)].into(),
            current: Assignment::new(),
        },
    );
    let joined = Assignor::Uniform.assign(&group, &counts);
    assert_complete(&joined, &group, &counts);
    assert!(
        sizes(&joined).iter().all(|&n| n == 9 || n == 10),
        "{:?}",
        sizes(&joined)
    );
    // Only what the newcomer needs moves: each old member keeps at least 9 of its 10.
    for (id, before) in &first {
        assert!(
            kept(before, &joined[id]) >= 9,
            "{id} lost more than it had to"
        );
    }

    carry_over(&mut group, &joined);
    group.remove("member-003");
    let left = Assignor::Uniform.assign(&group, &counts);
    assert_complete(&left, &group, &counts);
    assert_eq!(sizes(&left), vec![10; 10]);
    for (id, before) in &joined {
        if let Some(after) = left.get(id) {
            assert_eq!(
                kept(before, after),
                partition_count(before),
                "{id} lost a partition"
            );
        }
    }
}

#[test]
fn uniform_gives_each_topic_only_to_its_subscribers() {
    let counts = BTreeMap::from([(topic(1), 6), (topic(2), 6), (topic(3), 3)]);
    let mut group = BTreeMap::new();
    group.insert(
        "a".to_owned(),
        MemberSpec {
            subscribed: [topic(1)].into(),
            ..MemberSpec::default()
        },
    );
    group.insert(
        "b".to_owned(),
        MemberSpec {
            subscribed: [topic(1), topic(2)].into(),
            ..MemberSpec::default()
        },
    );
    group.insert(
        "c".to_owned(),
        MemberSpec {
            subscribed: [topic(2)].into(),
            ..MemberSpec::default()
        },
    );
    let counts_read: BTreeMap<Uuid, i32> = counts
        .iter()
        .filter(|(t, _)| **t != topic(3))
        .map(|(t, c)| (*t, *c))
        .collect();
    let assignments = Assignor::Uniform.assign(&group, &counts);
    assert_complete(&assignments, &group, &counts_read);
    assert_eq!(sizes(&assignments), vec![4, 4, 4]);
}

#[test]
fn uniform_drops_partitions_of_topics_no_longer_read_or_gone() {
    let counts = BTreeMap::from([(topic(1), 4)]);
    let mut group = members(2, &[topic(1)]);
    group.get_mut("member-000").unwrap().current = Assignment::from([
        (topic(1), BTreeSet::from([0, 1, 2, 7])),
        (topic(9), BTreeSet::from([0])),
    ]);
    let assignments = Assignor::Uniform.assign(&group, &counts);
    assert_complete(&assignments, &group, &counts);
    assert_eq!(sizes(&assignments), vec![2, 2]);
}

#[test]
fn uniform_assigns_a_thousand_partitions_to_fifty_members() {
    let topics: Vec<Uuid> = (1..=10).map(topic).collect();
    let counts: BTreeMap<Uuid, i32> = topics.iter().map(|t| (*t, 100)).collect();
    let mut group = members(50, &topics);
    let first = Assignor::Uniform.assign(&group, &counts);
    assert_complete(&first, &group, &counts);
    assert_eq!(sizes(&first), vec![20; 50]);
    carry_over(&mut group, &first);
    group.remove("member-000");
    let after = Assignor::Uniform.assign(&group, &counts);
    assert_complete(&after, &group, &counts);
    assert!(sizes(&after).iter().all(|&n| n == 20 || n == 21));
}

#[test]
fn range_gives_contiguous_ranges_and_the_same_numbers_of_co_partitioned_topics() {
    let counts = BTreeMap::from([(topic(1), 5), (topic(2), 5)]);
    let group = members(2, &[topic(1), topic(2)]);
    let assignments = Assignor::Range.assign(&group, &counts);
    assert_complete(&assignments, &group, &counts);
    let first = &assignments["member-000"];
    assert_eq!(first[&topic(1)], BTreeSet::from([0, 1, 2]));
    assert_eq!(first[&topic(2)], BTreeSet::from([0, 1, 2]));
    assert_eq!(assignments["member-001"][&topic(1)], BTreeSet::from([3, 4]));
}

#[test]
fn range_keeps_a_members_partitions_within_its_share() {
    let counts = BTreeMap::from([(topic(1), 6)]);
    let mut group = members(2, &[topic(1)]);
    let first = Assignor::Range.assign(&group, &counts);
    carry_over(&mut group, &first);
    group.insert(
        "member-002".into(),
        MemberSpec {
            subscribed: [topic(1)].into(),
            current: Assignment::new(),
        },
    );
    let after = Assignor::Range.assign(&group, &counts);
    assert_complete(&after, &group, &counts);
    assert_eq!(after["member-000"][&topic(1)], BTreeSet::from([0, 1]));
    assert_eq!(after["member-001"][&topic(1)], BTreeSet::from([3, 4]));
    assert_eq!(after["member-002"][&topic(1)], BTreeSet::from([2, 5]));
}

#[test]
fn assignors_are_named_as_clients_choose_them() {
    assert_eq!(Assignor::named("uniform"), Some(Assignor::Uniform));
    assert_eq!(Assignor::named("range"), Some(Assignor::Range));
    assert_eq!(Assignor::named("sticky"), None);
    assert_eq!(Assignor::Range.name(), "range");
}
