//! The consumer protocol's requests (ConsumerGroupHeartbeat, ConsumerGroupDescribe)
//! and the checks OffsetCommit and OffsetFetch make of its members.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{GroupCoordinator, State};
use crate::consumer::group::ConsumerGroup;
use crate::consumer::{
    Assignor, ConsumerGroupDescription, GroupOverrides, HeartbeatRequest, HeartbeatResponse,
    JOIN_EPOCH, LEAVE_EPOCH, TEMPORARY_LEAVE_EPOCH, Topics,
};
use crate::error::GroupError;
use crate::group::Group;

impl GroupCoordinator {
    /// ConsumerGroupHeartbeat at API `version`: joins, keeps alive, reconciles or
    /// leaves. Answered once what it changed is in the metadata store.
    pub async fn consumer_heartbeat(
        &self,
        request: HeartbeatRequest,
        version: i16,
        topics: &(dyn Topics + Sync),
    ) -> Result<HeartbeatResponse, GroupError> {
        self.check_heartbeat(&request, version)?;
        if !self.owns(&request.group_id) {
            return Err(GroupError::NotCoordinator);
        }
        let group_id = request.group_id.clone();
        match self.apply_heartbeat(request, version, topics, false) {
            Applied::Done(result, _) if result.is_err() => result,
            Applied::Done(result, Outcome::Downgraded) => {
                self.forget_downgraded(&group_id).await?;
                result
            }
            Applied::Done(result, Outcome::Changed(incarnation)) => {
                let response = result?;
                self.save_consumer_group(&group_id, incarnation).await?;
                Ok(response)
            }
            Applied::NotInMemory(request) => {
                // Taken on from the store (or created) with writes held, so that no
                // other heartbeat makes a group of that id meanwhile.
                let _writes = self.writes.lock().await;
                self.take_on_group(&group_id).await?;
                let Applied::Done(result, outcome) =
                    self.apply_heartbeat(request, version, topics, true)
                else {
                    return Err(GroupError::NotCoordinator);
                };
                let response = result?;
                match outcome {
                    Outcome::Changed(incarnation) => {
                        self.save_consumer_group_locked(&group_id, Some(incarnation))
                            .await?;
                    }
                    Outcome::Downgraded => self.forget_consumer_group_locked(&group_id).await?,
                }
                Ok(response)
            }
        }
    }

    /// The heartbeat's change of the group in memory. A group not in memory is
    /// created (for a join) only once the store was found to have none
    /// (`may_create`).
    fn apply_heartbeat(
        &self,
        request: HeartbeatRequest,
        version: i16,
        topics: &dyn Topics,
        may_create: bool,
    ) -> Applied {
        let settings = self.settings(version);
        let now_ms = self.config.clock.now_ms();
        let mut state = self.lock();
        let group_id = request.group_id.clone();
        let joining = request.member_epoch == JOIN_EPOCH;
        let unchanged = Outcome::Changed(0);
        if !state.consumer_groups.contains_key(&group_id) {
            let classic = state.groups.get(&group_id).map(Group::has_members);
            if classic == Some(true) {
                // A consumer-protocol member joins a classic group: the group is
                // converted, its members in it (the online migration).
                if !joining {
                    return Applied::Done(Err(GroupError::UnknownMemberId), unchanged);
                }
                if let Err(error) = self.upgrade(&mut state, &group_id, topics, &settings) {
                    return Applied::Done(Err(error), unchanged);
                }
            } else if classic.is_none() && !may_create {
                return Applied::NotInMemory(request);
            }
        }
        if !state.consumer_groups.contains_key(&group_id) {
            if !joining {
                // Neither in memory nor in the store: a member of a group that was
                // lost (or deleted) rejoins. (Kafka answers GROUP_ID_NOT_FOUND, which
                // clients take as fatal.)
                let error = if request.member_epoch < 0 {
                    GroupError::GroupIdNotFound
                } else {
                    GroupError::UnknownMemberId
                };
                return Applied::Done(Err(error), unchanged);
            }
            state.groups.remove(&group_id);
            let mut group = ConsumerGroup::with_overrides(state.overrides_of(&group_id));
            group.incarnation = state.next_incarnation();
            state.consumer_groups.insert(group_id.clone(), group);
        }
        let Some(group) = state.consumer_groups.get_mut(&group_id) else {
            return Applied::Done(Err(GroupError::GroupIdNotFound), unchanged);
        };
        let incarnation = group.incarnation;
        let result = group.heartbeat(request, topics, &settings);
        group.note_emptiness(now_ms);
        if result.is_err() && !group.has_members() && group.stored.is_none() {
            // A group made for a join that was refused is not kept.
            state.consumer_groups.remove(&group_id);
        }
        if result.is_ok() && self.downgrade_if_classic(&mut state, &group_id) {
            return Applied::Done(result, Outcome::Downgraded);
        }
        Applied::Done(result, Outcome::Changed(incarnation))
    }

