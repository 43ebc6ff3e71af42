//! The controller: the broker holding the controller lease assigns every partition to
//! a live writer that is not draining, balanced by count and spread over racks (see
//! [`super::placement`]).
//!
//! A partition whose leader is dead (or that has none) moves at once: one transaction
//! fenced by the controller epoch raises its leader epoch, so the old leader can
//! commit nothing more. A live leader is *asked* to hand the partition over, and does
//! so once what it buffered is committed (see [`super::handover`]); one that has not
//! after `cluster.handover.timeout.ms` loses the partition the first way.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use spool_metadata::{Leadership, MetadataError, PartitionKey, PartitionMove};

use super::ClusterView;
use super::placement::{Racks, plan};
use super::view::{Asked, lease_ms};
use crate::shared::Shared;

/// The controller's round, if this broker holds (or can take) the lease; `true` if
/// partitions moved or handovers were asked.
pub(crate) async fn tick(shared: &Arc<Shared>, view: &ClusterView) -> Result<bool, MetadataError> {
    if view.is_replaced() {
        return Ok(false);
    }
    // One round at a time in this broker (the heartbeat's and one after a topic was
    // created), so that two rounds never plan the same moves.
    let _round = view.controller_round.lock().await;
    let metadata = shared.metadata();
    // A reader never takes the lease; it only notes who holds it (for Metadata).
    let lease = if view.reader {
        metadata.controller().await?
    } else {
        metadata
            .claim_controller(view.node_id, view.incarnation, lease_ms(&view.settings))
            .await?
    };
    if let Some(lease) = &lease {
        view.note_controller(lease.node_id);
    }
    let Some(lease) = lease.filter(|lease| lease.incarnation == Some(view.incarnation)) else {
        // Not the controller: what it saw as one is stale by the time it is again.
        view.asked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        return Ok(false);
    };
    let now = spool_model::Timestamp::now().0;
    let registered = metadata.brokers().await?;
    // Dead brokers' racks too: their partitions prefer a broker of the same rack.
    let racks: Racks = registered
        .iter()
        .map(|broker| (broker.node_id, broker.rack.clone()))
        .collect();
    let live: Vec<(i32, bool)> = registered
        .into_iter()
        .filter(|broker| broker.lease_expires_ms > now)
        .map(|broker| (broker.node_id, broker.takes_work()))
        .collect();
    let eligible: Vec<i32> = live
        .iter()
        .filter(|(_, takes_work)| *takes_work)
        .map(|(node, _)| *node)
        .collect();
    let live: HashSet<i32> = live.into_iter().map(|(node, _)| node).collect();
    let leaderships = metadata.leaderships().await?;
    let asked_now: HashMap<PartitionKey, i32> = leaderships
        .iter()
        .map(|leadership| (leadership.key, leadership.handover_to))
        .collect();
    let overdue = overdue_handovers(view, &leaderships, &live, &eligible);
    let mut moves = Vec::new();
    let mut handovers = Vec::new();
    for planned in plan(&leaderships, &eligible, &racks) {
        if !live.contains(&planned.from) {
            moves.push(planned);
        } else if asked_now.get(&planned.key) != Some(&planned.to) {
            handovers.push(planned);
        }
    }
    moves.extend(overdue);
    let mut changed = false;
    if !moves.is_empty()
        && let Some(moved) = metadata.move_partitions(lease.epoch, &moves).await?
    {
        tracing::info!(
            partitions = moved.len(),
            brokers = eligible.len(),
            "the controller moved partitions"
        );
        changed = true;
    }
    if !handovers.is_empty()
        && let Some(asked) = metadata.request_handovers(lease.epoch, &handovers).await?
    {
        tracing::info!(
            partitions = asked.len(),
            brokers = eligible.len(),
            "the controller asked live leaders to hand partitions over"
        );
        changed = true;
    }
    Ok(changed)
}

/// The handovers asked of live leaders (to brokers that can take them) more than
/// `cluster.handover.timeout.ms` ago, as this controller has seen them, as moves.
fn overdue_handovers(
    view: &ClusterView,
    leaderships: &[Leadership],
    live: &HashSet<i32>,
    eligible: &[i32],
) -> Vec<PartitionMove> {
    let mut asked = view
        .asked
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = Instant::now();
    let mut current = HashMap::new();
    let mut overdue = Vec::new();
    for leadership in leaderships {
        let (from, to) = (leadership.leader, leadership.handover_to);
        if to < 0 || to == from || !live.contains(&from) || !eligible.contains(&to) {
            continue;
        }
        let epoch = leadership.leader_epoch;
        let seen = asked
            .get(&leadership.key)
            .filter(|seen| (seen.from, seen.to, seen.leader_epoch) == (from, to, epoch))
            .map_or(now, |seen| seen.since);
        if now.duration_since(seen) >= view.settings.handover_timeout {
            tracing::warn!(
                topic_id = %leadership.key.topic_id,
                partition = leadership.key.partition,
                from,
                to,
                "a leader did not hand a partition over in time: moving it without it"
            );
            overdue.push(PartitionMove {
                key: leadership.key,
                from,
                to,
            });
        } else {
            current.insert(
                leadership.key,
                Asked {
                    from,
                    to,
                    leader_epoch: epoch,
                    since: seen,
                },
            );
        }
    }
    *asked = current;
    overdue
}
