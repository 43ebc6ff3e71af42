//! Idempotent producers' state in one partition: per producer id, its epoch and the
//! sequence ranges and offsets of its last five batches (Kafka's limit of batches in
//! flight per connection). The append path checks each idempotent batch against it
//! under the partition lock: a retried batch is recognised and answered with its
//! original offsets instead of being written twice; a gap in the sequence, an old epoch
//! or a producer the partition does not know are refused.

use std::collections::{HashMap, VecDeque};

use spool_model::{Offset, ProducerEpoch, ProducerId, RecordBatchHeader, Sequence};
use spool_protocol::control::Marker;

pub(crate) mod snapshot;
mod transactions;

pub use transactions::AbortedTxn;

/// The last stable offset under `high_watermark` by a producer state as the log
/// encodes it (a shared-storage partition's, in the catalogue); `None` if the bytes
/// are not one.
#[must_use]
pub fn stable_offset_in(encoded: &[u8], high_watermark: Offset) -> Option<Offset> {
    ProducerStates::decode(encoded).map(|states| states.txns.stable_offset(high_watermark))
}

/// The last stable offset under `high_watermark` and the aborted transactions, by a
/// producer state as the log encodes it; `None` if the bytes are not one.
#[must_use]
pub fn transactions_in(
    encoded: &[u8],
    high_watermark: Offset,
) -> Option<(Offset, Vec<AbortedTxn>)> {
    ProducerStates::decode(encoded).map(|states| {
        let stable = states.txns.stable_offset(high_watermark);
        (stable, states.txns.aborted.into_iter().collect())
    })
}

/// Where `producer`'s open transaction began, by a producer state as the log encodes
/// it; `None` if it has none open there (or the bytes are not one).
#[must_use]
pub fn open_transaction_start_in(encoded: &[u8], producer: i64) -> Option<Offset> {
    ProducerStates::decode(encoded)?
        .txns
        .open
        .get(&producer)
        .copied()
}

/// The highest producer id a producer state as the log encodes it knows (idempotent
/// producers and open transactions); `None` if it knows none or the bytes are not one.
#[must_use]
pub fn max_producer_id_in(encoded: &[u8]) -> Option<i64> {
    ProducerStates::decode(encoded)?.max_id()
}

/// Whether the batch of `header` belongs to one of the `aborted` transactions: the
/// cleaner never lets its records take a committed record's place.
#[must_use]
pub fn is_aborted_batch(aborted: &[AbortedTxn], header: &RecordBatchHeader) -> bool {
    header.is_transactional()
        && !header.is_control()
        && aborted.iter().any(|txn| {
            txn.producer_id == header.producer_id.0
                && txn.first_offset <= header.base_offset
                && header.base_offset < txn.last_offset
        })
}
pub(crate) use transactions::Transactions;

/// Batches remembered per producer.
const REMEMBERED: usize = 5;

/// Why an idempotent batch was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProducerError {
    #[error("producer {producer} epoch {epoch} is older than its current epoch {current}")]
    InvalidEpoch {
        producer: i64,
        epoch: i16,
        current: i16,
    },
    #[error("producer {producer} sent sequence {received}, expected {expected}")]
    OutOfOrderSequence {
        producer: i64,
        expected: i32,
        received: i32,
    },
    #[error("producer {producer} is not known to this partition (sequence {received})")]
    UnknownProducer { producer: i64, received: i32 },
    #[error(
        "an idempotent batch of producer {producer} came with other batches: one per partition and request"
    )]
    NotAlone { producer: i64 },
}

/// What to do with an idempotent batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SequenceCheck {
    /// It is new and in order: append it.
    Append,
    /// It was appended before, at these offsets.
    Duplicate { base: Offset, last: Offset },
}

#[derive(Debug, Clone, Copy)]
struct BatchRange {
    first: i32,
    last: i32,
    base: Offset,
    last_offset: Offset,
}

#[derive(Debug, Clone)]
struct ProducerEntry {
    epoch: ProducerEpoch,
    batches: VecDeque<BatchRange>,
    /// The newest batch's max timestamp (ms), for expiry.
    last_timestamp_ms: i64,
}

/// Every idempotent producer's state in one partition, and its transactions.
#[derive(Debug, Default, Clone)]
pub(crate) struct ProducerStates {
    by_id: HashMap<i64, ProducerEntry>,
    pub(crate) txns: Transactions,
}

/// The sequence after `sequence` (sequences wrap to 0 after `i32::MAX`).
fn next_sequence(sequence: i32) -> i32 {
    if sequence == i32::MAX {
        0
    } else {
        sequence + 1
    }
}

/// The batch's last sequence number.
fn last_sequence(header: &RecordBatchHeader) -> i32 {
    let first = i64::from(header.base_sequence.0);
    let last = first + i64::from(header.last_offset_delta);
    i32::try_from(last % (i64::from(i32::MAX) + 1)).unwrap_or(0)
}