    /// The checks Kafka makes of a heartbeat before it looks at the group.
    fn check_heartbeat(&self, request: &HeartbeatRequest, version: i16) -> Result<(), GroupError> {
        let epoch = request.member_epoch;
        let must_name_member = version >= 1 || epoch > 0 || epoch == LEAVE_EPOCH;
        if must_name_member && request.member_id.trim().is_empty() {
            return Err(GroupError::InvalidRequest("MemberId can't be empty."));
        }
        if request.group_id.trim().is_empty() {
            return Err(GroupError::InvalidRequest("GroupId can't be empty."));
        }
        if request
            .instance_id
            .as_deref()
            .is_some_and(|i| i.trim().is_empty())
        {
            return Err(GroupError::InvalidRequest("InstanceId can't be empty."));
        }
        if request
            .rack_id
            .as_deref()
            .is_some_and(|r| r.trim().is_empty())
        {
            return Err(GroupError::InvalidRequest("RackId can't be empty."));
        }
        // A join's other fields (rebalance timeout, subscription) may be missing
        // when a client retries a join whose answer it lost: the group takes that
        // from a member it knows, and tells one it does not know to rejoin
        // (`ConsumerGroup::heartbeat`).
        let owns_something = request
            .owned
            .as_ref()
            .is_some_and(|owned| owned.values().any(|set| !set.is_empty()));
        if epoch == JOIN_EPOCH && owns_something {
            return Err(GroupError::InvalidRequest(
                "TopicPartitions must be empty when (re-)joining.",
            ));
        }
        if epoch == TEMPORARY_LEAVE_EPOCH && request.instance_id.is_none() {
            return Err(GroupError::InvalidRequest(
                "InstanceId can't be null when MemberEpoch is -2.",
            ));
        }
        if epoch < TEMPORARY_LEAVE_EPOCH {
            return Err(GroupError::InvalidRequest("MemberEpoch is invalid."));
        }
        if let Some(name) = &request.server_assignor {
            let served = Assignor::named(name)
                .is_some_and(|assignor| self.config.consumer.assignors.contains(&assignor));
            if !served {
                return Err(GroupError::UnsupportedAssignor);
            }
        }
        Ok(())
    }

    /// ConsumerGroupDescribe of one group: `GROUP_ID_NOT_FOUND` for a group of the
    /// classic protocol or none. A group not in memory is described as the store
    /// keeps it (it is taken on only when a member comes).
    pub async fn consumer_describe(
        &self,
        group_id: &str,
    ) -> Result<ConsumerGroupDescription, GroupError> {
        if group_id.is_empty() {
            return Err(GroupError::InvalidGroupId);
        }
        if !self.owns(group_id) {
            return Err(GroupError::NotCoordinator);
        }
        {
            let state = self.lock();
            if let Some(group) = state.consumer_groups.get(group_id) {
                return Ok(group.describe(&self.config.consumer));
            }
            if state.groups.contains_key(group_id) {
                return Err(GroupError::GroupIdNotFound);
            }
        }
        let text = self
            .stored_state(group_id)
            .await?
            .ok_or(GroupError::GroupIdNotFound)?;
        let overrides = self.lock().overrides_of(group_id);
        let group = ConsumerGroup::from_stored(&text, overrides, Duration::ZERO, self.now())
            .map_err(|_| GroupError::GroupIdNotFound)?;
        Ok(group.describe(&self.config.consumer))
    }

