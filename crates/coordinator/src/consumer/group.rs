//! One consumer group of the consumer protocol.
//!
//! Three epochs: the group's, bumped whenever its members or what they subscribe to
//! change; the target assignment's, the group epoch the assignor last ran at; and
//! each member's, which reaches the target's once the member has given up what it
//! had to (`reconcile`). A heartbeat answers at once: nothing here waits or reads a
//! clock (the caller passes `now`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use tokio::time::Instant;
use uuid::Uuid;

use super::member::{Member, MemberState, is_within};
use super::reconcile::{Target, reconcile};
use super::subscription::Regexes;
use super::{
    Assignment, Assignor, ConsumerGroupConfig, ConsumerGroupDescription, ConsumerGroupState,
    ConsumerMemberDescription, GroupOverrides, HeartbeatRequest, HeartbeatResponse, JOIN_EPOCH,
    LEAVE_EPOCH, PartitionCounts, TEMPORARY_LEAVE_EPOCH, Topics,
};
use crate::error::GroupError;

pub(crate) mod classic;
mod stored;

#[derive(Debug, Default)]
pub(crate) struct ConsumerGroup {
    epoch: i32,
    assignment_epoch: i32,
    members: BTreeMap<String, Member>,
    /// The target assignment, by member id.
    target: BTreeMap<String, Assignment>,
    /// Static members: instance id → member id.
    instances: HashMap<String, String>,
    /// Each member's subscribed topics as last resolved, by member id.
    member_topics: BTreeMap<String, PartitionCounts>,
    /// The partition counts of every subscribed topic at the group's epoch: a change
    /// (a topic created, deleted or given partitions) bumps the epoch.
    subscribed_topics: PartitionCounts,
    /// The topics' version `member_topics` was resolved at; `None`: resolve again.
    resolved_at: Option<u64>,
    regexes: Regexes,
    pub(crate) overrides: GroupOverrides,
    /// Wall-clock ms when it last lost its last member, for offset expiry.
    pub(crate) empty_since_ms: Option<i64>,
    /// The group as last written to (or read from) the metadata store: a change is
    /// written when the group no longer reads the same.
    pub(crate) stored: Option<String>,
    /// Which life in the coordinator's memory this is (each creation or take-on
    /// from the store starts a new one): a heartbeat's change is written only to the
    /// life it was made in.
    pub(crate) incarnation: u64,
}

/// The settings a heartbeat is handled with.
pub(crate) struct Settings<'a> {
    pub(crate) config: &'a ConsumerGroupConfig,
    pub(crate) now: Instant,
    /// The API version of the heartbeat: v0 lets the broker choose member ids.
    pub(crate) version: i16,
}

impl ConsumerGroup {
    /// A new group, with its overrides of the broker's settings.
    pub(crate) fn with_overrides(overrides: GroupOverrides) -> ConsumerGroup {
        ConsumerGroup {
            overrides,
            ..ConsumerGroup::default()
        }
    }

    pub(crate) fn has_members(&self) -> bool {
        !self.members.is_empty()
    }

    pub(crate) fn member_count(&self) -> usize {
        self.members.len()
    }

    /// Each member's client id and host.
    pub(crate) fn member_clients(&self) -> impl Iterator<Item = (&str, &str)> {
        self.members
            .values()
            .map(|m| (m.client_id.as_str(), m.client_host.as_str()))
    }

    #[cfg(test)]
    pub(crate) fn epoch(&self) -> i32 {
        self.epoch
    }

