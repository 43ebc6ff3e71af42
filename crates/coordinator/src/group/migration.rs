//! A classic group's side of the online migration (KIP-848): its members leave it
//! for a consumer-protocol group when the first consumer-protocol member joins, and
//! come back to a classic group when the last one leaves.

use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::{Group, GroupState, Member};
use crate::config::CoordinatorConfig;
use crate::error::GroupError;

/// A classic member, as it moves between the two kinds of group.
#[derive(Debug, Clone)]
pub(crate) struct MigratingMember {
    pub(crate) id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) session_timeout: Duration,
    pub(crate) rebalance_timeout: Duration,
    /// (name, metadata), in its order of preference.
    pub(crate) protocols: Vec<(String, Bytes)>,
    /// Its assignment as the consumer protocol encodes it (empty: none, or not
    /// kept: a group it comes back to rebalances first).
    pub(crate) assignment: Bytes,
}

impl Group {
    /// The members, to move into a consumer-protocol group, with the generation;
    /// `None` for a group of another protocol type (Connect workers, say), which
    /// cannot be converted. Members waiting in a rebalance are told to rejoin.
    pub(crate) fn migrate_out(&mut self) -> Option<(i32, Vec<MigratingMember>)> {
        if self.protocol_type.as_deref() != Some("consumer") {
            return None;
        }
        let generation = self.generation;
        let mut members = Vec::with_capacity(self.members.len());
        for (id, member) in &mut self.members {
            member.fail_waiters(GroupError::RebalanceInProgress, id);
            members.push(MigratingMember {
                id: id.clone(),
                instance_id: member.instance_id.clone(),
                client_id: member.client_id.clone(),
                client_host: member.client_host.clone(),
                session_timeout: member.session_timeout,
                rebalance_timeout: member.rebalance_timeout,
                protocols: member.protocols.clone(),
                assignment: member.assignment.clone(),
            });
        }
        Some((generation, members))
    }

    /// A classic group of members coming back from a consumer-protocol group, at
    /// `generation`: a rebalance begins, so that they rejoin and their leader
    /// assigns (their heartbeats answer `REBALANCE_IN_PROGRESS`).
    pub(crate) fn migrate_in(
        generation: i32,
        members: Vec<MigratingMember>,
        now: Instant,
        config: &CoordinatorConfig,
    ) -> Group {
        let mut group = Group::new();
        group.generation = generation;
        group.protocol_type = Some("consumer".to_owned());
        group.protocol = members
            .first()
            .and_then(|m| m.protocols.first())
            .map(|(name, _)| name.clone());
        group.state = GroupState::Stable;
        for (joined, migrating) in (0u64..).zip(members) {
            if let Some(instance) = &migrating.instance_id {
                group
                    .instances
                    .insert(instance.clone(), migrating.id.clone());
            }
            let member = Member {
                instance_id: migrating.instance_id,
                client_id: migrating.client_id,
                client_host: migrating.client_host,
                session_timeout: migrating.session_timeout,
                rebalance_timeout: migrating.rebalance_timeout,
                protocols: migrating.protocols,
                assignment: migrating.assignment,
                deadline: now + migrating.session_timeout,
                joined,
                awaiting_join: None,
                awaiting_sync: None,
            };
            group.members.insert(migrating.id, member);
        }
        group.joins = u64::try_from(group.members.len()).unwrap_or(u64::MAX);
        group.prepare_rebalance(now, config);
        group
    }
}
