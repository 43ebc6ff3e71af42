use super::*;
use proptest::prelude::*;
use spool_model::batch_field;
use spool_testkit::BatchBuilder;

fn good_batch() -> Vec<u8> {
    BatchBuilder::new()
        .timestamp(1_700_000_000_000)
        .values(5, 100)
        .build()
}

#[test]
fn a_built_batch_is_valid() {
    let batch = good_batch();
    let header = validate_batch(&batch, BatchRules::Produce).unwrap();
    assert_eq!(header.record_count, 5);
    assert_eq!(header.total_len(), batch.len());
}

#[test]
fn each_check_has_its_own_error() {
    let batch = good_batch();
    assert_eq!(
        validate_batch(&batch[..30], BatchRules::Produce),
        Err(BatchError::TruncatedHeader { present: 30 })
    );
    assert!(matches!(
        validate_batch(&batch[..batch.len() - 1], BatchRules::Produce),
        Err(BatchError::TruncatedBatch { .. })
    ));
    let mut longer = batch.clone();
    longer.push(0);
    assert!(matches!(
        validate_batch(&longer, BatchRules::Produce),
        Err(BatchError::TrailingBytes { .. })
    ));

    let mut short_length = batch.clone();
    short_length[8..12].copy_from_slice(&10i32.to_be_bytes());
    assert_eq!(
        validate_batch(&short_length, BatchRules::Produce),
        Err(BatchError::LengthTooSmall(10))
    );
    let mut negative = batch.clone();
    negative[8..12].copy_from_slice(&(-5i32).to_be_bytes());
    assert_eq!(
        validate_batch(&negative, BatchRules::Produce),
        Err(BatchError::LengthTooSmall(-5))
    );

    let mut magic = batch.clone();
    magic[batch_field::MAGIC] = 1;
    assert_eq!(
        validate_batch(&magic, BatchRules::Produce),
        Err(BatchError::UnsupportedMagic(1))
    );

    let mut flipped = batch.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0x01;
    assert!(matches!(
        validate_batch(&flipped, BatchRules::Produce),
        Err(BatchError::CrcMismatch { .. })
    ));
}

/// Rewrites one header field and fixes the CRC so that only the field check can fail.
fn with_field(batch: &[u8], at: usize, bytes: &[u8]) -> Vec<u8> {
    let mut batch = batch.to_vec();
    batch[at..at + bytes.len()].copy_from_slice(bytes);
    let crc = crc32c::crc32c(&batch[batch_field::ATTRIBUTES..]);
    batch[batch_field::CRC..batch_field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
    batch
}

#[test]
fn header_fields_are_checked() {
    let batch = good_batch();
    let wrong_count = with_field(&batch, batch_field::RECORD_COUNT, &4i32.to_be_bytes());
    assert!(matches!(
        validate_batch(&wrong_count, BatchRules::Produce),
        Err(BatchError::RecordCountMismatch {
            record_count: 4,
            last_offset_delta: 4
        })
    ));
    // A compacted batch may hold fewer records than offset slots.
    assert!(validate_batch(&wrong_count, BatchRules::Stored).is_ok());

    let codec = with_field(&batch, batch_field::ATTRIBUTES, &6i16.to_be_bytes());
    assert_eq!(
        validate_batch(&codec, BatchRules::Produce),
        Err(BatchError::UnknownCompression(6))
    );

    let timestamp = with_field(&batch, batch_field::MAX_TIMESTAMP, &(-7i64).to_be_bytes());
    assert!(matches!(
        validate_batch(&timestamp, BatchRules::Produce),
        Err(BatchError::InvalidTimestamp { max: -7, .. })
    ));

    let half_idempotent = with_field(&batch, batch_field::PRODUCER_ID, &42i64.to_be_bytes());
    assert!(matches!(
        validate_batch(&half_idempotent, BatchRules::Produce),
        Err(BatchError::InvalidProducerFields {
            producer_id: 42,
            ..
        })
    ));
    // KafkaJS's plain producer: id -1 with epoch 0 and sequence 0, which Kafka accepts.
    let kafkajs_plain = BatchBuilder::new().values(2, 3).producer(-1, 0, 0).build();
    assert!(validate_batch(&kafkajs_plain, BatchRules::Produce).is_ok());
    let negative_id = BatchBuilder::new().values(2, 3).producer(-5, 0, 0).build();
    assert!(matches!(
        validate_batch(&negative_id, BatchRules::Produce),
        Err(BatchError::InvalidProducerFields {
            producer_id: -5,
            ..
        })
    ));
    let idempotent = BatchBuilder::new().values(2, 3).producer(42, 0, 7).build();
    assert!(validate_batch(&idempotent, BatchRules::Produce).is_ok());
    let transactional_plain = BatchBuilder::new().values(1, 3).attributes(1 << 4).build();
    assert!(matches!(
        validate_batch(&transactional_plain, BatchRules::Produce),
        Err(BatchError::InvalidProducerFields { .. })
    ));
    let control = BatchBuilder::new()
        .values(1, 3)
        .producer(42, 0, -1)
        .attributes(1 << 5 | 1 << 4)
        .build();
    assert_eq!(
        validate_batch(&control, BatchRules::Produce),
        Err(BatchError::ControlBatchFromProducer)
    );
    assert!(validate_batch(&control, BatchRules::Stored).is_ok());
}

#[test]
fn frames_walk_batches_and_stop_at_the_first_bad_one() {
    let mut buffer = good_batch();
    buffer.extend_from_slice(&good_batch());
    buffer.extend_from_slice(&[0u8; 20]);
    let frames: Vec<_> = BatchFrames::new(&buffer).collect();
    assert_eq!(frames.len(), 3);
    assert!(frames[0].is_ok() && frames[1].is_ok());
    assert_eq!(frames[2], Err(BatchError::TruncatedHeader { present: 20 }));
}

#[test]
fn patching_the_base_offset_keeps_the_crc_valid() {
    let mut batch = good_batch();
    patch_base_offset(&mut batch, Offset(123_456));
    let header = validate_batch(&batch, BatchRules::Produce).unwrap();
    assert_eq!(header.base_offset, Offset(123_456));
}

#[test]
fn log_append_time_sets_type_and_max_timestamp_and_fixes_the_crc() {
    let mut batch = good_batch();
    patch_log_append_time(&mut batch, Timestamp(9_999));
    let header = validate_batch(&batch, BatchRules::Produce).unwrap();
    assert_eq!(header.max_timestamp, Timestamp(9_999));
    assert_eq!(
        header.timestamp_type(),
        spool_model::TimestampType::LogAppendTime
    );
}

proptest! {
    #[test]
    fn validation_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = validate_batch(&bytes, BatchRules::Produce);
        let _ = validate_batch(&bytes, BatchRules::Stored);
        let _ = BatchFrames::new(&bytes).count();
        let _ = crate::records::record_stamps(&bytes);
    }

    #[test]
    fn any_single_bit_flip_is_caught(bit in 0usize..(8 * 561)) {
        let batch = good_batch();
        let bit = bit % (8 * batch.len());
        let mut flipped = batch.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let result = validate_batch(&flipped, BatchRules::Produce);
        // Only the base offset and the partition leader epoch lie outside the CRC.
        let outside_crc = bit / 8 < batch_field::MAGIC;
        prop_assert!(result.is_err() || outside_crc, "flip of bit {bit} went unnoticed");
    }
}
