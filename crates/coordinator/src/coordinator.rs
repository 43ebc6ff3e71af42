//! Every group of this broker and their committed offsets.
//!
//! One lock guards the groups and the offset cache: every operation under it is a
//! few map updates, and waiting (a JoinGroup for the rebalance, a SyncGroup for the
//! leader) happens on channels after the lock is released. Committed offsets are
//! written to the metadata store before the cache and before the answer, one commit
//! at a time, so the cache always follows the store.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use spool_metadata::{CommittedOffset, MetadataError, MetadataStore};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::config::CoordinatorConfig;
use crate::error::GroupError;
use crate::group::{
    Group, GroupDescription, GroupState, JoinRequest, JoinResponse, JoinStep, SyncRequest,
    SyncResponse, SyncStep,
};
use crate::offsets::{CommitRequest, GroupListing};

/// A group's offsets by (topic, partition).
type Offsets = BTreeMap<(String, i32), CommittedOffset>;

/// The coordinator of every group on this broker.
#[derive(Debug)]
pub struct GroupCoordinator {
    config: CoordinatorConfig,
    store: Arc<dyn MetadataStore>,
    state: Mutex<State>,
    /// One offset write at a time, so that the cache follows the store's order.
    writes: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct State {
    groups: HashMap<String, Group>,
    offsets: HashMap<String, Offsets>,
}

impl GroupCoordinator {
    /// Loads the committed offsets from the metadata store. Groups start empty: their
    /// members rejoin.
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
        Ok(GroupCoordinator {
            config,
            store,
            state: Mutex::new(state),
            writes: tokio::sync::Mutex::new(()),
        })
    }

    #[must_use]
    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `operation` on the group (created empty if unknown), then notes whether
    /// it has members left.
    fn with_group<T>(&self, group_id: &str, operation: impl FnOnce(&mut Group) -> T) -> T {
        let mut state = self.lock();
        let group = state
            .groups
            .entry(group_id.to_owned())
            .or_insert_with(Group::new);
        let result = operation(group);
        group.note_emptiness(now_ms());
        result
    }

    /// JoinGroup: answered when the rebalance completes (or at once for errors and
    /// for members whose join changes nothing).
    pub async fn join(&self, request: JoinRequest) -> JoinResponse {
        if request.group_id.is_empty() {
            return failed_join(GroupError::InvalidGroupId, &request.member_id);
        }
        let member_id = request.member_id.clone();
        let group_id = request.group_id.clone();
        let step = self.with_group(&group_id, |group| {
            group.join(request, Instant::now(), &self.config)
        });
        match step {
            JoinStep::Done(response) => response,
            JoinStep::Wait(receiver) => receiver
                .await
                .unwrap_or_else(|_| failed_join(GroupError::UnknownMemberId, &member_id)),
        }
    }

    /// SyncGroup: this member's assignment, once the leader has sent it.
    pub async fn sync(&self, request: SyncRequest) -> Result<SyncResponse, GroupError> {
        if !self.has_group(&request.group_id) {
            return Err(GroupError::UnknownMemberId);
        }
        let group_id = request.group_id.clone();
        let step = self.with_group(&group_id, |group| group.sync(request, Instant::now()));
        match step {
            SyncStep::Done(result) => result,
            SyncStep::Wait(receiver) => receiver
                .await
                .unwrap_or(Err(GroupError::RebalanceInProgress)),
        }
    }

    fn has_group(&self, group_id: &str) -> bool {
        self.lock().groups.contains_key(group_id)
    }

