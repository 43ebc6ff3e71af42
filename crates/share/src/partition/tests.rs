use std::time::{Duration, Instant};

use super::*;
use crate::settings::{ShareBrokerSettings, ShareSettings};

fn settings() -> ShareSettings {
    let mut settings = ShareSettings::of_broker(&ShareBrokerSettings::default());
    settings.delivery_count_limit = 3;
    settings.partition_max_record_locks = 100;
    settings
}

fn member(name: &str) -> MemberId {
    Arc::from(name)
}

fn ack(first: i64, last: i64, ack: AckType) -> AckBatch {
    AckBatch {
        first,
        last,
        types: vec![ack],
    }
}

fn range(first: i64, last: i64, delivery_count: u16) -> AcquiredRange {
    AcquiredRange {
        first,
        last,
        delivery_count,
    }
}

#[test]
fn records_go_to_one_member_at_a_time_and_accepted_ones_move_the_start() {
    let (s, now) = (settings(), Instant::now());
    let mut partition = SharePartition::new(0);
    assert_eq!(partition.next_to_read(now, 10, &s), Some(0));
    let a = partition.acquire(&member("a"), now, (0, 9), 4, &s);
    assert_eq!(a, vec![range(0, 3, 1)]);
    let b = partition.acquire(&member("b"), now, (0, 9), 100, &s);
    assert_eq!(b, vec![range(4, 9, 1)], "b gets only what a does not hold");
    assert_eq!(partition.next_to_read(now, 10, &s), None);

    let outcome = partition
        .acknowledge("a", &[ack(0, 3, AckType::Accept)], now, &s)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(outcome.accepted, 4);
    assert_eq!(partition.start(), 4);
    assert!(
        partition
            .acknowledge("a", &[ack(4, 4, AckType::Accept)], now, &s)
            .is_err(),
        "a cannot acknowledge b's record"
    );
}

#[test]
fn a_refused_acknowledgement_changes_nothing() {
    let (s, now) = (settings(), Instant::now());
    let mut partition = SharePartition::new(0);
    partition.acquire(&member("a"), now, (0, 4), 100, &s);
    let refused = partition.acknowledge(
        "a",
        &[ack(0, 1, AckType::Accept), ack(3, 7, AckType::Accept)],
        now,
        &s,
    );
    assert!(matches!(refused, Err(ShareError::InvalidRecordState(_))));
    assert_eq!(
        partition.start(),
        0,
        "the first batch was not applied either"
    );
    let overlapping = partition.acknowledge(
        "a",
        &[ack(0, 2, AckType::Accept), ack(2, 3, AckType::Accept)],
        now,
        &s,
    );
    assert!(matches!(overlapping, Err(ShareError::InvalidRequest(_))));
    assert_eq!(partition.counts().acquired, 5);
}

#[test]
fn released_records_come_back_with_a_higher_count_until_the_limit_makes_them_dead_letters() {
    let (s, now) = (settings(), Instant::now());
    let mut partition = SharePartition::new(0);
    for delivery in 1..=3 {
        let got = partition.acquire(&member("a"), now, (0, 0), 10, &s);
        assert_eq!(got, vec![range(0, 0, delivery)]);
        let outcome = partition
            .acknowledge("a", &[ack(0, 0, AckType::Release)], now, &s)
            .unwrap_or_else(|e| unreachable!("{e}"));
        if delivery < 3 {
            assert!(outcome.dead_letters.is_empty());
            assert!(outcome.made_available);
        } else {
            assert_eq!(
                outcome.dead_letters,
                vec![DeadLetter {
                    offset: 0,
                    delivery_count: 3,
                    reason: DeadLetterReason::DeliveryCountLimit
                }]
            );
        }
    }
    assert_eq!(partition.start(), 1, "the archived record is done with");
}

#[test]
fn a_rejected_record_is_a_dead_letter_and_a_gap_is_not() {
    let (s, now) = (settings(), Instant::now());
    let mut partition = SharePartition::new(5);
    partition.acquire(&member("a"), now, (5, 7), 10, &s);
    let outcome = partition
        .acknowledge(
            "a",
            &[AckBatch {
                first: 5,
                last: 7,
                types: vec![AckType::Gap, AckType::Reject, AckType::Accept],
            }],
            now,
            &s,
        )
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(outcome.dead_letters.len(), 1);
    assert_eq!(outcome.dead_letters.first().map(|d| d.offset), Some(6));
    assert_eq!(partition.start(), 8);
}

