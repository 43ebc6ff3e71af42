//! A lane producer's records get the lane's header (`spool.lane`) where they lack
//! it, so that an application joins a lane by its `client.id` alone. Per-record work
//! (inflate, add, compress again), paid only by lane producers' batches; a batch
//! whose CRC does not match is left as sent, for the append to refuse.

use bytes::Bytes;
use spool_protocol::batch::{BatchFrames, validate_crc};
use spool_protocol::headers::with_header_added;
use spool_views::lanes::LANE_HEADER;

/// The most a produced batch may inflate to when its records get the header.
const INFLATE_LIMIT: usize = 256 << 20;

/// `records` (a partition's produced batches) with `lane`'s header added to every
/// record without one, and how many batches changed; the bytes as sent when none
/// did, or when any batch cannot be read (the append refuses those).
pub(crate) fn stamped(records: Bytes, lane: &str) -> (Bytes, u64) {
    let mut out = Vec::with_capacity(records.len() + 64);
    let mut changed = 0;
    for frame in BatchFrames::new(&records) {
        let Ok((header, batch)) = frame else {
            return (records, 0);
        };
        if header.is_control() || validate_crc(batch, &header).is_err() {
            return (records, 0);
        }
        match with_header_added(
            batch,
            LANE_HEADER.as_bytes(),
            lane.as_bytes(),
            INFLATE_LIMIT,
        ) {
            Ok(Some(stamped)) => {
                changed += 1;
                out.extend_from_slice(&stamped);
            }
            Ok(None) => out.extend_from_slice(batch),
            Err(_) => return (records, 0),
        }
    }
    if changed == 0 {
        return (records, 0);
    }
    (Bytes::from(out), changed)
}

#[cfg(test)]
mod tests {
    use spool_protocol::keyed::BatchRecords;
    use spool_testkit::{BatchBuilder, TestRecord};

    use super::*;

    #[test]
    fn every_batch_gets_the_lane_and_a_corrupt_one_is_left_for_the_append() {
        let first = BatchBuilder::new()
            .record(TestRecord::value(b"a".to_vec()))
            .build();
        let second = BatchBuilder::new()
            .base_offset(1)
            .record(TestRecord::value(b"b".to_vec()))
            .build();
        let records = Bytes::from([first.clone(), second].concat());
        let (out, changed) = stamped(records, "ppe");
        assert_eq!(changed, 2);
        let frames: Vec<_> = BatchFrames::new(&out).map(Result::unwrap).collect();
        assert_eq!(frames.len(), 2);
        for (_, batch) in frames {
            let read = BatchRecords::read(batch, 1 << 20).unwrap();
            let records = read.records().unwrap();
            let headers = records[0].headers().unwrap();
            assert_eq!(headers, vec![(&b"spool.lane"[..], Some(&b"ppe"[..]))]);
        }
        let mut corrupt = first;
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        let corrupt = Bytes::from(corrupt);
        let (out, changed) = stamped(corrupt.clone(), "ppe");
        assert_eq!((out, changed), (corrupt, 0));
    }
}
