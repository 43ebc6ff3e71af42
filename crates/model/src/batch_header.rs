//! A read-only view of the fixed 61-byte header of a Kafka record batch (magic 2).
//!
//! Layout (big-endian), as in Kafka's `DefaultRecordBatch`:
//!
//! | field                 | bytes  | offset |
//! |-----------------------|--------|--------|
//! | baseOffset            | i64    | 0      |
//! | batchLength           | i32    | 8      |
//! | partitionLeaderEpoch  | i32    | 12     |
//! | magic                 | i8     | 16     |
//! | crc (CRC-32C)         | u32    | 17     |
//! | attributes            | i16    | 21     |
//! | lastOffsetDelta       | i32    | 23     |
//! | baseTimestamp         | i64    | 27     |
//! | maxTimestamp          | i64    | 35     |
//! | producerId            | i64    | 43     |
//! | producerEpoch         | i16    | 51     |
//! | baseSequence          | i32    | 53     |
//! | recordCount           | i32    | 57     |
//!
//! `batchLength` counts the bytes after itself, so a whole batch is `12 + batchLength`
//! bytes. The CRC covers everything from `attributes` to the end of the batch.

use crate::{Offset, ProducerEpoch, ProducerId, Sequence, Timestamp};

/// Length of the fixed header of a magic-2 record batch.
pub const BATCH_HEADER_LEN: usize = 61;

/// Byte offsets of the header fields, for in-place patching.
pub mod batch_field {
    pub const BASE_OFFSET: usize = 0;
    pub const BATCH_LENGTH: usize = 8;
    pub const PARTITION_LEADER_EPOCH: usize = 12;
    pub const MAGIC: usize = 16;
    pub const CRC: usize = 17;
    pub const ATTRIBUTES: usize = 21;
    pub const LAST_OFFSET_DELTA: usize = 23;
    pub const BASE_TIMESTAMP: usize = 27;
    pub const MAX_TIMESTAMP: usize = 35;
    pub const PRODUCER_ID: usize = 43;
    pub const PRODUCER_EPOCH: usize = 51;
    pub const BASE_SEQUENCE: usize = 53;
    pub const RECORD_COUNT: usize = 57;
    /// Bytes before `batchLength`'s count starts: baseOffset + batchLength.
    pub const LOG_OVERHEAD: usize = 12;
}

/// Bits of the `attributes` field.
pub mod batch_attributes {
    pub const COMPRESSION_MASK: i16 = 0b111;
    pub const TIMESTAMP_TYPE_LOG_APPEND: i16 = 1 << 3;
    pub const TRANSACTIONAL: i16 = 1 << 4;
    pub const CONTROL: i16 = 1 << 5;
    pub const DELETE_HORIZON: i16 = 1 << 6;
}

/// The compression codec named in a batch's attributes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressionCodec {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
    /// Codec ids 5–7 are unassigned.
    Unknown(u8),
}

impl CompressionCodec {
    /// The codec's id in a batch's attributes (the inverse of
    /// [`RecordBatchHeader::compression`]).
    #[must_use]
    pub fn id(self) -> i16 {
        match self {
            CompressionCodec::None => 0,
            CompressionCodec::Gzip => 1,
            CompressionCodec::Snappy => 2,
            CompressionCodec::Lz4 => 3,
            CompressionCodec::Zstd => 4,
            CompressionCodec::Unknown(id) => i16::from(id),
        }
    }
}

/// Whether record timestamps were set by the producer or by the broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimestampType {
    #[default]
    CreateTime,
    LogAppendTime,
}

/// The decoded fixed header of one record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordBatchHeader {
    pub base_offset: Offset,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: Timestamp,
    pub max_timestamp: Timestamp,
    pub producer_id: ProducerId,
    pub producer_epoch: ProducerEpoch,
    pub base_sequence: Sequence,
    pub record_count: i32,
}

