//! Consumer-protocol groups in the metadata store: every change of a group (a member
//! joining, moving to a new epoch, leaving or fenced) is written there before the
//! heartbeat that made it is answered, fenced by the group's coordinator epoch; a
//! coordinator that does not have a group in memory (it restarted, or the group
//! moved to it) claims the group and takes it on from there. Members carry on with
//! their epochs, so an old incarnation's late commit stays refused.

use super::GroupCoordinator;
use crate::consumer::group::ConsumerGroup;
use crate::error::GroupError;

impl GroupCoordinator {
    /// Every consumer group the store keeps (at the start of a coordinator that is
    /// the only one: coordinators sharing the store take groups on when their
    /// members come).
    pub(super) async fn load_consumer_groups(&self) -> Result<(), spool_metadata::MetadataError> {
        for (group_id, text) in self.store.group_states().await? {
            self.insert_stored(&group_id, &text);
        }
        Ok(())
    }

    /// Takes on a group this coordinator does not have in memory, if the store keeps
    /// its state: claims it (which reads its committed offsets), then reads the state
    /// again under the claim (another coordinator may have written it meanwhile). A
    /// group the store does not keep (a new one, the usual case) costs one read.
    /// The caller holds the `writes` lock.
    pub(super) async fn take_on_group(&self, group_id: &str) -> Result<(), GroupError> {
        if self.lock().has_group(group_id) || self.stored_state(group_id).await?.is_none() {
            return Ok(());
        }
        self.coordinator_epoch(group_id).await?;
        if let Some(text) = self.stored_state(group_id).await? {
            self.insert_stored(group_id, &text);
        }
        Ok(())
    }

    /// A group's state as the store keeps it.
    pub(super) async fn stored_state(&self, group_id: &str) -> Result<Option<String>, GroupError> {
        self.store.group_state(group_id).await.map_err(|error| {
            tracing::error!(group = group_id, %error, "reading a group's state failed");
            GroupError::StorageFailed
        })
    }

    /// Puts a stored group in memory, unless one of that id is there already.
    fn insert_stored(&self, group_id: &str, text: &str) {
        let mut state = self.lock();
        if state.has_group(group_id) {
            return;
        }
        let overrides = state.overrides_of(group_id);
        let session_timeout = overrides
            .session_timeout
            .unwrap_or(self.config.consumer.session_timeout);
        match ConsumerGroup::from_stored(text, overrides, session_timeout, self.now()) {
            Ok(mut group) => {
                group.incarnation = state.next_incarnation();
                tracing::info!(
                    group = group_id,
                    members = group.member_count(),
                    "took on a consumer group from the metadata store"
                );
                state.consumer_groups.insert(group_id.to_owned(), group);
            }
            Err(error) => {
                tracing::error!(group = group_id, %error, "a stored consumer group cannot be read: it starts anew");
            }
        }
    }

    /// Writes the group's state to the store if it changed since it was last
    /// written. `NOT_COORDINATOR` if the group left memory (or was taken on again)
    /// since the heartbeat changed it: the change may be lost, and the member finds
    /// the coordinator again and sends all it has. A failed write drops the group
    /// from memory, so that it is taken on from the store again.
    pub(super) async fn save_consumer_group(
        &self,
        group_id: &str,
        incarnation: u64,
    ) -> Result<(), GroupError> {
        {
            let state = self.lock();
            match state.consumer_groups.get(group_id) {
                Some(group) if group.incarnation == incarnation => {
                    if group.stored.as_deref() == Some(group.to_stored().as_str()) {
                        return Ok(());
                    }
                }
                _ => return Err(GroupError::NotCoordinator),
            }
        }
        let _writes = self.writes.lock().await;
        self.save_consumer_group_locked(group_id, Some(incarnation))
            .await
    }

    /// [`GroupCoordinator::save_consumer_group`] (of whichever life of the group is
    /// in memory, for `None`), with the `writes` lock held: writes are made in
    /// order, each of the group's state when it is made.
    pub(super) async fn save_consumer_group_locked(
        &self,
        group_id: &str,
        incarnation: Option<u64>,
    ) -> Result<(), GroupError> {
        let epoch = self.coordinator_epoch(group_id).await?;
        let text = {
            let state = self.lock();
            let group = state
                .consumer_groups
                .get(group_id)
                .filter(|group| incarnation.is_none_or(|i| i == group.incarnation));
            let Some(group) = group else {
                return if incarnation.is_some() {
                    Err(GroupError::NotCoordinator)
                } else {
                    Ok(())
                };
            };
            let text = group.to_stored();
            if group.stored.as_deref() == Some(text.as_str()) {
                return Ok(());
            }
            text
        };
        if let Err(error) = self.store.save_group_state(group_id, epoch, &text).await {
            tracing::error!(group = group_id, %error, "storing a consumer group failed");
            self.lock().consumer_groups.remove(group_id);
            return Err(self.store_failure(group_id, &error).await);
        }
        if let Some(group) = self.lock().consumer_groups.get_mut(group_id) {
            group.stored = Some(text);
        }
        Ok(())
    }

    /// Forgets a group's state in the store (the group was deleted, emptied and
    /// forgotten, or became a classic group). The caller holds the `writes` lock.
    pub(super) async fn forget_consumer_group_locked(
        &self,
        group_id: &str,
    ) -> Result<(), GroupError> {
        let epoch = self.coordinator_epoch(group_id).await?;
        if let Err(error) = self.store.delete_group_state(group_id, epoch).await {
            tracing::error!(group = group_id, %error, "forgetting a consumer group's state failed");
            return Err(self.store_failure(group_id, &error).await);
        }
        Ok(())
    }

    /// Writes what the coordinator's timers changed: groups whose members were
    /// fenced, groups forgotten, and groups gone back to the classic protocol.
    pub async fn save_timed_changes(&self) {
        let (changed, forgotten, downgraded) = {
            let mut state = self.lock();
            (
                std::mem::take(&mut state.fenced_groups),
                std::mem::take(&mut state.forgotten_groups),
                std::mem::take(&mut state.downgraded_groups),
            )
        };
        if changed.is_empty() && forgotten.is_empty() && downgraded.is_empty() {
            return;
        }
        let _writes = self.writes.lock().await;
        for group_id in downgraded {
            if !self.lock().consumer_groups.contains_key(&group_id) {
                let _ = self.forget_consumer_group_locked(&group_id).await;
            }
        }
        for group_id in changed {
            let _ = self.save_consumer_group_locked(&group_id, None).await;
        }
        for group_id in forgotten {
            let still_unused = {
                let state = self.lock();
                state
                    .consumer_groups
                    .get(&group_id)
                    .is_some_and(|group| !group.has_members())
                    && !state.offsets.contains_key(&group_id)
            };
            if still_unused && self.forget_consumer_group_locked(&group_id).await.is_ok() {
                let mut state = self.lock();
                match state.consumer_groups.get_mut(&group_id) {
                    Some(group) if group.has_members() => group.stored = None,
                    Some(_) => {
                        state.consumer_groups.remove(&group_id);
                    }
                    None => {}
                }
            }
        }
    }
}
