//! The state machine, step by step, with time passed in by hand.

use super::*;

fn config() -> CoordinatorConfig {
    CoordinatorConfig {
        initial_rebalance_delay: Duration::from_millis(300),
        ..CoordinatorConfig::default()
    }
}

fn request(member_id: &str, instance: Option<&str>, protocols: &[&str]) -> JoinRequest {
    JoinRequest {
        group_id: "g".to_owned(),
        member_id: member_id.to_owned(),
        group_instance_id: instance.map(str::to_owned),
        client_id: "client".to_owned(),
        client_host: "/127.0.0.1".to_owned(),
        session_timeout: Duration::from_secs(10),
        rebalance_timeout: Duration::from_secs(20),
        protocol_type: "consumer".to_owned(),
        protocols: protocols
            .iter()
            .map(|name| ((*name).to_owned(), Bytes::from(format!("meta-{name}"))))
            .collect(),
        require_known_member_id: true,
    }
}

/// The JoinGroup answer if it is there yet.
fn answer(step: &mut JoinStep) -> Option<JoinResponse> {
    match step {
        JoinStep::Done(response) => Some(response.clone()),
        JoinStep::Wait(receiver) => receiver.try_recv().ok(),
    }
}

fn sync_answer(step: &mut SyncStep) -> Option<Result<SyncResponse, GroupError>> {
    match step {
        SyncStep::Done(result) => Some(result.clone()),
        SyncStep::Wait(receiver) => receiver.try_recv().ok(),
    }
}

/// A dynamic member's two-step join (MEMBER_ID_REQUIRED, then with the id).
fn join_dynamic(group: &mut Group, now: Instant) -> (String, JoinStep) {
    let mut first = group.join(request("", None, &["range"]), now, &config());
    let first = answer(&mut first).unwrap();
    assert_eq!(first.error, Some(GroupError::MemberIdRequired));
    let id = first.member_id.clone();
    let step = group.join(request(&id, None, &["range"]), now, &config());
    (id, step)
}

