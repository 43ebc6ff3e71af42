//! Jepsen's queue checks, on the history and the log as drained at the end:
//!
//! - every acknowledged value is in the log, at the offset it was acknowledged with;
//! - each (partition, offset) holds one value, whoever read it and when;
//! - no value is at two offsets, and none is a value nobody sent;
//! - a producer's values sit in a partition in the order it sent them;
//! - the log has no holes;
//! - a group member's polls within one assignment go forward one offset at a time;
//! - a member given a partition starts at the offset the group last committed for it.
//!
//! The checks of the transactional workload are in [`transactions`].

use std::collections::{BTreeMap, HashMap};

pub mod transactions;

use crate::history::{Commit, CommitOutcome, Events, Poll, Tick, Value};

/// How many examples of each kind of violation a report lists.
const EXAMPLES: usize = 20;

/// The topic as read from its start to its high watermark after the run: per
/// partition, `(offset, value)` in offset order; the value is the record's text when
/// it is not one of ours.
pub type Drained = BTreeMap<i32, Vec<(i64, Result<Value, String>)>>;

/// The violations found, by kind.
#[derive(Debug, Default, serde::Serialize)]
pub struct Findings {
    pub violations: BTreeMap<&'static str, Violation>,
}

#[derive(Debug, Default, serde::Serialize)]
pub struct Violation {
    pub count: u64,
    pub examples: Vec<String>,
}

impl Findings {
    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    #[must_use]
    pub fn count(&self, kind: &str) -> u64 {
        self.violations.get(kind).map_or(0, |v| v.count)
    }

    pub(crate) fn note(&mut self, kind: &'static str, detail: impl FnOnce() -> String) {
        let violation = self.violations.entry(kind).or_default();
        violation.count += 1;
        if violation.examples.len() < EXAMPLES {
            violation.examples.push(detail());
        }
    }
}

/// Checks `events` against `drained`.
#[must_use]
pub fn check(events: &Events, drained: &Drained) -> Findings {
    let mut findings = Findings::default();
    for error in &events.client_errors {
        findings.note("client-error", || error.clone());
    }
    let places = check_log(events, drained, &mut findings);
    check_acks(events, drained, &places, &mut findings);
    check_reads(events, drained, &mut findings);
    check_members(events, &mut findings);
    findings
}

/// Holes, strangers, duplicates and order in the drained log; returns where each of
/// our values sits.
fn check_log(
    events: &Events,
    drained: &Drained,
    findings: &mut Findings,
) -> HashMap<Value, Vec<(i32, i64)>> {
    let mut places: HashMap<Value, Vec<(i32, i64)>> = HashMap::new();
    for (&partition, records) in drained {
        // No retention in these runs: every partition starts at 0.
        let mut expected = 0;
        // The last sequence number seen in this partition, per producer.
        let mut last_seq: HashMap<u32, (u64, i64)> = HashMap::new();
        for (offset, value) in records {
            if *offset != expected {
                findings.note("gap", || {
                    format!("partition {partition}: offsets {expected}..{offset} missing")
                });
            }
            expected = offset + 1;
            let value = match value {
                Ok(value) if was_sent(events, *value) => *value,
                Ok(value) => {
                    findings.note("unexpected", || {
                        format!("{value} at {partition}/{offset} was never sent")
                    });
                    continue;
                }
                Err(text) => {
                    findings.note("unexpected", || {
                        format!("{text:?} at {partition}/{offset} is not a value of this run")
                    });
                    continue;
                }
            };
            if let Some((seq, at)) = last_seq.insert(value.producer, (value.seq, *offset))
                && seq >= value.seq
            {
                findings.note("reordered", || {
                    format!(
                        "partition {partition}: {value} at {offset} after p{}-{seq} at {at}",
                        value.producer
                    )
                });
            }
            places.entry(value).or_default().push((partition, *offset));
        }
    }
    for (value, at) in &places {
        if at.len() > 1 {
            findings.note("duplicated", || {
                format!("{value} at {}", describe_places(at))
            });
        }
    }
    places
}

