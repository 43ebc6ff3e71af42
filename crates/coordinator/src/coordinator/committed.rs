//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups, and the
//! expiry of old offsets. Writes go to the metadata store first, one at a time (the
//! `writes` lock), then to the cache, so the cache always follows the store.

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_metadata::{CommittedOffset, MetadataError};
use tokio::sync::watch;
use tokio::time::Instant;

use super::GroupCoordinator;
use crate::error::GroupError;
use crate::offsets::CommitRequest;

impl GroupCoordinator {
    /// OffsetCommit: checks the member, then stores every offset (one result per
    /// offset, in order) before answering. A partition named twice keeps the last.
    pub async fn commit(
        &self,
        request: CommitRequest,
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        if !self.owns(&request.group_id) {
            return Err(GroupError::NotCoordinator);
        }
        let _writes = self.writes.lock().await;
        // A consumer-protocol group this coordinator has not taken on yet (it moved
        // here, or the coordinator restarted) checks its members as it was stored.
        self.take_on_group(&request.group_id).await?;
        let carries_epoch = request.api_version >= 9;
        match self.check_consumer_member(
            &request.group_id,
            &request.member_id,
            request.generation,
            carries_epoch,
        ) {
            Some(checked) => checked?,
            None => {
                if request.generation >= 0 && !self.has_group(&request.group_id) {
                    // A member of a generation this coordinator never saw (e.g. from
                    // before a restart): it must rejoin, as Kafka answers.
                    return Err(GroupError::IllegalGeneration);
                }
                self.with_group(&request.group_id, |group| {
                    group.check_commit(
                        &request.member_id,
                        request.group_instance_id.as_deref(),
                        request.generation,
                        self.now(),
                    )
                })?;
            }
        }
        let commit_ms = self.config.clock.now_ms();
        let mut results = Vec::with_capacity(request.offsets.len());
        let mut stored: BTreeMap<(String, i32), CommittedOffset> = BTreeMap::new();
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
            stored.insert(
                (offset.topic.clone(), offset.partition),
                CommittedOffset {
                    group: request.group_id.clone(),
                    topic: offset.topic,
                    topic_id: offset.topic_id,
                    partition: offset.partition,
                    offset: offset.offset,
                    leader_epoch: offset.leader_epoch,
                    metadata: offset.metadata,
                    commit_ms,
                },
            );
        }
        if stored.is_empty() {
            return Ok(results);
        }
        let rows: Vec<CommittedOffset> = stored.values().cloned().collect();
        let epoch = self.coordinator_epoch(&request.group_id).await?;
        if let Err(error) = self
            .store
            .commit_offsets(&request.group_id, epoch, &rows)
            .await
        {
            tracing::error!(group = %request.group_id, %error, "storing committed offsets failed");
            return Err(self.store_failure(&request.group_id, &error).await);
        }
        tracing::debug!(
            group = %request.group_id,
            member = %request.member_id,
            generation = request.generation,
            epoch,
            offsets = ?rows.iter().map(|o| (o.partition, o.offset)).collect::<Vec<_>>(),
            "stored committed offsets"
        );
        self.lock()
            .offsets
            .entry(request.group_id)
            .or_default()
            .extend(stored);
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

    /// OffsetFetch: [`GroupCoordinator::committed`], for a group this broker
    /// coordinates. When groups are shared out among brokers, the offsets are read
    /// from the store first, even for a group this broker has claimed: while two
    /// brokers' views of the membership differ, another may have claimed the group
    /// and stored newer offsets since (this broker learns it only at its next write,
    /// which is fenced). Every acknowledged commit is in the store, so its answer is
    /// never older than one.
    pub async fn fetch_committed(
        &self,
        group_id: &str,
        partitions: Option<&[(String, i32)]>,
    ) -> Result<Vec<CommittedOffset>, GroupError> {
        if !self.owns(group_id) {
            return Err(GroupError::NotCoordinator);
        }
        if self.is_shared() {
            self.read_offsets_from_store(group_id).await?;
        }
        let committed = self.committed(group_id, partitions);
        tracing::debug!(
            group = group_id,
            offsets = ?committed.iter().map(|o| (o.partition, o.offset)).collect::<Vec<_>>(),
            "read committed offsets"
        );
        Ok(committed)
    }