fn sync(
    group: &mut Group,
    id: &str,
    generation: i32,
    assignments: &[(&str, &str)],
    now: Instant,
) -> SyncStep {
    group.sync(
        SyncRequest {
            group_id: "g".to_owned(),
            generation,
            member_id: id.to_owned(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments: assignments
                .iter()
                .map(|(m, a)| ((*m).to_owned(), Bytes::from((*a).to_owned())))
                .collect(),
        },
        now,
    )
}

#[test]
fn members_join_after_the_initial_delay_and_get_the_leaders_assignment() {
    let start = Instant::now();
    let mut group = Group::new();
    let (a, mut a_join) = join_dynamic(&mut group, start);
    assert_eq!(group.state, GroupState::PreparingRebalance);
    assert!(answer(&mut a_join).is_none(), "waits out the initial delay");
    let (b, mut b_join) = join_dynamic(&mut group, start + Duration::from_millis(100));
    group.tick(start + Duration::from_millis(350), &config());
    assert!(
        answer(&mut a_join).is_none(),
        "a new member extended the delay"
    );
    group.tick(start + Duration::from_millis(450), &config());
    let a_answer = answer(&mut a_join).unwrap();
    let b_answer = answer(&mut b_join).unwrap();
    assert_eq!((a_answer.generation, b_answer.generation), (1, 1));
    assert_eq!(a_answer.leader, a, "the first to join leads");
    assert_eq!(a_answer.members.len(), 2, "the leader sees every member");
    assert!(b_answer.members.is_empty());
    assert_eq!(a_answer.protocol_name.as_deref(), Some("range"));
    assert_eq!(group.state, GroupState::CompletingRebalance);

    let now = start + Duration::from_millis(500);
    let mut b_sync = sync(&mut group, &b, 1, &[], now);
    assert!(
        sync_answer(&mut b_sync).is_none(),
        "followers wait for the leader"
    );
    let mut a_sync = sync(&mut group, &a, 1, &[(&a, "for-a"), (&b, "for-b")], now);
    assert_eq!(
        sync_answer(&mut a_sync).unwrap().unwrap().assignment,
        "for-a"
    );
    assert_eq!(
        sync_answer(&mut b_sync).unwrap().unwrap().assignment,
        "for-b"
    );
    assert_eq!(group.state, GroupState::Stable);
    assert_eq!(group.heartbeat(&b, None, 1, now), Ok(()));
    assert_eq!(
        group.heartbeat(&b, None, 0, now),
        Err(GroupError::IllegalGeneration)
    );
    assert_eq!(
        group.heartbeat("who", None, 1, now),
        Err(GroupError::UnknownMemberId)
    );
}

/// A group of `count` dynamic members, Stable at generation 1; returns their ids.
fn stable_group(group: &mut Group, count: usize, start: Instant) -> Vec<String> {
    let mut joins: Vec<(String, JoinStep)> =
        (0..count).map(|_| join_dynamic(group, start)).collect();
    group.tick(start + Duration::from_secs(1), &config());
    let ids: Vec<String> = joins.iter().map(|(id, _)| id.clone()).collect();
    let leader = answer(&mut joins[0].1).unwrap().leader;
    let now = start + Duration::from_secs(1);
    let assignments: Vec<(String, String)> = ids
        .iter()
        .map(|id| (id.clone(), format!("to-{id}")))
        .collect();
    let borrowed: Vec<(&str, &str)> = assignments
        .iter()
        .map(|(m, a)| (m.as_str(), a.as_str()))
        .collect();
    let mut steps: Vec<SyncStep> = ids
        .iter()
        .filter(|id| **id != leader)
        .map(|id| sync(group, id, 1, &[], now))
        .collect();
    steps.push(sync(group, &leader, 1, &borrowed, now));
    for step in &mut steps {
        assert!(sync_answer(step).unwrap().is_ok());
    }
    assert_eq!(group.state, GroupState::Stable);
    ids
}

#[test]
fn a_new_member_makes_the_others_rejoin() {
    let start = Instant::now();
    let mut group = Group::new();
    let ids = stable_group(&mut group, 1, start);
    let now = start + Duration::from_secs(2);
    let (b, mut b_join) = join_dynamic(&mut group, now);
    assert_eq!(group.state, GroupState::PreparingRebalance);
    assert_eq!(
        group.heartbeat(&ids[0], None, 1, now),
        Err(GroupError::RebalanceInProgress),
        "the heartbeat tells the old member to rejoin"
    );
    assert!(answer(&mut b_join).is_none());
    let mut a_join = group.join(request(&ids[0], None, &["range"]), now, &config());
    let a_answer = answer(&mut a_join).unwrap();
    assert_eq!(
        a_answer.generation, 2,
        "no initial delay: the group was not empty"
    );
    assert_eq!(a_answer.leader, ids[0], "the leader stays");
    assert_eq!(answer(&mut b_join).unwrap().member_id, b);
}

#[test]
fn a_silent_member_is_removed_after_its_session_timeout() {
    let start = Instant::now();
    let mut group = Group::new();
    let ids = stable_group(&mut group, 2, start);
    let synced = start + Duration::from_secs(1);
    let mut now = synced;
    while group.heartbeat(&ids[0], None, 1, now) == Ok(()) {
        now += Duration::from_millis(500);
        group.tick(now, &config());
        assert!(
            now < synced + Duration::from_secs(11),
            "the other member never expired"
        );
    }
    assert!(
        now >= synced + Duration::from_secs(10),
        "expired only after its session timeout"
    );
    assert_eq!(
        group.state,
        GroupState::PreparingRebalance,
        "the other expired"
    );
    let mut join = group.join(request(&ids[0], None, &["range"]), now, &config());
    let answer = answer(&mut join).unwrap();
    assert_eq!((answer.generation, answer.members.len()), (2, 1));
    assert_eq!(
        group.heartbeat(&ids[1], None, 2, now),
        Err(GroupError::UnknownMemberId)
    );
}

#[test]
fn members_that_do_not_rejoin_are_dropped_at_the_rebalance_timeout() {
    let start = Instant::now();
    let mut group = Group::new();
    let ids = stable_group(&mut group, 2, start);
    let now = start + Duration::from_secs(2);
    let mut join = group.join(
        request(&ids[0], None, &["range", "roundrobin"]),
        now,
        &config(),
    );
    assert!(answer(&mut join).is_none(), "waits for the other member");
    // The other keeps heartbeating (REBALANCE_IN_PROGRESS) but never rejoins.
    let mut later = now;
    for _ in 0..25 {
        later += Duration::from_secs(1);
        let _ = group.heartbeat(&ids[1], None, 1, later);
        group.tick(later, &config());
    }
    let answer = answer(&mut join).unwrap();
    assert_eq!((answer.generation, answer.members.len()), (2, 1));
}

#[test]
fn leaving_rebalances_at_once_and_the_last_leaves_an_empty_group() {
    let start = Instant::now();
    let mut group = Group::new();
    let ids = stable_group(&mut group, 2, start);
    let now = start + Duration::from_secs(2);
    let results = group.leave(
        &[(ids[1].clone(), None), ("ghost".to_owned(), None)],
        now,
        &config(),
    );
    assert_eq!(results, vec![Ok(()), Err(GroupError::UnknownMemberId)]);
    assert_eq!(group.state, GroupState::PreparingRebalance);
    let mut join = group.join(request(&ids[0], None, &["range"]), now, &config());
    assert_eq!(answer(&mut join).unwrap().generation, 2);
    let results = group.leave(&[(ids[0].clone(), None)], now, &config());
    assert_eq!(results, vec![Ok(())]);
    assert_eq!(group.state, GroupState::Empty);
    assert!(group.is_unused());
}

#[test]
fn a_static_member_restarting_keeps_its_assignment_without_a_rebalance() {
    let start = Instant::now();
    let mut group = Group::new();
    let mut a = group.join(request("", Some("a"), &["range"]), start, &config());
    let mut b = group.join(request("", Some("b"), &["range"]), start, &config());
    group.tick(start + Duration::from_secs(1), &config());
    let (a, b) = (answer(&mut a).unwrap(), answer(&mut b).unwrap());
    let now = start + Duration::from_secs(1);
    let (leader, follower) = if a.leader == a.member_id {
        (a.clone(), b.clone())
    } else {
        (b.clone(), a.clone())
    };
    let mut follower_sync = sync(&mut group, &follower.member_id, 1, &[], now);
    let assignments = [
        (leader.member_id.as_str(), "L"),
        (follower.member_id.as_str(), "F"),
    ];
    let _ = sync(&mut group, &leader.member_id, 1, &assignments, now);
    assert_eq!(
        sync_answer(&mut follower_sync).unwrap().unwrap().assignment,
        "F"
    );

    // The follower's process restarts and joins again with its instance id.
    let instance = if follower.member_id == a.member_id {
        "a"
    } else {
        "b"
    };
    let mut rejoin = group.join(request("", Some(instance), &["range"]), now, &config());
    let rejoined = answer(&mut rejoin).expect("answered at once");
    assert_eq!(rejoined.error, None);
    assert_eq!(rejoined.generation, 1, "no rebalance");
    assert_ne!(rejoined.member_id, follower.member_id, "a new member id");
    assert_eq!(group.state, GroupState::Stable);
    let mut synced = sync(&mut group, &rejoined.member_id, 1, &[], now);
    assert_eq!(sync_answer(&mut synced).unwrap().unwrap().assignment, "F");
    assert_eq!(
        group.heartbeat(&follower.member_id, Some(instance), 1, now),
        Err(GroupError::FencedInstanceId),
        "the old incarnation is fenced"
    );
}

#[test]
fn the_protocol_most_members_prefer_among_the_common_ones_wins() {
    let start = Instant::now();
    let mut group = Group::new();
    let mut steps = Vec::new();
    for protocols in [
        &["range", "roundrobin"][..],
        &["roundrobin", "range"],
        &["range", "roundrobin", "sticky"],
    ] {
        let mut request = request("", None, protocols);
        request.require_known_member_id = false;
        steps.push(group.join(request, start, &config()));
    }
    group.tick(start + Duration::from_secs(1), &config());
    let chosen = answer(&mut steps[0]).unwrap().protocol_name;
    assert_eq!(chosen.as_deref(), Some("range"));

    let mut stranger = request("", None, &["sticky"]);
    stranger.require_known_member_id = false;
    let mut refused = group.join(stranger, start, &config());
    assert_eq!(
        answer(&mut refused).unwrap().error,
        Some(GroupError::InconsistentGroupProtocol)
    );
    let mut other_type = request("", None, &["range"]);
    other_type.protocol_type = "connect".to_owned();
    let mut refused = group.join(other_type, start, &config());
    assert_eq!(
        answer(&mut refused).unwrap().error,
        Some(GroupError::InconsistentGroupProtocol)
    );
}

#[test]
fn commits_are_checked_against_membership_and_generation() {
    let start = Instant::now();
    let mut group = Group::new();
    assert_eq!(
        group.check_commit("", None, -1, start),
        Ok(()),
        "no members: anyone commits"
    );
    let ids = stable_group(&mut group, 1, start);
    let now = start + Duration::from_secs(2);
    assert_eq!(
        group.check_commit("", None, -1, now),
        Err(GroupError::UnknownMemberId)
    );
    assert_eq!(group.check_commit(&ids[0], None, 1, now), Ok(()));
    assert_eq!(
        group.check_commit(&ids[0], None, 7, now),
        Err(GroupError::IllegalGeneration)
    );
    let mut short = request("", None, &["range"]);
    short.session_timeout = Duration::from_millis(10);
    let mut refused = group.join(short, now, &config());
    assert_eq!(
        answer(&mut refused).unwrap().error,
        Some(GroupError::InvalidSessionTimeout)
    );
}

/// Two static members, Stable; returns (leader's response, follower's response,
/// follower's instance id).
fn stable_static_pair(
    group: &mut Group,
    start: Instant,
) -> (JoinResponse, JoinResponse, &'static str) {
    let mut a = group.join(request("", Some("a"), &["range"]), start, &config());
    let mut b = group.join(request("", Some("b"), &["range"]), start, &config());
    group.tick(start + Duration::from_secs(1), &config());
    let (a, b) = (answer(&mut a).unwrap(), answer(&mut b).unwrap());
    let now = start + Duration::from_secs(1);
    let (leader, follower, instance) = if a.leader == a.member_id {
        (a, b, "b")
    } else {
        (b, a, "a")
    };
    let mut follower_sync = sync(group, &follower.member_id, 1, &[], now);
    let assignments = [
        (leader.member_id.as_str(), "L"),
        (follower.member_id.as_str(), "F"),
    ];
    let _ = sync(group, &leader.member_id, 1, &assignments, now);
    assert!(sync_answer(&mut follower_sync).unwrap().is_ok());
    (leader, follower, instance)
}

#[test]
fn a_static_restart_with_new_subscription_bytes_keeps_the_generation() {
    let start = Instant::now();
    let mut group = Group::new();
    let (_, _, instance) = stable_static_pair(&mut group, start);
    let mut restarted = request("", Some(instance), &["range"]);
    restarted.protocols[0].1 = Bytes::from_static(b"owned partitions differ now");
    let now = start + Duration::from_secs(2);
    let mut rejoin = group.join(restarted, now, &config());
    let rejoined = answer(&mut rejoin).expect("answered at once");
    assert_eq!((rejoined.error, rejoined.generation), (None, 1));
    assert_eq!(group.state, GroupState::Stable);
}

#[test]
fn static_members_keep_their_place_past_the_rebalance_timeout() {
    let start = Instant::now();
    let mut group = Group::new();
    let (leader, follower, follower_instance) = stable_static_pair(&mut group, start);
    let leader_instance = if follower_instance == "a" { "b" } else { "a" };
    // The leader rejoins with new metadata; the follower (restarting, say) does not,
    // though its heartbeats keep its session alive past the 20 s rebalance timeout.
    let now = start + Duration::from_secs(2);
    let rejoined = request(
        &leader.member_id,
        Some(leader_instance),
        &["range", "sticky"],
    );
    let mut rejoin = group.join(rejoined, now, &config());
    let mut later = now;
    for _ in 0..21 {
        later += Duration::from_secs(1);
        group.tick(later, &config());
        let _ = group.heartbeat(&follower.member_id, Some(follower_instance), 1, later);
    }
    let answer = answer(&mut rejoin).unwrap();
    assert_eq!(answer.generation, 2);
    assert_eq!(
        answer.members.len(),
        2,
        "the static follower is still a member"
    );
}

#[test]
fn followers_are_not_left_waiting_for_a_leader_that_never_syncs() {
    let start = Instant::now();
    let mut group = Group::new();
    let (a, mut a_join) = join_dynamic(&mut group, start);
    let (b, mut b_join) = join_dynamic(&mut group, start);
    group.tick(start + Duration::from_secs(1), &config());
    let leader = answer(&mut a_join).unwrap().leader;
    let _ = answer(&mut b_join).unwrap();
    let follower = if leader == a { b } else { a };
    let mut now = start + Duration::from_secs(1);
    let mut waiting = sync(&mut group, &follower, 1, &[], now);
    // The leader heartbeats but never sends SyncGroup.
    let answer = loop {
        if let Some(answer) = sync_answer(&mut waiting) {
            break answer;
        }
        now += Duration::from_secs(1);
        let _ = group.heartbeat(&leader, None, 1, now);
        group.tick(now, &config());
        assert!(
            now < start + Duration::from_secs(30),
            "the follower waits forever"
        );
    };
    assert_eq!(
        answer,
        Err(GroupError::RebalanceInProgress),
        "told to rejoin"
    );
    assert!(
        now >= start + Duration::from_secs(20),
        "after the rebalance timeout"
    );
}

#[test]
fn a_rebalance_waits_for_members_handed_an_id() {
    let start = Instant::now();
    let mut group = Group::new();
    let ids = stable_group(&mut group, 1, start);
    let now = start + Duration::from_secs(2);
    let mut first = group.join(request("", None, &["range"]), now, &config());
    let new_id = answer(&mut first).unwrap().member_id;
    let mut old = group.join(request(&ids[0], None, &["range", "x"]), now, &config());
    assert!(
        answer(&mut old).is_none(),
        "waits for the member that was handed an id"
    );
    let mut new = group.join(request(&new_id, None, &["range"]), now, &config());
    assert_eq!(answer(&mut old).unwrap().generation, 2);
    assert_eq!(answer(&mut new).unwrap().members.len(), 0);
}

#[test]
fn a_stale_generation_is_told_so_even_during_a_rebalance() {
    let start = Instant::now();
    let mut group = Group::new();
    let ids = stable_group(&mut group, 2, start);
    let now = start + Duration::from_secs(2);
    // A new member: the group prepares a rebalance; generation 1 may still commit
    // (members commit as they give partitions up).
    let (_, _new) = join_dynamic(&mut group, now);
    assert_eq!(group.state, GroupState::PreparingRebalance);
    assert_eq!(group.check_commit(&ids[0], None, 1, now), Ok(()));
    assert_eq!(
        group.check_commit(&ids[0], None, 0, now),
        Err(GroupError::IllegalGeneration)
    );
    let _ = group.join(request(&ids[0], None, &["range"]), now, &config());
    let _ = group.join(request(&ids[1], None, &["range"]), now, &config());
    assert_eq!(group.state, GroupState::CompletingRebalance);
    assert_eq!(
        group.check_commit(&ids[0], None, 1, now),
        Err(GroupError::IllegalGeneration),
        "generation 1 is over: checked before the rebalance"
    );
    assert_eq!(
        group.check_commit(&ids[0], None, 2, now),
        Err(GroupError::RebalanceInProgress),
        "the new generation, assignment not yet known"
    );
    assert_eq!(
        group.check_commit("stranger", None, 2, now),
        Err(GroupError::UnknownMemberId)
    );
}

#[test]
fn the_last_members_leaving_empty_the_group_at_once_and_it_keeps_its_type() {
    let start = Instant::now();
    let mut group = Group::new();
    // Two members joined and still within the initial rebalance delay.
    let (a, _) = join_dynamic(&mut group, start);
    let (b, _) = join_dynamic(&mut group, start);
    assert_eq!(group.state, GroupState::PreparingRebalance);
    let results = group.leave(&[(a, None), (b, None)], start, &config());
    assert_eq!(results, vec![Ok(()), Ok(())]);
    assert_eq!(group.state, GroupState::Empty, "without waiting for a tick");
    assert_eq!(group.protocol_type(), Some("consumer"));
    assert_eq!(group.describe().protocol_type, "consumer");
    // A member of another type may start the group afresh.
    let mut other = request("", None, &["x"]);
    other.protocol_type = "connect".to_owned();
    other.require_known_member_id = false;
    let _ = group.join(other, start, &config());
    assert_eq!(group.protocol_type(), Some("connect"));
}

/// The consumer protocol's subscription (v0) for `topics`.
fn subscription(topics: &[&str]) -> Bytes {
    let mut out = vec![0, 0];
    out.extend_from_slice(&u32::try_from(topics.len()).unwrap().to_be_bytes());
    for topic in topics {
        out.extend_from_slice(&u16::try_from(topic.len()).unwrap().to_be_bytes());
        out.extend_from_slice(topic.as_bytes());
    }
    out.extend_from_slice(&(-1i32).to_be_bytes());
    Bytes::from(out)
}

fn static_request(instance: &str, topics: &[&str]) -> JoinRequest {
    let mut request = request("", Some(instance), &["range"]);
    request.protocols[0].1 = subscription(topics);
    request
}

#[test]
fn a_static_leader_restarting_gets_its_place_back_without_a_rebalance() {
    let start = Instant::now();
    let mut group = Group::new();
    let mut a = group.join(static_request("a", &["t"]), start, &config());
    let mut b = group.join(static_request("b", &["t"]), start, &config());
    group.tick(start + Duration::from_secs(1), &config());
    let (a, b) = (answer(&mut a).unwrap(), answer(&mut b).unwrap());
    let now = start + Duration::from_secs(1);
    let (leader, follower, leader_instance) = if a.leader == a.member_id {
        (a, b, "a")
    } else {
        (b, a, "b")
    };
    let mut follower_sync = sync(&mut group, &follower.member_id, 1, &[], now);
    let assignments = [
        (leader.member_id.as_str(), "L"),
        (follower.member_id.as_str(), "F"),
    ];
    let _ = sync(&mut group, &leader.member_id, 1, &assignments, now);
    assert!(sync_answer(&mut follower_sync).unwrap().is_ok());

    let mut rejoin = group.join(static_request(leader_instance, &["t"]), now, &config());
    let rejoined = answer(&mut rejoin).expect("answered at once");
    assert_eq!((rejoined.error, rejoined.generation), (None, 1));
    assert_eq!(rejoined.leader, rejoined.member_id, "still the leader");
    assert_eq!(rejoined.members.len(), 2, "told the members");
    assert!(rejoined.skip_assignment);
    assert_eq!(group.state, GroupState::Stable, "no rebalance");
    // An older client assigns anyway; the stable group keeps what everyone has.
    let mut synced = sync(
        &mut group,
        &rejoined.member_id,
        1,
        &[
            (&rejoined.member_id, "other"),
            (&follower.member_id, "other"),
        ],
        now,
    );
    assert_eq!(sync_answer(&mut synced).unwrap().unwrap().assignment, "L");
    assert_eq!(
        group.heartbeat(&follower.member_id, None, 1, now),
        Ok(()),
        "the follower is not made to rejoin"
    );
    let mut follower_again = sync(&mut group, &follower.member_id, 1, &[], now);
    assert_eq!(
        sync_answer(&mut follower_again)
            .unwrap()
            .unwrap()
            .assignment,
        "F"
    );
}

#[test]
fn a_static_member_restarting_with_other_topics_rebalances() {
    let start = Instant::now();
    let mut group = Group::new();
    let mut a = group.join(static_request("a", &["t"]), start, &config());
    group.tick(start + Duration::from_secs(1), &config());
    let a = answer(&mut a).unwrap();
    let now = start + Duration::from_secs(1);
    let _ = sync(&mut group, &a.member_id, 1, &[(&a.member_id, "A")], now);
    assert_eq!(group.state, GroupState::Stable);
    // The same topics in another order: not a change.
    let mut same = group.join(static_request("a", &["t"]), now, &config());
    assert_eq!(answer(&mut same).unwrap().generation, 1);
    let mut changed = group.join(static_request("a", &["t", "u"]), now, &config());
    assert_eq!(
        answer(&mut changed).unwrap().generation,
        2,
        "a rebalance (its only member rejoined at once)"
    );
}
