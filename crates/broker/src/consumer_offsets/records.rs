//! A committed offset as Kafka writes it to `__consumer_offsets`: key version 1
//! (group, topic, partition) and value version 3 (offset, leader epoch, metadata,
//! commit timestamp), big-endian, strings with an i16 length. Each record is a batch of
//! its own at its offset in the log, stamped with its commit time. Written by hand:
//! the `kafka-protocol` crate has no types for these internal records.

use spool_metadata::LoggedOffset;
use spool_model::Timestamp;
use spool_protocol::plain::{PlainRecord, plain_batch};

const KEY_VERSION: i16 = 1;
const VALUE_VERSION: i16 = 3;

/// The record batch of one logged offset.
pub(super) fn batch(logged: &LoggedOffset) -> Vec<u8> {
    let committed = &logged.committed;
    let mut key = Vec::with_capacity(10 + committed.group.len() + committed.topic.len());
    key.extend_from_slice(&KEY_VERSION.to_be_bytes());
    put_string(&mut key, &committed.group);
    put_string(&mut key, &committed.topic);
    key.extend_from_slice(&committed.partition.to_be_bytes());
    let metadata = committed.metadata.as_deref().unwrap_or("");
    let mut value = Vec::with_capacity(24 + metadata.len());
    value.extend_from_slice(&VALUE_VERSION.to_be_bytes());
    value.extend_from_slice(&committed.offset.to_be_bytes());
    value.extend_from_slice(&committed.leader_epoch.to_be_bytes());
    put_string(&mut value, metadata);
    value.extend_from_slice(&committed.commit_ms.to_be_bytes());
    let record = PlainRecord {
        key: Some(key),
        value: Some(value),
        headers: Vec::new(),
    };
    let mut batch = plain_batch(&[record], Timestamp(committed.commit_ms));
    // The base offset is outside the batch's CRC.
    if let Some(base) = batch.get_mut(..8) {
        base.copy_from_slice(&logged.log_offset.to_be_bytes());
    }
    batch
}

/// A string as Kafka's internal schemas write one: an i16 length (group ids and topic
/// names are far shorter), then UTF-8.
fn put_string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    let len = i16::try_from(bytes.len()).unwrap_or(i16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes.get(..len.unsigned_abs().into()).unwrap_or(bytes));
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool_metadata::CommittedOffset;
    use spool_protocol::batch::{BatchRules, validate_batch};
    use spool_protocol::keyed::BatchRecords;

    #[test]
    fn a_logged_offset_is_a_valid_batch_at_its_offset_in_kafkas_format() {
        let logged = LoggedOffset {
            log_offset: 42,
            committed: CommittedOffset {
                group: "g".to_owned(),
                topic: "orders".to_owned(),
                topic_id: uuid::Uuid::nil(),
                partition: 3,
                offset: 1234,
                leader_epoch: 5,
                metadata: None,
                commit_ms: 1_700_000_000_000,
            },
        };
        let batch = batch(&logged);
        let header = validate_batch(&batch, BatchRules::Stored).unwrap();
        assert_eq!(header.base_offset.0, 42);
        assert_eq!(header.max_timestamp.0, 1_700_000_000_000);
        let read = BatchRecords::read(&batch, 1 << 20).unwrap();
        let records = read.records().unwrap();
        let record = records.first().unwrap();
        let key = [&[0, 1, 0, 1][..], b"g", &[0, 6], b"orders", &[0, 0, 0, 3]].concat();
        assert_eq!(record.key, Some(&key[..]));
        let mut value = vec![0, 3];
        value.extend_from_slice(&1234_i64.to_be_bytes());
        value.extend_from_slice(&5_i32.to_be_bytes());
        value.extend_from_slice(&[0, 0]);
        value.extend_from_slice(&1_700_000_000_000_i64.to_be_bytes());
        assert_eq!(record.value, Some(&value[..]));
    }
}
