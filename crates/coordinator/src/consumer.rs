//! Consumer groups of the consumer protocol (KIP-848, `group.protocol=consumer`):
//! the broker assigns partitions, members learn their assignment from their
//! heartbeats (ConsumerGroupHeartbeat), and a rebalance is incremental: a partition
//! is taken from its owner, and given to another member only once the owner says it
//! let it go. Members that keep their partitions never stop.
//!
//! - [`group`]: one group's state machine: group epoch, target assignment and its
//!   epoch, each member's epoch; pure (time comes in as an argument);
//! - [`member`] and [`reconcile`]: a member and how it moves towards its target;
//! - [`assignor`]: the server-side assignors, `uniform` and `range`.
//!
//! The semantics, states and settings are in `docs/groups.md`.

use std::collections::BTreeMap;
use std::time::Duration;

use uuid::Uuid;

pub mod assignor;
pub(crate) mod group;
pub(crate) mod member;
mod reconcile;
mod subscription;

pub use assignor::{Assignment, Assignor};
pub use member::MemberState;

/// A member's epoch in a heartbeat: 0 joins (or rejoins), -1 leaves, -2 leaves for a
/// while (a static member that will come back to its partitions).
pub const JOIN_EPOCH: i32 = 0;
pub const LEAVE_EPOCH: i32 = -1;
pub const TEMPORARY_LEAVE_EPOCH: i32 = -2;

/// A topic as the coordinator needs it: its id and partition count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicInfo {
    pub id: Uuid,
    pub partitions: i32,
}

/// The broker's topics, as a heartbeat sees them: names resolve to ids (the
/// assignment is by id), regular expressions match names.
pub trait Topics {
    fn by_name(&self, name: &str) -> Option<TopicInfo>;
    /// Every topic's name (regular-expression subscriptions match against them).
    fn names(&self) -> Vec<String>;
    /// The name of the topic of that id (a classic member's assignment names topics).
    fn name_of(&self, id: Uuid) -> Option<String>;
    /// Changes whenever a topic is created or deleted, so that regular expressions
    /// are matched again only then.
    fn version(&self) -> u64;
}

/// A ConsumerGroupHeartbeat, as the coordinator needs it. `None` (and -1 for the
/// rebalance timeout) means unchanged since the member's last heartbeat.
#[derive(Debug, Clone, Default)]
pub struct HeartbeatRequest {
    pub group_id: String,
    /// Chosen by the client from v1; empty from a v0 client joining (the broker
    /// chooses it then).
    pub member_id: String,
    pub member_epoch: i32,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    /// RE2/J syntax, matching whole names; `Some("")` is no expression.
    pub subscribed_topic_regex: Option<String>,
    pub server_assignor: Option<String>,
    /// What the member owns now (by topic id); `None`: unchanged.
    pub owned: Option<Assignment>,
    pub client_id: String,
    pub client_host: String,
}

impl HeartbeatRequest {
    /// A request with every field of the member set (a join, or a client that lost
    /// track): its answer carries the assignment whether or not it changed.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.rebalance_timeout_ms != -1
            && (self.subscribed_topic_names.is_some() || self.subscribed_topic_regex.is_some())
            && self.owned.is_some()
    }
}

/// The answer to a heartbeat that was not refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub member_id: String,
    pub member_epoch: i32,
    /// 0 in the answer to a leave.
    pub heartbeat_interval: Duration,
    /// The member's assignment when it changed (or the request asked for all of
    /// it); `None`: as before.
    pub assignment: Option<Assignment>,
}

/// A consumer group's state, as ListGroups and ConsumerGroupDescribe name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsumerGroupState {
    Empty,
    /// The group epoch moved past the target assignment's: a new one is due.
    Assigning,
    /// Members are moving to the target assignment.
    Reconciling,
    Stable,
}

impl ConsumerGroupState {
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ConsumerGroupState::Empty => "Empty",
            ConsumerGroupState::Assigning => "Assigning",
            ConsumerGroupState::Reconciling => "Reconciling",
            ConsumerGroupState::Stable => "Stable",
        }
    }
}

