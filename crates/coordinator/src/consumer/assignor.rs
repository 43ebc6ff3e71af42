//! The server-side assignors of the consumer protocol (KIP-848): the broker computes
//! a group's target assignment, and a client picks the assignor by name
//! (`group.remote.assignor`). Both are sticky: a member keeps what it can of what it
//! has when the group's membership or subscriptions change.
//!
//! - `uniform` (the default): every member gets as many partitions as the others,
//!   give or take one, across all its topics ([`uniform`]);
//! - `range`: per topic, each member gets a contiguous range, so that members
//!   subscribed to co-partitioned topics get the same partition numbers of each
//!   ([`range`]).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

mod range;
mod uniform;

/// Partitions by topic id.
pub type Assignment = BTreeMap<Uuid, BTreeSet<i32>>;

/// A member as an assignor sees it: the topics it subscribes to (by id, those that
/// exist) and what it has been given so far.
#[derive(Debug, Clone, Default)]
pub struct MemberSpec {
    pub subscribed: BTreeSet<Uuid>,
    pub current: Assignment,
}

/// The assignors a broker serves, by the names clients choose them with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    Uniform,
    Range,
}

impl Assignor {
    /// The assignor named `name` (`uniform` or `range`), as `group.consumer.assignors`
    /// and `group.remote.assignor` name them.
    #[must_use]
    pub fn named(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }

    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }

    /// The target assignment of `members` (by member id) over topics of the given
    /// partition counts (by topic id). Every partition of a subscribed topic goes to
    /// one member subscribed to it; a member of no existing topic gets nothing.
    #[must_use]
    pub fn assign(
        self,
        members: &BTreeMap<String, MemberSpec>,
        partition_counts: &BTreeMap<Uuid, i32>,
    ) -> BTreeMap<String, Assignment> {
        match self {
            Assignor::Uniform => uniform::assign(members, partition_counts),
            Assignor::Range => range::assign(members, partition_counts),
        }
    }
}

/// The number of partitions in an assignment.
#[must_use]
pub fn partition_count(assignment: &Assignment) -> usize {
    assignment.values().map(BTreeSet::len).sum()
}

#[cfg(test)]
mod tests;