    /// Whether `group_id` is a group of the consumer protocol.
    #[must_use]
    pub fn is_consumer_group(&self, group_id: &str) -> bool {
        self.lock().consumer_groups.contains_key(group_id)
    }

    /// The topic names a consumer group's members subscribe to by name, and the ids
    /// of every topic they subscribe to (by name or expression); `None` for a group
    /// of the classic protocol or none.
    #[must_use]
    pub fn consumer_subscriptions(&self, group_id: &str) -> Option<(Vec<String>, Vec<uuid::Uuid>)> {
        let state = self.lock();
        let group = state.consumer_groups.get(group_id)?;
        let names = group
            .subscribed_names()
            .into_iter()
            .map(str::to_owned)
            .collect();
        Some((names, group.subscribed_topic_ids().into_iter().collect()))
    }

    /// A group's own configs (the GROUP resource's), as set.
    #[must_use]
    pub fn group_configs(&self, group_id: &str) -> BTreeMap<String, String> {
        self.lock()
            .group_configs
            .get(group_id)
            .cloned()
            .unwrap_or_default()
    }

    /// Sets a group's own configs and the overrides of the consumer protocol's
    /// settings they make (the caller checked and stored them).
    pub fn set_group_configs(
        &self,
        group_id: &str,
        configs: BTreeMap<String, String>,
        overrides: GroupOverrides,
    ) {
        let mut state = self.lock();
        set_group_configs(&mut state, group_id, configs, overrides);
    }

    /// Makes every group's configs these (group id, configs, overrides); groups not
    /// named have none.
    pub fn replace_group_configs(
        &self,
        all: Vec<(String, BTreeMap<String, String>, GroupOverrides)>,
    ) {
        let mut state = self.lock();
        let named: BTreeSet<&String> = all.iter().map(|(group_id, _, _)| group_id).collect();
        let dropped: Vec<String> = state
            .group_configs
            .keys()
            .filter(|group_id| !named.contains(group_id))
            .cloned()
            .collect();
        for group_id in dropped {
            set_group_configs(
                &mut state,
                &group_id,
                BTreeMap::new(),
                GroupOverrides::default(),
            );
        }
        for (group_id, configs, overrides) in all {
            set_group_configs(&mut state, &group_id, configs, overrides);
        }
    }

    /// OffsetFetch's check of the member fetching (v9+): a member of a consumer group
    /// must name its current epoch. A fetch naming no member (older versions, admin
    /// clients) is not checked, nor one of a classic group.
    pub fn check_offset_fetch_member(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), GroupError> {
        let Some(member_id) = member_id else {
            return Ok(());
        };
        self.check_consumer_member(group_id, member_id, member_epoch, true)
            .unwrap_or(Ok(()))
    }

    /// OffsetCommit's (and TxnOffsetCommit's, OffsetFetch's) check of a consumer
    /// group's member; `None` if the group is not one of the consumer protocol.
    pub(super) fn check_consumer_member(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        carries_epoch: bool,
    ) -> Option<Result<(), GroupError>> {
        let state = self.lock();
        let group = state.consumer_groups.get(group_id)?;
        Some(group.check_offsets_member(member_id, member_epoch, carries_epoch))
    }
}

fn set_group_configs(
    state: &mut State,
    group_id: &str,
    configs: BTreeMap<String, String>,
    overrides: GroupOverrides,
) {
    if configs.is_empty() {
        state.group_configs.remove(group_id);
        state.group_overrides.remove(group_id);
    } else {
        state.group_configs.insert(group_id.to_owned(), configs);
        state.group_overrides.insert(group_id.to_owned(), overrides);
    }
    if let Some(group) = state.consumer_groups.get_mut(group_id) {
        group.overrides = overrides;
    }
}

/// What became of a heartbeat in memory, and what is to be written of it; or the
/// group is not in memory (the request, back).
enum Applied {
    Done(Result<HeartbeatResponse, GroupError>, Outcome),
    NotInMemory(HeartbeatRequest),
}

/// What is to be written of a heartbeat's change.
enum Outcome {
    /// The group (of this incarnation) is written if it changed.
    Changed(u64),
    /// The group went back to the classic protocol: its stored state goes.
    Downgraded,
}
