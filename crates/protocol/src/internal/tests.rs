use bytes::Bytes;
use kafka_protocol::records::RecordBatchDecoder;

use super::*;
use crate::batch::{BatchRules, validate_batch};

fn hold() -> Hold {
    Hold {
        due: Timestamp(1_800_000_000_000),
        produced: Timestamp(1_700_000_000_000),
        key: Some(b"order-7".to_vec()),
        value: None,
        headers: vec![
            (b"trace".to_vec(), Some(b"a".to_vec())),
            (b"trace".to_vec(), None),
        ],
    }
}

#[test]
fn a_skip_marker_is_one_control_record_on_its_last_offset() {
    let batch = skip_batch(100, 25, Timestamp(5));
    let header = validate_batch(&batch, BatchRules::Stored).expect("valid");
    assert!(header.is_control() && !header.is_transactional());
    assert_eq!(
        (
            header.base_offset.0,
            header.last_offset().0,
            header.record_count
        ),
        (100, 124, 1)
    );
    assert_eq!(header.producer_id.0, -1);
    assert_eq!(kind_of(&batch), Some(Kind::Skip));
    assert!(validate_batch(&batch, BatchRules::Produce).is_err());
    // What a Kafka client's decoder makes of it: one control record at offset 124.
    let decoded = RecordBatchDecoder::decode(&mut Bytes::from(batch)).expect("decodes");
    let [record] = decoded.records.as_slice() else {
        panic!("one record")
    };
    assert!(record.control);
    assert_eq!(record.offset, 124);
}

#[test]
fn a_hold_keeps_its_record_and_reads_back() {
    let held = hold();
    let batch = hold_batch(&held, Timestamp(9));
    let header = validate_batch(&batch, BatchRules::Stored).expect("valid");
    assert!(header.is_control());
    assert_eq!((header.last_offset_delta, header.record_count), (0, 1));
    assert_eq!(kind_of(&batch), Some(Kind::Hold));
    assert_eq!(read_hold(&batch), Some(held));
    // The transaction code sees no marker in it.
    assert_eq!(crate::control::read_marker(&batch), None);
    let decoded = RecordBatchDecoder::decode(&mut Bytes::from(batch)).expect("decodes");
    assert!(decoded.records.iter().all(|record| record.control));
}

#[test]
fn other_and_broken_batches_are_not_internal() {
    let plain = spool_testkit::BatchBuilder::new().values(2, 5).build();
    assert_eq!(kind_of(&plain), None);
    assert_eq!(read_hold(&plain), None);
    let marker =
        crate::control::marker_batch(7, 0, crate::control::Marker::Commit, 0, Timestamp(0));
    assert_eq!(kind_of(&marker), None, "a producer's marker is not Spool's");
    let batch = hold_batch(&hold(), Timestamp(9));
    for cut in 0..batch.len() {
        assert_eq!(read_hold(&batch[..cut]), None, "cut at {cut}");
    }
    assert_eq!(read_hold(&skip_batch(0, 3, Timestamp(0))), None);
}

#[test]
fn a_delivery_batch_is_a_plain_batch_of_the_held_records() {
    let held = hold();
    let extra = vec![vec![("spool.delayed-offset", b"12".to_vec())]; 2];
    let batch = delivery_batch(&[held.clone(), held], &extra, Timestamp(77));
    let header = validate_batch(&batch, BatchRules::Produce).expect("valid as produced");
    assert_eq!((header.record_count, header.last_offset_delta), (2, 1));
    assert_eq!(kind_of(&batch), None);
    assert!(is_delivery(&header));
    let plain = spool_testkit::BatchBuilder::new().values(1, 3).build();
    assert!(!is_delivery(
        &validate_batch(&plain, BatchRules::Produce).unwrap()
    ));
    let decoded = RecordBatchDecoder::decode(&mut Bytes::from(batch)).expect("decodes");
    let record = &decoded.records[1];
    assert_eq!(record.offset, 1);
    assert_eq!(record.timestamp, 77);
    assert_eq!(record.key.as_deref(), Some(&b"order-7"[..]));
    assert!(record.value.is_none());
    // kafka-protocol keeps one value per header name: the last.
    let headers: Vec<String> = record.headers.keys().map(|k| k.to_string()).collect();
    assert_eq!(headers, vec!["trace", "spool.delayed-offset"]);
}
