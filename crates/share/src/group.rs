//! The members of share groups, as their coordinator keeps them (ShareGroupHeartbeat,
//! KIP-932), and their assignment.
//!
//! A member joins at epoch 0 with its subscription and the member id it made itself,
//! heartbeats at the epoch it was last given, and leaves at −1; one silent for the
//! group's session timeout is removed. Every change of membership, subscription or
//! of the subscribed topics' partitions bumps the group epoch and assigns again with
//! the `simple` assignor (Kafka's only one for share groups): each partition of a
//! subscribed topic goes to at least one of its subscribers, and when a topic has
//! fewer partitions than subscribers, members share them (several read one
//! partition; the share-partition hands each record to one of them). There is no
//! revocation handshake: a member is told its new assignment with its next epoch.
//!
//! Membership lives in the coordinator's memory: after a restart, or when the group
//! moves to another coordinator, members are told they are unknown and join again
//! (what share groups keep, the records' states, is kept by the partitions' leaders).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use spool_coordinator::consumer::{Assignment, Topics};

use crate::error::ShareError;
use crate::settings::ShareSettings;

/// The member epoch that joins, and the one that leaves.
pub const JOIN: i32 = 0;
pub const LEAVE: i32 = -1;

/// Every share group this coordinator has members of.
#[derive(Debug, Default)]
pub struct ShareGroups {
    groups: BTreeMap<String, ShareGroup>,
}

/// One share group's members and epoch.
#[derive(Debug, Clone, Default)]
pub struct ShareGroup {
    pub epoch: i32,
    pub members: BTreeMap<String, ShareMember>,
    /// The topics' version the assignment was made at (partitions added, topics
    /// created or deleted move it).
    topics_version: u64,
}

/// One member.
#[derive(Debug, Clone)]
pub struct ShareMember {
    /// The epoch the member was last told.
    pub epoch: i32,
    pub subscribed: Vec<String>,
    pub assignment: Assignment,
    pub client_id: String,
    pub client_host: String,
    pub rack_id: Option<String>,
    /// The assignment changed since the member was last told it.
    untold: bool,
    deadline: Instant,
}

/// A ShareGroupHeartbeat as the coordinator needs it; `None` fields are unchanged.
#[derive(Debug, Clone)]
pub struct ShareHeartbeat {
    pub group_id: String,
    pub member_id: String,
    pub member_epoch: i32,
    pub rack_id: Option<String>,
    pub subscribed_topic_names: Option<Vec<String>>,
    pub client_id: String,
    pub client_host: String,
}

/// The answer: the member's epoch and, when it changed (or on joining), its whole
/// assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareHeartbeatAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    pub heartbeat_interval: Duration,
    pub assignment: Option<Assignment>,
}

impl ShareGroups {
    /// A heartbeat: join, stay, change the subscription, or leave.
    pub fn heartbeat(
        &mut self,
        request: ShareHeartbeat,
        topics: &dyn Topics,
        settings: &ShareSettings,
        max_size: usize,
        now: Instant,
    ) -> Result<ShareHeartbeatAnswer, ShareError> {
        if request.member_id.is_empty() {
            return Err(ShareError::InvalidRequest(
                "a share group member names itself: MemberId must not be empty".to_owned(),
            ));
        }
        let unknown = || ShareError::UnknownMember {
            group: request.group_id.clone(),
            member: request.member_id.clone(),
        };
        if request.member_epoch == LEAVE {
            let group = self.groups.get_mut(&request.group_id).ok_or_else(unknown)?;
            group
                .members
                .remove(&request.member_id)
                .ok_or_else(unknown)?;
            group.epoch += 1;
            group.assign(topics);
            if group.members.is_empty() {
                self.groups.remove(&request.group_id);
            }
            return Ok(ShareHeartbeatAnswer {
                member_id: request.member_id,
                member_epoch: LEAVE,
                heartbeat_interval: settings.heartbeat_interval,
                assignment: None,
            });
        }
        let group = self.groups.entry(request.group_id.clone()).or_default();
        let deadline = now + settings.session_timeout;
        let mut changed = false;
        if request.member_epoch == JOIN {
            let Some(subscribed) = request.subscribed_topic_names.clone() else {
                if group.members.is_empty() {
                    self.groups.remove(&request.group_id);
                }
                return Err(ShareError::InvalidRequest(
                    "a joining share group member must name its topics".to_owned(),
                ));
            };
            if !group.members.contains_key(&request.member_id) && group.members.len() >= max_size {
                let group_id = request.group_id.clone();
                if group.members.is_empty() {
                    self.groups.remove(&group_id);
                }
                return Err(ShareError::GroupMaxSizeReached {
                    group: group_id,
                    max: max_size,
                });
            }
            group.members.insert(
                request.member_id.clone(),
                ShareMember {
                    epoch: JOIN,
                    subscribed,
                    assignment: Assignment::new(),
                    client_id: request.client_id.clone(),
                    client_host: request.client_host.clone(),
                    rack_id: request.rack_id.clone(),
                    untold: true,
                    deadline,
                },
            );
            changed = true;
        } else {
            let Some(member) = group.members.get_mut(&request.member_id) else {
                if group.members.is_empty() {
                    self.groups.remove(&request.group_id);
                }
                return Err(unknown());
            };
            if request.member_epoch != member.epoch {
                return Err(ShareError::FencedMemberEpoch {
                    got: request.member_epoch,
                    current: member.epoch,
                });
            }
            member.deadline = deadline;
            if let Some(rack) = request.rack_id.clone() {
                member.rack_id = Some(rack);
            }
            if let Some(subscribed) = request.subscribed_topic_names.clone()
                && subscribed != member.subscribed
            {
                member.subscribed = subscribed;
                changed = true;
            }
        }
        if changed {
            group.epoch += 1;
            group.assign(topics);
        } else if group.topics_version != topics.version() && group.assign(topics) {
            // New partitions (or topics) are a new epoch of the group.
            group.epoch += 1;
        }
        let group_epoch = group.epoch;
        let member = group
            .members
            .get_mut(&request.member_id)
            .ok_or_else(unknown)?;
        let assignment = if member.untold {
            member.untold = false;
            member.epoch = group_epoch;
            Some(member.assignment.clone())
        } else {
            None
        };
        Ok(ShareHeartbeatAnswer {
            member_id: request.member_id,
            member_epoch: member.epoch,
            heartbeat_interval: settings.heartbeat_interval,
            assignment,
        })
    }

