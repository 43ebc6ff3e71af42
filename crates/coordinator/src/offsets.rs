//! Committed offsets: what OffsetCommit asks to store, and what ListGroups reports.

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
    /// The OffsetCommit version: a member of the consumer protocol names its member
    /// epoch (as `generation`) from v9.
    pub api_version: i16,
}

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    /// As Kafka names the state of a group of its type.
    pub state: &'static str,
    pub protocol_type: String,
    pub group_type: GroupType,
}

/// Which protocol a group's members speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupType {
    /// JoinGroup, SyncGroup, Heartbeat (or no members: offsets only).
    Classic,
    /// ConsumerGroupHeartbeat (KIP-848).
    Consumer,
    /// ShareGroupHeartbeat (KIP-932); kept by the broker's share service, listed
    /// with the others.
    Share,
}

impl GroupType {
    /// As ListGroups v5 names it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            GroupType::Classic => "classic",
            GroupType::Consumer => "consumer",
            GroupType::Share => "share",
        }
    }
}
