//! The one place where internal errors become Kafka error codes.

use kafka_protocol::messages::ApiKey;
use spool_coordinator::{GroupError, TxnError};
use spool_log::{LogError, ProducerError};
use spool_protocol::batch::BatchError;

/// Kafka error codes Spool returns, by the Kafka protocol's names; the numbers come
/// from `kafka_protocol`'s table of them.
pub(crate) mod code {
    use kafka_protocol::error::ResponseError as E;

    /// No error (not an entry of the error table).
    pub(crate) const NONE: i16 = 0;
    pub(crate) const OFFSET_OUT_OF_RANGE: i16 = E::OffsetOutOfRange.code();
    pub(crate) const CORRUPT_MESSAGE: i16 = E::CorruptMessage.code();
    pub(crate) const UNKNOWN_TOPIC_OR_PARTITION: i16 = E::UnknownTopicOrPartition.code();
    pub(crate) const LEADER_NOT_AVAILABLE: i16 = E::LeaderNotAvailable.code();
    pub(crate) const NOT_LEADER_OR_FOLLOWER: i16 = E::NotLeaderOrFollower.code();
    pub(crate) const REQUEST_TIMED_OUT: i16 = E::RequestTimedOut.code();
    pub(crate) const MESSAGE_TOO_LARGE: i16 = E::MessageTooLarge.code();
    pub(crate) const INVALID_TOPIC_EXCEPTION: i16 = E::InvalidTopicException.code();
    pub(crate) const INVALID_REQUIRED_ACKS: i16 = E::InvalidRequiredAcks.code();
    pub(crate) const INVALID_TIMESTAMP: i16 = E::InvalidTimestamp.code();
    pub(crate) const NOT_ENOUGH_REPLICAS: i16 = E::NotEnoughReplicas.code();
    pub(crate) const TOPIC_ALREADY_EXISTS: i16 = E::TopicAlreadyExists.code();
    pub(crate) const INVALID_PARTITIONS: i16 = E::InvalidPartitions.code();
    pub(crate) const INVALID_REPLICATION_FACTOR: i16 = E::InvalidReplicationFactor.code();
    pub(crate) const INVALID_REPLICA_ASSIGNMENT: i16 = E::InvalidReplicaAssignment.code();
    pub(crate) const INVALID_CONFIG: i16 = E::InvalidConfig.code();
    pub(crate) const UNSUPPORTED_FOR_MESSAGE_FORMAT: i16 = E::UnsupportedForMessageFormat.code();
    pub(crate) const KAFKA_STORAGE_ERROR: i16 = E::KafkaStorageError.code();
    pub(crate) const UNKNOWN_SERVER_ERROR: i16 = E::UnknownServerError.code();
    pub(crate) const INVALID_REQUEST: i16 = E::InvalidRequest.code();
    pub(crate) const INVALID_RECORD: i16 = E::InvalidRecord.code();
    pub(crate) const UNKNOWN_TOPIC_ID: i16 = E::UnknownTopicId.code();
    pub(crate) const OFFSET_METADATA_TOO_LARGE: i16 = E::OffsetMetadataTooLarge.code();
    pub(crate) const COORDINATOR_NOT_AVAILABLE: i16 = E::CoordinatorNotAvailable.code();
    pub(crate) const NOT_COORDINATOR: i16 = E::NotCoordinator.code();
    pub(crate) const ILLEGAL_GENERATION: i16 = E::IllegalGeneration.code();
    pub(crate) const INCONSISTENT_GROUP_PROTOCOL: i16 = E::InconsistentGroupProtocol.code();
    pub(crate) const INVALID_GROUP_ID: i16 = E::InvalidGroupId.code();
    pub(crate) const UNKNOWN_MEMBER_ID: i16 = E::UnknownMemberId.code();
    pub(crate) const INVALID_SESSION_TIMEOUT: i16 = E::InvalidSessionTimeout.code();
    pub(crate) const REBALANCE_IN_PROGRESS: i16 = E::RebalanceInProgress.code();
    pub(crate) const NON_EMPTY_GROUP: i16 = E::NonEmptyGroup.code();
    pub(crate) const GROUP_ID_NOT_FOUND: i16 = E::GroupIdNotFound.code();
    pub(crate) const MEMBER_ID_REQUIRED: i16 = E::MemberIdRequired.code();
    pub(crate) const FENCED_INSTANCE_ID: i16 = E::FencedInstanceId.code();
    pub(crate) const GROUP_SUBSCRIBED_TO_TOPIC: i16 = E::GroupSubscribedToTopic.code();
    pub(crate) const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = E::OutOfOrderSequenceNumber.code();
    pub(crate) const INVALID_PRODUCER_EPOCH: i16 = E::InvalidProducerEpoch.code();
    pub(crate) const UNKNOWN_PRODUCER_ID: i16 = E::UnknownProducerId.code();
    pub(crate) const FENCED_LEADER_EPOCH: i16 = E::FencedLeaderEpoch.code();
    pub(crate) const INVALID_TXN_STATE: i16 = E::InvalidTxnState.code();
    pub(crate) const INVALID_PRODUCER_ID_MAPPING: i16 = E::InvalidProducerIdMapping.code();
    pub(crate) const INVALID_TRANSACTION_TIMEOUT: i16 = E::InvalidTransactionTimeout.code();
    pub(crate) const CONCURRENT_TRANSACTIONS: i16 = E::ConcurrentTransactions.code();
    pub(crate) const OPERATION_NOT_ATTEMPTED: i16 = E::OperationNotAttempted.code();
    pub(crate) const UNSTABLE_OFFSET_COMMIT: i16 = E::UnstableOffsetCommit.code();
    pub(crate) const PRODUCER_FENCED: i16 = E::ProducerFenced.code();
    pub(crate) const TRANSACTIONAL_ID_NOT_FOUND: i16 = E::TransactionalIdNotFound.code();
    pub(crate) const UNKNOWN_LEADER_EPOCH: i16 = E::UnknownLeaderEpoch.code();
    pub(crate) const UNSUPPORTED_SASL_MECHANISM: i16 = E::UnsupportedSaslMechanism.code();
    pub(crate) const ILLEGAL_SASL_STATE: i16 = E::IllegalSaslState.code();
    pub(crate) const SASL_AUTHENTICATION_FAILED: i16 = E::SaslAuthenticationFailed.code();
    pub(crate) const RESOURCE_NOT_FOUND: i16 = E::ResourceNotFound.code();
    pub(crate) const DUPLICATE_RESOURCE: i16 = E::DuplicateResource.code();
    pub(crate) const UNACCEPTABLE_CREDENTIAL: i16 = E::UnacceptableCredential.code();
    pub(crate) const TOPIC_AUTHORIZATION_FAILED: i16 = E::TopicAuthorizationFailed.code();
    pub(crate) const GROUP_AUTHORIZATION_FAILED: i16 = E::GroupAuthorizationFailed.code();
    pub(crate) const CLUSTER_AUTHORIZATION_FAILED: i16 = E::ClusterAuthorizationFailed.code();
    pub(crate) const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 =
        E::TransactionalIdAuthorizationFailed.code();
    pub(crate) const SECURITY_DISABLED: i16 = E::SecurityDisabled.code();
    pub(crate) const UNSUPPORTED_VERSION: i16 = E::UnsupportedVersion.code();
    pub(crate) const FENCED_MEMBER_EPOCH: i16 = E::FencedMemberEpoch.code();
    pub(crate) const STALE_MEMBER_EPOCH: i16 = E::StaleMemberEpoch.code();
    pub(crate) const UNRELEASED_INSTANCE_ID: i16 = E::UnreleasedInstanceId.code();
    pub(crate) const GROUP_MAX_SIZE_REACHED: i16 = E::GroupMaxSizeReached.code();
    pub(crate) const INVALID_REGULAR_EXPRESSION: i16 = E::InvalidRegularExpression.code();
    pub(crate) const UNSUPPORTED_ASSIGNOR: i16 = E::UnsupportedAssignor.code();
    pub(crate) const INVALID_RECORD_STATE: i16 = E::InvalidRecordState.code();
    pub(crate) const SHARE_SESSION_NOT_FOUND: i16 = E::ShareSessionNotFound.code();
    pub(crate) const INVALID_SHARE_SESSION_EPOCH: i16 = E::InvalidShareSessionEpoch.code();
    pub(crate) const SHARE_SESSION_LIMIT_REACHED: i16 = E::ShareSessionLimitReached.code();
}

