//! Why a share-group request is refused. The broker maps each to its Kafka code in
//! one place (`errors::share_error_code`).

/// A refusal, with what the client is told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShareError {
    /// The request breaks the protocol's rules (acknowledgements when a session
    /// opens, a type out of range, overlapping ranges).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// An acknowledgement of a record this member does not hold (never acquired, its
    /// lock expired, or acquired by another member).
    #[error("{0}")]
    InvalidRecordState(String),
    /// A ShareFetch or ShareAcknowledge continues a session this broker does not have.
    #[error("no share session for member {member} of group {group}")]
    SessionNotFound { group: String, member: String },
    /// A session's epoch is not the one expected next.
    #[error("share session epoch {got}, expected {expected}")]
    InvalidSessionEpoch { got: i32, expected: i32 },
    /// This broker has as many share sessions as it keeps.
    #[error("this broker keeps {0} share sessions and has as many")]
    SessionLimitReached(usize),
    /// A heartbeat from a member the group does not have (it left or was fenced).
    #[error("member {member} is not in share group {group}")]
    UnknownMember { group: String, member: String },
    /// A heartbeat at an epoch other than the member's.
    #[error("member epoch {got} is not the current {current}")]
    FencedMemberEpoch { got: i32, current: i32 },
    /// The group has as many members as `group.share.max.size` allows.
    #[error("share group {group} has its maximum of {max} members")]
    GroupMaxSizeReached { group: String, max: usize },
    /// The group id is a consumer group's (classic or consumer protocol).
    #[error("group {0} is not a share group")]
    NotShareGroup(String),
}
