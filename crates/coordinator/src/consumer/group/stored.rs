//! A consumer group as the metadata store keeps it: everything a coordinator needs to
//! take the group on after a restart or a move (epochs, members, target assignment,
//! the subscribed topics' partition counts), as JSON. Timers are not kept: a group
//! taken on gives every member a new session, and a member that must give
//! partitions up a new rebalance timeout.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use super::ConsumerGroup;
use bytes::Bytes;

use crate::consumer::member::{ClassicMember, Member, MemberState};
use crate::consumer::{Assignment, GroupOverrides, PartitionCounts};

#[derive(Debug, Serialize, Deserialize)]
struct StoredGroup {
    epoch: i32,
    assignment_epoch: i32,
    members: Vec<StoredMember>,
    /// By member id.
    target: BTreeMap<String, Assignment>,
    /// By member id.
    member_topics: BTreeMap<String, PartitionCounts>,
    subscribed_topics: PartitionCounts,
    empty_since_ms: Option<i64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct StoredMember {
    id: String,
    instance_id: Option<String>,
    rack_id: Option<String>,
    client_id: String,
    client_host: String,
    epoch: i32,
    previous_epoch: i32,
    state: MemberState,
    assigned: Assignment,
    pending_revocation: Assignment,
    subscribed_names: Vec<String>,
    regex: String,
    server_assignor: Option<String>,
    rebalance_timeout_ms: u64,
    /// A member of the classic protocol.
    #[serde(default)]
    classic: Option<StoredClassic>,
}

#[derive(Debug, Serialize, Deserialize)]
struct StoredClassic {
    session_timeout_ms: u64,
    /// (name, metadata).
    protocols: Vec<(String, Vec<u8>)>,
    synced: Assignment,
}

impl ConsumerGroup {
    /// The group as the store keeps it.
    pub(crate) fn to_stored(&self) -> String {
        let stored = StoredGroup {
            epoch: self.epoch,
            assignment_epoch: self.assignment_epoch,
            members: self.members.values().map(stored_member).collect(),
            target: self.target.clone(),
            member_topics: self.member_topics.clone(),
            subscribed_topics: self.subscribed_topics.clone(),
            empty_since_ms: self.empty_since_ms,
        };
        // Maps with string or UUID keys, numbers and strings: JSON takes them all.
        serde_json::to_string(&stored).unwrap_or_default()
    }

    /// The group the store kept, its members' sessions starting `now`.
    pub(crate) fn from_stored(
        text: &str,
        overrides: GroupOverrides,
        session_timeout: Duration,
        now: Instant,
    ) -> Result<ConsumerGroup, serde_json::Error> {
        let stored: StoredGroup = serde_json::from_str(text)?;
        let mut group = ConsumerGroup::with_overrides(overrides);
        group.epoch = stored.epoch;
        group.assignment_epoch = stored.assignment_epoch;
        group.target = stored.target;
        group.member_topics = stored.member_topics;
        group.subscribed_topics = stored.subscribed_topics;
        group.empty_since_ms = stored.empty_since_ms;
        for stored_member in stored.members {
            let member = member_of(stored_member, session_timeout, now);
            if let Some(instance) = &member.instance_id {
                group.instances.insert(instance.clone(), member.id.clone());
            }
            // An expression it was stored with compiled then; one that no longer
            // does matches nothing.
            if group.regexes.learn(&member.regex).is_err() {
                tracing::warn!(member = %member.id, regex = %member.regex, "a stored subscription's expression does not compile");
            }
            group.members.insert(member.id.clone(), member);
        }
        group.stored = Some(text.to_owned());
        Ok(group)
    }
}

fn stored_member(member: &Member) -> StoredMember {
    StoredMember {
        id: member.id.clone(),
        instance_id: member.instance_id.clone(),
        rack_id: member.rack_id.clone(),
        client_id: member.client_id.clone(),
        client_host: member.client_host.clone(),
        epoch: member.epoch,
        previous_epoch: member.previous_epoch,
        state: member.state,
        assigned: member.assigned.clone(),
        pending_revocation: member.pending_revocation.clone(),
        subscribed_names: member.subscribed_names.clone(),
        regex: member.regex.clone(),
        server_assignor: member.server_assignor.clone(),
        rebalance_timeout_ms: millis(member.rebalance_timeout),
        classic: member.classic.as_ref().map(|classic| StoredClassic {
            session_timeout_ms: millis(classic.session_timeout),
            protocols: classic
                .protocols
                .iter()
                .map(|(name, metadata)| (name.clone(), metadata.to_vec()))
                .collect(),
            synced: classic.synced.clone(),
        }),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A duration stored in ms, at most what the wire carries (an i32 of ms).
fn from_millis(ms: u64) -> Duration {
    Duration::from_millis(ms.min(u64::from(i32::MAX.unsigned_abs())))
}

fn member_of(stored: StoredMember, session_timeout: Duration, now: Instant) -> Member {
    let rebalance_timeout = from_millis(stored.rebalance_timeout_ms);
    let classic = stored.classic.map(|classic| ClassicMember {
        session_timeout: from_millis(classic.session_timeout_ms),
        protocols: classic
            .protocols
            .into_iter()
            .map(|(name, metadata)| (name, Bytes::from(metadata)))
            .collect(),
        synced: classic.synced,
    });
    // A classic member's session is its own.
    let session_timeout = classic
        .as_ref()
        .map_or(session_timeout, |classic| classic.session_timeout);
    let revocation_deadline = (stored.state == MemberState::UnrevokedPartitions)
        .then(|| (now + rebalance_timeout, stored.epoch));
    Member {
        id: stored.id,
        instance_id: stored.instance_id,
        rack_id: stored.rack_id,
        client_id: stored.client_id,
        client_host: stored.client_host,
        epoch: stored.epoch,
        previous_epoch: stored.previous_epoch,
        state: stored.state,
        assigned: stored.assigned,
        pending_revocation: stored.pending_revocation,
        subscribed_names: stored.subscribed_names,
        regex: stored.regex,
        server_assignor: stored.server_assignor,
        rebalance_timeout,
        session_deadline: now + session_timeout,
        revocation_deadline,
        classic,
    }
}
