#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use spool_model::batch_attributes;
use spool_protocol::batch::{BatchRules, validate_batch};
use spool_protocol::internal::read_hold;
use spool_testkit::{BatchBuilder, TestRecord};

use super::*;

const NOW: Timestamp = Timestamp(1_000_000);
const POLICY: DelayPolicy = DelayPolicy { max_ms: 100_000 };

fn record(value: &str, header: Option<(&str, &str)>) -> TestRecord {
    let mut record = TestRecord::value(value.as_bytes().to_vec());
    record.key = Some(format!("k-{value}").into_bytes());
    record.headers = vec![("trace".to_owned(), Some(b"t".to_vec()))];
    if let Some((name, value)) = header {
        record
            .headers
            .push((name.to_owned(), Some(value.as_bytes().to_vec())));
    }
    record
}

fn split_of(builder: BatchBuilder) -> Result<Option<Split>, DelayError> {
    let batch = builder.build();
    let header = validate_batch(&batch, BatchRules::Produce).unwrap();
    split(&batch, &header, POLICY, NOW)
}

#[test]
fn records_without_a_future_due_time_pass_as_they_are() {
    let builder = BatchBuilder::new()
        .timestamp(NOW.0)
        .record(record("a", None))
        .record(record("b", Some((DELIVER_AT, "5"))))
        .record(record("c", Some((DELAY_MS, "0"))));
    assert!(split_of(builder).unwrap().is_none());
}

#[test]
fn held_records_leave_gaps_and_become_holds() {
    let builder = BatchBuilder::new()
        .timestamp(NOW.0 - 10)
        .producer(7, 0, 40)
        .record(record("a", None))
        .record(record("b", Some((DELAY_MS, "60000"))))
        .record(record("c", Some((DELIVER_AT, "1050000"))));
    let split = split_of(builder).unwrap().unwrap();
    let batch = split.batch.unwrap();
    let header = validate_batch(&batch, BatchRules::Stored).unwrap();
    assert_eq!((header.record_count, header.last_offset_delta), (1, 2));
    assert_eq!((header.producer_id.0, header.base_sequence.0), (7, 40));
    let holds: Vec<Hold> = split.holds.iter().map(|h| read_hold(h).unwrap()).collect();
    assert_eq!(holds.len(), 2);
    assert_eq!(holds[0].due, Timestamp(NOW.0 + 60_000));
    assert_eq!(holds[0].value.as_deref(), Some(&b"b"[..]));
    assert_eq!(holds[0].key.as_deref(), Some(&b"k-b"[..]));
    assert_eq!(
        holds[0].headers[0],
        (b"trace".to_vec(), Some(b"t".to_vec()))
    );
    assert_eq!(holds[1].due, Timestamp(1_050_000));
}

#[test]
fn a_wholly_held_batch_is_dropped_unless_its_sequences_must_stay() {
    let all_held = |builder: BatchBuilder| {
        builder
            .timestamp(NOW.0)
            .record(record("a", Some((DELAY_MS, "10"))))
            .record(record("b", Some((DELAY_MS, "20"))))
    };
    let plain = split_of(all_held(BatchBuilder::new())).unwrap().unwrap();
    assert!(plain.batch.is_none());
    assert_eq!(plain.holds.len(), 2);
    let idempotent = split_of(all_held(BatchBuilder::new().producer(3, 1, 0)))
        .unwrap()
        .unwrap();
    let batch = idempotent.batch.unwrap();
    let header = validate_batch(&batch, BatchRules::Stored).unwrap();
    assert_eq!((header.record_count, header.last_offset_delta), (0, 1));
    assert_eq!(header.producer_id.0, 3);
}

#[test]
fn bad_due_times_are_refused_with_the_reason() {
    for (header, value, why) in [
        (DELAY_MS, "soon", "milliseconds"),
        (DELIVER_AT, "-5", "epoch milliseconds"),
        (DELAY_MS, "100001", "delivery.delay.max.ms"),
    ] {
        let builder = BatchBuilder::new()
            .timestamp(NOW.0)
            .record(record("a", None))
            .record(record("b", Some((header, value))));
        let error = split_of(builder).unwrap_err();
        assert_eq!(error.index(), Some(1));
        assert!(error.to_string().contains(why), "{error}");
        assert!(error.to_string().contains(header), "{error}");
    }
}

#[test]
fn a_transactional_batch_cannot_hold_records() {
    let builder = BatchBuilder::new()
        .timestamp(NOW.0)
        .producer(9, 0, 0)
        .attributes(batch_attributes::TRANSACTIONAL)
        .record(record("a", Some((DELAY_MS, "10"))));
    let error = split_of(builder).unwrap_err();
    assert!(
        matches!(error, DelayError::InTransaction { index: 0, .. }),
        "{error}"
    );
    // Even a due time already past: the header itself is what is refused.
    let past = BatchBuilder::new()
        .timestamp(NOW.0)
        .producer(9, 0, 0)
        .attributes(batch_attributes::TRANSACTIONAL)
        .record(record("a", None))
        .record(record("b", Some((DELAY_MS, "0"))));
    assert!(matches!(
        split_of(past).unwrap_err(),
        DelayError::InTransaction { index: 1, .. }
    ));
}
