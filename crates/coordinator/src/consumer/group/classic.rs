//! Members of the classic protocol in a consumer-protocol group: the online
//! migration of KIP-848. A classic group whose first consumer-protocol member joins
//! becomes a consumer-protocol group with its members in it ([`ConsumerGroup::from_classic`]);
//! they go on with JoinGroup, SyncGroup and Heartbeat, which this group answers from
//! the broker's assignment:
//!
//! - a JoinGroup updates the member's subscription (from its protocol metadata) and
//!   moves it towards its target, with what it says it owns (cooperative members;
//!   eager ones own nothing as they join); the answer's generation is its epoch, and
//!   it is never the leader: nothing is left for it to assign;
//! - a SyncGroup gives it its assignment;
//! - a Heartbeat answers `REBALANCE_IN_PROGRESS` once the member has something to
//!   give up or gain (or the group moved to a new epoch), so that it rejoins.
//!
//! When the last consumer-protocol member leaves a group that still has classic
//! members, they go back to a classic group ([`ConsumerGroup::migrate_out`]).

use std::time::Duration;

use bytes::Bytes;
use spool_protocol::consumer_protocol::{self, Subscription};

use super::{ConsumerGroup, Settings};
use crate::consumer::member::{ClassicMember, Member, MemberState};
use crate::consumer::{Assignment, Topics};
use crate::error::GroupError;
use crate::group::migration::MigratingMember;
use crate::group::{GroupDescription, MemberDescription};

/// A classic member's JoinGroup, as the group needs it.
#[derive(Debug, Clone)]
pub(crate) struct ClassicJoin {
    /// Never empty: the coordinator gives new members their id first.
    pub(crate) member_id: String,
    pub(crate) instance_id: Option<String>,
    pub(crate) client_id: String,
    pub(crate) client_host: String,
    pub(crate) session_timeout: Duration,
    pub(crate) rebalance_timeout: Duration,
    pub(crate) protocols: Vec<(String, Bytes)>,
    pub(crate) subscription: Subscription,
}

impl ConsumerGroup {
    /// A classic member joins (or rejoins); its epoch, which the JoinGroup answer
    /// gives as the generation.
    pub(crate) fn join_classic(
        &mut self,
        join: ClassicJoin,
        topics: &dyn Topics,
        settings: &Settings<'_>,
    ) -> Result<i32, GroupError> {
        let id = join.member_id.clone();
        if let Some(instance) = &join.instance_id
            && let Some(old) = self.instances.get(instance).cloned()
            && old != id
        {
            // A static member back under a new member id takes its place.
            self.replace_static_member(&old, &id, instance);
        }
        if !self.members.contains_key(&id) {
            if self.members.len() >= settings.config.max_size {
                return Err(GroupError::GroupMaxSizeReached);
            }
            self.members
                .insert(id.clone(), Member::new(id.clone(), settings.now));
            if let Some(instance) = &join.instance_id {
                self.instances.insert(instance.clone(), id.clone());
            }
        }
        let owned = by_topic_id(&join.subscription.owned, topics);
        let Some(member) = self.members.get_mut(&id) else {
            return Err(GroupError::UnknownMemberId);
        };
        let mut names = join.subscription.topics.clone();
        names.sort();
        names.dedup();
        let is_new = member.previous_epoch == -1 && member.epoch == 0;
        let changed = is_new || names != member.subscribed_names || !member.regex.is_empty();
        member.subscribed_names = names;
        member.regex.clear();
        member.server_assignor = None;
        member.instance_id.clone_from(&join.instance_id);
        member.client_id = join.client_id;
        member.client_host = join.client_host;
        member.rebalance_timeout = join.rebalance_timeout;
        member.session_deadline = settings.now + join.session_timeout;
        let synced = member
            .classic
            .take()
            .map(|classic| classic.synced)
            .unwrap_or_default();
        member.classic = Some(ClassicMember {
            session_timeout: join.session_timeout,
            protocols: join.protocols,
            synced,
        });
        if changed {
            self.resolved_at = None;
        }
        let topics_changed = self.resolve_subscriptions(topics);
        if self.epoch == 0 || changed || topics_changed {
            self.epoch += 1;
        }
        if self.epoch > self.assignment_epoch {
            self.assign(settings.config);
        }
        self.reconcile_member(&id, Some(&owned), changed, settings);
        self.regexes.retain_used(self.members.values());
        Ok(self.members.get(&id).map_or(0, |m| m.epoch))
    }

