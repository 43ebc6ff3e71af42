//! The one place where internal errors become Kafka error codes.

use spool_coordinator::{GroupError, TxnError};
use spool_log::{LogError, ProducerError};
use spool_protocol::batch::BatchError;

/// Kafka error codes Spool returns (from the Kafka protocol's error table).
pub(crate) mod code {
    pub(crate) const NONE: i16 = 0;
    pub(crate) const OFFSET_OUT_OF_RANGE: i16 = 1;
    pub(crate) const CORRUPT_MESSAGE: i16 = 2;
    pub(crate) const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub(crate) const LEADER_NOT_AVAILABLE: i16 = 5;
    pub(crate) const NOT_LEADER_OR_FOLLOWER: i16 = 6;
    pub(crate) const REQUEST_TIMED_OUT: i16 = 7;
    pub(crate) const MESSAGE_TOO_LARGE: i16 = 10;
    pub(crate) const INVALID_TOPIC_EXCEPTION: i16 = 17;
    pub(crate) const INVALID_REQUIRED_ACKS: i16 = 21;
    pub(crate) const INVALID_TIMESTAMP: i16 = 32;
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
    pub(crate) const OFFSET_METADATA_TOO_LARGE: i16 = 12;
    pub(crate) const COORDINATOR_NOT_AVAILABLE: i16 = 15;
    pub(crate) const NOT_COORDINATOR: i16 = 16;
    pub(crate) const ILLEGAL_GENERATION: i16 = 22;
    pub(crate) const INCONSISTENT_GROUP_PROTOCOL: i16 = 23;
    pub(crate) const INVALID_GROUP_ID: i16 = 24;
    pub(crate) const UNKNOWN_MEMBER_ID: i16 = 25;
    pub(crate) const INVALID_SESSION_TIMEOUT: i16 = 26;
    pub(crate) const REBALANCE_IN_PROGRESS: i16 = 27;
    pub(crate) const NON_EMPTY_GROUP: i16 = 68;
    pub(crate) const GROUP_ID_NOT_FOUND: i16 = 69;
    pub(crate) const MEMBER_ID_REQUIRED: i16 = 79;
    pub(crate) const FENCED_INSTANCE_ID: i16 = 82;
    pub(crate) const GROUP_SUBSCRIBED_TO_TOPIC: i16 = 86;
    pub(crate) const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;
    pub(crate) const INVALID_PRODUCER_EPOCH: i16 = 47;
    pub(crate) const UNKNOWN_PRODUCER_ID: i16 = 59;
    pub(crate) const FENCED_LEADER_EPOCH: i16 = 74;
    pub(crate) const INVALID_TXN_STATE: i16 = 48;
    pub(crate) const INVALID_PRODUCER_ID_MAPPING: i16 = 49;
    pub(crate) const INVALID_TRANSACTION_TIMEOUT: i16 = 50;
    pub(crate) const CONCURRENT_TRANSACTIONS: i16 = 51;
    pub(crate) const OPERATION_NOT_ATTEMPTED: i16 = 55;
    pub(crate) const UNSTABLE_OFFSET_COMMIT: i16 = 88;
    pub(crate) const PRODUCER_FENCED: i16 = 90;
    pub(crate) const TRANSACTIONAL_ID_NOT_FOUND: i16 = 105;
    pub(crate) const UNKNOWN_LEADER_EPOCH: i16 = 75;
    pub(crate) const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
    pub(crate) const ILLEGAL_SASL_STATE: i16 = 34;
    pub(crate) const SASL_AUTHENTICATION_FAILED: i16 = 58;
    pub(crate) const RESOURCE_NOT_FOUND: i16 = 91;
    pub(crate) const DUPLICATE_RESOURCE: i16 = 92;
    pub(crate) const UNACCEPTABLE_CREDENTIAL: i16 = 93;
    pub(crate) const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
    pub(crate) const GROUP_AUTHORIZATION_FAILED: i16 = 30;
    pub(crate) const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
    pub(crate) const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
    pub(crate) const SECURITY_DISABLED: i16 = 54;
}

