//! The producer-state snapshot stored in the checkpoint: every idempotent producer's
//! epoch, newest timestamp and remembered batches, as of a position in the log. On
//! open the state is loaded from it and only the batches after that position are
//! read, instead of the whole log.
//!
//! Layout, big-endian: `count u32`, then per producer
//! `producerId i64 | epoch i16 | lastTimestamp i64 | batches u8`, then per batch
//! `firstSequence i32 | lastSequence i32 | baseOffset i64 | lastOffset i64`; then,
//! when the partition has transactions (open, ending or aborted), their state as
//! `Transactions::encode_into` writes it. A state without that part (written before
//! transactions existed) reads as one without transactions.
#![deny(clippy::indexing_slicing)]

use std::collections::VecDeque;

use spool_model::{Offset, ProducerEpoch};

use super::{BatchRange, ProducerEntry, ProducerStates, REMEMBERED, Transactions};

/// The bytes of the smallest producer entry (one with no batches).
const ENTRY_LEN: usize = 8 + 2 + 8 + 1;
const BATCH_LEN: usize = 4 + 4 + 8 + 8;

impl ProducerStates {
    /// Appends the encoded state to `bytes`.
    pub(crate) fn encode_into(&self, bytes: &mut Vec<u8>) {
        let count = u32::try_from(self.by_id.len()).unwrap_or(u32::MAX);
        bytes.reserve(4 + self.by_id.len() * (ENTRY_LEN + REMEMBERED * BATCH_LEN));
        bytes.extend_from_slice(&count.to_be_bytes());
        for (id, entry) in self.by_id.iter().take(count as usize) {
            bytes.extend_from_slice(&id.to_be_bytes());
            bytes.extend_from_slice(&entry.epoch.0.to_be_bytes());
            bytes.extend_from_slice(&entry.last_timestamp_ms.to_be_bytes());
            // At most REMEMBERED (5) batches are kept, so the count fits a byte.
            let batches = entry.batches.len().min(REMEMBERED);
            bytes.push(u8::try_from(batches).unwrap_or(u8::MAX));
            for batch in entry.batches.iter().take(batches) {
                bytes.extend_from_slice(&batch.first.to_be_bytes());
                bytes.extend_from_slice(&batch.last.to_be_bytes());
                bytes.extend_from_slice(&batch.base.0.to_be_bytes());
                bytes.extend_from_slice(&batch.last_offset.0.to_be_bytes());
            }
        }
        if !self.txns.is_empty() {
            self.txns.encode_into(bytes);
        }
    }

    /// Decodes a state that fills `bytes` exactly; `None` if it doesn't.
    pub(crate) fn decode(bytes: &[u8]) -> Option<ProducerStates> {
        let mut reader = Reader { bytes };
        let count = reader.u32()? as usize;
        // A count read from the file never sizes more than the bytes present allow.
        let mut states = ProducerStates::default();
        states
            .by_id
            .reserve(count.min(reader.bytes.len() / ENTRY_LEN));
        for _ in 0..count {
            let id = reader.i64()?;
            let epoch = ProducerEpoch(reader.i16()?);
            let last_timestamp_ms = reader.i64()?;
            let batch_count = usize::from(reader.u8()?);
            if batch_count > REMEMBERED {
                return None;
            }
            let mut batches = VecDeque::with_capacity(batch_count);
            for _ in 0..batch_count {
                batches.push_back(BatchRange {
                    first: reader.i32()?,
                    last: reader.i32()?,
                    base: Offset(reader.i64()?),
                    last_offset: Offset(reader.i64()?),
                });
            }
            let entry = ProducerEntry {
                epoch,
                batches,
                last_timestamp_ms,
            };
            if states.by_id.insert(id, entry).is_some() {
                return None;
            }
        }
        if !reader.bytes.is_empty() {
            states.txns = Transactions::decode(&mut reader)?;
        }
        reader.bytes.is_empty().then_some(states)
    }
}

/// Big-endian reads from the front of a slice.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    /// A count of elements of at least `element_len` bytes each, refused if more than
    /// the bytes left could hold.
    pub(crate) fn count(&mut self, element_len: usize) -> Option<usize> {
        let count = self.u32()? as usize;
        (count <= self.bytes.len() / element_len).then_some(count)
    }

    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.bytes.split_first_chunk::<N>()?;
        self.bytes = rest;
        Some(*head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take::<1>().map(|[b]| b)
    }

    fn i16(&mut self) -> Option<i16> {
        self.take().map(i16::from_be_bytes)
    }

    fn i32(&mut self) -> Option<i32> {
        self.take().map(i32::from_be_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_be_bytes)
    }

    pub(crate) fn i64(&mut self) -> Option<i64> {
        self.take().map(i64::from_be_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::header;
    use super::super::{ProducerError, SequenceCheck};
    use super::*;

    #[test]
    fn a_decoded_state_answers_as_the_original() {
        let mut states = ProducerStates::default();
        for i in 0..7 {
            states.record(&header(1, 3, i * 2, 2, i64::from(i) * 2));
        }
        states.record(&header(9, 0, 0, 1, 100));
        let mut bytes = Vec::new();
        states.encode_into(&mut bytes);
        let decoded = ProducerStates::decode(&bytes).expect("decodes");
        assert_eq!(decoded.len(), 2);
        for probe in [
            header(1, 3, 12, 2, 0),
            header(1, 3, 4, 2, 0),
            header(1, 3, 14, 1, 0),
            header(1, 2, 14, 1, 0),
            header(9, 0, 1, 1, 0),
            header(5, 0, 3, 1, 0),
        ] {
            assert_eq!(decoded.check(&probe), states.check(&probe), "{probe:?}");
        }
        assert_eq!(
            decoded.check(&header(1, 3, 12, 2, 0)),
            Ok(SequenceCheck::Duplicate {
                base: Offset(12),
                last: Offset(13)
            })
        );
        assert!(matches!(
            decoded.check(&header(1, 2, 14, 1, 0)),
            Err(ProducerError::InvalidEpoch { .. })
        ));
    }

    #[test]
    fn damaged_or_lying_bytes_are_refused() {
        let mut states = ProducerStates::default();
        states.record(&header(1, 0, 0, 1, 0));
        let mut bytes = Vec::new();
        states.encode_into(&mut bytes);
        for cut in 0..bytes.len() {
            assert!(
                ProducerStates::decode(&bytes[..cut]).is_none(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(ProducerStates::decode(&longer).is_none());
        // A huge count with no entries behind it allocates nothing and fails.
        assert!(ProducerStates::decode(&u32::MAX.to_be_bytes()).is_none());
        let mut too_many_batches = bytes.clone();
        too_many_batches[4 + 18] = 6;
        assert!(ProducerStates::decode(&too_many_batches).is_none());
        assert!(ProducerStates::decode(&0u32.to_be_bytes()).is_some_and(|s| s.len() == 0));
    }
}
