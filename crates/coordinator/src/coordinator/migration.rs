//! The online migration between the two protocols (KIP-848), at the coordinator:
//! classic members' JoinGroup, SyncGroup, Heartbeat and LeaveGroup answered by a
//! consumer-protocol group, a classic group converted when a consumer-protocol
//! member joins it, and converted back when the last one leaves
//! (`consumer/group/classic.rs` has the group's side).

use spool_protocol::consumer_protocol;

use super::{GroupCoordinator, State};
use crate::consumer::Topics;
use crate::consumer::group::classic::{ClassicJoin, by_topic_name};
use crate::consumer::group::{ConsumerGroup, Settings};
use crate::error::GroupError;
use crate::group::{Group, JoinRequest, JoinResponse, SyncRequest, SyncResponse, new_member_id};

impl GroupCoordinator {
    /// A JoinGroup to a consumer-protocol group with members: `None` if the group
    /// is not one.
    pub(super) async fn join_consumer_group(
        &self,
        request: &JoinRequest,
        topics: &(dyn Topics + Sync),
    ) -> Option<JoinResponse> {
        let group_id = request.group_id.clone();
        let (member_id, epoch, protocol, incarnation) = {
            let mut state = self.lock();
            let settings = self.settings(0);
            let group = state
                .consumer_groups
                .get_mut(&group_id)
                .filter(|group| group.has_members())?;
            let incarnation = group.incarnation;
            let fail = |error| Some(JoinResponse::failed(error, &request.member_id));
            if request.protocol_type != "consumer" {
                return fail(GroupError::InconsistentGroupProtocol);
            }
            if !(self.config.min_session_timeout..=self.config.max_session_timeout)
                .contains(&request.session_timeout)
            {
                return fail(GroupError::InvalidSessionTimeout);
            }
            let Some(subscription) = request
                .protocols
                .iter()
                .find_map(|(_, metadata)| consumer_protocol::subscription(metadata))
            else {
                return fail(GroupError::InconsistentGroupProtocol);
            };
            let mut member_id = request.member_id.clone();
            if member_id.is_empty() {
                member_id = new_member_id(&request.client_id);
                if request.require_known_member_id {
                    return Some(JoinResponse::failed(
                        GroupError::MemberIdRequired,
                        &member_id,
                    ));
                }
            }
            let join = ClassicJoin {
                member_id: member_id.clone(),
                instance_id: request.group_instance_id.clone(),
                client_id: request.client_id.clone(),
                client_host: request.client_host.clone(),
                session_timeout: request.session_timeout,
                rebalance_timeout: request.rebalance_timeout,
                protocols: request.protocols.clone(),
                subscription,
            };
            let protocol = request
                .protocols
                .first()
                .map(|(name, _)| name.clone())
                .unwrap_or_default();
            match group.join_classic(join, topics, &settings) {
                Ok(epoch) => (member_id, epoch, protocol, incarnation),
                Err(error) => return fail(error),
            }
        };
        if let Err(error) = self.save_consumer_group(&group_id, incarnation).await {
            return Some(JoinResponse::failed(error, &member_id));
        }
        tracing::debug!(group = %group_id, member = %member_id, epoch, "classic member joined a consumer-protocol group");
        Some(JoinResponse {
            error: None,
            generation: epoch,
            protocol_type: Some("consumer".to_owned()),
            protocol_name: Some(protocol),
            // Nobody leads: the broker assigns.
            leader: String::new(),
            member_id,
            members: Vec::new(),
            skip_assignment: false,
        })
    }

    /// A SyncGroup to a consumer-protocol group: `None` if the group is not one.
    pub(super) async fn sync_consumer_group(
        &self,
        request: &SyncRequest,
        topics: &(dyn Topics + Sync),
    ) -> Option<Result<SyncResponse, GroupError>> {
        let (answer, incarnation) = {
            let mut state = self.lock();
            let group = state.consumer_groups.get_mut(&request.group_id)?;
            let synced = group.sync_classic(
                &request.member_id,
                request.group_instance_id.as_deref(),
                request.generation,
            );
            (synced, group.incarnation)
        };
        let (assigned, protocol) = match answer {
            Ok(answer) => answer,
            Err(error) => return Some(Err(error)),
        };
        if let Err(error) = self
            .save_consumer_group(&request.group_id, incarnation)
            .await
        {
            return Some(Err(error));
        }
        let partitions = by_topic_name(&assigned, topics);
        Some(Ok(SyncResponse {
            protocol_type: Some("consumer".to_owned()),
            protocol_name: Some(protocol),
            assignment: consumer_protocol::encode_assignment(&partitions).into(),
        }))
    }