/// The Kafka error code for a group coordinator error.
pub(crate) fn group_error_code(error: GroupError) -> i16 {
    match error {
        GroupError::UnknownMemberId => code::UNKNOWN_MEMBER_ID,
        GroupError::IllegalGeneration => code::ILLEGAL_GENERATION,
        GroupError::RebalanceInProgress => code::REBALANCE_IN_PROGRESS,
        GroupError::FencedInstanceId => code::FENCED_INSTANCE_ID,
        GroupError::MemberIdRequired => code::MEMBER_ID_REQUIRED,
        GroupError::InconsistentGroupProtocol => code::INCONSISTENT_GROUP_PROTOCOL,
        GroupError::InvalidSessionTimeout => code::INVALID_SESSION_TIMEOUT,
        GroupError::InvalidGroupId => code::INVALID_GROUP_ID,
        GroupError::NonEmptyGroup => code::NON_EMPTY_GROUP,
        GroupError::GroupIdNotFound => code::GROUP_ID_NOT_FOUND,
        GroupError::GroupSubscribedToTopic => code::GROUP_SUBSCRIBED_TO_TOPIC,
        GroupError::OffsetMetadataTooLarge => code::OFFSET_METADATA_TOO_LARGE,
        // The client finds the coordinator again and retries.
        GroupError::StorageFailed => code::COORDINATOR_NOT_AVAILABLE,
        GroupError::NotCoordinator => code::NOT_COORDINATOR,
    }
}

/// The code of a group operation's outcome.
pub(crate) fn group_result_code(result: Result<(), GroupError>) -> i16 {
    result.err().map_or(code::NONE, group_error_code)
}

/// The Kafka error code for a transaction coordinator error. `fenced_code` is
/// whether the request's version knows `PRODUCER_FENCED` (KIP-588); older clients
/// get `INVALID_PRODUCER_EPOCH` for it, as Kafka answers them.
pub(crate) fn txn_error_code(error: TxnError, fenced_code: bool) -> i16 {
    match error {
        TxnError::InvalidProducerIdMapping => code::INVALID_PRODUCER_ID_MAPPING,
        TxnError::ProducerFenced if fenced_code => code::PRODUCER_FENCED,
        TxnError::ProducerFenced => code::INVALID_PRODUCER_EPOCH,
        TxnError::ConcurrentTransactions => code::CONCURRENT_TRANSACTIONS,
        TxnError::InvalidTxnState => code::INVALID_TXN_STATE,
        TxnError::InvalidTransactionTimeout => code::INVALID_TRANSACTION_TIMEOUT,
        TxnError::InvalidTransactionalId => code::INVALID_REQUEST,
        TxnError::NotCoordinator => code::NOT_COORDINATOR,
        // The client finds the coordinator again and retries.
        TxnError::StorageFailed => code::COORDINATOR_NOT_AVAILABLE,
        TxnError::UnknownTopicOrPartition => code::UNKNOWN_TOPIC_OR_PARTITION,
    }
}

/// The code of a transaction operation's outcome.
pub(crate) fn txn_result_code(result: Result<(), TxnError>, fenced_code: bool) -> i16 {
    result
        .err()
        .map_or(code::NONE, |error| txn_error_code(error, fenced_code))
}

/// The Kafka error code for a storage-engine error.
pub(crate) fn log_error_code(error: &LogError) -> i16 {
    match error {
        LogError::OffsetBelowLogStart { .. }
        | LogError::OffsetBeyondHighWatermark { .. }
        | LogError::OffsetBeyondStableOffset { .. } => code::OFFSET_OUT_OF_RANGE,
        LogError::InvalidBatch { source, .. } => batch_error_code(source),
        LogError::UnknownPartition(_) => code::UNKNOWN_TOPIC_OR_PARTITION,
        LogError::Io { .. } | LogError::Failed { .. } => code::KAFKA_STORAGE_ERROR,
        LogError::NotLeader { .. } => code::NOT_LEADER_OR_FOLLOWER,
        LogError::PartitionExists(_) | LogError::Config(_) => code::UNKNOWN_SERVER_ERROR,
        LogError::Producer(error) => producer_error_code(error),
    }
}

/// The Kafka error code for an idempotent batch refused by its producer's state.
fn producer_error_code(error: &ProducerError) -> i16 {
    match error {
        ProducerError::InvalidEpoch { .. } => code::INVALID_PRODUCER_EPOCH,
        ProducerError::OutOfOrderSequence { .. } => code::OUT_OF_ORDER_SEQUENCE_NUMBER,
        ProducerError::UnknownProducer { .. } => code::UNKNOWN_PRODUCER_ID,
        ProducerError::NotAlone { .. } => code::INVALID_RECORD,
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
