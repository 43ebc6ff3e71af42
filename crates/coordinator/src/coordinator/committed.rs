//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups, and the
//! expiry of old offsets. Writes go to the metadata store first, one at a time (the
//! `writes` lock), then to the cache, so the cache always follows the store.

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_metadata::CommittedOffset;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{GroupCoordinator, now_ms};
use crate::error::GroupError;
use crate::group::Group;
use crate::offsets::CommitRequest;

impl GroupCoordinator {
    /// OffsetCommit: checks the member, then stores every offset (one result per
    /// offset, in order) before answering. A partition named twice keeps the last.
    pub async fn commit(
        &self,
        request: CommitRequest,
    ) -> Result<Vec<Result<(), GroupError>>, GroupError> {
        let _writes = self.writes.lock().await;
        if request.generation >= 0 && !self.has_group(&request.group_id) {
            // A member of a generation this coordinator never saw (e.g. from before
            // a restart): it must rejoin, as Kafka answers.
            return Err(GroupError::IllegalGeneration);
        }
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
        if let Err(error) = self.store.commit_offsets(&rows).await {
            tracing::error!(group = %request.group_id, %error, "storing committed offsets failed");
            return Err(GroupError::StorageFailed);
        }
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

    /// Forgets every group's committed offsets of a deleted topic, so that a new topic
    /// of the same name is not read from the old positions.
    pub async fn forget_topic(&self, topic: &str) {
        let _writes = self.writes.lock().await;
        let affected: Vec<(String, Vec<(String, i32)>)> = {
            let state = self.lock();
            state
                .offsets
                .iter()
                .filter_map(|(group_id, offsets)| {
                    let partitions: Vec<(String, i32)> = offsets
                        .keys()
                        .filter(|(t, _)| t == topic)
                        .cloned()
                        .collect();
                    (!partitions.is_empty()).then(|| (group_id.clone(), partitions))
                })
                .collect()
        };
        for (group_id, partitions) in affected {
            self.remove_offsets(&group_id, &partitions).await;
        }
    }

    /// DeleteGroups for one group: only a group without members can go; its committed
    /// offsets go with it.
    pub async fn delete_group(&self, group_id: &str) -> Result<(), GroupError> {
        let _writes = self.writes.lock().await;
        {
            let state = self.lock();
            let known = state.offsets.contains_key(group_id);
            match state.groups.get(group_id) {
                Some(group) if group.has_members() => return Err(GroupError::NonEmptyGroup),
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
        // A member may have joined while the offsets were being deleted: keep it.
        if state.groups.get(group_id).is_none_or(|g| !g.has_members()) {
            state.groups.remove(group_id);
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
        let _writes = self.writes.lock().await;
        let results: Vec<Result<(), GroupError>> = {
            let state = self.lock();
            if !state.offsets.contains_key(group_id) && !state.groups.contains_key(group_id) {
                return Err(GroupError::GroupIdNotFound);
            }
            let active = state.groups.get(group_id).is_some_and(Group::has_members);
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
        if !self.remove_offsets(group_id, &deleted).await {
            return Err(GroupError::StorageFailed);
        }
        Ok(results)
    }

    /// Deletes offsets from the store, then from the cache (dropping emptied groups);
    /// false if the store refused.
    async fn remove_offsets(&self, group_id: &str, partitions: &[(String, i32)]) -> bool {
        if partitions.is_empty() {
            return true;
        }
        if let Err(error) = self.store.delete_offsets(group_id, Some(partitions)).await {
            tracing::warn!(group = group_id, %error, "deleting committed offsets failed");
            return false;
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
        true
    }

    /// Deletes the committed offsets of groups without members that are older than
    /// `offsets.retention.minutes`, counted from the later of the commit and the group
    /// losing its last member (or this coordinator starting, for groups it has not
    /// seen since).
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
                    if group.is_some_and(Group::has_members) {
                        return None;
                    }
                    let empty_since = group
                        .and_then(|g| g.empty_since_ms)
                        .unwrap_or(self.started_ms);
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
            if self.remove_offsets(&group_id, &partitions).await {
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
