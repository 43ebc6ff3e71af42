//! Transactions in one partition: which producers have a transaction open here (from
//! their first transactional batch to their marker), and the index of aborted
//! transactions. They give the last stable offset (LSO): the first offset of the
//! oldest transaction not yet decided below the high watermark, or the high watermark
//! itself. A read_committed consumer reads up to the LSO, and skips the records of
//! the aborted transactions that the fetch lists.
//!
//! A transaction counts as undecided until its marker is below the high watermark
//! (durable, or committed to the catalogue): a marker a crash could still lose does
//! not yet make the transaction's records readable.
//!
//! The state travels with the producers' state (checkpoint snapshot, catalogue), and
//! is rebuilt from the batches after it on open, so it is as durable as the log.

use std::collections::{HashMap, VecDeque};

use spool_model::Offset;

/// An aborted transaction's range in this partition, as Fetch lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    /// The offset of its first batch here.
    pub first_offset: Offset,
    /// The offset of its abort marker.
    pub last_offset: Offset,
}

/// A transaction whose marker is written but not yet below the high watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ending {
    pub(crate) first: Offset,
    pub(crate) marker: Offset,
}

/// One partition's transactions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Transactions {
    /// Producer id → the first offset of its open transaction here.
    pub(crate) open: HashMap<i64, Offset>,
    /// Transactions whose marker may still be lost.
    pub(crate) ending: Vec<Ending>,
    /// Aborted transactions, ordered by their marker's offset.
    pub(crate) aborted: VecDeque<AbortedTxn>,
}

impl Transactions {
    /// Notes a transactional data batch of `producer` at `base`: it opens a
    /// transaction unless the producer has one open here already.
    pub(crate) fn note_data(&mut self, producer: i64, base: Offset) {
        self.open.entry(producer).or_insert(base);
    }

    /// Notes a marker of `producer` at `offset`: it ends the producer's open
    /// transaction here (a marker for a producer with none open ends nothing, as
    /// when a partition was added to a transaction and never written to).
    pub(crate) fn note_marker(&mut self, producer: i64, offset: Offset, commit: bool) {
        let Some(first) = self.open.remove(&producer) else {
            return;
        };
        self.ending.push(Ending {
            first,
            marker: offset,
        });
        if !commit {
            self.aborted.push_back(AbortedTxn {
                producer_id: producer,
                first_offset: first,
                last_offset: offset,
            });
        }
    }

    /// Forgets the ending transactions whose marker is below `high_watermark`.
    pub(crate) fn settle(&mut self, high_watermark: Offset) {
        self.ending.retain(|ending| ending.marker >= high_watermark);
    }

    /// The last stable offset under `high_watermark`.
    pub(crate) fn stable_offset(&self, high_watermark: Offset) -> Offset {
        let open = self.open.values().copied();
        let ending = self
            .ending
            .iter()
            .filter(|ending| ending.marker >= high_watermark)
            .map(|ending| ending.first);
        open.chain(ending)
            .min()
            .map_or(high_watermark, |first| first.min(high_watermark))
    }

    /// The aborted transactions with records in `from..to`, oldest first.
    pub(crate) fn aborted_between(&self, from: Offset, to: Offset) -> Vec<AbortedTxn> {
        // Ordered by marker: skip those that ended before `from`.
        let start = self.aborted.partition_point(|txn| txn.last_offset < from);
        self.aborted
            .range(start..)
            .filter(|txn| txn.first_offset < to)
            .copied()
            .collect()
    }

    /// Forgets aborted transactions that ended below `log_start`.
    pub(crate) fn trim(&mut self, log_start: Offset) {
        while self
            .aborted
            .front()
            .is_some_and(|txn| txn.last_offset < log_start)
        {
            self.aborted.pop_front();
        }
    }

    pub(crate) fn has_open(&self, producer: i64) -> bool {
        self.open.contains_key(&producer)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.open.is_empty() && self.ending.is_empty() && self.aborted.is_empty()
    }

