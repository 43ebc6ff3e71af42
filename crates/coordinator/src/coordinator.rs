//! Every group of this broker and their committed offsets.
//!
//! One lock guards the groups and the offset cache: every operation under it is a
//! few map updates, and waiting (a JoinGroup for the rebalance, a SyncGroup for the
//! leader) happens on channels after the lock is released. Committed offsets are
//! written to the metadata store before the cache and before the answer, one commit
//! at a time, so the cache always follows the store.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use spool_metadata::{CommittedOffset, MetadataError, MetadataStore};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::CoordinatorConfig;
use crate::consumer::group::ConsumerGroup;
use crate::consumer::{GroupOverrides, Topics};
use crate::error::GroupError;
use crate::group::{
    Group, GroupDescription, GroupState, JoinRequest, JoinResponse, JoinStep, SyncRequest,
    SyncResponse, SyncStep,
};
use crate::offsets::{GroupListing, GroupType};
use crate::ownership::{Ownership, OwnershipSlot};

mod committed;
mod consumer_groups;
mod consumer_state;
mod migration;

/// A group's offsets by (topic, partition).
type Offsets = BTreeMap<(String, i32), CommittedOffset>;

/// A group with members, and each member's client id and host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupClients {
    pub group_id: String,
    pub clients: Vec<(String, String)>,
}

/// The coordinator of every group on this broker.
#[derive(Debug)]
pub struct GroupCoordinator {
    config: CoordinatorConfig,
    store: Arc<dyn MetadataStore>,
    state: Mutex<State>,
    /// One offset write at a time, so that the cache follows the store's order.
    writes: tokio::sync::Mutex<()>,
    /// When this coordinator started (wall-clock ms): groups known only by their
    /// offsets count as empty since then, since their state before is not kept.
    started_ms: i64,
    /// Which groups this broker coordinates when several brokers share the metadata
    /// store (set by the broker's cluster membership); `None`: every group.
    ownership: OwnershipSlot,
}

#[derive(Debug, Default)]
pub(super) struct State {
    /// Groups of the classic protocol.
    pub(super) groups: HashMap<String, Group>,
    /// Groups of the consumer protocol (KIP-848). A group id is in one map at most.
    pub(super) consumer_groups: HashMap<String, ConsumerGroup>,
    /// Per-group overrides of the consumer protocol's settings, by group id.
    pub(super) group_overrides: HashMap<String, GroupOverrides>,
    /// Each group's own configs (the GROUP resource's), by group id: what makes
    /// its overrides.
    pub(super) group_configs: HashMap<String, BTreeMap<String, String>>,
    pub(super) offsets: HashMap<String, Offsets>,
    /// The coordinator epoch this broker claimed for each group it has written for:
    /// its writes carry it, and the store refuses them once another broker claims
    /// the group.
    pub(super) coordinator_epochs: HashMap<String, i64>,
    /// Consumer groups whose members the timers fenced: their state is written.
    pub(super) fenced_groups: BTreeSet<String>,
    /// Consumer groups the timers found empty and without offsets that the store
    /// keeps: they go from the store, then from memory.
    pub(super) forgotten_groups: BTreeSet<String>,
    /// Consumer-protocol groups the timers turned back into classic groups: their
    /// stored state goes.
    pub(super) downgraded_groups: BTreeSet<String>,
    /// The last incarnation given to a consumer group in memory.
    pub(super) incarnations: u64,
}

impl State {
    /// A new consumer group's incarnation.
    pub(super) fn next_incarnation(&mut self) -> u64 {
        self.incarnations += 1;
        self.incarnations
    }

    /// A group's overrides of the consumer protocol's settings (none: the broker's).
    pub(super) fn overrides_of(&self, group_id: &str) -> GroupOverrides {
        self.group_overrides
            .get(group_id)
            .copied()
            .unwrap_or_default()
    }

    /// Whether a group of either protocol is known by that id.
    pub(super) fn has_group(&self, group_id: &str) -> bool {
        self.groups.contains_key(group_id) || self.consumer_groups.contains_key(group_id)
    }

    /// Whether the group has members, of either protocol.
    pub(super) fn has_members(&self, group_id: &str) -> bool {
        self.groups.get(group_id).is_some_and(Group::has_members)
            || self
                .consumer_groups
                .get(group_id)
                .is_some_and(ConsumerGroup::has_members)
    }

    /// When the group lost its last member (wall-clock ms), if it has none.
    pub(super) fn empty_since_ms(&self, group_id: &str) -> Option<i64> {
        self.groups
            .get(group_id)
            .and_then(|g| g.empty_since_ms)
            .or_else(|| {
                self.consumer_groups
                    .get(group_id)
                    .and_then(|g| g.empty_since_ms)
            })
    }
}