    /// TxnOffsetCommit's check of the member (KIP-447): a member id or generation the
    /// producer names must be the group's; a producer naming neither (a consumer
    /// outside any group) is not checked.
    pub async fn check_transactional_commit(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Result<(), GroupError> {
        if !self.owns(group_id) {
            return Err(GroupError::NotCoordinator);
        }
        if member_id.is_empty() && generation < 0 {
            return Ok(());
        }
        if !self.has_any_group(group_id) {
            let _writes = self.writes.lock().await;
            self.take_on_group(group_id).await?;
        }
        if let Some(checked) = self.check_consumer_member(group_id, member_id, generation, true) {
            // A producer names the consumer's member epoch as its generation.
            return checked.map_err(|error| match error {
                GroupError::StaleMemberEpoch => GroupError::IllegalGeneration,
                other => other,
            });
        }
        if !self.has_group(group_id) {
            return Err(if member_id.is_empty() {
                GroupError::IllegalGeneration
            } else {
                GroupError::UnknownMemberId
            });
        }
        self.with_group(group_id, |group| {
            group.check_commit(member_id, instance_id, generation, self.now())
        })
    }

    /// Reads a group's committed offsets from the store again: a transaction that
    /// committed offsets of it wrote them there. (When groups are shared out among
    /// brokers, OffsetFetch reads the store anyway.)
    pub async fn reload_offsets(&self, group_id: &str) {
        if !self.owns(group_id) || self.is_shared() {
            return;
        }
        if self.read_offsets_from_store(group_id).await.is_err() {
            tracing::error!(
                group = group_id,
                "the cache misses the offsets a transaction committed until the next commit or restart"
            );
        }
    }

    /// Replaces the cached offsets of a group with the store's.
    async fn read_offsets_from_store(&self, group_id: &str) -> Result<(), GroupError> {
        let _writes = self.writes.lock().await;
        let stored = self.store.group_offsets(group_id).await.map_err(|error| {
            tracing::error!(group = group_id, %error, "reading a group's offsets failed");
            GroupError::StorageFailed
        })?;
        replace_offsets(&mut self.lock(), group_id, stored);
        Ok(())
    }

    /// Forgets every group's committed offsets of a deleted topic (the metadata store
    /// deleted them with the topic), so that a new topic of the same name is not read
    /// from the old positions.
    pub async fn forget_topic(&self, topic: &str) {
        let _writes = self.writes.lock().await;
        let mut state = self.lock();
        for offsets in state.offsets.values_mut() {
            offsets.retain(|(t, _), _| t != topic);
        }
        state.offsets.retain(|_, offsets| !offsets.is_empty());
    }

    /// DeleteGroups for one group: only a group without members can go; its committed
    /// offsets go with it.
    pub async fn delete_group(&self, group_id: &str) -> Result<(), GroupError> {
        if !self.owns(group_id) {
            return Err(GroupError::NotCoordinator);
        }
        let _writes = self.writes.lock().await;
        {
            let state = self.lock();
            if state.has_members(group_id) {
                return Err(GroupError::NonEmptyGroup);
            }
            if !state.offsets.contains_key(group_id) && !state.has_group(group_id) {
                return Err(GroupError::GroupIdNotFound);
            }
        }
        let epoch = self.coordinator_epoch(group_id).await?;
        if let Err(error) = self.store.delete_offsets(group_id, epoch, None).await {
            tracing::error!(group = group_id, %error, "deleting a group's offsets failed");
            return Err(self.store_failure(group_id, &error).await);
        }
        self.forget_consumer_group_locked(group_id).await?;
        let mut state = self.lock();
        state.offsets.remove(group_id);
        // A member may have joined while the offsets were being deleted: keep it.
        if !state.has_members(group_id) {
            state.groups.remove(group_id);
            state.consumer_groups.remove(group_id);
        }
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
        if !self.owns(group_id) {
            return Err(GroupError::NotCoordinator);
        }
        let _writes = self.writes.lock().await;
        let results: Vec<Result<(), GroupError>> = {
            let state = self.lock();
            if !state.offsets.contains_key(group_id) && !state.has_group(group_id) {
                return Err(GroupError::GroupIdNotFound);
            }
            let active = state.has_members(group_id);
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
        let mut deleted: Vec<(String, i32)> = partitions
            .iter()
            .zip(&results)
            .filter(|(_, result)| result.is_ok())
            .map(|(key, _)| key.clone())
            .collect();
        deleted.sort();
        deleted.dedup();
        self.remove_offsets(group_id, &deleted).await?;
        Ok(results)
    }

    /// Deletes offsets from the store, then from the cache (dropping emptied groups).
    /// Partitions without a committed offset are skipped: the cache follows the store.
    async fn remove_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<(), GroupError> {
        if partitions.is_empty() {
            return Ok(());
        }
        // Claimed first: a claim reloads the group's offsets, which are what is
        // deleted.
        let epoch = self.coordinator_epoch(group_id).await?;
        let stored: Vec<(uuid::Uuid, i32)> = {
            let state = self.lock();
            let offsets = state.offsets.get(group_id);
            partitions
                .iter()
                .filter_map(|key| offsets?.get(key))
                .map(|offset| (offset.topic_id, offset.partition))
                .collect()
        };
        if stored.is_empty() {
            return Ok(());
        }
        if let Err(error) = self
            .store
            .delete_offsets(group_id, epoch, Some(&stored))
            .await
        {
            tracing::warn!(group = group_id, %error, "deleting committed offsets failed");
            return Err(self.store_failure(group_id, &error).await);
        }
        let mut state = self.lock();
        if let Some(offsets) = state.offsets.get_mut(group_id) {
            for key in partitions {
                offsets.remove(key);
            }
            if offsets.is_empty() {
                state.offsets.remove(group_id);
            }
        }
        Ok(())
    }

    /// The coordinator epoch this broker holds for a group. At its first write for the
    /// group, this broker claims it in the metadata store (fencing any coordinator
    /// before it) and reloads the group's offsets from there, so that it starts from
    /// what the previous coordinator stored.
    pub(super) async fn coordinator_epoch(&self, group_id: &str) -> Result<i64, GroupError> {
        if let Some(epoch) = self.lock().coordinator_epochs.get(group_id) {
            return Ok(*epoch);
        }
        let unavailable = |error: MetadataError| {
            tracing::error!(group = group_id, %error, "claiming the group failed");
            GroupError::StorageFailed
        };
        let epoch = self
            .store
            .claim_group(group_id, self.config.node_id)
            .await
            .map_err(unavailable)?;
        let stored = self
            .store
            .group_offsets(group_id)
            .await
            .map_err(unavailable)?;
        let mut state = self.lock();
        state.coordinator_epochs.insert(group_id.to_owned(), epoch);
        replace_offsets(&mut state, group_id, stored);
        Ok(epoch)
    }

    /// The error a client gets for a failed write. A fenced coordinator gives up its
    /// claim and takes the group's offsets from the store again (what the coordinator
    /// that fenced it stored); its client looks for the coordinator again.
    pub(super) async fn store_failure(&self, group_id: &str, error: &MetadataError) -> GroupError {
        let MetadataError::Fenced { .. } = error else {
            return GroupError::StorageFailed;
        };
        tracing::warn!(
            group = group_id,
            "fenced: another coordinator claimed the group"
        );
        {
            let mut state = self.lock();
            state.coordinator_epochs.remove(group_id);
            // Taken on from the store again, should it come back to this broker.
            state.consumer_groups.remove(group_id);
        }
        match self.store.group_offsets(group_id).await {
            Ok(stored) => replace_offsets(&mut self.lock(), group_id, stored),
            Err(error) => {
                tracing::warn!(group = group_id, %error, "reloading a group's offsets failed");
            }
        }
        GroupError::NotCoordinator
    }

    /// Whether this broker may expire a group's offsets: it holds the group, or no
    /// other node claimed it last (offsets expire on one node only).
    async fn may_expire(&self, group_id: &str) -> bool {
        if self.lock().coordinator_epochs.contains_key(group_id) {
            return true;
        }
        match self.store.group_claimant(group_id).await {
            Ok(claimant) => claimant.is_none_or(|node| node == self.config.node_id),
            Err(error) => {
                tracing::warn!(group = group_id, %error, "cannot tell who coordinates the group");
                false
            }
        }
    }

    /// Deletes the committed offsets of groups without members that are older than
    /// `offsets.retention.minutes`, counted from the later of the commit and the group
    /// losing its last member (or this coordinator starting, for groups it has not
    /// seen since).
    pub async fn expire_offsets(&self) {
        let _writes = self.writes.lock().await;
        let now_ms = self.config.clock.now_ms();
        let retention =
            i64::try_from(self.config.offsets_retention.as_millis()).unwrap_or(i64::MAX);
        let expired: Vec<(String, Vec<(String, i32)>)> = {
            let state = self.lock();
            state
                .offsets
                .iter()
                .filter_map(|(group_id, offsets)| {
                    // Another broker's group: its coordinator expires its offsets.
                    if !self.owns(group_id) {
                        return None;
                    }
                    if state.has_members(group_id) {
                        return None;
                    }
                    let empty_since = state.empty_since_ms(group_id).unwrap_or(self.started_ms);
                    let old: Vec<(String, i32)> = offsets
                        .values()
                        .filter(|o| {
                            now_ms.saturating_sub(o.commit_ms.max(empty_since)) >= retention
                        })
                        .map(|o| (o.topic.clone(), o.partition))
                        .collect();
                    (!old.is_empty()).then(|| (group_id.clone(), old))
                })
                .collect()
        };
        for (group_id, partitions) in expired {
            if !self.may_expire(&group_id).await {
                continue;
            }
            if self.remove_offsets(&group_id, &partitions).await.is_ok() {
                tracing::info!(group = %group_id, count = partitions.len(), "expired committed offsets");
            }
        }
    }

    /// Offset expiry every `offsets.retention.check.interval.ms` (the first check one
    /// interval after the start), until `stop` turns true.
    pub(super) async fn expire_periodically(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let period = self.config.offsets_retention_check;
        let mut checks = tokio::time::interval_at(Instant::now() + period, period);
        checks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                _ = checks.tick() => self.expire_offsets().await,
            }
        }
    }
}

/// Makes the cache hold exactly `stored` for the group.
fn replace_offsets(state: &mut super::State, group_id: &str, stored: Vec<CommittedOffset>) {
    if stored.is_empty() {
        state.offsets.remove(group_id);
        return;
    }
    let offsets = stored
        .into_iter()
        .map(|offset| ((offset.topic.clone(), offset.partition), offset))
        .collect();
    state.offsets.insert(group_id.to_owned(), offsets);
}