fn was_sent(events: &Events, value: Value) -> bool {
    usize::try_from(value.producer)
        .ok()
        .and_then(|p| events.sent.get(p))
        .is_some_and(|sent| value.seq < *sent)
}

/// Every acknowledged value in the log, where it was acknowledged.
fn check_acks(
    events: &Events,
    drained: &Drained,
    places: &HashMap<Value, Vec<(i32, i64)>>,
    findings: &mut Findings,
) {
    for ack in &events.acked {
        let Some(at) = places.get(&ack.value) else {
            findings.note("lost", || {
                format!(
                    "{} acknowledged at {}/{} is not in the log",
                    ack.value, ack.partition, ack.offset
                )
            });
            continue;
        };
        if !at.contains(&(ack.partition, ack.offset)) {
            let holder = lookup(drained, ack.partition, ack.offset);
            findings.note("moved", || {
                format!(
                    "{} acknowledged at {}/{} is at {}; that offset holds {}",
                    ack.value,
                    ack.partition,
                    ack.offset,
                    describe_places(at),
                    holder.map_or("nothing".to_owned(), |v| v.to_string()),
                )
            });
        }
    }
}

/// Every read of a (partition, offset) saw the value the log holds there.
fn check_reads(events: &Events, drained: &Drained, findings: &mut Findings) {
    for poll in &events.polls {
        let held = drained.get(&poll.partition).and_then(|records| {
            records
                .binary_search_by_key(&poll.offset, |(offset, _)| *offset)
                .ok()
                .and_then(|i| records.get(i))
        });
        let agrees = match (held, poll.value) {
            (Some((_, Ok(held))), Some(read)) => *held == read,
            (Some((_, Err(_))), None) => true,
            _ => false,
        };
        if !agrees {
            findings.note("divergent", || {
                format!(
                    "{}/{} was read as {} during the run; the log holds {}",
                    poll.partition,
                    poll.offset,
                    poll.value
                        .map_or("a foreign value".to_owned(), |v| v.to_string()),
                    held.map_or("nothing".to_owned(), |(_, v)| match v {
                        Ok(v) => v.to_string(),
                        Err(text) => format!("{text:?}"),
                    }),
                )
            });
        }
    }
}

/// Each member's polls within one assignment go forward one offset at a time, and
/// start where the group's committed offset said.
fn check_members(events: &Events, findings: &mut Findings) {
    // Polls of each (session, partition), in the order they were made.
    let mut runs: BTreeMap<(u64, i32), Vec<&Poll>> = BTreeMap::new();
    for poll in &events.polls {
        runs.entry((poll.session, poll.partition))
            .or_default()
            .push(poll);
    }
    for ((session, partition), polls) in &runs {
        let (session, partition) = (*session, *partition);
        let assigned = events.sessions.iter().find(|s| s.id == session);
        let member = assigned.map_or("?", |s| s.member.as_str());
        if let (Some(first), Some(assigned)) = (polls.first(), assigned) {
            let mut allowed = resume_offsets(
                &events.commits,
                &events.deaths,
                partition,
                assigned.at,
                first.at,
            );
            if let Some(kept) = own_position(events, &runs, assigned, partition) {
                allowed.push(kept);
            }
            if !allowed.contains(&first.offset) {
                findings.note("bad-resume", || {
                    let failed: Vec<String> = events
                        .commits
                        .iter()
                        .filter(|c| c.partition == partition && c.offset == first.offset)
                        .map(|c| format!("{:?} {:?}", c.outcome, c.error))
                        .collect();
                    format!(
                        "{member} was given partition {partition} and started at {}; the group's committed offset was {} (commits of {}: {}; its earlier assignments: {})",
                        first.offset,
                        describe_offsets(&allowed),
                        first.offset,
                        if failed.is_empty() { "none".to_owned() } else { failed.join(", ") },
                        earlier_sessions(events, &runs, assigned, partition)
                    )
                });
            }
        }
        for pair in polls.windows(2) {
            let [before, after] = pair else { continue };
            let expected = before.offset + 1;
            let kind = match after.offset.cmp(&expected) {
                std::cmp::Ordering::Greater => "poll-skipped",
                std::cmp::Ordering::Less => "poll-backwards",
                std::cmp::Ordering::Equal => continue,
            };
            findings.note(kind, || {
                format!(
                    "{member} polled {partition}/{} then {partition}/{} in one assignment{}",
                    before.offset,
                    after.offset,
                    resets_between(events, member, partition, before.at, after.at)
                )
            });
        }
    }
}