impl GroupCoordinator {
    /// Loads the committed offsets and the consumer-protocol groups from the metadata
    /// store. Classic groups start empty: their members rejoin.
    pub async fn open(
        store: Arc<dyn MetadataStore>,
        config: CoordinatorConfig,
    ) -> Result<GroupCoordinator, MetadataError> {
        let mut state = State::default();
        for offset in store.committed_offsets().await? {
            state
                .offsets
                .entry(offset.group.clone())
                .or_default()
                .insert((offset.topic.clone(), offset.partition), offset);
        }
        let coordinator = GroupCoordinator {
            started_ms: config.clock.now_ms(),
            config,
            store,
            state: Mutex::new(state),
            writes: tokio::sync::Mutex::new(()),
            ownership: OwnershipSlot::default(),
        };
        coordinator.load_consumer_groups().await?;
        Ok(coordinator)
    }

    /// The monotonic time now, by the broker's clock.
    fn now(&self) -> Instant {
        Instant::from_std(self.config.clock.instant())
    }

    #[must_use]
    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    /// Makes this coordinator answer only for the groups `owns` says (a cluster's
    /// brokers share the groups out); the others get `NOT_COORDINATOR`, and committed
    /// offsets are read from the store before they are fetched (another broker may
    /// have coordinated the group since). Consumer-protocol groups are taken on from
    /// the store when their members come, once this broker has claimed them.
    pub fn set_ownership(&self, owns: Ownership) {
        self.ownership.set(owns);
        self.lock().consumer_groups.clear();
    }

    /// Whether this broker coordinates the group.
    #[must_use]
    pub fn owns(&self, group_id: &str) -> bool {
        self.ownership.owns(group_id)
    }

    /// Whether groups are shared out among brokers.
    pub(super) fn is_shared(&self) -> bool {
        self.ownership.is_shared()
    }