    /// A Heartbeat to a consumer-protocol group: `None` if the group is not one.
    pub(super) fn heartbeat_consumer_group(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> Option<Result<(), GroupError>> {
        let settings = self.settings(0);
        let mut state = self.lock();
        let group = state.consumer_groups.get_mut(group_id)?;
        Some(group.heartbeat_classic(member_id, instance_id, generation, &settings))
    }

    /// A LeaveGroup to a consumer-protocol group: `None` if the group is not one.
    pub(super) async fn leave_consumer_group(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Option<Vec<Result<(), GroupError>>> {
        let (results, incarnation, downgraded) = {
            let mut state = self.lock();
            let group = state.consumer_groups.get_mut(group_id)?;
            let results = members
                .iter()
                .map(|(member_id, instance_id)| {
                    group.leave_classic(member_id, instance_id.as_deref())
                })
                .collect();
            let incarnation = group.incarnation;
            let downgraded = self.downgrade_if_classic(&mut state, group_id);
            (results, incarnation, downgraded)
        };
        let saved = if downgraded {
            self.forget_downgraded(group_id).await
        } else {
            self.save_consumer_group(group_id, incarnation).await
        };
        if let Err(error) = saved {
            return Some(vec![Err(error); members.len()]);
        }
        Some(results)
    }

    /// Converts a classic group with members into a consumer-protocol group (a
    /// consumer-protocol member is joining it); `GROUP_ID_NOT_FOUND` for a group of
    /// another protocol type, which cannot be.
    pub(super) fn upgrade(
        &self,
        state: &mut State,
        group_id: &str,
        topics: &dyn Topics,
        settings: &Settings<'_>,
    ) -> Result<(), GroupError> {
        let Some(classic) = state.groups.get_mut(group_id) else {
            return Ok(());
        };
        let Some((generation, members)) = classic.migrate_out() else {
            return Err(GroupError::GroupIdNotFound);
        };
        let count = members.len();
        let mut group = ConsumerGroup::from_classic(generation, members, topics, settings);
        group.overrides = state.overrides_of(group_id);
        group.incarnation = state.next_incarnation();
        state.groups.remove(group_id);
        state.consumer_groups.insert(group_id.to_owned(), group);
        tracing::info!(
            group = group_id,
            generation,
            members = count,
            "classic group converted to the consumer protocol"
        );
        Ok(())
    }

    /// Converts a consumer-protocol group whose members are all classic back into a
    /// classic group, which rebalances; whether it did (its stored state is to be
    /// forgotten: [`GroupCoordinator::forget_downgraded`]).
    pub(super) fn downgrade_if_classic(&self, state: &mut State, group_id: &str) -> bool {
        let Some(group) = state.consumer_groups.get(group_id) else {
            return false;
        };
        if !group.only_classic_members() {
            return false;
        }
        let (generation, members) = group.migrate_out();
        let count = members.len();
        let classic = Group::migrate_in(generation, members, self.now(), &self.config);
        state.consumer_groups.remove(group_id);
        state.groups.insert(group_id.to_owned(), classic);
        tracing::info!(
            group = group_id,
            generation,
            members = count,
            "consumer-protocol group converted back to a classic group"
        );
        true
    }

    /// Forgets the stored state of a group that went back to the classic protocol.
    pub(super) async fn forget_downgraded(&self, group_id: &str) -> Result<(), GroupError> {
        let _writes = self.writes.lock().await;
        if self.lock().consumer_groups.contains_key(group_id) {
            return Ok(());
        }
        self.forget_consumer_group_locked(group_id).await
    }

    /// The settings a consumer-protocol group's change is made with, now.
    pub(super) fn settings(&self, version: i16) -> Settings<'_> {
        Settings {
            config: &self.config.consumer,
            now: self.now(),
            version,
        }
    }
}