/// The Kafka error code for a share-group refusal.
pub(crate) fn share_error_code(error: &spool_share::ShareError) -> i16 {
    use spool_share::ShareError;
    match error {
        ShareError::InvalidRequest(_) => code::INVALID_REQUEST,
        ShareError::InvalidRecordState(_) => code::INVALID_RECORD_STATE,
        ShareError::SessionNotFound { .. } => code::SHARE_SESSION_NOT_FOUND,
        ShareError::InvalidSessionEpoch { .. } => code::INVALID_SHARE_SESSION_EPOCH,
        ShareError::SessionLimitReached(_) => code::SHARE_SESSION_LIMIT_REACHED,
        ShareError::UnknownMember { .. } => code::UNKNOWN_MEMBER_ID,
        ShareError::FencedMemberEpoch { .. } => code::FENCED_MEMBER_EPOCH,
        ShareError::GroupMaxSizeReached { .. } => code::GROUP_MAX_SIZE_REACHED,
        // Kafka's answer to a share heartbeat for a consumer group's id.
        ShareError::NotShareGroup(_) => code::GROUP_ID_NOT_FOUND,
    }
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
        GroupError::FencedMemberEpoch => code::FENCED_MEMBER_EPOCH,
        GroupError::StaleMemberEpoch => code::STALE_MEMBER_EPOCH,
        GroupError::UnreleasedInstanceId => code::UNRELEASED_INSTANCE_ID,
        GroupError::GroupMaxSizeReached => code::GROUP_MAX_SIZE_REACHED,
        GroupError::InvalidRegularExpression => code::INVALID_REGULAR_EXPRESSION,
        GroupError::UnsupportedAssignor => code::UNSUPPORTED_ASSIGNOR,
        GroupError::UnsupportedVersion => code::UNSUPPORTED_VERSION,
        GroupError::InvalidRequest(_) => code::INVALID_REQUEST,
    }
}

/// The code of a group operation's outcome.
pub(crate) fn group_result_code(result: Result<(), GroupError>) -> i16 {
    result.err().map_or(code::NONE, group_error_code)
}

/// Whether answers of this version of a transactional API may carry
/// `PRODUCER_FENCED` (KIP-588); older clients get `INVALID_PRODUCER_EPOCH` for it, as
/// Kafka answers them.
pub(crate) fn knows_producer_fenced(api: ApiKey, version: i16) -> bool {
    let first_version = match api {
        ApiKey::AddPartitionsToTxn | ApiKey::AddOffsetsToTxn | ApiKey::EndTxn => 2,
        ApiKey::TxnOffsetCommit => 3,
        ApiKey::InitProducerId => 4,
        _ => return false,
    };
    version >= first_version
}

/// The Kafka error code for a transaction coordinator error. `fenced_code` is
/// whether the request's version knows `PRODUCER_FENCED` ([`knows_producer_fenced`]).
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
        // Only the mirror appends at own offsets; no client sees this.
        LogError::OffsetBeforeLogEnd { .. } => code::INVALID_RECORD,
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
