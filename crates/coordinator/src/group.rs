//! One consumer group: members, generation, the chosen protocol and the state machine
//! of Kafka's classic group protocol.
//!
//! ```text
//!            join                 all rejoined (or          leader's
//!  Empty ───────────▶ Preparing ── rebalance timeout) ──▶ Completing ── SyncGroup ──▶ Stable
//!    ▲               Rebalance ◀───────── join, leave, expiry ────────────────────────┘
//!    └──────── no member left when a rebalance completes ─────────┘
//! ```
//!
//! Nothing here blocks or reads a clock: the caller passes `now`, and a member whose
//! JoinGroup or SyncGroup must wait gets a channel that the rebalance answers.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::config::CoordinatorConfig;
use crate::error::GroupError;

pub(crate) mod migration;

/// Kafka's group states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    /// The state as Kafka names it in ListGroups and DescribeGroups.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// A JoinGroup request, as the coordinator needs it.
#[derive(Debug, Clone)]
pub struct JoinRequest {
    pub group_id: String,
    /// Empty for a member joining for the first time.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout: Duration,
    pub rebalance_timeout: Duration,
    pub protocol_type: String,
    /// (name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a new dynamic member first gets its id with `MEMBER_ID_REQUIRED`
    /// and must rejoin with it.
    pub require_known_member_id: bool,
}

/// A member as the leader sees it in its JoinGroup response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// Its metadata for the chosen protocol.
    pub metadata: Bytes,
}

/// The answer to a JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinResponse {
    pub error: Option<GroupError>,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// Every member, for the leader only (it computes the assignment).
    pub members: Vec<JoinedMember>,
    /// A static leader that rejoined a stable group: it is told the members (so it
    /// watches their topics as leaders do) but need not assign (KIP-814; JoinGroup
    /// v9 says so, older clients send an assignment that the stable group ignores).
    pub skip_assignment: bool,
}

impl JoinResponse {
    /// A refused join: the error, no generation, no members.
    pub fn failed(error: GroupError, member_id: &str) -> JoinResponse {
        JoinResponse {
            error: Some(error),
            generation: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            member_id: member_id.to_owned(),
            members: Vec::new(),
            skip_assignment: false,
        }
    }
}

/// A SyncGroup request.
#[derive(Debug, Clone)]
pub struct SyncRequest {
    pub group_id: String,
    pub generation: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+: checked against the group's when present.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// The leader's assignment, by member id (empty from followers).
    pub assignments: Vec<(String, Bytes)>,
}

/// The answer to a SyncGroup: this member's assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncResponse {
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

/// What DescribeGroups reports of a member.
#[derive(Debug, Clone)]
pub struct MemberDescription {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Its metadata for the chosen protocol (empty before the first rebalance).
    pub metadata: Bytes,
    pub assignment: Bytes,
}

/// What DescribeGroups reports of a group.
#[derive(Debug, Clone)]
pub struct GroupDescription {
    /// As Kafka names it: a classic group's [`GroupState`], or a consumer-protocol
    /// group's state (`Assigning`, `Reconciling`, ...).
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<MemberDescription>,
}

/// A JoinGroup answered at once, or once the rebalance completes.
#[derive(Debug)]
pub(crate) enum JoinStep {
    Done(JoinResponse),
    Wait(oneshot::Receiver<JoinResponse>),
}

type SyncResult = Result<SyncResponse, GroupError>;

/// A SyncGroup answered at once, or when the leader's assignment arrives.
#[derive(Debug)]
pub(crate) enum SyncStep {
    Done(SyncResult),
    Wait(oneshot::Receiver<SyncResult>),
}

#[derive(Debug)]
struct Member {
    instance_id: Option<String>,
    client_id: String,
    client_host: String,
    session_timeout: Duration,
    rebalance_timeout: Duration,
    protocols: Vec<(String, Bytes)>,
    assignment: Bytes,
    /// When the session ends without a heartbeat.
    deadline: Instant,
    /// Join order: the longest-standing member leads.
    joined: u64,
    awaiting_join: Option<oneshot::Sender<JoinResponse>>,
    awaiting_sync: Option<oneshot::Sender<SyncResult>>,
}