/// Whether a batch comes from an idempotent producer (and so carries sequences).
pub(crate) fn is_idempotent(header: &RecordBatchHeader) -> bool {
    header.producer_id != ProducerId::NONE
        && header.base_sequence != Sequence::NONE
        && !header.is_control()
}

impl ProducerStates {
    /// Checks an idempotent batch against the producer's state.
    pub(crate) fn check(&self, header: &RecordBatchHeader) -> Result<SequenceCheck, ProducerError> {
        let producer = header.producer_id.0;
        let first = header.base_sequence.0;
        let Some(entry) = self.by_id.get(&producer) else {
            // A producer new to this partition starts at 0; any other sequence means
            // its state here is gone (expired, or written before a restart and not
            // rebuilt): the client resets its sequences when told so.
            return if first == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(ProducerError::UnknownProducer {
                    producer,
                    received: first,
                })
            };
        };
        if header.producer_epoch < entry.epoch {
            return Err(ProducerError::InvalidEpoch {
                producer,
                epoch: header.producer_epoch.0,
                current: entry.epoch.0,
            });
        }
        if header.producer_epoch > entry.epoch {
            // A new epoch starts its sequences over.
            return if first == 0 {
                Ok(SequenceCheck::Append)
            } else {
                Err(ProducerError::OutOfOrderSequence {
                    producer,
                    expected: 0,
                    received: first,
                })
            };
        }
        let last = last_sequence(header);
        if let Some(seen) = entry
            .batches
            .iter()
            .find(|b| b.first == first && b.last == last)
        {
            return Ok(SequenceCheck::Duplicate {
                base: seen.base,
                last: seen.last_offset,
            });
        }
        let expected = entry
            .batches
            .back()
            .map_or(0, |newest| next_sequence(newest.last));
        if first == expected {
            Ok(SequenceCheck::Append)
        } else {
            Err(ProducerError::OutOfOrderSequence {
                producer,
                expected,
                received: first,
            })
        }
    }

    /// Checks a transaction marker: one of an epoch older than the producer's here
    /// would end a transaction of the newer epoch, and is refused.
    pub(crate) fn check_marker(&self, header: &RecordBatchHeader) -> Result<(), ProducerError> {
        match self.by_id.get(&header.producer_id.0) {
            Some(entry) if header.producer_epoch < entry.epoch => {
                Err(ProducerError::InvalidEpoch {
                    producer: header.producer_id.0,
                    epoch: header.producer_epoch.0,
                    current: entry.epoch.0,
                })
            }
            _ => Ok(()),
        }
    }

    /// Remembers an appended idempotent batch (its header carries its offsets).
    pub(crate) fn record(&mut self, header: &RecordBatchHeader) {
        let entry = self
            .by_id
            .entry(header.producer_id.0)
            .or_insert_with(|| ProducerEntry {
                epoch: header.producer_epoch,
                batches: VecDeque::with_capacity(REMEMBERED),
                last_timestamp_ms: header.max_timestamp.0,
            });
        if header.producer_epoch != entry.epoch {
            entry.epoch = header.producer_epoch;
            entry.batches.clear();
        }
        if entry.batches.len() == REMEMBERED {
            entry.batches.pop_front();
        }
        entry.batches.push_back(BatchRange {
            first: header.base_sequence.0,
            last: last_sequence(header),
            base: header.base_offset,
            last_offset: header.last_offset(),
        });
        entry.last_timestamp_ms = entry.last_timestamp_ms.max(header.max_timestamp.0);
    }

    /// Takes an appended batch (its header carries its offsets) into the state: an
    /// idempotent batch is remembered, a transactional one opens its producer's
    /// transaction here, and a transaction marker (`marker`, read from a control
    /// batch) ends it and fences the producer's older epochs.
    pub(crate) fn apply(&mut self, header: &RecordBatchHeader, marker: Option<Marker>) {
        if header.is_control() {
            if let Some(marker) = marker {
                self.note_marker(header, marker);
            }
            return;
        }
        if is_idempotent(header) {
            self.record(header);
        }
        if header.is_transactional() {
            self.txns
                .note_data(header.producer_id.0, header.base_offset);
        }
    }

    fn note_marker(&mut self, header: &RecordBatchHeader, marker: Marker) {
        let producer = header.producer_id.0;
        let entry = self.by_id.entry(producer).or_insert_with(|| ProducerEntry {
            epoch: header.producer_epoch,
            batches: VecDeque::new(),
            last_timestamp_ms: header.max_timestamp.0,
        });
        // A marker of a newer epoch (the coordinator fenced the producer) refuses the
        // older epoch from now on; the new epoch starts its sequences over.
        if header.producer_epoch > entry.epoch {
            entry.epoch = header.producer_epoch;
            entry.batches.clear();
        }
        entry.last_timestamp_ms = entry.last_timestamp_ms.max(header.max_timestamp.0);
        self.txns
            .note_marker(producer, header.base_offset, marker == Marker::Commit);
    }

    /// Drops producers whose newest batch is older than `older_than_ms`, unless they
    /// have a transaction open here.
    pub(crate) fn expire(&mut self, older_than_ms: i64) {
        let txns = &self.txns;
        self.by_id.retain(|producer, entry| {
            entry.last_timestamp_ms >= older_than_ms || txns.has_open(*producer)
        });
    }

    /// The highest producer id known here.
    pub(crate) fn max_id(&self) -> Option<i64> {
        self.by_id
            .keys()
            .chain(self.txns.open.keys())
            .copied()
            .max()
    }

    /// Forgets the producers with ids below `floor`, but those with a transaction
    /// open here.
    pub(crate) fn forget_below(&mut self, floor: i64) {
        let txns = &self.txns;
        self.by_id
            .retain(|producer, _| *producer >= floor || txns.has_open(*producer));
    }

    /// The epoch `producer` last wrote with here.
    pub(crate) fn epoch_of(&self, producer: i64) -> Option<i16> {
        self.by_id.get(&producer).map(|entry| entry.epoch.0)
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use spool_model::Timestamp;

    use super::*;

    pub(crate) fn header(
        producer: i64,
        epoch: i16,
        first: i32,
        records: i32,
        base: i64,
    ) -> RecordBatchHeader {
        RecordBatchHeader {
            base_offset: Offset(base),
            batch_length: 100,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: 0,
            last_offset_delta: records - 1,
            base_timestamp: Timestamp(1000),
            max_timestamp: Timestamp(1000),
            producer_id: ProducerId(producer),
            producer_epoch: ProducerEpoch(epoch),
            base_sequence: Sequence(first),
            record_count: records,
        }
    }

    #[test]
    fn an_open_transactions_start_is_read_from_the_encoded_state() {
        let mut states = ProducerStates::default();
        states.txns.note_data(7, Offset(40));
        states.txns.note_data(7, Offset(45));
        states.txns.note_data(8, Offset(41));
        states.txns.note_marker(8, Offset(46), true);
        let mut bytes = Vec::new();
        states.encode_into(&mut bytes);
        assert_eq!(open_transaction_start_in(&bytes, 7), Some(Offset(40)));
        assert_eq!(open_transaction_start_in(&bytes, 8), None);
        assert_eq!(open_transaction_start_in(&bytes, 9), None);
        assert_eq!(
            open_transaction_start_in(&bytes[..bytes.len() - 1], 7),
            None
        );
    }

    #[test]
    fn retries_are_recognised_and_gaps_refused() {
        let mut states = ProducerStates::default();
        let first = header(7, 0, 0, 3, 100);
        assert_eq!(states.check(&first), Ok(SequenceCheck::Append));
        states.record(&first);
        let second = header(7, 0, 3, 2, 103);
        assert_eq!(states.check(&second), Ok(SequenceCheck::Append));
        states.record(&second);
        assert_eq!(
            states.check(&header(7, 0, 0, 3, 0)),
            Ok(SequenceCheck::Duplicate {
                base: Offset(100),
                last: Offset(102)
            }),
            "a retry gets the original offsets"
        );
        assert_eq!(
            states.check(&header(7, 0, 6, 1, 0)),
            Err(ProducerError::OutOfOrderSequence {
                producer: 7,
                expected: 5,
                received: 6
            })
        );
        assert_eq!(
            states.check(&header(7, 0, 5, 1, 0)),
            Ok(SequenceCheck::Append)
        );
    }

    #[test]
    fn epochs_fence_and_restart_sequences() {
        let mut states = ProducerStates::default();
        states.record(&header(7, 2, 0, 1, 0));
        assert!(matches!(
            states.check(&header(7, 1, 1, 1, 0)),
            Err(ProducerError::InvalidEpoch { current: 2, .. })
        ));
        assert!(matches!(
            states.check(&header(7, 3, 4, 1, 0)),
            Err(ProducerError::OutOfOrderSequence { expected: 0, .. })
        ));
        assert_eq!(
            states.check(&header(7, 3, 0, 1, 0)),
            Ok(SequenceCheck::Append)
        );
        assert!(matches!(
            states.check(&header(8, 0, 12, 1, 0)),
            Err(ProducerError::UnknownProducer { received: 12, .. })
        ));
    }

    #[test]
    fn only_the_last_five_batches_are_remembered_and_sequences_wrap() {
        let mut states = ProducerStates::default();
        for i in 0..7 {
            states.record(&header(1, 0, i, 1, i64::from(i)));
        }
        assert!(
            matches!(
                states.check(&header(1, 0, 1, 1, 0)),
                Err(ProducerError::OutOfOrderSequence { .. })
            ),
            "too old to be recognised"
        );
        assert!(matches!(
            states.check(&header(1, 0, 2, 1, 0)),
            Ok(SequenceCheck::Duplicate { .. })
        ));
        states.record(&header(2, 0, i32::MAX - 1, 2, 0));
        assert_eq!(
            states.check(&header(2, 0, 0, 1, 0)),
            Ok(SequenceCheck::Append)
        );
        states.expire(2000);
        assert_eq!(states.len(), 0);
    }
}
