//! Committed offsets: what OffsetCommit asks to store, and what ListGroups reports.

use crate::group::GroupState;

/// One partition's offset in an OffsetCommit.
#[derive(Debug, Clone)]
pub struct CommitOffset {
    pub topic: String,
    /// The topic's id: what the stored offset belongs to.
    pub topic_id: uuid::Uuid,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
}

/// An OffsetCommit, after the broker has set aside partitions that do not exist.
#[derive(Debug, Clone)]
pub struct CommitRequest {
    pub group_id: String,
    /// -1 with an empty member id: a commit from outside any group membership.
    pub generation: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub offsets: Vec<CommitOffset>,
}

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    pub state: GroupState,
    pub protocol_type: String,
}