    /// Removes the members silent past their session timeout; returns them, by
    /// group.
    pub fn expire(&mut self, now: Instant, topics: &dyn Topics) -> Vec<(String, String)> {
        let mut expired = Vec::new();
        for (group_id, group) in &mut self.groups {
            let before = group.members.len();
            group.members.retain(|member_id, member| {
                let alive = member.deadline > now;
                if !alive {
                    expired.push((group_id.clone(), member_id.clone()));
                }
                alive
            });
            if group.members.len() != before {
                group.epoch += 1;
                group.assign(topics);
            }
        }
        self.groups.retain(|_, group| !group.members.is_empty());
        expired
    }

    /// The group, if it has members here.
    #[must_use]
    pub fn group(&self, group_id: &str) -> Option<&ShareGroup> {
        self.groups.get(group_id)
    }

    /// The ids of the groups with members here.
    #[must_use]
    pub fn group_ids(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }
}

impl ShareGroup {
    /// The `simple` assignment of every member, from the subscriptions and the
    /// topics as they are; a member whose assignment changed is told at its next
    /// heartbeat (with a new epoch). Whether any assignment changed.
    fn assign(&mut self, topics: &dyn Topics) -> bool {
        self.topics_version = topics.version();
        let mut subscribers: BTreeMap<uuid::Uuid, (i32, Vec<String>)> = BTreeMap::new();
        for (member_id, member) in &self.members {
            for name in &member.subscribed {
                if let Some(topic) = topics.by_name(name) {
                    subscribers
                        .entry(topic.id)
                        .or_insert((topic.partitions, Vec::new()))
                        .1
                        .push(member_id.clone());
                }
            }
        }
        let mut assignments: BTreeMap<String, Assignment> = BTreeMap::new();
        for (topic, (partitions, members)) in &subscribers {
            let (Ok(count), false) = (usize::try_from(*partitions), members.is_empty()) else {
                continue;
            };
            if count == 0 {
                continue;
            }
            let mut give = |member: &String, partition: i32| {
                assignments
                    .entry(member.clone())
                    .or_default()
                    .entry(*topic)
                    .or_default()
                    .insert(partition);
            };
            if count >= members.len() {
                for partition in 0..*partitions {
                    let index = usize::try_from(partition).unwrap_or(0) % members.len();
                    if let Some(member) = members.get(index) {
                        give(member, partition);
                    }
                }
            } else {
                for (index, member) in members.iter().enumerate() {
                    let partition = i32::try_from(index % count).unwrap_or(0);
                    give(member, partition);
                }
            }
        }
        let mut changed = false;
        for (member_id, member) in &mut self.members {
            let new = assignments.remove(member_id).unwrap_or_default();
            if new != member.assignment {
                member.assignment = new;
                member.untold = true;
                changed = true;
            }
        }
        changed
    }
}

#[cfg(test)]
mod tests;