/// What librdkafka said when it moved `member`'s position on `partition` between two
/// ticks ("" if it said nothing).
fn resets_between(events: &Events, member: &str, partition: i32, from: Tick, to: Tick) -> String {
    let named = format!("[{partition}]");
    let said: Vec<&str> = events
        .resets
        .iter()
        .filter(|reset| reset.member == member && (from..to).contains(&reset.at))
        .filter(|reset| reset.message.contains(&named))
        .map(|reset| reset.message.as_str())
        .collect();
    if said.is_empty() {
        String::new()
    } else {
        format!(" (librdkafka: {})", said.join("; "))
    }
}

/// Where a member given back a partition that its previous assignment held may go on
/// from: after the last record it polled of it. librdkafka resumes from its own offset
/// store, not the committed offset, when a partition comes back to the same consumer
/// (after a commit refused because the group re-formed, say): neither a skip nor a
/// repeat. A partition that changes owners gets no such allowance.
fn own_position(
    events: &Events,
    runs: &BTreeMap<(u64, i32), Vec<&Poll>>,
    assigned: &crate::history::Session,
    partition: i32,
) -> Option<i64> {
    // The member's earlier assignments, newest first, as long as each held the
    // partition: one that polled nothing of it (a rebalance came first) left the
    // position where the one before it had brought it.
    for session in earlier_assignments(events, assigned) {
        if !session.partitions.contains(&partition) {
            return None;
        }
        if let Some(last) = runs
            .get(&(session.id, partition))
            .and_then(|run| run.last())
        {
            return Some(last.offset + 1);
        }
    }
    None
}

/// The assignments of `assigned`'s member before it, newest first.
fn earlier_assignments<'a>(
    events: &'a Events,
    assigned: &crate::history::Session,
) -> Vec<&'a crate::history::Session> {
    let mut earlier: Vec<&crate::history::Session> = events
        .sessions
        .iter()
        .filter(|s| s.member == assigned.member && s.id < assigned.id)
        .collect();
    earlier.sort_by_key(|s| std::cmp::Reverse(s.id));
    earlier
}

/// The member's last few assignments before `assigned`, newest first, with what each
/// polled last of `partition`: for a finding's reader.
fn earlier_sessions(
    events: &Events,
    runs: &BTreeMap<(u64, i32), Vec<&Poll>>,
    assigned: &crate::history::Session,
    partition: i32,
) -> String {
    let described: Vec<String> = earlier_assignments(events, assigned)
        .iter()
        .take(3)
        .map(|s| {
            let last = runs
                .get(&(s.id, partition))
                .and_then(|run| run.last())
                .map_or("nothing".to_owned(), |p| p.offset.to_string());
            format!("#{} {:?} polled last {last}", s.id, s.partitions)
        })
        .collect();
    if described.is_empty() {
        "none".to_owned()
    } else {
        described.join("; ")
    }
}