impl Member {
    fn fail_waiters(&mut self, error: GroupError, id: &str) {
        if let Some(waiter) = self.awaiting_join.take() {
            let _ = waiter.send(JoinResponse::failed(error, id));
        }
        if let Some(waiter) = self.awaiting_sync.take() {
            let _ = waiter.send(Err(error));
        }
    }

    fn metadata_for(&self, protocol: Option<&str>) -> Bytes {
        self.protocols
            .iter()
            .find(|(name, _)| Some(name.as_str()) == protocol)
            .map(|(_, metadata)| metadata.clone())
            .unwrap_or_default()
    }
}

/// One group's state.
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) state: GroupState,
    generation: i32,
    protocol_type: Option<String>,
    protocol: Option<String>,
    leader: Option<String>,
    members: HashMap<String, Member>,
    /// Static members: `group.instance.id` → member id.
    instances: HashMap<String, String>,
    /// Member ids handed out with `MEMBER_ID_REQUIRED`, valid until then.
    pending: HashMap<String, Instant>,
    rebalance_deadline: Option<Instant>,
    /// When members that have not sent SyncGroup in CompletingRebalance are removed.
    sync_deadline: Option<Instant>,
    /// The initial rebalance delay of a group that was empty.
    join_not_before: Option<Instant>,
    joins: u64,
    /// Wall-clock ms when the group last lost its last member, for offset expiry.
    pub(crate) empty_since_ms: Option<i64>,
}

impl Group {
    pub(crate) fn new() -> Group {
        Group {
            state: GroupState::Empty,
            generation: 0,
            protocol_type: None,
            protocol: None,
            leader: None,
            members: HashMap::new(),
            instances: HashMap::new(),
            pending: HashMap::new(),
            rebalance_deadline: None,
            sync_deadline: None,
            join_not_before: None,
            joins: 0,
            empty_since_ms: None,
        }
    }

    /// Whether the group has members (pending ones, not yet joined, do not count).
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

    /// Nothing left to remember: no members, none about to join.
    pub(crate) fn is_unused(&self) -> bool {
        self.state == GroupState::Empty && self.members.is_empty() && self.pending.is_empty()
    }

    /// Every topic-subscription metadata of the members for the chosen protocol
    /// (the broker reads subscribed topics from it).
    pub(crate) fn member_metadata(&self) -> Vec<Bytes> {
        let protocol = self.protocol.as_deref();
        self.members
            .values()
            .map(|m| m.metadata_for(protocol))
            .collect()
    }

