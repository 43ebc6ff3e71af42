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
use spool_metadata::Leadership;
use spool_model::TopicPartition;

use super::ClusterView;
use crate::partitions::log_topic;
use crate::shared::Shared;

/// How often a sealed tail is checked for its last commit.
const SETTLE_POLL: Duration = Duration::from_millis(5);

/// Starts a handover for each partition this broker leads and was asked to hand to a
/// live broker, unless one is under way.
pub(crate) fn start_asked(shared: &Arc<Shared>, view: &Arc<ClusterView>) {
    let Some(storage) = shared.storage() else {
        return;
    };
    if !view.is_member() {
        return;
    }
    let takers: Vec<i32> = view
        .live_brokers()
        .iter()
        .filter(|b| b.takes_work())
        .map(|b| b.node_id)
        .collect();
    for asked in view.handovers_asked_of_me() {
        if !takers.contains(&asked.handover_to) {
            // The next leader is gone or draining: the controller picks another.
            continue;
        }
        let log_key = TopicPartition::new(log_topic(asked.key.topic_id), asked.key.partition);
        if storage.is_handing_over(&log_key) {
            continue;
        }
        // Its own task: beginning waits for a tail being opened (the catalogue's
        // answers), which the heartbeat that calls this must not.
        let (shared, view, storage) = (shared.clone(), view.clone(), storage.clone());
        tokio::spawn(async move {
            // `None`: under way already (asked again before it ended).
            let Some(handover) = storage
                .begin_handover(shared.logs(), &log_key, asked.leader_epoch)
                .await
            else {
                return;
            };
            hand_over(shared, view, asked, log_key, handover.tail).await;
        });
    }
}

/// Waits for the commits of the partition's sealed tail (if one was open here) and
/// hands the partition over; takes appends again if that fails.
async fn hand_over(
    shared: Arc<Shared>,
    view: Arc<ClusterView>,
    asked: Leadership,
    log_key: TopicPartition,
    tail: Option<Arc<PartitionLog>>,
) {
    let started = Instant::now();
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
            .metadata()
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
            if let Err(error) = view.reload_leaders(shared.metadata()).await {
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
    // Appends again only if the partition is surely still this broker's at the same
    // epoch: a handover whose answer was lost may have happened.
    let still_mine = match &handed {
        Ok(Some(_)) => false,
        Ok(None) => true,
        Err(_) => {
            view.reload_leaders(shared.metadata()).await.is_ok()
                && view.led_epoch(asked.key) == Some(asked.leader_epoch)
        }
    };
    if still_mine && let Some(tail) = &tail {
        tail.unseal();
    }
    if let Some(storage) = shared.storage() {
        storage.end_handover(&log_key);
    }
}