#[test]
fn an_expired_lock_frees_the_record_for_another_member() {
    let (s, now) = (settings(), Instant::now());
    let mut partition = SharePartition::new(0);
    partition.acquire(&member("a"), now, (0, 1), 10, &s);
    assert_eq!(partition.expire_locks(now, &s).expired, 0);
    let later = now + s.record_lock_duration;
    assert_eq!(partition.next_deadline(), Some(later));
    let outcome = partition.expire_locks(later, &s);
    assert_eq!(outcome.expired, 2);
    assert!(outcome.made_available);
    let got = partition.acquire(&member("b"), later, (0, 1), 10, &s);
    assert_eq!(got, vec![range(0, 1, 2)]);
    assert!(
        partition
            .acknowledge("a", &[ack(0, 0, AckType::Accept)], later, &s)
            .is_err()
    );
}

#[test]
fn with_a_backoff_a_released_record_waits_its_step() {
    let (mut s, now) = (settings(), Instant::now());
    s.release_backoff = vec![Duration::from_secs(1), Duration::from_secs(5)];
    let mut partition = SharePartition::new(0);
    partition.acquire(&member("a"), now, (0, 0), 10, &s);
    partition
        .acknowledge("a", &[ack(0, 0, AckType::Release)], now, &s)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(
        partition.next_to_read(now, 1, &s),
        None,
        "not before its delay"
    );
    assert!(
        partition
            .acquire(&member("a"), now, (0, 0), 10, &s)
            .is_empty()
    );
    let after = now + Duration::from_secs(1);
    assert_eq!(partition.next_to_read(after, 1, &s), Some(0));
    assert_eq!(
        partition.acquire(&member("b"), after, (0, 0), 10, &s),
        vec![range(0, 0, 2)]
    );
    partition.release_member("b", after, &s);
    assert_eq!(
        partition.next_deadline(),
        Some(after + Duration::from_secs(5))
    );
}

#[test]
fn the_window_holds_at_most_max_record_locks() {
    let (mut s, now) = (settings(), Instant::now());
    s.partition_max_record_locks = 3;
    let mut partition = SharePartition::new(0);
    assert_eq!(
        partition.acquire(&member("a"), now, (0, 9), 10, &s),
        vec![range(0, 2, 1)]
    );
    assert_eq!(partition.next_to_read(now, 10, &s), None);
    partition
        .acknowledge("a", &[ack(0, 0, AckType::Accept)], now, &s)
        .unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(partition.next_to_read(now, 10, &s), Some(3));
}

#[test]
fn a_restored_partition_keeps_acknowledgements_and_counts_and_frees_locks() {
    let (s, now) = (settings(), Instant::now());
    let mut partition = SharePartition::new(0);
    partition.acquire(&member("a"), now, (0, 5), 10, &s);
    partition
        .acknowledge(
            "a",
            &[
                ack(0, 0, AckType::Accept),
                ack(2, 2, AckType::Accept),
                ack(3, 3, AckType::Reject),
            ],
            now,
            &s,
        )
        .unwrap_or_else(|e| unreachable!("{e}"));
    let text = partition.stored().to_text();
    let restored = SharePartition::restore(
        &StoredPartition::from_text(&text).unwrap_or_else(|e| unreachable!("{e}")),
    );
    assert_eq!(restored.start(), 1);
    assert_eq!(restored.end(), 6);
    let mut restored = restored;
    let again = restored.acquire(&member("b"), now, (0, 9), 100, &s);
    assert_eq!(
        again,
        vec![range(1, 1, 2), range(4, 5, 2), range(6, 9, 1)],
        "2 and 3 are done; 1, 4 and 5 come back with their count"
    );
}

#[test]
fn the_start_follows_the_log_start() {
    let (s, now) = (settings(), Instant::now());
    let mut partition = SharePartition::new(0);
    partition.acquire(&member("a"), now, (0, 4), 10, &s);
    assert!(partition.follow_log_start(3));
    assert_eq!(partition.start(), 3);
    assert_eq!(partition.counts().acquired, 2);
    assert!(!partition.follow_log_start(2));
}