/// What ConsumerGroupDescribe reports of a member.
#[derive(Debug, Clone)]
pub struct ConsumerMemberDescription {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub state: MemberState,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    /// Empty when it subscribes by names only.
    pub subscribed_topic_regex: String,
    pub assignment: Assignment,
    pub target_assignment: Assignment,
    /// A member of the classic protocol (in a group being migrated).
    pub classic: bool,
}

/// What ConsumerGroupDescribe reports of a group.
#[derive(Debug, Clone)]
pub struct ConsumerGroupDescription {
    pub state: ConsumerGroupState,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    pub assignor: &'static str,
    pub members: Vec<ConsumerMemberDescription>,
}

/// The settings of the consumer protocol, by Kafka's broker-config names. Defaults
/// are Kafka's.
#[derive(Debug, Clone)]
pub struct ConsumerGroupConfig {
    /// `group.consumer.session.timeout.ms`: a member silent this long is fenced.
    pub session_timeout: Duration,
    /// `group.consumer.min.session.timeout.ms` and `...max...`: the bounds of the
    /// setting and of a group's override.
    pub min_session_timeout: Duration,
    pub max_session_timeout: Duration,
    /// `group.consumer.heartbeat.interval.ms`: how often members heartbeat.
    pub heartbeat_interval: Duration,
    /// `group.consumer.min.heartbeat.interval.ms` and `...max...`.
    pub min_heartbeat_interval: Duration,
    pub max_heartbeat_interval: Duration,
    /// `group.consumer.max.size`: members in one group.
    pub max_size: usize,
    /// `group.consumer.assignors`: the first is the default.
    pub assignors: Vec<Assignor>,
}

impl Default for ConsumerGroupConfig {
    fn default() -> Self {
        ConsumerGroupConfig {
            session_timeout: Duration::from_secs(45),
            min_session_timeout: Duration::from_secs(45),
            max_session_timeout: Duration::from_secs(60),
            heartbeat_interval: Duration::from_secs(5),
            min_heartbeat_interval: Duration::from_secs(5),
            max_heartbeat_interval: Duration::from_secs(15),
            max_size: usize::MAX,
            assignors: vec![Assignor::Uniform, Assignor::Range],
        }
    }
}

impl ConsumerGroupConfig {
    /// Kafka's checks at start: each value within its bounds, heartbeats more often
    /// than sessions end, at least one assignor.
    pub fn check(&self) -> Result<(), String> {
        let ms = |d: Duration| d.as_millis();
        if !(self.min_session_timeout..=self.max_session_timeout).contains(&self.session_timeout) {
            return Err(format!(
                "group.consumer.session.timeout.ms ({}) must lie between group.consumer.min.session.timeout.ms ({}) and group.consumer.max.session.timeout.ms ({})",
                ms(self.session_timeout),
                ms(self.min_session_timeout),
                ms(self.max_session_timeout)
            ));
        }
        if !(self.min_heartbeat_interval..=self.max_heartbeat_interval)
            .contains(&self.heartbeat_interval)
        {
            return Err(format!(
                "group.consumer.heartbeat.interval.ms ({}) must lie between group.consumer.min.heartbeat.interval.ms ({}) and group.consumer.max.heartbeat.interval.ms ({})",
                ms(self.heartbeat_interval),
                ms(self.min_heartbeat_interval),
                ms(self.max_heartbeat_interval)
            ));
        }
        if self.heartbeat_interval >= self.session_timeout {
            return Err(format!(
                "group.consumer.heartbeat.interval.ms ({}) must be less than group.consumer.session.timeout.ms ({})",
                ms(self.heartbeat_interval),
                ms(self.session_timeout)
            ));
        }
        if self.assignors.is_empty() {
            return Err("group.consumer.assignors names no assignor".to_owned());
        }
        Ok(())
    }
}

/// Per-group overrides of the broker's settings (the GROUP configs
/// `consumer.session.timeout.ms` and `consumer.heartbeat.interval.ms`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GroupOverrides {
    pub session_timeout: Option<Duration>,
    pub heartbeat_interval: Option<Duration>,
}

/// Targets and partition counts by topic id.
pub(crate) type PartitionCounts = BTreeMap<Uuid, i32>;

#[cfg(test)]
mod tests;
