use super::*;
use crate::batch::{BatchRules, validate_batch};
use crate::control::{Marker, marker_batch};

/// A message set of `values` (keys `k0`, `k1`, …) in format `magic`, at `first`
/// onwards, timestamps 1000 + i.
fn set(magic: i8, first: i64, values: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, value) in values.iter().enumerate() {
        let key = format!("k{i}");
        let at = first + i64::try_from(i).unwrap_or(0);
        write_message(
            &mut out,
            at,
            magic,
            false,
            1000 + at,
            Some(key.as_bytes()),
            Some(value.as_bytes()),
        );
    }
    out
}

/// `inner` compressed with gzip in a wrapper message of format `magic`.
fn gzip_wrapper(magic: i8, inner: &[u8], attributes: i8, timestamp: i64) -> Vec<u8> {
    let compressed = compress(CompressionCodec::Gzip, None, inner).unwrap_or_default();
    let mut covered = vec![magic.to_be_bytes()[0], (attributes | 1).to_be_bytes()[0]];
    if magic == 1 {
        covered.extend_from_slice(&timestamp.to_be_bytes());
    }
    covered.extend_from_slice(&(-1_i32).to_be_bytes());
    covered.extend_from_slice(&i32::try_from(compressed.len()).unwrap_or(0).to_be_bytes());
    covered.extend_from_slice(&compressed);
    let mut out = 7_i64.to_be_bytes().to_vec();
    out.extend_from_slice(&i32::try_from(covered.len() + 4).unwrap_or(0).to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&covered).to_be_bytes());
    out.extend_from_slice(&covered);
    out
}

/// (timestamp, key, value) of each record of a v2 batch.
fn records_of(batch: &[u8]) -> Vec<(i64, String, String)> {
    let header = validate_batch(batch, BatchRules::Stored).unwrap_or_else(|e| unreachable!("{e}"));
    let read = BatchRecords::read(batch, 1 << 20).unwrap_or_else(|e| unreachable!("{e}"));
    let records = read.records().unwrap_or_else(|e| unreachable!("{e}"));
    records
        .iter()
        .map(|r| {
            let text =
                |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or_default()).into_owned();
            (
                header.base_timestamp.0 + r.timestamp_delta,
                text(r.key),
                text(r.value),
            )
        })
        .collect()
}

#[test]
fn a_v1_set_becomes_one_batch_with_its_timestamps() {
    let batch = to_batch(&set(1, 0, &["a", "b", "c"])).unwrap_or_default();
    assert_eq!(
        records_of(&batch),
        [
            (1000, "k0".into(), "a".into()),
            (1001, "k1".into(), "b".into()),
            (1002, "k2".into(), "c".into())
        ]
    );
    let header = validate_batch(&batch, BatchRules::Stored).unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(header.max_timestamp.0, 1002);
    assert_eq!(header.producer_id.0, -1);
}

#[test]
fn a_v0_set_has_no_timestamps() {
    let batch = to_batch(&set(0, 5, &["x", "y"])).unwrap_or_default();
    let read = records_of(&batch);
    assert_eq!(read.len(), 2);
    assert!(
        read.iter().all(|(timestamp, _, _)| *timestamp == -1),
        "{read:?}"
    );
}

#[test]
fn a_compressed_set_is_inflated_and_compressed_again_alike() {
    // A v1 wrapper's inner offsets are relative (0, 1, …).
    let wrapped = gzip_wrapper(1, &set(1, 0, &["a", "b"]), 0, 0);
    let batch = to_batch(&wrapped).unwrap_or_default();
    let header = validate_batch(&batch, BatchRules::Stored).unwrap_or_else(|e| unreachable!("{e}"));
    assert_eq!(header.compression(), CompressionCodec::Gzip);
    assert_eq!(records_of(&batch).len(), 2);
    // A wrapper stamped with the log's time gives it to every message.
    let stamped = gzip_wrapper(1, &set(1, 0, &["a", "b"]), 0b1000, 5555);
    let read = records_of(&to_batch(&stamped).unwrap_or_default());
    assert!(
        read.iter().all(|(timestamp, _, _)| *timestamp == 5555),
        "{read:?}"
    );
    // v0 too.
    let v0 = to_batch(&gzip_wrapper(0, &set(0, 0, &["z"]), 0, 0)).unwrap_or_default();
    assert_eq!(records_of(&v0), [(-1, "k0".into(), "z".into())]);
}