    /// Appends the encoded state: `open u32`, then per open transaction
    /// `producerId i64 | firstOffset i64`; `ending u32`, then `firstOffset i64 |
    /// markerOffset i64`; `aborted u32`, then `producerId i64 | firstOffset i64 |
    /// lastOffset i64`.
    pub(crate) fn encode_into(&self, bytes: &mut Vec<u8>) {
        let mut open: Vec<(&i64, &Offset)> = self.open.iter().collect();
        open.sort_unstable();
        put_count(bytes, open.len());
        for (producer, first) in open {
            bytes.extend_from_slice(&producer.to_be_bytes());
            bytes.extend_from_slice(&first.0.to_be_bytes());
        }
        put_count(bytes, self.ending.len());
        for ending in &self.ending {
            bytes.extend_from_slice(&ending.first.0.to_be_bytes());
            bytes.extend_from_slice(&ending.marker.0.to_be_bytes());
        }
        put_count(bytes, self.aborted.len());
        for txn in &self.aborted {
            bytes.extend_from_slice(&txn.producer_id.to_be_bytes());
            bytes.extend_from_slice(&txn.first_offset.0.to_be_bytes());
            bytes.extend_from_slice(&txn.last_offset.0.to_be_bytes());
        }
    }

    /// Decodes what [`Transactions::encode_into`] wrote, from `reader`.
    pub(crate) fn decode(reader: &mut super::snapshot::Reader<'_>) -> Option<Transactions> {
        let mut txns = Transactions::default();
        let open = reader.count(16)?;
        txns.open.reserve(open);
        for _ in 0..open {
            let producer = reader.i64()?;
            if txns.open.insert(producer, Offset(reader.i64()?)).is_some() {
                return None;
            }
        }
        let ending = reader.count(16)?;
        txns.ending.reserve(ending);
        for _ in 0..ending {
            txns.ending.push(Ending {
                first: Offset(reader.i64()?),
                marker: Offset(reader.i64()?),
            });
        }
        let aborted = reader.count(24)?;
        txns.aborted.reserve(aborted);
        for _ in 0..aborted {
            txns.aborted.push_back(AbortedTxn {
                producer_id: reader.i64()?,
                first_offset: Offset(reader.i64()?),
                last_offset: Offset(reader.i64()?),
            });
        }
        Some(txns)
    }
}

fn put_count(bytes: &mut Vec<u8>, count: usize) {
    bytes.extend_from_slice(&u32::try_from(count).unwrap_or(u32::MAX).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stable_offset_waits_for_markers_below_the_high_watermark() {
        let mut txns = Transactions::default();
        assert_eq!(txns.stable_offset(Offset(10)), Offset(10));
        txns.note_data(7, Offset(10));
        txns.note_data(7, Offset(12));
        txns.note_data(8, Offset(11));
        assert_eq!(txns.stable_offset(Offset(20)), Offset(10));
        assert_eq!(
            txns.stable_offset(Offset(5)),
            Offset(5),
            "never above the HW"
        );
        txns.note_marker(7, Offset(13), true);
        assert_eq!(
            txns.stable_offset(Offset(13)),
            Offset(10),
            "marker not yet below the HW"
        );
        assert_eq!(txns.stable_offset(Offset(14)), Offset(11));
        txns.note_marker(8, Offset(14), false);
        txns.settle(Offset(15));
        assert_eq!(txns.stable_offset(Offset(15)), Offset(15));
        assert!(txns.ending.is_empty());
        assert_eq!(
            txns.aborted_between(Offset(0), Offset(15)),
            vec![AbortedTxn {
                producer_id: 8,
                first_offset: Offset(11),
                last_offset: Offset(14)
            }]
        );
        assert!(txns.aborted_between(Offset(15), Offset(20)).is_empty());
        assert!(txns.aborted_between(Offset(0), Offset(11)).is_empty());
        txns.note_marker(9, Offset(16), false);
        assert_eq!(
            txns.aborted.len(),
            1,
            "a marker with nothing open adds nothing"
        );
        txns.trim(Offset(15));
        assert!(txns.is_empty());
    }
}