    /// Heartbeat.
    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), GroupError> {
        if !self.has_group(group_id) {
            return Err(GroupError::UnknownMemberId);
        }
        self.with_group(group_id, |group| {
            group.heartbeat(member_id, instance_id, generation, Instant::now())
        })
    }

    /// LeaveGroup: one result per (member id, instance id).
    pub fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        if !self.has_group(group_id) {
            return Err(GroupError::UnknownMemberId);
        }
        Ok(self.with_group(group_id, |group| {
            group.leave(members, Instant::now(), &self.config)
        }))
    }

    /// OffsetCommit: checks the member, then stores every offset (one result per
    /// offset, in order) before answering.
    pub async fn commit(
        &self,
        request: CommitRequest,
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        if request.group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        let _writes = self.writes.lock().await;
        self.with_group(&request.group_id, |group| {
            group.check_commit(
                &request.member_id,
                request.group_instance_id.as_deref(),
                request.generation,
                Instant::now(),
            )
        })?;
        let commit_ms = now_ms();
        let mut results = Vec::with_capacity(request.offsets.len());
        let mut stored = Vec::with_capacity(request.offsets.len());
        for offset in request.offsets {
            let too_large = offset
                .metadata
                .as_ref()
                .is_some_and(|m| m.len() > self.config.offset_metadata_max_bytes);
            if too_large {
                results.push(Err(GroupError::OffsetMetadataTooLarge));
                continue;
            }
            results.push(Ok(()));
            stored.push(CommittedOffset {
                group: request.group_id.clone(),
                topic: offset.topic,
                partition: offset.partition,
                offset: offset.offset,
                leader_epoch: offset.leader_epoch,
                metadata: offset.metadata,
                commit_ms,
            });
        }
        if let Err(error) = self.store.commit_offsets(&stored).await {
            tracing::error!(group = %request.group_id, %error, "storing committed offsets failed");
            return Err(GroupError::StorageFailed);
        }
        let mut state = self.lock();
        let offsets = state.offsets.entry(request.group_id).or_default();
        for offset in stored {
            offsets.insert((offset.topic.clone(), offset.partition), offset);
        }
        Ok(results)
    }

    /// A group's committed offsets: of the given partitions (those with none are left
    /// out), or all of them.
    #[must_use]
    pub fn committed(
        &self,
        group_id: &str,
        partitions: Option<&[(String, i32)]>,
    ) -> Vec<CommittedOffset> {
        let state = self.lock();
        let Some(offsets) = state.offsets.get(group_id) else {
            return Vec::new();
        };
        match partitions {
            None => offsets.values().cloned().collect(),
            Some(wanted) => wanted
                .iter()
                .filter_map(|key| offsets.get(key).cloned())
                .collect(),
        }
    }

    /// Every group: those with state in memory and those with only committed offsets.
    #[must_use]
    pub fn list(&self) -> Vec<GroupListing> {
        let state = self.lock();
        let mut listed: BTreeMap<&String, GroupListing> = BTreeMap::new();
        for group_id in state.offsets.keys() {
            listed.insert(group_id, listing(group_id, GroupState::Empty, ""));
        }
        for (group_id, group) in &state.groups {
            let protocol_type = group.protocol_type().unwrap_or_default();
            listed.insert(group_id, listing(group_id, group.state, protocol_type));
        }
        listed.into_values().collect()
    }

    /// A group's state and members; `None` if the coordinator knows nothing of it.
    #[must_use]
    pub fn describe(&self, group_id: &str) -> Option<GroupDescription> {
        let state = self.lock();
        match state.groups.get(group_id) {
            Some(group) => Some(group.describe()),
            None => state
                .offsets
                .contains_key(group_id)
                .then(|| GroupDescription {
                    state: GroupState::Empty,
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

    /// DeleteGroups for one group: only a group without members can go; its committed
    /// offsets go with it.
    pub async fn delete_group(&self, group_id: &str) -> Result<(), GroupError> {
        let _writes = self.writes.lock().await;
        {
            let state = self.lock();
            let known = state.offsets.contains_key(group_id);
            match state.groups.get(group_id) {
                Some(group) if !group.is_empty() => return Err(GroupError::NonEmptyGroup),
                None if !known => return Err(GroupError::GroupIdNotFound),
                _ => {}
            }
        }
        if let Err(error) = self.store.delete_offsets(group_id, None).await {
            tracing::error!(group = group_id, %error, "deleting a group's offsets failed");
            return Err(GroupError::StorageFailed);
        }
        let mut state = self.lock();
        state.offsets.remove(group_id);
        state.groups.remove(group_id);
        tracing::info!(group = group_id, "deleted group");
        Ok(())
    }

    /// OffsetDelete: removes committed offsets of partitions whose topic the group
    /// does not consume (`subscribed` says which topics it does).
    pub async fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
        subscribed: impl Fn(&str) -> bool,
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        let _writes = self.writes.lock().await;
        let results: Vec<Result<(), GroupError>> = {
            let state = self.lock();
            if !state.offsets.contains_key(group_id) && !state.groups.contains_key(group_id) {
                return Err(GroupError::GroupIdNotFound);
            }
            let active = state.groups.get(group_id).is_some_and(|g| !g.is_empty());
            partitions
                .iter()
                .map(|(topic, _)| {
                    if active && subscribed(topic) {
                        Err(GroupError::GroupSubscribedToTopic)
                    } else {
                        Ok(())
                    }
                })
                .collect()
        };
        let deleted: Vec<(String, i32)> = partitions
            .iter()
            .zip(&results)
            .filter(|(_, result)| result.is_ok())
            .map(|(key, _)| key.clone())
            .collect();
        if let Err(error) = self.store.delete_offsets(group_id, Some(&deleted)).await {
            tracing::error!(group = group_id, %error, "deleting offsets failed");
            return Err(GroupError::StorageFailed);
        }
        let mut state = self.lock();
        if let Some(offsets) = state.offsets.get_mut(group_id) {
            for key in &deleted {
                offsets.remove(key);
            }
            if offsets.is_empty() {
                state.offsets.remove(group_id);
            }
        }
        Ok(results)
    }

    /// Expires sessions and rebalance timeouts; forgets empty groups without offsets.
    pub fn tick(&self) {
        let now = Instant::now();
        let now_ms = now_ms();
        let mut state = self.lock();
        let State { groups, offsets } = &mut *state;
        for group in groups.values_mut() {
            group.tick(now, &self.config);
            group.note_emptiness(now_ms);
        }
        groups.retain(|group_id, group| {
            !(group.state == GroupState::Empty && group.is_empty())
                || offsets.contains_key(group_id)
        });
    }

    /// Deletes the committed offsets of groups without members that are older than
    /// `offsets.retention.minutes` (counted from the later of the commit and the group
    /// losing its last member).
    pub async fn expire_offsets(&self) {
        let _writes = self.writes.lock().await;
        let now_ms = now_ms();
        let retention =
            i64::try_from(self.config.offsets_retention.as_millis()).unwrap_or(i64::MAX);
        let expired: Vec<(String, Vec<(String, i32)>)> = {
            let state = self.lock();
            state
                .offsets
                .iter()
                .filter_map(|(group_id, offsets)| {
                    let group = state.groups.get(group_id);
                    if group.is_some_and(|g| !g.is_empty()) {
                        return None;
                    }
                    let empty_since = group.and_then(|g| g.empty_since_ms).unwrap_or(0);
                    let old: Vec<(String, i32)> = offsets
                        .values()
                        .filter(|o| now_ms - o.commit_ms.max(empty_since) >= retention)
                        .map(|o| (o.topic.clone(), o.partition))
                        .collect();
                    (!old.is_empty()).then(|| (group_id.clone(), old))
                })
                .collect()
        };
        for (group_id, partitions) in expired {
            if let Err(error) = self
                .store
                .delete_offsets(&group_id, Some(&partitions))
                .await
            {
                tracing::warn!(group = %group_id, %error, "expiring offsets failed");
                continue;
            }
            tracing::info!(group = %group_id, count = partitions.len(), "expired committed offsets");
            let mut state = self.lock();
            if let Some(offsets) = state.offsets.get_mut(&group_id) {
                for key in &partitions {
                    offsets.remove(key);
                }
                if offsets.is_empty() {
                    state.offsets.remove(&group_id);
                }
            }
        }
    }

    /// The coordinator's timer: ticks every `tick`, expires offsets every
    /// `offsets.retention.check.interval.ms`, until `stop` turns true.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut ticks = tokio::time::interval(self.config.tick);
        let mut checks = tokio::time::interval(self.config.offsets_retention_check);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        checks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                _ = ticks.tick() => self.tick(),
                _ = checks.tick() => self.expire_offsets().await,
            }
        }
    }
}

fn listing(group_id: &str, state: GroupState, protocol_type: &str) -> GroupListing {
    GroupListing {
        group_id: group_id.to_owned(),
        state,
        protocol_type: protocol_type.to_owned(),
    }
}

fn failed_join(error: GroupError, member_id: &str) -> JoinResponse {
    JoinResponse {
        error: Some(error),
        generation: -1,
        protocol_type: None,
        protocol_name: None,
        leader: String::new(),
        member_id: member_id.to_owned(),
        members: Vec::new(),
    }
}

/// Wall-clock milliseconds since the epoch (commit times are stored).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