    /// Forgets the groups this broker no longer coordinates: their members (who find
    /// the new coordinator and join it), the claim and the cached offsets (claimed
    /// and read from the store again, should the group come back).
    pub fn release_unowned(&self) {
        let mut state = self.lock();
        let released: Vec<String> = state
            .groups
            .keys()
            .chain(state.consumer_groups.keys())
            .chain(state.coordinator_epochs.keys())
            .chain(state.offsets.keys())
            .filter(|group_id| !self.owns(group_id))
            .cloned()
            .collect();
        for group_id in released {
            let consumer_group = state.consumer_groups.remove(&group_id).is_some();
            if state.groups.remove(&group_id).is_some() || consumer_group {
                tracing::info!(group = %group_id, "the group moved to another coordinator");
            }
            state.coordinator_epochs.remove(&group_id);
            state.offsets.remove(&group_id);
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `operation` on the group (created empty if unknown), then notes whether
    /// it has members left.
    pub(super) fn with_group<T>(
        &self,
        group_id: &str,
        operation: impl FnOnce(&mut Group) -> T,
    ) -> T {
        let mut state = self.lock();
        let group = state
            .groups
            .entry(group_id.to_owned())
            .or_insert_with(Group::new);
        let result = operation(group);
        group.note_emptiness(self.config.clock.now_ms());
        result
    }

    /// JoinGroup: answered when the rebalance completes (or at once for errors and
    /// for members whose join changes nothing); a consumer-protocol group answers a
    /// classic member at once (`migration.rs`).
    pub async fn join(&self, request: JoinRequest, topics: &(dyn Topics + Sync)) -> JoinResponse {
        if request.group_id.is_empty() {
            return JoinResponse::failed(GroupError::InvalidGroupId, &request.member_id);
        }
        if !self.owns(&request.group_id) {
            return JoinResponse::failed(GroupError::NotCoordinator, &request.member_id);
        }
        if !self.has_any_group(&request.group_id) {
            let _writes = self.writes.lock().await;
            if let Err(error) = self.take_on_group(&request.group_id).await {
                return JoinResponse::failed(error, &request.member_id);
            }
        }
        if let Some(response) = self.join_consumer_group(&request, topics).await {
            return response;
        }
        if let Err(error) = self.become_classic(&request.group_id).await {
            return JoinResponse::failed(error, &request.member_id);
        }
        let member_id = request.member_id.clone();
        let group_id = request.group_id.clone();
        let step = self.with_group(&group_id, |group| {
            group.join(request, self.now(), &self.config)
        });
        match step {
            JoinStep::Done(response) => response,
            JoinStep::Wait(receiver) => receiver
                .await
                .unwrap_or_else(|_| JoinResponse::failed(GroupError::UnknownMemberId, &member_id)),
        }
    }

    /// A group id is of one protocol at a time: an empty consumer-protocol group
    /// becomes a classic one (forgotten in the store); one with members refuses
    /// classic members (they cannot be mixed in yet).
    async fn become_classic(&self, group_id: &str) -> Result<(), GroupError> {
        let stored = {
            let state = self.lock();
            match state.consumer_groups.get(group_id) {
                None => return Ok(()),
                Some(consumer) if consumer.has_members() => {
                    return Err(GroupError::InconsistentGroupProtocol);
                }
                Some(consumer) => consumer.stored.is_some(),
            }
        };
        let _writes = self.writes.lock().await;
        if stored {
            self.forget_consumer_group_locked(group_id).await?;
        }
        let mut state = self.lock();
        if state
            .consumer_groups
            .get(group_id)
            .is_some_and(ConsumerGroup::has_members)
        {
            // A consumer-protocol member joined meanwhile.
            if let Some(group) = state.consumer_groups.get_mut(group_id) {
                group.stored = None;
            }
            return Err(GroupError::InconsistentGroupProtocol);
        }
        state.consumer_groups.remove(group_id);
        Ok(())
    }

    /// SyncGroup: this member's assignment, once the leader has sent it.
    pub async fn sync(
        &self,
        request: SyncRequest,
        topics: &(dyn Topics + Sync),
    ) -> Result<SyncResponse, GroupError> {
        if !self.owns(&request.group_id) {
            return Err(GroupError::NotCoordinator);
        }
        if let Some(result) = self.sync_consumer_group(&request, topics).await {
            return result;
        }
        if !self.has_group(&request.group_id) {
            return Err(GroupError::UnknownMemberId);
        }
        let group_id = request.group_id.clone();
        let step = self.with_group(&group_id, |group| group.sync(request, self.now()));
        match step {
            SyncStep::Done(result) => result,
            SyncStep::Wait(receiver) => receiver
                .await
                .unwrap_or(Err(GroupError::RebalanceInProgress)),
        }
    }

    pub(super) fn has_group(&self, group_id: &str) -> bool {
        self.lock().groups.contains_key(group_id)
    }

    /// Whether a group of either protocol is in memory.
    pub(super) fn has_any_group(&self, group_id: &str) -> bool {
        self.lock().has_group(group_id)
    }

    /// Heartbeat.
    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), GroupError> {
        if !self.owns(group_id) {
            return Err(GroupError::NotCoordinator);
        }
        if let Some(result) =
            self.heartbeat_consumer_group(group_id, member_id, instance_id, generation)
        {
            return result;
        }
        if !self.has_group(group_id) {
            return Err(GroupError::UnknownMemberId);
        }
        self.with_group(group_id, |group| {
            group.heartbeat(member_id, instance_id, generation, self.now())
        })
    }

    /// LeaveGroup: one result per (member id, instance id); members of a group the
    /// coordinator does not know are unknown members.
    pub async fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Vec<Result<(), GroupError>> {
        if !self.owns(group_id) {
            return vec![Err(GroupError::NotCoordinator); members.len()];
        }
        if let Some(results) = self.leave_consumer_group(group_id, members).await {
            return results;
        }
        if !self.has_group(group_id) {
            return vec![Err(GroupError::UnknownMemberId); members.len()];
        }
        self.with_group(group_id, |group| {
            group.leave(members, self.now(), &self.config)
        })
    }

    /// Every group this broker coordinates: those with state in memory and those with
    /// only committed offsets.
    #[must_use]
    pub fn list(&self) -> Vec<GroupListing> {
        let state = self.lock();
        let mut listed: BTreeMap<&String, GroupListing> = BTreeMap::new();
        for group_id in state.offsets.keys().filter(|group_id| self.owns(group_id)) {
            let empty = listing(group_id, GroupState::Empty.name(), "", GroupType::Classic);
            listed.insert(group_id, empty);
        }
        for (group_id, group) in state.groups.iter().filter(|(id, _)| self.owns(id)) {
            let protocol_type = group.protocol_type().unwrap_or_default();
            let classic = listing(
                group_id,
                group.state.name(),
                protocol_type,
                GroupType::Classic,
            );
            listed.insert(group_id, classic);
        }
        for (group_id, group) in state.consumer_groups.iter().filter(|(id, _)| self.owns(id)) {
            let consumer = listing(
                group_id,
                group.state().name(),
                "consumer",
                GroupType::Consumer,
            );
            listed.insert(group_id, consumer);
        }
        listed.into_values().collect()
    }

    /// Every group coordinated here that has members, with each member's client id
    /// and host (what lanes need to know which group a fetching consumer is in).
    #[must_use]
    pub fn member_clients(&self) -> Vec<GroupClients> {
        let state = self.lock();
        let classic = (state.groups.iter())
            .filter(|(_, group)| group.has_members())
            .map(|(id, group)| (id, group.member_clients().collect::<Vec<_>>()));
        let consumer = (state.consumer_groups.iter())
            .filter(|(_, group)| group.has_members())
            .map(|(id, group)| (id, group.member_clients().collect::<Vec<_>>()));
        classic
            .chain(consumer)
            .filter(|(id, _)| self.owns(id))
            .map(|(id, clients)| GroupClients {
                group_id: id.clone(),
                clients: clients
                    .into_iter()
                    .map(|(client_id, host)| (client_id.to_owned(), host.to_owned()))
                    .collect(),
            })
            .collect()
    }

    /// The members of a group of either protocol (0 for a group it does not know).
    #[must_use]
    pub fn member_count(&self, group_id: &str) -> usize {
        let state = self.lock();
        state.groups.get(group_id).map_or_else(
            || {
                state
                    .consumer_groups
                    .get(group_id)
                    .map_or(0, ConsumerGroup::member_count)
            },
            Group::member_count,
        )
    }

    /// A group's state and members, as DescribeGroups reports them; `None` if the
    /// coordinator knows nothing of it. A consumer-protocol group is described as
    /// Kafka 4 does: its state, its assignor as the protocol, each member's
    /// subscription and assignment in the consumer protocol's bytes.
    #[must_use]
    pub fn describe(&self, group_id: &str, topics: &dyn Topics) -> Option<GroupDescription> {
        let state = self.lock();
        if let Some(group) = state.consumer_groups.get(group_id) {
            return Some(group.describe_as_classic(&self.config.consumer, topics));
        }
        match state.groups.get(group_id) {
            Some(group) => Some(group.describe()),
            None => state
                .offsets
                .contains_key(group_id)
                .then(|| GroupDescription {
                    state: GroupState::Empty.name(),
                    protocol_type: String::new(),
                    protocol: String::new(),
                    members: Vec::new(),
                }),
        }
    }

    /// The members' metadata for the chosen protocol (a consumer group's carries its
    /// subscribed topics).
    #[must_use]
    pub fn member_metadata(&self, group_id: &str) -> Vec<Bytes> {
        self.lock()
            .groups
            .get(group_id)
            .map(Group::member_metadata)
            .unwrap_or_default()
    }

    /// Expires sessions and rebalance timeouts; forgets unused groups without offsets.
    pub fn tick(&self) {
        let now = self.now();
        let now_ms = self.config.clock.now_ms();
        let mut state = self.lock();
        let State {
            groups,
            consumer_groups,
            offsets,
            fenced_groups,
            forgotten_groups,
            ..
        } = &mut *state;
        for group in groups.values_mut() {
            group.tick(now, &self.config);
            group.note_emptiness(now_ms);
        }
        groups.retain(|group_id, group| !group.is_unused() || offsets.contains_key(group_id));
        for (group_id, group) in consumer_groups.iter_mut() {
            if group.tick(now) {
                fenced_groups.insert(group_id.clone());
            }
            group.note_emptiness(now_ms);
        }
        let classic_only: Vec<String> = consumer_groups
            .iter()
            .filter(|(_, group)| group.only_classic_members())
            .map(|(group_id, _)| group_id.clone())
            .collect();
        consumer_groups.retain(|group_id, group| {
            if group.has_members() || offsets.contains_key(group_id) {
                return true;
            }
            if group.stored.is_some() {
                // Kept in memory until the store forgot it too, so that a member
                // coming meanwhile does not take the stored group on again.
                forgotten_groups.insert(group_id.clone());
                return true;
            }
            false
        });
        for group_id in classic_only {
            if self.downgrade_if_classic(&mut state, &group_id) {
                state.fenced_groups.remove(&group_id);
                state.downgraded_groups.insert(group_id);
            }
        }
    }

    /// The coordinator's timers, until `stop` turns true: sessions and rebalance
    /// timeouts every `tick` (what they change written to the store), and, in a task
    /// of its own (it waits for the store), offset expiry every
    /// `offsets.retention.check.interval.ms`.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let expiry = tokio::spawn(self.clone().expire_periodically(stop.clone()));
        let mut ticks = tokio::time::interval(self.config.tick);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                _ = ticks.tick() => {
                    self.tick();
                    self.save_timed_changes().await;
                }
            }
        }
        let _ = expiry.await;
    }
}

fn listing(
    group_id: &str,
    state: &'static str,
    protocol_type: &str,
    group_type: GroupType,
) -> GroupListing {
    GroupListing {
        group_id: group_id.to_owned(),
        state,
        protocol_type: protocol_type.to_owned(),
        group_type,
    }
}