    pub(crate) fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| m.state != MemberState::Stable || m.epoch != self.assignment_epoch)
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// Every topic name some member subscribes to by name.
    pub(crate) fn subscribed_names(&self) -> BTreeSet<&str> {
        self.members
            .values()
            .flat_map(|m| m.subscribed_names.iter().map(String::as_str))
            .collect()
    }

    /// The ids of every topic some member subscribes to (by name or expression).
    pub(crate) fn subscribed_topic_ids(&self) -> BTreeSet<Uuid> {
        self.member_topics
            .values()
            .flat_map(|counts| counts.keys().copied())
            .collect()
    }

    /// A ConsumerGroupHeartbeat (or a leave).
    pub(crate) fn heartbeat(
        &mut self,
        request: HeartbeatRequest,
        topics: &dyn Topics,
        settings: &Settings<'_>,
    ) -> Result<HeartbeatResponse, GroupError> {
        let result = self.apply(request, topics, settings);
        if result.is_err() {
            // An expression learnt for a heartbeat refused later is not kept.
            self.regexes.retain_used(self.members.values());
        }
        result
    }

    fn apply(
        &mut self,
        mut request: HeartbeatRequest,
        topics: &dyn Topics,
        settings: &Settings<'_>,
    ) -> Result<HeartbeatResponse, GroupError> {
        if request.member_epoch == LEAVE_EPOCH || request.member_epoch == TEMPORARY_LEAVE_EPOCH {
            return self.leave(&request);
        }
        let joining = request.member_epoch == JOIN_EPOCH;
        if request.member_id.is_empty() && settings.version == 0 && joining {
            request.member_id = Uuid::new_v4().simple().to_string();
        }
        let known = self.members.contains_key(&request.member_id)
            || request
                .instance_id
                .as_ref()
                .is_some_and(|i| self.instances.contains_key(i));
        if !known && self.members.len() >= settings.config.max_size {
            return Err(GroupError::GroupMaxSizeReached);
        }
        if let Some(pattern) = request.subscribed_topic_regex.as_deref() {
            self.regexes.learn(pattern)?;
        }
        let id = self.find_member(&request, settings.now)?;
        let session_timeout = self.session_timeout(settings.config);
        let member = self
            .members
            .get_mut(&id)
            .ok_or(GroupError::UnknownMemberId)?;
        if member.classic.is_some() {
            if !joining {
                return Err(GroupError::UnknownMemberId);
            }
            // A classic member back with the consumer protocol, under the same id.
            member.classic = None;
        }
        if !joining {
            check_epoch(member, &request)?;
        }
        let before = member.assigned.clone();
        let subscription_changed = update_member(member, &request);
        member.session_deadline = settings.now + session_timeout;

        if subscription_changed {
            self.resolved_at = None;
        }
        let topics_changed = self.resolve_subscriptions(topics);
        if self.epoch == 0 || subscription_changed || topics_changed {
            self.epoch += 1;
        }
        if self.epoch > self.assignment_epoch {
            self.assign(settings.config);
        }
        self.reconcile_member(&id, request.owned.as_ref(), subscription_changed, settings);
        self.regexes.retain_used(self.members.values());

        let member = self.members.get(&id).ok_or(GroupError::UnknownMemberId)?;
        let send_assignment = joining || request.is_full() || member.assigned != before;
        Ok(HeartbeatResponse {
            member_id: id,
            member_epoch: member.epoch,
            heartbeat_interval: self.heartbeat_interval(settings.config),
            assignment: send_assignment.then(|| member.assigned.clone()),
        })
    }

    /// The member the heartbeat is from (created, or taking a static member's
    /// place, when it joins).
    fn find_member(
        &mut self,
        request: &HeartbeatRequest,
        now: Instant,
    ) -> Result<String, GroupError> {
        let joining = request.member_epoch == JOIN_EPOCH;
        let complete_join = request.rebalance_timeout_ms != -1
            && (request.subscribed_topic_names.is_some()
                || request.subscribed_topic_regex.is_some());
        let Some(instance) = &request.instance_id else {
            if !self.members.contains_key(&request.member_id) {
                if !joining || !complete_join {
                    // Kafka refuses a join without a rebalance timeout or subscription
                    // (INVALID_REQUEST, fatal to librdkafka), but librdkafka sends one
                    // when it retries a join whose answer was lost; a member told it
                    // is unknown rejoins with every field.
                    return Err(GroupError::UnknownMemberId);
                }
                let member = Member::new(request.member_id.clone(), now);
                self.members.insert(request.member_id.clone(), member);
            }
            return Ok(request.member_id.clone());
        };
        match self.instances.get(instance).cloned() {
            None if joining && !complete_join => Err(GroupError::UnknownMemberId),
            None if joining => {
                let member = Member::new(request.member_id.clone(), now);
                self.members.insert(request.member_id.clone(), member);
                self.instances
                    .insert(instance.clone(), request.member_id.clone());
                Ok(request.member_id.clone())
            }
            None => Err(GroupError::UnknownMemberId),
            Some(current) if joining => {
                let held = self
                    .members
                    .get(&current)
                    .is_some_and(|m| m.epoch != TEMPORARY_LEAVE_EPOCH);
                if held {
                    return Err(GroupError::UnreleasedInstanceId);
                }
                self.replace_static_member(&current, &request.member_id, instance);
                Ok(request.member_id.clone())
            }
            Some(current) if current != request.member_id => Err(GroupError::FencedInstanceId),
            Some(current) => Ok(current),
        }
    }

    /// A static member back after leaving for a while: the new incarnation takes the
    /// old one's place, assignment and target, without a new group epoch.
    fn replace_static_member(&mut self, old_id: &str, new_id: &str, instance: &str) {
        let Some(mut member) = self.members.remove(old_id) else {
            return;
        };
        member.id = new_id.to_owned();
        member.epoch = 0;
        member.previous_epoch = 0;
        member.state = MemberState::Stable;
        member.pending_revocation = Assignment::new();
        self.members.insert(new_id.to_owned(), member);
        if let Some(target) = self.target.remove(old_id) {
            self.target.insert(new_id.to_owned(), target);
        }
        if let Some(topics) = self.member_topics.remove(old_id) {
            self.member_topics.insert(new_id.to_owned(), topics);
        }
        self.instances
            .insert(instance.to_owned(), new_id.to_owned());
    }

    /// Resolves what each member subscribes to if the topics or a subscription
    /// changed since; whether the group's subscribed topics changed.
    fn resolve_subscriptions(&mut self, topics: &dyn Topics) -> bool {
        let version = topics.version();
        if self.resolved_at == Some(version) {
            return false;
        }
        let mut member_topics = BTreeMap::new();
        for member in self.members.values() {
            member_topics.insert(member.id.clone(), self.regexes.topics_of(member, topics));
        }
        let subscribed: PartitionCounts = member_topics
            .values()
            .flat_map(|counts: &PartitionCounts| counts.iter().map(|(id, n)| (*id, *n)))
            .collect();
        self.member_topics = member_topics;
        self.resolved_at = Some(version);
        let changed = subscribed != self.subscribed_topics;
        self.subscribed_topics = subscribed;
        changed
    }

    /// Runs the group's assignor for its epoch: each member's target, starting from
    /// the targets it had.
    fn assign(&mut self, config: &ConsumerGroupConfig) {
        let specs: BTreeMap<String, super::assignor::MemberSpec> = self
            .members
            .keys()
            .map(|id| {
                let spec = super::assignor::MemberSpec {
                    subscribed: self
                        .member_topics
                        .get(id)
                        .map(|counts| counts.keys().copied().collect())
                        .unwrap_or_default(),
                    current: self.target.get(id).cloned().unwrap_or_default(),
                };
                (id.clone(), spec)
            })
            .collect();
        self.target = self
            .assignor(config)
            .assign(&specs, &self.subscribed_topics);
        self.assignment_epoch = self.epoch;
    }

    /// The assignor most members ask for (ties: the one listed first in
    /// `group.consumer.assignors`); the first listed if none asks.
    pub(crate) fn assignor(&self, config: &ConsumerGroupConfig) -> Assignor {
        let mut chosen: Option<(usize, Assignor)> = None;
        for assignor in &config.assignors {
            let votes = self
                .members
                .values()
                .filter(|m| m.server_assignor.as_deref() == Some(assignor.name()))
                .count();
            if votes > chosen.map_or(0, |(most, _)| most) {
                chosen = Some((votes, *assignor));
            }
        }
        chosen
            .map(|(_, assignor)| assignor)
            .or_else(|| config.assignors.first().copied())
            .unwrap_or(Assignor::Uniform)
    }

    fn reconcile_member(
        &mut self,
        id: &str,
        owned: Option<&Assignment>,
        subscription_changed: bool,
        settings: &Settings<'_>,
    ) {
        let held_by_others: HashSet<(Uuid, i32)> = self
            .members
            .values()
            .filter(|m| m.id != id)
            .flat_map(|m| partitions_of(&m.assigned).chain(partitions_of(&m.pending_revocation)))
            .collect();
        let empty = Assignment::new();
        let no_topics = PartitionCounts::new();
        let Some(member) = self.members.get_mut(id) else {
            return;
        };
        let at_target =
            member.state == MemberState::Stable && member.epoch == self.assignment_epoch;
        if at_target && !subscription_changed {
            return;
        }
        let was = (member.state, member.epoch);
        let target = Target {
            epoch: self.assignment_epoch,
            partitions: self.target.get(id).unwrap_or(&empty),
            subscribed: self.member_topics.get(id).unwrap_or(&no_topics),
            held_by_others: &held_by_others,
        };
        reconcile(member, &target, owned, subscription_changed);
        if member.state == MemberState::UnrevokedPartitions {
            if was != (member.state, member.epoch) || member.revocation_deadline.is_none() {
                member.revocation_deadline =
                    Some((settings.now + member.rebalance_timeout, member.epoch));
            }
        } else {
            member.revocation_deadline = None;
        }
    }

    /// A leave: -1 removes the member; -2 (a static member) keeps its place and
    /// partitions until its session ends.
    fn leave(&mut self, request: &HeartbeatRequest) -> Result<HeartbeatResponse, GroupError> {
        let id = match &request.instance_id {
            Some(instance) => match self.instances.get(instance) {
                None => return Err(GroupError::UnknownMemberId),
                Some(current) if *current != request.member_id => {
                    return Err(GroupError::FencedInstanceId);
                }
                Some(current) => current.clone(),
            },
            None if self.members.contains_key(&request.member_id) => request.member_id.clone(),
            None => return Err(GroupError::UnknownMemberId),
        };
        if request.member_epoch == TEMPORARY_LEAVE_EPOCH && request.instance_id.is_some() {
            if let Some(member) = self.members.get_mut(&id) {
                member.epoch = TEMPORARY_LEAVE_EPOCH;
                member.pending_revocation = Assignment::new();
                member.revocation_deadline = None;
                member.state = MemberState::Stable;
            }
            tracing::info!(member = %id, "static member left for a while");
        } else {
            self.fence(&id);
            tracing::info!(member = %id, "member left the group");
        }
        Ok(HeartbeatResponse {
            member_id: id,
            member_epoch: request.member_epoch,
            heartbeat_interval: std::time::Duration::ZERO,
            assignment: None,
        })
    }

    /// Removes a member: its partitions go to the others at the next epoch.
    pub(crate) fn fence(&mut self, id: &str) {
        let Some(member) = self.members.remove(id) else {
            return;
        };
        if let Some(instance) = &member.instance_id
            && self.instances.get(instance).map(String::as_str) == Some(id)
        {
            self.instances.remove(instance);
        }
        self.target.remove(id);
        self.member_topics.remove(id);
        let still: BTreeSet<Uuid> = self.subscribed_topic_ids();
        self.subscribed_topics
            .retain(|topic, _| still.contains(topic));
        self.regexes.retain_used(self.members.values());
        self.epoch += 1;
        if self.members.is_empty() {
            // Nothing left to assign: the (empty) target is at the new epoch.
            self.assignment_epoch = self.epoch;
            self.target.clear();
        }
    }

    /// Fences members whose session ended, or that did not give partitions up within
    /// their rebalance timeout; whether it fenced any.
    pub(crate) fn tick(&mut self, now: Instant) -> bool {
        let expired: Vec<(String, &'static str)> = self
            .members
            .values()
            .filter_map(|m| {
                if m.session_deadline <= now {
                    return Some((m.id.clone(), "its session expired"));
                }
                let late = m.state == MemberState::UnrevokedPartitions
                    && m.revocation_deadline
                        .is_some_and(|(deadline, epoch)| deadline <= now && epoch == m.epoch);
                late.then(|| (m.id.clone(), "it did not give partitions up in time"))
            })
            .collect();
        let fenced = !expired.is_empty();
        for (id, why) in expired {
            tracing::info!(member = %id, why, "consumer group member fenced");
            self.fence(&id);
        }
        fenced
    }

    /// Notes when the group lost its last member (wall-clock ms), for offset expiry.
    pub(crate) fn note_emptiness(&mut self, now_ms: i64) {
        if self.members.is_empty() {
            self.empty_since_ms.get_or_insert(now_ms);
        } else {
            self.empty_since_ms = None;
        }
    }

    /// OffsetCommit's and OffsetFetch's check of the member: a commit from outside
    /// the group (epoch < 0) only while it is empty; a member must name its current
    /// epoch, and commit with a version that carries it (v9+).
    pub(crate) fn check_offsets_member(
        &self,
        member_id: &str,
        member_epoch: i32,
        carries_epoch: bool,
    ) -> Result<(), GroupError> {
        if member_epoch < 0 && self.members.is_empty() {
            return Ok(());
        }
        let member = self
            .members
            .get(member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        if member.classic.is_some() {
            // A classic member commits with its generation, which is its epoch.
            return if member_epoch == member.epoch {
                Ok(())
            } else {
                Err(GroupError::IllegalGeneration)
            };
        }
        if !carries_epoch {
            return Err(GroupError::UnsupportedVersion);
        }
        if member_epoch != member.epoch {
            return Err(GroupError::StaleMemberEpoch);
        }
        Ok(())
    }

    pub(crate) fn describe(&self, config: &ConsumerGroupConfig) -> ConsumerGroupDescription {
        let empty = Assignment::new();
        ConsumerGroupDescription {
            state: self.state(),
            group_epoch: self.epoch,
            assignment_epoch: self.assignment_epoch,
            assignor: self.assignor(config).name(),
            members: self
                .members
                .values()
                .map(|m| ConsumerMemberDescription {
                    member_id: m.id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.epoch,
                    state: m.state,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    subscribed_topic_names: m.subscribed_names.clone(),
                    subscribed_topic_regex: m.regex.clone(),
                    assignment: m.assigned.clone(),
                    target_assignment: self.target.get(&m.id).unwrap_or(&empty).clone(),
                    classic: m.classic.is_some(),
                })
                .collect(),
        }
    }

    fn session_timeout(&self, config: &ConsumerGroupConfig) -> std::time::Duration {
        self.overrides
            .session_timeout
            .unwrap_or(config.session_timeout)
    }

    fn heartbeat_interval(&self, config: &ConsumerGroupConfig) -> std::time::Duration {
        self.overrides
            .heartbeat_interval
            .unwrap_or(config.heartbeat_interval)
    }
}

/// A heartbeat's epoch against the member's: newer is fenced; older only if it is
/// the one before (the answer carrying the new one was lost) and the member holds
/// nothing beyond its assignment.
fn check_epoch(member: &Member, request: &HeartbeatRequest) -> Result<(), GroupError> {
    let received = request.member_epoch;
    if received == member.epoch {
        return Ok(());
    }
    let lost_answer = received < member.epoch
        && received == member.previous_epoch
        && request
            .owned
            .as_ref()
            .is_some_and(|owned| is_within(owned, &member.assigned));
    if lost_answer {
        Ok(())
    } else {
        Err(GroupError::FencedMemberEpoch)
    }
}

/// Applies what the heartbeat changed to the member; whether its subscription did.
fn update_member(member: &mut Member, request: &HeartbeatRequest) -> bool {
    if request.instance_id.is_some() {
        member.instance_id.clone_from(&request.instance_id);
    }
    if request.rack_id.is_some() {
        member.rack_id.clone_from(&request.rack_id);
    }
    if let Ok(timeout) = u64::try_from(request.rebalance_timeout_ms) {
        member.rebalance_timeout = std::time::Duration::from_millis(timeout);
    }
    if request.server_assignor.is_some() {
        member.server_assignor.clone_from(&request.server_assignor);
    }
    member.client_id.clone_from(&request.client_id);
    member.client_host.clone_from(&request.client_host);
    let mut changed = false;
    if let Some(names) = &request.subscribed_topic_names {
        let mut names = names.clone();
        names.sort();
        names.dedup();
        if names != member.subscribed_names {
            member.subscribed_names = names;
            changed = true;
        }
    }
    if let Some(regex) = &request.subscribed_topic_regex
        && *regex != member.regex
    {
        member.regex.clone_from(regex);
        changed = true;
    }
    if member.epoch == JOIN_EPOCH && member.previous_epoch == -1 {
        // A new member: its subscription is new to the group.
        changed = true;
    }
    changed
}

fn partitions_of(assignment: &Assignment) -> impl Iterator<Item = (Uuid, i32)> + '_ {
    assignment
        .iter()
        .flat_map(|(topic, partitions)| partitions.iter().map(|p| (*topic, *p)))
}
