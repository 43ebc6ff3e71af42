//! Handing a partition over while its leader is alive (a drain, the controller's
//! balancing, `spool cluster move`): the controller (or an operator) only *asks*, by
//! naming the partition's next leader in the store; the leader itself then refuses
//! new appends, uploads what it buffered at once, waits until all it appended is
//! committed to object storage,
//! and moves the leadership in one fenced update. The next leader therefore opens a
//! catalogue that holds everything this one acknowledged, `acks=1` included, and
//! producers see only retriable errors (`NOT_LEADER_OR_FOLLOWER`) on the way.
//!
//! A leader that cannot settle within `cluster.handover.timeout.ms` takes appends
//! again; the controller then moves the partition without it (see [`super::controller`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use spool_log::PartitionLog;
use spool_metadata::{Leadership, PartitionKey};
use spool_model::TopicPartition;

use super::ClusterView;
use crate::partitions::log_topic;
use crate::server::Shared;

/// How often a sealed tail is checked for its last commit.
const SETTLE_POLL: Duration = Duration::from_millis(5);

/// Starts a handover for each partition this broker leads and was asked to hand to a
/// live broker, unless one is under way.
pub(crate) fn start_asked(shared: &Arc<Shared>, view: &Arc<ClusterView>) {
    if !view.is_member() {
        return;
    }
    let live: Vec<i32> = view.live_brokers().iter().map(|b| b.node_id).collect();
    for asked in view.handovers_asked_of_me() {
        if !live.contains(&asked.handover_to) {
            // The next leader is gone: the controller picks another.
            continue;
        }
        if !view.begin_handover(asked.key) {
            continue;
        }
        tokio::spawn(hand_over(shared.clone(), view.clone(), asked));
    }
}

/// Seals the partition's tail (if one is open here), waits for its commits, and
/// hands the partition over; takes appends again if that fails.
async fn hand_over(shared: Arc<Shared>, view: Arc<ClusterView>, asked: Leadership) {
    let started = Instant::now();
    let tail = open_tail(&shared, asked.key, asked.leader_epoch);
    if let Some(tail) = &tail {
        tail.seal();
        if let Some(storage) = &shared.storage {
            storage.flush_now();
        }
    }
    let deadline = started + view.settings.handover_timeout;
    let settled = loop {
        if tail.as_ref().is_none_or(|tail| tail.is_settled()) {
            break true;
        }
        if Instant::now() >= deadline {
            break false;
        }
        tokio::time::sleep(SETTLE_POLL).await;
    };
    let handed = if settled {
        shared
            .metadata
            .complete_handover(
                view.node_id,
                view.incarnation,
                asked.key,
                asked.leader_epoch,
            )
            .await
    } else {
        Ok(None)
    };
    match &handed {
        Ok(Some(now)) => {
            tracing::info!(
                topic_id = %asked.key.topic_id,
                partition = asked.key.partition,
                to = now.leader,
                leader_epoch = now.leader_epoch,
                millis = started.elapsed().as_millis(),
                "handed a partition over"
            );
            if let Err(error) = view.reload_leaders(&shared.metadata).await {
                tracing::warn!(%error, "cannot read the partitions' leaders");
            }
        }
        Ok(None) => {
            tracing::warn!(
                topic_id = %asked.key.topic_id,
                partition = asked.key.partition,
                settled,
                "a handover did not happen; the controller moves the partition"
            );
        }
        Err(error) => {
            tracing::warn!(%error, "a handover failed; the controller moves the partition");
        }
    }
    if !matches!(handed, Ok(Some(_)))
        && let Some(tail) = &tail
    {
        tail.unseal();
    }
    view.end_handover(asked.key);
}

/// The partition's tail if this broker opened one under `leader_epoch` (none: nothing
/// of it waits for a commit here).
fn open_tail(shared: &Shared, key: PartitionKey, leader_epoch: i32) -> Option<Arc<PartitionLog>> {
    let storage = shared.storage.as_ref()?;
    let log_key = TopicPartition::new(log_topic(key.topic_id), key.partition);
    storage.marks_of(&log_key)?;
    let log = shared.logs.partition(&log_key).ok().flatten()?;
    (log.is_tail() && log.leader_epoch() == leader_epoch).then_some(log)
}