/// Where a member given `partition` at `assigned` may start, its first poll being at
/// `first_poll`:
/// - the offset of the last commit acknowledged before the assignment (the start of
///   the log if none);
/// - that of any other commit acknowledged before the assignment whose attempt
///   overlapped it (the broker may have stored the two in either order);
/// - that of any commit begun before the first poll that was not refused and not
///   acknowledged before the assignment, and that ended after the last acknowledged
///   one began (it may have been stored after it).
fn resume_offsets(
    commits: &[Commit],
    deaths: &[Tick],
    partition: i32,
    assigned: Tick,
    first_poll: Tick,
) -> Vec<i64> {
    // A commit refused by the broker was not stored by that answer; but when a broker
    // died while it was in flight, an earlier attempt may have reached the dead one
    // and been stored before it died (librdkafka sends the commit again to its
    // successor, which refuses a generation it never saw). Such a refusal is unknown.
    let died_during = |attempted: Tick, ended: Tick| {
        deaths
            .iter()
            .any(|death| (attempted..=ended).contains(death))
    };
    let mine: Vec<&Commit> = commits
        .iter()
        .filter(|c| c.partition == partition)
        .collect();
    let settled = mine
        .iter()
        .filter(|c| c.acknowledged().is_some_and(|at| at < assigned))
        .max_by_key(|c| c.acknowledged());
    let (base, since) = settled.map_or((0, 0), |c| (c.offset, c.attempted));
    let mut allowed = vec![base];
    allowed.extend(
        mine.iter()
            .filter(|c| c.attempted < first_poll)
            .filter(|c| match c.outcome {
                CommitOutcome::Acknowledged(at) if at < assigned => at > since,
                CommitOutcome::Acknowledged(_) => true,
                CommitOutcome::Unknown(at) => at > since,
                CommitOutcome::Refused(at) => died_during(c.attempted, at) && at > since,
            })
            .map(|c| c.offset),
    );
    allowed.sort_unstable();
    allowed.dedup();
    allowed
}

fn lookup(drained: &Drained, partition: i32, offset: i64) -> Option<String> {
    let records = drained.get(&partition)?;
    let i = records
        .binary_search_by_key(&offset, |(offset, _)| *offset)
        .ok()?;
    records.get(i).map(|(_, value)| match value {
        Ok(value) => value.to_string(),
        Err(text) => format!("{text:?}"),
    })
}

fn describe_places(places: &[(i32, i64)]) -> String {
    let listed: Vec<String> = places.iter().map(|(p, o)| format!("{p}/{o}")).collect();
    listed.join(" and ")
}