    /// A classic member's SyncGroup: its assignment (and the protocol it was
    /// answered with at its join).
    pub(crate) fn sync_classic(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(Assignment, String), GroupError> {
        let member = self.classic_member(member_id, instance_id)?;
        if generation != member.epoch {
            return Err(GroupError::IllegalGeneration);
        }
        let assigned = member.assigned.clone();
        let Some(classic) = member.classic.as_mut() else {
            return Err(GroupError::UnknownMemberId);
        };
        classic.synced.clone_from(&assigned);
        Ok((assigned, classic.protocol_name()))
    }

    /// A classic member's Heartbeat: `REBALANCE_IN_PROGRESS` once it should rejoin.
    pub(crate) fn heartbeat_classic(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        settings: &Settings<'_>,
    ) -> Result<(), GroupError> {
        let target_epoch = self.assignment_epoch;
        let member = self.classic_member(member_id, instance_id)?;
        if generation != member.epoch {
            return Err(GroupError::IllegalGeneration);
        }
        let Some(classic) = &member.classic else {
            return Err(GroupError::UnknownMemberId);
        };
        member.session_deadline = settings.now + classic.session_timeout;
        let settled = member.epoch == target_epoch
            && member.state == MemberState::Stable
            && member.assigned == classic.synced;
        if settled {
            Ok(())
        } else {
            Err(GroupError::RebalanceInProgress)
        }
    }

    /// A classic member's LeaveGroup.
    pub(crate) fn leave_classic(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<(), GroupError> {
        let id = match instance_id {
            Some(instance) => match self.instances.get(instance) {
                None => return Err(GroupError::UnknownMemberId),
                Some(current) if !member_id.is_empty() && current != member_id => {
                    return Err(GroupError::FencedInstanceId);
                }
                Some(current) => current.clone(),
            },
            None => member_id.to_owned(),
        };
        if !self.members.contains_key(&id) {
            return Err(GroupError::UnknownMemberId);
        }
        self.fence(&id);
        tracing::info!(member = %id, "classic member left the group");
        Ok(())
    }

    /// A member of the classic protocol, by id (and instance id, for a static one).
    fn classic_member(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<&mut Member, GroupError> {
        if let Some(instance) = instance_id
            && self
                .instances
                .get(instance)
                .is_some_and(|current| current != member_id)
        {
            return Err(GroupError::FencedInstanceId);
        }
        self.members
            .get_mut(member_id)
            .filter(|m| m.classic.is_some())
            .ok_or(GroupError::UnknownMemberId)
    }

    /// Whether the group has members and all are of the classic protocol: the last
    /// consumer-protocol member left, and it goes back to being a classic group.
    pub(crate) fn only_classic_members(&self) -> bool {
        !self.members.is_empty() && self.members.values().all(|m| m.classic.is_some())
    }

    /// A consumer-protocol group made of a classic group's members, as they are:
    /// each at the classic generation with the partitions its last SyncGroup gave
    /// it, which is also its target until the group's next epoch.
    pub(crate) fn from_classic(
        generation: i32,
        members: Vec<MigratingMember>,
        topics: &dyn Topics,
        settings: &Settings<'_>,
    ) -> ConsumerGroup {
        let mut group = ConsumerGroup::default();
        group.epoch = generation.max(1);
        group.assignment_epoch = group.epoch;
        for migrating in members {
            let subscription = migrating
                .protocols
                .iter()
                .find_map(|(_, metadata)| consumer_protocol::subscription(metadata))
                .unwrap_or_default();
            let assigned = consumer_protocol::assigned_partitions(&migrating.assignment)
                .map(|partitions| by_topic_id(&partitions, topics))
                .unwrap_or_default();
            let mut member = Member::new(migrating.id.clone(), settings.now);
            let mut names = subscription.topics;
            names.sort();
            names.dedup();
            member.subscribed_names = names;
            member.instance_id = migrating.instance_id.clone();
            member.client_id = migrating.client_id;
            member.client_host = migrating.client_host;
            member.rebalance_timeout = migrating.rebalance_timeout;
            member.session_deadline = settings.now + migrating.session_timeout;
            member.epoch = group.epoch;
            member.previous_epoch = group.epoch;
            member.assigned = assigned.clone();
            member.classic = Some(ClassicMember {
                session_timeout: migrating.session_timeout,
                protocols: migrating.protocols,
                synced: assigned.clone(),
            });
            if let Some(instance) = &migrating.instance_id {
                group
                    .instances
                    .insert(instance.clone(), migrating.id.clone());
            }
            group.target.insert(migrating.id.clone(), assigned);
            group.members.insert(migrating.id, member);
        }
        group.resolve_subscriptions(topics);
        group
    }

    /// The members, to go back to a classic group, with the generation they know
    /// (the latest of their epochs), so that their next heartbeat is told to rejoin
    /// rather than refused (their assignments are not carried: that group
    /// rebalances first, to a later generation).
    pub(crate) fn migrate_out(&self) -> (i32, Vec<MigratingMember>) {
        let members = self
            .members
            .values()
            .filter_map(|member| {
                let classic = member.classic.as_ref()?;
                Some(MigratingMember {
                    id: member.id.clone(),
                    instance_id: member.instance_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    session_timeout: classic.session_timeout,
                    rebalance_timeout: member.rebalance_timeout,
                    protocols: classic.protocols.clone(),
                    assignment: Bytes::new(),
                })
            })
            .collect();
        let generation = self
            .members
            .values()
            .filter(|member| member.classic.is_some())
            .map(|member| member.epoch)
            .max()
            .unwrap_or(self.epoch);
        (generation, members)
    }
}

impl ConsumerGroup {
    /// The group as DescribeGroups reports it (Kafka 4 answers it for
    /// consumer-protocol groups too): its state, its assignor as the protocol, each
    /// member's subscription and assignment as the consumer protocol encodes them.
    pub(crate) fn describe_as_classic(
        &self,
        config: &crate::consumer::ConsumerGroupConfig,
        topics: &dyn Topics,
    ) -> GroupDescription {
        let members = self
            .members
            .values()
            .map(|member| {
                let metadata = match &member.classic {
                    Some(classic) => classic
                        .protocols
                        .first()
                        .map(|(_, metadata)| metadata.clone())
                        .unwrap_or_default(),
                    None => {
                        let mut names = member.subscribed_names.clone();
                        if let Some(matched) = self.member_topics.get(&member.id) {
                            names.extend(matched.keys().filter_map(|id| topics.name_of(*id)));
                        }
                        names.sort();
                        names.dedup();
                        Bytes::from(consumer_protocol::encode_subscription(&names))
                    }
                };
                let assigned = by_topic_name(&member.assigned, topics);
                MemberDescription {
                    member_id: member.id.clone(),
                    group_instance_id: member.instance_id.clone(),
                    client_id: member.client_id.clone(),
                    client_host: member.client_host.clone(),
                    metadata,
                    assignment: Bytes::from(consumer_protocol::encode_assignment(&assigned)),
                }
            })
            .collect();
        GroupDescription {
            state: self.state().name(),
            protocol_type: "consumer".to_owned(),
            protocol: self.assignor(config).name().to_owned(),
            members,
        }
    }
}

/// Partitions named by topic, by topic id (topics that do not exist are left out).
pub(crate) fn by_topic_id(partitions: &[(String, Vec<i32>)], topics: &dyn Topics) -> Assignment {
    let mut assignment = Assignment::new();
    for (name, indexes) in partitions {
        if let Some(topic) = topics.by_name(name) {
            assignment.entry(topic.id).or_default().extend(
                indexes
                    .iter()
                    .copied()
                    .filter(|p| (0..topic.partitions).contains(p)),
            );
        }
    }
    assignment.retain(|_, set| !set.is_empty());
    assignment
}

/// An assignment with its topics named, for a classic member's SyncGroup.
pub(crate) fn by_topic_name(
    assignment: &Assignment,
    topics: &dyn Topics,
) -> Vec<(String, Vec<i32>)> {
    assignment
        .iter()
        .filter_map(|(id, set)| Some((topics.name_of(*id)?, set.iter().copied().collect())))
        .collect()
}