    pub(crate) fn describe(&self) -> GroupDescription {
        let protocol = self.protocol.as_deref();
        GroupDescription {
            state: self.state.name(),
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            protocol: self.protocol.clone().unwrap_or_default(),
            members: self
                .members
                .iter()
                .map(|(id, m)| MemberDescription {
                    member_id: id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: m.metadata_for(protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    pub(crate) fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }

    /// Handles a JoinGroup.
    pub(crate) fn join(
        &mut self,
        request: JoinRequest,
        now: Instant,
        config: &CoordinatorConfig,
    ) -> JoinStep {
        let fail = |error| JoinStep::Done(JoinResponse::failed(error, &request.member_id));
        if !(config.min_session_timeout..=config.max_session_timeout)
            .contains(&request.session_timeout)
        {
            return fail(GroupError::InvalidSessionTimeout);
        }
        if !self.accepts_protocols(&request) {
            return fail(GroupError::InconsistentGroupProtocol);
        }
        if let Some(instance) = request.group_instance_id.clone() {
            return self.join_static(request, instance, now, config);
        }
        if request.member_id.is_empty() {
            let id = new_member_id(&request.client_id);
            if request.require_known_member_id {
                self.pending
                    .insert(id.clone(), now + request.session_timeout);
                return JoinStep::Done(JoinResponse::failed(GroupError::MemberIdRequired, &id));
            }
            return self.join_new(id, request, now, config);
        }
        if self.pending.remove(&request.member_id).is_some() {
            let id = request.member_id.clone();
            return self.join_new(id, request, now, config);
        }
        self.join_known(request, now, config)
    }

    /// A member of the group or its protocols are new: (re)join and rebalance.
    fn join_new(
        &mut self,
        id: String,
        request: JoinRequest,
        now: Instant,
        config: &CoordinatorConfig,
    ) -> JoinStep {
        self.joins += 1;
        let member = Member {
            instance_id: request.group_instance_id.clone(),
            client_id: request.client_id,
            client_host: request.client_host,
            session_timeout: request.session_timeout,
            rebalance_timeout: request.rebalance_timeout,
            protocols: request.protocols,
            assignment: Bytes::new(),
            deadline: now + request.session_timeout,
            joined: self.joins,
            awaiting_join: None,
            awaiting_sync: None,
        };
        if let Some(instance) = &member.instance_id {
            self.instances.insert(instance.clone(), id.clone());
        }
        if self.members.is_empty() {
            // The first member decides the group's type; an empty group keeps the
            // type of its last members, so that ListGroups tells a consumer group
            // from an offsets-only one.
            self.protocol_type = Some(request.protocol_type);
        }
        self.members.insert(id.clone(), member);
        if let Some(not_before) = &mut self.join_not_before {
            // A new member during the initial delay: wait a little longer for more.
            let cap = self.rebalance_deadline.unwrap_or(now);
            *not_before = (now + config.initial_rebalance_delay).min(cap);
        }
        self.prepare_rebalance(now, config);
        self.await_join(&id, now)
    }

    fn join_known(
        &mut self,
        request: JoinRequest,
        now: Instant,
        config: &CoordinatorConfig,
    ) -> JoinStep {
        let id = request.member_id.clone();
        let is_leader = self.leader.as_deref() == Some(id.as_str());
        let Some(member) = self.members.get_mut(&id) else {
            return JoinStep::Done(JoinResponse::failed(GroupError::UnknownMemberId, &id));
        };
        let unchanged = member.protocols == request.protocols;
        member.protocols = request.protocols;
        member.session_timeout = request.session_timeout;
        member.rebalance_timeout = request.rebalance_timeout;
        member.deadline = now + member.session_timeout;
        match self.state {
            GroupState::PreparingRebalance => self.await_join(&id, now),
            GroupState::CompletingRebalance if unchanged => {
                // It lost the JoinGroup answer: give it again.
                JoinStep::Done(self.join_response(&id, is_leader))
            }
            GroupState::Stable if unchanged && !is_leader => {
                JoinStep::Done(self.join_response(&id, false))
            }
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.prepare_rebalance(now, config);
                self.await_join(&id, now)
            }
            GroupState::Empty | GroupState::Dead => {
                JoinStep::Done(JoinResponse::failed(GroupError::UnknownMemberId, &id))
            }
        }
    }

    /// A member with a `group.instance.id`: a restart within the session timeout takes
    /// over the old member's place (fencing the old id) without a rebalance.
    fn join_static(
        &mut self,
        request: JoinRequest,
        instance: String,
        now: Instant,
        config: &CoordinatorConfig,
    ) -> JoinStep {
        let Some(old_id) = self.instances.get(&instance).cloned() else {
            if !request.member_id.is_empty() {
                return JoinStep::Done(JoinResponse::failed(
                    GroupError::UnknownMemberId,
                    &request.member_id,
                ));
            }
            let id = new_member_id(&request.client_id);
            return self.join_new(id, request, now, config);
        };
        if !request.member_id.is_empty() {
            if request.member_id != old_id {
                return JoinStep::Done(JoinResponse::failed(
                    GroupError::FencedInstanceId,
                    &request.member_id,
                ));
            }
            return self.join_known(request, now, config);
        }
        // The instance restarted: the member continues under a new id.
        let id = new_member_id(&request.client_id);
        let Some(mut member) = self.members.remove(&old_id) else {
            return self.join_new(id, request, now, config);
        };
        member.fail_waiters(GroupError::FencedInstanceId, &old_id);
        let protocol = self.protocol.as_deref();
        let old_topics = subscription_of(&member.protocols, protocol);
        let new_topics = subscription_of(&request.protocols, protocol);
        let subscription_changed = old_topics.is_some() && old_topics != new_topics;
        member.protocols = request.protocols;
        member.client_id = request.client_id;
        member.client_host = request.client_host;
        member.session_timeout = request.session_timeout;
        member.rebalance_timeout = request.rebalance_timeout;
        member.deadline = now + member.session_timeout;
        self.members.insert(id.clone(), member);
        self.instances.insert(instance, id.clone());
        let was_leader = self.leader.as_deref() == Some(old_id.as_str());
        if was_leader {
            self.leader = Some(id.clone());
        }
        // Its subscription bytes may differ (a new incarnation's owned partitions,
        // generation, user data): what matters is that the group's protocol and the
        // member's topics stay. The leader too gets its place back without a
        // rebalance (KIP-814): it is told the members and that it need not assign.
        let protocol_stays = self.select_protocol() == self.protocol;
        match self.state {
            GroupState::Stable if protocol_stays && !subscription_changed => {
                let mut response = self.join_response(&id, was_leader);
                response.skip_assignment = was_leader;
                JoinStep::Done(response)
            }
            GroupState::PreparingRebalance => self.await_join(&id, now),
            _ => {
                self.prepare_rebalance(now, config);
                self.await_join(&id, now)
            }
        }
    }

    fn accepts_protocols(&self, request: &JoinRequest) -> bool {
        if request.protocol_type.is_empty() || request.protocols.is_empty() {
            return false;
        }
        let others: Vec<&Member> = self
            .members
            .iter()
            .filter(|(id, _)| **id != request.member_id)
            .map(|(_, m)| m)
            .collect();
        if others.is_empty() {
            return true;
        }
        self.protocol_type.as_deref() == Some(request.protocol_type.as_str())
            && request.protocols.iter().any(|(name, _)| {
                others
                    .iter()
                    .all(|m| m.protocols.iter().any(|(n, _)| n == name))
            })
    }

    /// Starts a rebalance unless one is under way.
    fn prepare_rebalance(&mut self, now: Instant, config: &CoordinatorConfig) {
        if self.state == GroupState::PreparingRebalance {
            return;
        }
        let was_empty = self.state == GroupState::Empty;
        for member in self.members.values_mut() {
            if let Some(waiter) = member.awaiting_sync.take() {
                let _ = waiter.send(Err(GroupError::RebalanceInProgress));
            }
            member.assignment = Bytes::new();
        }
        self.state = GroupState::PreparingRebalance;
        self.sync_deadline = None;
        let deadline = now + self.longest_rebalance_timeout();
        self.rebalance_deadline = Some(deadline);
        self.join_not_before =
            was_empty.then(|| (now + config.initial_rebalance_delay).min(deadline));
    }

    /// The longest rebalance timeout among the members: how long a rebalance (and the
    /// sync after it) may take.
    fn longest_rebalance_timeout(&self) -> Duration {
        self.members
            .values()
            .map(|m| m.rebalance_timeout)
            .max()
            .unwrap_or_default()
    }

    /// Parks a member's JoinGroup until the rebalance completes.
    fn await_join(&mut self, id: &str, now: Instant) -> JoinStep {
        let (sender, receiver) = oneshot::channel();
        if let Some(member) = self.members.get_mut(id) {
            member.awaiting_join = Some(sender);
        }
        self.try_complete_join(now);
        JoinStep::Wait(receiver)
    }

    /// Completes the rebalance once every member has rejoined (after the initial delay
    /// of a group that was empty), or at the rebalance timeout without the others.
    fn try_complete_join(&mut self, now: Instant) {
        if self.state != GroupState::PreparingRebalance {
            return;
        }
        // Members handed an id with MEMBER_ID_REQUIRED are about to join: wait for
        // them too (until their id expires), as Kafka does.
        let all_joined =
            self.members.values().all(|m| m.awaiting_join.is_some()) && self.pending.is_empty();
        let delay_over = self.join_not_before.is_none_or(|t| now >= t);
        let timed_out = self.rebalance_deadline.is_some_and(|d| now >= d);
        // The last members left: the group is Empty at once (a member handed an id
        // that joins later starts a new rebalance), so that it can be deleted.
        let all_left = self.members.is_empty();
        if !(all_joined && delay_over || timed_out || all_left) {
            return;
        }
        // Dynamic members that did not rejoin are gone; static ones keep their place
        // until their session ends (they may be restarting).
        let late: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| m.awaiting_join.is_none() && m.instance_id.is_none())
            .map(|(id, _)| id.clone())
            .collect();
        for id in late {
            self.remove_member(&id, GroupError::UnknownMemberId);
        }
        self.rebalance_deadline = None;
        self.join_not_before = None;
        self.generation += 1;
        if self.members.is_empty() {
            self.state = GroupState::Empty;
            self.protocol = None;
            self.leader = None;
            return;
        }
        self.protocol = self.select_protocol();
        let leader_stays = self
            .leader
            .as_ref()
            .is_some_and(|l| self.members.contains_key(l));
        if !leader_stays {
            self.leader = self
                .members
                .iter()
                .min_by_key(|(_, m)| m.joined)
                .map(|(id, _)| id.clone());
        }
        self.state = GroupState::CompletingRebalance;
        self.sync_deadline = Some(now + self.longest_rebalance_timeout());
        let leader = self.leader.clone().unwrap_or_default();
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let response = self.join_response(&id, id == leader);
            if let Some(member) = self.members.get_mut(&id) {
                member.deadline = now + member.session_timeout;
                if let Some(waiter) = member.awaiting_join.take() {
                    let _ = waiter.send(response);
                }
            }
        }
    }

    /// The protocol every member supports that most members prefer.
    fn select_protocol(&self) -> Option<String> {
        let mut members: Vec<&Member> = self.members.values().collect();
        members.sort_by_key(|m| m.joined);
        let first = members.first()?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(name, _)| name)
            .filter(|name| {
                members
                    .iter()
                    .all(|m| m.protocols.iter().any(|(n, _)| n == *name))
            })
            .collect();
        let votes = |candidate: &String| {
            members
                .iter()
                .filter(|m| {
                    m.protocols
                        .iter()
                        .map(|(name, _)| name)
                        .find(|name| candidates.contains(name))
                        == Some(candidate)
                })
                .count()
        };
        // The earliest candidate among those with the most votes.
        let mut best: Option<(&String, usize)> = None;
        for candidate in &candidates {
            let count = votes(candidate);
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((candidate, count));
            }
        }
        best.map(|(name, _)| name.clone())
    }

    fn join_response(&self, id: &str, as_leader: bool) -> JoinResponse {
        let protocol = self.protocol.as_deref();
        let members = if as_leader {
            let mut members: Vec<(&String, &Member)> = self.members.iter().collect();
            members.sort_by_key(|(_, m)| m.joined);
            members
                .into_iter()
                .map(|(member_id, m)| JoinedMember {
                    member_id: member_id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    metadata: m.metadata_for(protocol),
                })
                .collect()
        } else {
            Vec::new()
        };
        JoinResponse {
            error: None,
            generation: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            member_id: id.to_owned(),
            members,
            skip_assignment: false,
        }
    }

    /// Checks that a request comes from a current member (and, for a static member,
    /// from the instance's current id), and keeps its session alive.
    fn check_member(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        now: Instant,
    ) -> Result<(), GroupError> {
        if let Some(instance) = instance_id
            && let Some(current) = self.instances.get(instance)
            && current != member_id
        {
            return Err(GroupError::FencedInstanceId);
        }
        let member = self
            .members
            .get_mut(member_id)
            .ok_or(GroupError::UnknownMemberId)?;
        member.deadline = now + member.session_timeout;
        Ok(())
    }

    /// Handles a SyncGroup.
    pub(crate) fn sync(&mut self, request: SyncRequest, now: Instant) -> SyncStep {
        if let Err(error) = self.check_member(
            &request.member_id,
            request.group_instance_id.as_deref(),
            now,
        ) {
            return SyncStep::Done(Err(error));
        }
        if request.generation != self.generation {
            return SyncStep::Done(Err(GroupError::IllegalGeneration));
        }
        let type_differs = request
            .protocol_type
            .as_ref()
            .is_some_and(|t| Some(t) != self.protocol_type.as_ref());
        let name_differs = request
            .protocol_name
            .as_ref()
            .is_some_and(|n| Some(n) != self.protocol.as_ref());
        if type_differs || name_differs {
            return SyncStep::Done(Err(GroupError::InconsistentGroupProtocol));
        }
        match self.state {
            GroupState::Empty | GroupState::Dead => {
                SyncStep::Done(Err(GroupError::UnknownMemberId))
            }
            GroupState::PreparingRebalance => SyncStep::Done(Err(GroupError::RebalanceInProgress)),
            GroupState::Stable => SyncStep::Done(Ok(self.sync_response(&request.member_id))),
            GroupState::CompletingRebalance => {
                let (sender, receiver) = oneshot::channel();
                if let Some(member) = self.members.get_mut(&request.member_id) {
                    member.awaiting_sync = Some(sender);
                }
                if self.leader.as_deref() == Some(request.member_id.as_str()) {
                    self.complete_sync(request.assignments);
                }
                SyncStep::Wait(receiver)
            }
        }
    }

    /// The leader's assignment arrived: every member gets its part.
    fn complete_sync(&mut self, assignments: Vec<(String, Bytes)>) {
        let mut assignments: HashMap<String, Bytes> = assignments.into_iter().collect();
        for (id, member) in &mut self.members {
            member.assignment = assignments.remove(id).unwrap_or_default();
        }
        self.state = GroupState::Stable;
        self.sync_deadline = None;
        let ids: Vec<String> = self.members.keys().cloned().collect();
        for id in ids {
            let response = self.sync_response(&id);
            if let Some(waiter) = self
                .members
                .get_mut(&id)
                .and_then(|m| m.awaiting_sync.take())
            {
                let _ = waiter.send(Ok(response));
            }
        }
    }

    fn sync_response(&self, id: &str) -> SyncResponse {
        SyncResponse {
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol.clone(),
            assignment: self
                .members
                .get(id)
                .map(|m| m.assignment.clone())
                .unwrap_or_default(),
        }
    }

    /// Handles a Heartbeat.
    pub(crate) fn heartbeat(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now: Instant,
    ) -> Result<(), GroupError> {
        self.check_member(member_id, instance_id, now)?;
        if generation != self.generation {
            return Err(GroupError::IllegalGeneration);
        }
        match self.state {
            GroupState::PreparingRebalance => Err(GroupError::RebalanceInProgress),
            GroupState::Empty | GroupState::Dead => Err(GroupError::UnknownMemberId),
            GroupState::CompletingRebalance | GroupState::Stable => Ok(()),
        }
    }

    /// Checks an OffsetCommit, as Kafka does: with generation -1 while the group is
    /// Empty it is a commit from outside group management (a consumer using
    /// `assign`); otherwise it must come from a current member of this generation.
    pub(crate) fn check_commit(
        &mut self,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        now: Instant,
    ) -> Result<(), GroupError> {
        if generation < 0 && self.state == GroupState::Empty {
            return Ok(());
        }
        // Membership and generation first, as Kafka checks them: a member of an
        // older generation is told so even while the group rebalances.
        self.check_member(member_id, instance_id, now)?;
        if generation != self.generation {
            return Err(GroupError::IllegalGeneration);
        }
        // The member knows the new generation but not yet its assignment. (While
        // the group prepares a rebalance, the current generation may still commit:
        // consumers commit what they processed as they give partitions up.)
        if self.state == GroupState::CompletingRebalance {
            return Err(GroupError::RebalanceInProgress);
        }
        Ok(())
    }

    /// Handles the members of a LeaveGroup: (member id, instance id) each.
    pub(crate) fn leave(
        &mut self,
        leaving: &[(String, Option<String>)],
        now: Instant,
        config: &CoordinatorConfig,
    ) -> Vec<Result<(), GroupError>> {
        let mut results = Vec::with_capacity(leaving.len());
        let mut removed = false;
        for (member_id, instance_id) in leaving {
            let id = match instance_id {
                Some(instance) => match self.instances.get(instance) {
                    Some(id) if member_id.is_empty() || id == member_id => Ok(id.clone()),
                    Some(_) => Err(GroupError::FencedInstanceId),
                    None => Err(GroupError::UnknownMemberId),
                },
                None if self.pending.remove(member_id).is_some() => {
                    results.push(Ok(()));
                    continue;
                }
                None if self.members.contains_key(member_id) => Ok(member_id.clone()),
                None => Err(GroupError::UnknownMemberId),
            };
            match id {
                Ok(id) => {
                    self.remove_member(&id, GroupError::UnknownMemberId);
                    removed = true;
                    results.push(Ok(()));
                }
                Err(error) => results.push(Err(error)),
            }
        }
        if removed {
            self.members_changed(now, config);
        }
        results
    }

    /// Ends sessions that saw no heartbeat in time, forgets unclaimed member ids, and
    /// completes a rebalance whose time is up.
    pub(crate) fn tick(&mut self, now: Instant, config: &CoordinatorConfig) {
        self.pending.retain(|_, until| *until > now);
        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|(_, m)| {
                m.awaiting_join.is_none() && m.awaiting_sync.is_none() && m.deadline <= now
            })
            .map(|(id, _)| id.clone())
            .collect();
        if !expired.is_empty() {
            for id in &expired {
                tracing::info!(member = %id, "group member's session expired");
                self.remove_member(id, GroupError::UnknownMemberId);
            }
            self.members_changed(now, config);
        }
        if self.state == GroupState::CompletingRebalance
            && self.sync_deadline.is_some_and(|d| now >= d)
        {
            // Members (the leader among them) that never sent SyncGroup: remove them
            // and rebalance, so that the others are not left waiting.
            let unsynced: Vec<String> = self
                .members
                .iter()
                .filter(|(_, m)| m.awaiting_sync.is_none())
                .map(|(id, _)| id.clone())
                .collect();
            for id in &unsynced {
                tracing::info!(member = %id, "group member did not sync in time");
                self.remove_member(id, GroupError::UnknownMemberId);
            }
            self.members_changed(now, config);
        }
        self.try_complete_join(now);
    }

    /// Notes when the group lost its last member (wall-clock ms), for offset expiry.
    pub(crate) fn note_emptiness(&mut self, now_ms: i64) {
        if self.members.is_empty() {
            self.empty_since_ms.get_or_insert(now_ms);
        } else {
            self.empty_since_ms = None;
        }
    }

    fn members_changed(&mut self, now: Instant, config: &CoordinatorConfig) {
        match self.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.prepare_rebalance(now, config);
            }
            GroupState::Empty if !self.members.is_empty() => self.prepare_rebalance(now, config),
            _ => {}
        }
        self.try_complete_join(now);
    }

    fn remove_member(&mut self, id: &str, error: GroupError) {
        if let Some(mut member) = self.members.remove(id) {
            member.fail_waiters(error, id);
            if let Some(instance) = &member.instance_id
                && self.instances.get(instance).map(String::as_str) == Some(id)
            {
                self.instances.remove(instance);
            }
        }
        if self.leader.as_deref() == Some(id) {
            self.leader = None;
        }
    }
}

/// The topics a member subscribes to under `protocol`, when its metadata is the
/// consumer protocol's (other group types: `None`, not compared).
fn subscription_of(protocols: &[(String, Bytes)], protocol: Option<&str>) -> Option<Vec<String>> {
    let (_, metadata) = protocols
        .iter()
        .find(|(name, _)| Some(name.as_str()) == protocol)?;
    let mut topics = spool_protocol::consumer_protocol::subscribed_topics(metadata)?;
    topics.sort();
    Some(topics)
}

/// A member id: the client id and a random part, as Kafka makes them.
pub(crate) fn new_member_id(client_id: &str) -> String {
    format!("{client_id}-{}", uuid::Uuid::new_v4())
}

#[cfg(test)]
mod tests;
