//! The one place where internal errors become Kafka error codes.

use spool_log::LogError;
use spool_protocol::batch::BatchError;

/// Kafka error codes Spool returns (from the Kafka protocol's error table).
pub(crate) mod code {
    pub(crate) const NONE: i16 = 0;
    pub(crate) const OFFSET_OUT_OF_RANGE: i16 = 1;
    pub(crate) const CORRUPT_MESSAGE: i16 = 2;
    pub(crate) const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub(crate) const MESSAGE_TOO_LARGE: i16 = 10;
    pub(crate) const INVALID_TOPIC_EXCEPTION: i16 = 17;
    pub(crate) const INVALID_REQUIRED_ACKS: i16 = 21;
    pub(crate) const TOPIC_ALREADY_EXISTS: i16 = 36;
    pub(crate) const INVALID_PARTITIONS: i16 = 37;
    pub(crate) const INVALID_REPLICATION_FACTOR: i16 = 38;
    pub(crate) const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
    pub(crate) const INVALID_CONFIG: i16 = 40;
    pub(crate) const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = 43;
    pub(crate) const KAFKA_STORAGE_ERROR: i16 = 56;
    pub(crate) const UNKNOWN_SERVER_ERROR: i16 = -1;
    pub(crate) const INVALID_REQUEST: i16 = 42;
    pub(crate) const INVALID_RECORD: i16 = 87;
    pub(crate) const UNKNOWN_TOPIC_ID: i16 = 100;
}

/// The Kafka error code for a storage-engine error.
pub(crate) fn log_error_code(error: &LogError) -> i16 {
    match error {
        LogError::OffsetBelowLogStart { .. } | LogError::OffsetBeyondHighWatermark { .. } => {
            code::OFFSET_OUT_OF_RANGE
        }
        LogError::InvalidBatch { source, .. } => batch_error_code(source),
        LogError::UnknownPartition(_) => code::UNKNOWN_TOPIC_OR_PARTITION,
        LogError::Io { .. } | LogError::Failed { .. } => code::KAFKA_STORAGE_ERROR,
        LogError::PartitionExists(_) | LogError::Config(_) => code::UNKNOWN_SERVER_ERROR,
    }
}

/// The Kafka error code for a record batch that failed validation.
pub(crate) fn batch_error_code(error: &BatchError) -> i16 {
    match error {
        BatchError::TruncatedHeader { .. }
        | BatchError::LengthTooSmall(_)
        | BatchError::TruncatedBatch { .. }
        | BatchError::TrailingBytes { .. }
        | BatchError::CrcMismatch { .. } => code::CORRUPT_MESSAGE,
        BatchError::UnsupportedMagic(_) => code::UNSUPPORTED_FOR_MESSAGE_FORMAT,
        BatchError::RecordCountMismatch { .. }
        | BatchError::UnknownCompression(_)
        | BatchError::InvalidTimestamp { .. }
        | BatchError::InvalidProducerFields { .. }
        | BatchError::ControlBatchFromProducer => code::INVALID_RECORD,
    }
}