#[test]
fn damaged_sets_are_refused_not_misread() {
    let good = set(1, 0, &["a", "b"]);
    let mut flipped = good.clone();
    if let Some(byte) = flipped.last_mut() {
        *byte ^= 1;
    }
    assert!(matches!(to_batch(&flipped), Err(MessageSetError::Crc(_))));
    for cut in [1, 11, 13, good.len() - 1] {
        assert!(
            to_batch(good.get(..cut).unwrap_or_default()).is_err(),
            "cut at {cut}"
        );
    }
    assert_eq!(to_batch(&[]), Err(MessageSetError::Empty));
    // A size far beyond the bytes there are.
    let mut huge = 0_i64.to_be_bytes().to_vec();
    huge.extend_from_slice(&i32::MAX.to_be_bytes());
    assert!(matches!(to_batch(&huge), Err(MessageSetError::CutShort(0))));
    // Format v2 is no message set.
    let v2 = to_batch(&good).unwrap_or_default();
    assert!(to_batch(&v2).is_err());
}

#[test]
fn batches_read_back_as_messages_at_their_offsets() {
    let mut batch = to_batch(&set(1, 0, &["a", "b", "c"])).unwrap_or_default();
    crate::batch::patch_base_offset(&mut batch, spool_model::Offset(40));
    let mut marker = marker_batch(9, 0, Marker::Commit, 0, spool_model::Timestamp(1));
    crate::batch::patch_base_offset(&mut marker, spool_model::Offset(43));
    let mut read = batch.clone();
    read.extend_from_slice(&marker);
    // The start of a batch cut off by the read's size.
    read.extend_from_slice(batch.get(..30).unwrap_or_default());
    for magic in [0, 1] {
        let down = from_batches(&read, magic).unwrap_or_default();
        let mut messages = Vec::new();
        assert_eq!(
            read_set(&down, &mut messages, true),
            Ok(CompressionCodec::None)
        );
        let values: Vec<_> = messages
            .iter()
            .map(|m| m.value.clone().unwrap_or_default())
            .collect();
        assert_eq!(values, [b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
        let offsets: Vec<i64> = (0..3)
            .map(|i| {
                i64::from_be_bytes(
                    down.get(offset_at(&down, i)..offset_at(&down, i) + 8)
                        .and_then(|b| b.try_into().ok())
                        .unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(offsets, [40, 41, 42]);
        let timestamps: Vec<i64> = messages.iter().map(|m| m.timestamp).collect();
        assert_eq!(
            timestamps,
            if magic == 1 {
                vec![1000, 1001, 1002]
            } else {
                vec![-1; 3]
            }
        );
    }
    assert!(from_batches(&read, 2).is_err());
}

/// Found by the fuzzer: a batch whose base offset plus a record's delta passes
/// `i64::MAX` is converted without overflowing (the offset saturates).
#[test]
fn a_base_offset_at_the_top_does_not_overflow() {
    let mut batch = to_batch(&set(1, 0, &["a", "b"])).unwrap_or_default();
    crate::batch::patch_base_offset(&mut batch, spool_model::Offset(i64::MAX));
    for magic in [0, 1] {
        assert!(from_batches(&batch, magic).is_ok());
    }
}

/// Where message `index` of a set starts.
fn offset_at(set: &[u8], index: usize) -> usize {
    let mut at = 0;
    for _ in 0..index {
        let size = set
            .get(at + 8..at + 12)
            .and_then(|b| b.try_into().ok())
            .map_or(0, i32::from_be_bytes);
        at += 12 + usize::try_from(size).unwrap_or(0);
    }
    at
}
