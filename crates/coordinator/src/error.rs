//! Why a group or transaction operation was refused. The broker maps each to its Kafka error code in
//! one place (`crates/broker/src/errors.rs`).

/// A group operation's failure, named as Kafka names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    #[error("the member id is not known to the group")]
    UnknownMemberId,
    #[error("the generation is not the group's current one")]
    IllegalGeneration,
    #[error("the group is rebalancing: rejoin")]
    RebalanceInProgress,
    #[error("another member joined with the same group.instance.id")]
    FencedInstanceId,
    #[error("a new member must rejoin with the member id it was given")]
    MemberIdRequired,
    #[error("the protocol type or protocols do not match the group's")]
    InconsistentGroupProtocol,
    #[error("the session timeout is outside the broker's bounds")]
    InvalidSessionTimeout,
    #[error("the group id is empty")]
    InvalidGroupId,
    #[error("the group has members")]
    NonEmptyGroup,
    #[error("the group does not exist")]
    GroupIdNotFound,
    #[error("the group is subscribed to the topic")]
    GroupSubscribedToTopic,
    #[error("the offset metadata is too large")]
    OffsetMetadataTooLarge,
    #[error("the coordinator could not store the change")]
    StorageFailed,
    /// Another coordinator claimed the group in the metadata store since this one did.
    #[error("this broker is no longer the group's coordinator")]
    NotCoordinator,
    #[error("the member's epoch is not its current one: rejoin")]
    FencedMemberEpoch,
    #[error("the member's epoch is not its current one")]
    StaleMemberEpoch,
    #[error("another member holds the group.instance.id")]
    UnreleasedInstanceId,
    #[error("the group has as many members as group.consumer.max.size allows")]
    GroupMaxSizeReached,
    #[error("the subscribed topic regex is not a regular expression")]
    InvalidRegularExpression,
    #[error("the broker does not serve the assignor asked for")]
    UnsupportedAssignor,
    #[error("members of the consumer protocol commit with OffsetCommit v9 or later")]
    UnsupportedVersion,
    /// A request the protocol forbids, and why.
    #[error("{0}")]
    InvalidRequest(&'static str),
}

/// A transaction operation's failure, named as Kafka names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TxnError {
    #[error("the producer id does not belong to the transactional id")]
    InvalidProducerIdMapping,
    #[error("a newer producer with the same transactional id fenced this one")]
    ProducerFenced,
    #[error("the transaction is being committed or aborted: retry")]
    ConcurrentTransactions,
    #[error("the request does not fit the transaction's state")]
    InvalidTxnState,
    #[error("the transaction timeout is larger than transaction.max.timeout.ms")]
    InvalidTransactionTimeout,
    #[error("the transactional id is empty")]
    InvalidTransactionalId,
    #[error("this broker does not coordinate the transactional id")]
    NotCoordinator,
    #[error("the coordinator could not store the change")]
    StorageFailed,
    #[error("a topic of the request was deleted")]
    UnknownTopicOrPartition,
}