fn describe_offsets(offsets: &[i64]) -> String {
    let listed: Vec<String> = offsets.iter().map(i64::to_string).collect();
    listed.join(" or ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{Ack, Reset, Session};

    fn v(producer: u32, seq: u64) -> Value {
        Value { producer, seq }
    }

    /// One producer that sent `n` values, all acknowledged in partition 0 at offsets
    /// equal to their sequence numbers, and that log.
    fn clean(n: u64) -> (Events, Drained) {
        let events = Events {
            sent: vec![n],
            acked: (0..n)
                .map(|seq| Ack {
                    value: v(0, seq),
                    partition: 0,
                    offset: seq as i64,
                })
                .collect(),
            ..Events::default()
        };
        let log = (0..n).map(|seq| (seq as i64, Ok(v(0, seq)))).collect();
        (events, Drained::from([(0, log)]))
    }

    fn session(events: &mut Events, id: u64, at: Tick) {
        events.sessions.push(Session {
            id,
            member: format!("m{id}"),
            partitions: vec![0],
            at,
        });
    }

    fn poll(events: &mut Events, session: u64, offset: i64, at: Tick) {
        events.polls.push(Poll {
            session,
            partition: 0,
            offset,
            value: Some(v(0, offset as u64)),
            at,
        });
    }

    #[test]
    fn a_clean_history_passes() {
        let (mut events, log) = clean(5);
        session(&mut events, 0, 1);
        for offset in 0..5 {
            poll(&mut events, 0, offset, 2 + offset as u64);
        }
        let findings = check(&events, &log);
        assert!(findings.is_clean(), "{findings:?}");
    }

    #[test]
    fn an_acknowledged_value_missing_from_the_log_is_lost() {
        let (events, mut log) = clean(5);
        log.get_mut(&0).unwrap().truncate(3);
        let findings = check(&events, &log);
        assert_eq!(findings.count("lost"), 2);
        assert!(findings.violations["lost"].examples[0].contains("p0-3"));
    }

    #[test]
    fn a_value_at_two_offsets_is_duplicated_and_a_hole_is_a_gap() {
        let (events, mut log) = clean(3);
        let records = log.get_mut(&0).unwrap();
        records.push((3, Ok(v(0, 2))));
        records.push((5, Ok(v(0, 0))));
        let findings = check(&events, &log);
        assert_eq!(findings.count("duplicated"), 2);
        assert_eq!(findings.count("gap"), 1);
        assert_eq!(findings.count("reordered"), 2);
    }

    #[test]
    fn an_acknowledgement_with_the_wrong_offset_is_moved() {
        let (mut events, log) = clean(3);
        events.acked[1].offset = 2;
        let findings = check(&events, &log);
        assert_eq!(findings.count("moved"), 1);
    }

    #[test]
    fn values_nobody_sent_are_unexpected() {
        let (events, mut log) = clean(2);
        let records = log.get_mut(&0).unwrap();
        records.push((2, Ok(v(0, 9))));
        records.push((3, Err("hello".to_owned())));
        let findings = check(&events, &log);
        assert_eq!(findings.count("unexpected"), 2);
    }

    #[test]
    fn a_read_of_a_value_the_log_no_longer_holds_is_divergent() {
        let (mut events, log) = clean(3);
        session(&mut events, 0, 1);
        poll(&mut events, 0, 0, 2);
        events.polls.push(Poll {
            session: 0,
            partition: 0,
            offset: 1,
            value: Some(v(7, 7)),
            at: 3,
        });
        let findings = check(&events, &log);
        assert_eq!(findings.count("divergent"), 1);
    }

    #[test]
    fn polls_that_skip_or_go_back_within_an_assignment_are_caught() {
        let (mut events, log) = clean(5);
        session(&mut events, 0, 1);
        poll(&mut events, 0, 0, 2);
        poll(&mut events, 0, 2, 3);
        poll(&mut events, 0, 1, 4);
        let findings = check(&events, &log);
        assert_eq!(findings.count("poll-skipped"), 1);
        assert_eq!(findings.count("poll-backwards"), 1);
    }

    #[test]
    fn a_poll_that_goes_back_names_what_librdkafka_said_when_it_moved_the_position() {
        let (mut events, log) = clean(5);
        session(&mut events, 0, 1);
        poll(&mut events, 0, 3, 2);
        let said = |at, message: &str| Reset {
            member: "m0".to_owned(),
            message: message.to_owned(),
            at,
        };
        events
            .resets
            .push(said(1, "t [0]: offset reset before the poll"));
        events
            .resets
            .push(said(3, "t [1]: offset reset of another partition"));
        events
            .resets
            .push(said(4, "t [0]: offset reset (at offset 4) to BEGINNING"));
        poll(&mut events, 0, 0, 5);
        let findings = check(&events, &log);
        let examples = &findings.violations["poll-backwards"].examples;
        assert_eq!(
            examples,
            &[
                "m0 polled 0/3 then 0/0 in one assignment (librdkafka: t [0]: offset reset (at offset 4) to BEGINNING)"
            ]
        );
    }

    #[test]
    fn a_new_owner_must_start_at_the_committed_offset() {
        let (mut events, log) = clean(5);
        events.commits.push(Commit {
            partition: 0,
            offset: 3,
            attempted: 1,
            outcome: CommitOutcome::Acknowledged(2),
            error: None,
        });
        session(&mut events, 0, 3);
        poll(&mut events, 0, 3, 4);
        session(&mut events, 1, 5);
        poll(&mut events, 1, 1, 6);
        let findings = check(&events, &log);
        assert_eq!(findings.count("bad-resume"), 1);
        assert!(findings.violations["bad-resume"].examples[0].contains("m1"));
    }

    #[test]
    fn a_member_given_back_its_partition_may_go_on_from_where_it_was() {
        let (mut events, log) = clean(6);
        events.commits.push(Commit {
            partition: 0,
            offset: 1,
            attempted: 1,
            outcome: CommitOutcome::Acknowledged(2),
            error: None,
        });
        session(&mut events, 0, 3); // m0
        poll(&mut events, 0, 1, 4);
        poll(&mut events, 0, 2, 5);
        // m0 again (its commit of 3 was refused): it goes on at 3.
        events.sessions.push(Session {
            id: 1,
            member: "m0".to_owned(),
            partitions: vec![0],
            at: 6,
        });
        poll(&mut events, 1, 3, 7);
        assert!(check(&events, &log).is_clean());
        // Another member starting there would have skipped what was not committed.
        events.sessions[1].member = "m1".to_owned();
        assert_eq!(check(&events, &log).count("bad-resume"), 1);
    }

    #[test]
    fn an_assignment_that_polled_nothing_keeps_the_members_position() {
        let (mut events, log) = clean(6);
        session(&mut events, 0, 1); // m0
        poll(&mut events, 0, 0, 2);
        poll(&mut events, 0, 1, 3);
        // m0 again twice, the first time rebalanced before it polled.
        for (id, at) in [(1, 4), (2, 5)] {
            events.sessions.push(Session {
                id,
                member: "m0".to_owned(),
                partitions: vec![0],
                at,
            });
        }
        poll(&mut events, 2, 2, 6);
        assert!(
            check(&events, &log).is_clean(),
            "{:?}",
            check(&events, &log)
        );
        // Not when the partition was away from it in between.
        events.sessions[1].partitions = vec![1];
        assert_eq!(check(&events, &log).count("bad-resume"), 1);
    }

    #[test]
    fn a_commit_in_flight_at_the_assignment_may_or_may_not_count() {
        use CommitOutcome::{Acknowledged, Refused, Unknown};
        let commit = |offset, attempted, outcome| Commit {
            partition: 0,
            offset,
            attempted,
            outcome,
            error: None,
        };
        let commits = [
            commit(2, 1, Acknowledged(2)),
            commit(4, 3, Acknowledged(6)),
            commit(5, 4, Unknown(7)),
            commit(6, 4, Refused(7)),
        ];
        // Assigned at 5: 2 was settled, 4 was in flight, 5 may have landed; 6 was refused.
        assert_eq!(resume_offsets(&commits, &[], 0, 5, 8), vec![2, 4, 5]);
        // A broker died while the refused one was in flight: an earlier attempt of it
        // may have been stored by the broker that died.
        assert_eq!(resume_offsets(&commits, &[5], 0, 5, 8), vec![2, 4, 5, 6]);
        assert_eq!(
            resume_offsets(&commits, &[8], 0, 5, 8),
            vec![2, 4, 5],
            "a death after it ended changes nothing"
        );
        // Assigned at 1, before any commit ended; the first poll at 2 came before the
        // others began.
        assert_eq!(resume_offsets(&commits, &[], 0, 1, 2), vec![0, 2]);
        assert_eq!(resume_offsets(&commits, &[], 1, 5, 7), vec![0]);
        // A failed commit that ended before the settled one began is old news.
        let old = [commit(9, 1, Unknown(2)), commit(3, 3, Acknowledged(4))];
        assert_eq!(resume_offsets(&old, &[], 0, 5, 6), vec![3]);
    }
}