impl RecordBatchHeader {
    /// Decodes the header at the start of `bytes`; `None` if fewer than
    /// [`BATCH_HEADER_LEN`] bytes are present. Checks nothing else: see the protocol
    /// crate's batch validation for that.
    #[must_use]
    pub fn parse(bytes: &[u8]) -> Option<RecordBatchHeader> {
        let header: &[u8; BATCH_HEADER_LEN] = bytes.get(..BATCH_HEADER_LEN)?.try_into().ok()?;
        let be_i64 = |at: usize| i64::from_be_bytes(field::<8>(header, at));
        let be_i32 = |at: usize| i32::from_be_bytes(field::<4>(header, at));
        let be_i16 = |at: usize| i16::from_be_bytes(field::<2>(header, at));
        use batch_field as f;
        Some(RecordBatchHeader {
            base_offset: Offset(be_i64(f::BASE_OFFSET)),
            batch_length: be_i32(f::BATCH_LENGTH),
            partition_leader_epoch: be_i32(f::PARTITION_LEADER_EPOCH),
            magic: i8::from_be_bytes(field::<1>(header, f::MAGIC)),
            crc: u32::from_be_bytes(field::<4>(header, f::CRC)),
            attributes: be_i16(f::ATTRIBUTES),
            last_offset_delta: be_i32(f::LAST_OFFSET_DELTA),
            base_timestamp: Timestamp(be_i64(f::BASE_TIMESTAMP)),
            max_timestamp: Timestamp(be_i64(f::MAX_TIMESTAMP)),
            producer_id: ProducerId(be_i64(f::PRODUCER_ID)),
            producer_epoch: ProducerEpoch(be_i16(f::PRODUCER_EPOCH)),
            base_sequence: Sequence(be_i32(f::BASE_SEQUENCE)),
            record_count: be_i32(f::RECORD_COUNT),
        })
    }

    /// Total size of the batch on the wire and on disk: `12 + batchLength`.
    /// Negative lengths give 0 so callers treat them as invalid.
    #[must_use]
    pub fn total_len(&self) -> usize {
        usize::try_from(self.batch_length).map_or(0, |len| len + batch_field::LOG_OVERHEAD)
    }

    /// The offset of the last record slot of this batch.
    #[must_use]
    pub fn last_offset(&self) -> Offset {
        self.base_offset.plus(i64::from(self.last_offset_delta))
    }

    /// The offset right after this batch.
    #[must_use]
    pub fn next_offset(&self) -> Offset {
        self.last_offset().plus(1)
    }

    #[must_use]
    pub fn compression(&self) -> CompressionCodec {
        match self.attributes & batch_attributes::COMPRESSION_MASK {
            0 => CompressionCodec::None,
            1 => CompressionCodec::Gzip,
            2 => CompressionCodec::Snappy,
            3 => CompressionCodec::Lz4,
            4 => CompressionCodec::Zstd,
            other => CompressionCodec::Unknown(u8::try_from(other).unwrap_or(u8::MAX)),
        }
    }

    #[must_use]
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & batch_attributes::TIMESTAMP_TYPE_LOG_APPEND != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// The timestamp of the batch's record whose delta is `timestamp_delta`: its
    /// own (base + delta), or the batch's for a batch the log stamped
    /// (LogAppendTime).
    #[must_use]
    pub fn record_timestamp(&self, timestamp_delta: i64) -> i64 {
        match self.timestamp_type() {
            TimestampType::LogAppendTime => self.max_timestamp.0,
            TimestampType::CreateTime => self.base_timestamp.0.saturating_add(timestamp_delta),
        }
    }

    #[must_use]
    pub fn is_transactional(&self) -> bool {
        self.attributes & batch_attributes::TRANSACTIONAL != 0
    }

    #[must_use]
    pub fn is_control(&self) -> bool {
        self.attributes & batch_attributes::CONTROL != 0
    }
}

/// Copies `N` bytes of the header starting at `at`. The callers pass constant field
/// offsets that lie inside the 61-byte header, so the fallback is never taken.
fn field<const N: usize>(header: &[u8; BATCH_HEADER_LEN], at: usize) -> [u8; N] {
    header
        .get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_needs_a_whole_header() {
        assert!(RecordBatchHeader::parse(&[0u8; BATCH_HEADER_LEN - 1]).is_none());
        let mut bytes = [0u8; BATCH_HEADER_LEN];
        bytes[8..12].copy_from_slice(&49i32.to_be_bytes());
        bytes[16] = 2;
        bytes[23..27].copy_from_slice(&4i32.to_be_bytes());
        bytes[21..23].copy_from_slice(&(3i16 | 1 << 3).to_be_bytes());
        let header = RecordBatchHeader::parse(&bytes).unwrap();
        assert_eq!(header.total_len(), 61);
        assert_eq!(header.magic, 2);
        assert_eq!(header.last_offset(), Offset(4));
        assert_eq!(header.next_offset(), Offset(5));
        assert_eq!(header.compression(), CompressionCodec::Lz4);
        assert_eq!(header.timestamp_type(), TimestampType::LogAppendTime);
    }
}
