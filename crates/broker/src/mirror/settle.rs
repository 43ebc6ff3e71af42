//! Settling failed-over partitions: the leader of each one, once its copy can append
//! no more, aborts the source's transactions still open in it (their coordinator is
//! the source's, which this cluster no longer follows), forgets the source's
//! producers, and keeps their ids from this cluster's producers (the floor). Until its
//! leader has settled it, a failed-over partition refuses writes with a retriable
//! error, so no record of this cluster's producers ever lands among the source's
//! unsettled ones.
//!
//! The first settling of a partition is recorded in the metadata store (its log end
//! and floor): a later leader (a move, a restart) finds it and settles nothing again,
//! since the records past that end are this cluster's own.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use spool_metadata::MirrorFailoverRecord;
use spool_model::{Offset, Timestamp};
use spool_protocol::control::{Marker, marker_batch};
use uuid::Uuid;

use super::topics::{floor_of, led_here_handle};
use crate::partitions::on_blocking_pool;
use crate::shared::Shared;
use crate::topics::Topic;

/// How long the abort markers may take to become durable.
const DURABLE_WAIT: Duration = Duration::from_secs(30);

/// Whether partition `index` of `topic` was failed over and this broker, which leads
/// it, has not yet settled it under its current epoch: it takes no writes yet.
pub(crate) fn awaits_settling(shared: &Shared, topic: &Topic, index: i32) -> bool {
    if floor_of(topic).is_none() {
        return false;
    }
    shared
        .partitions()
        .led_epoch(topic, index)
        .is_some_and(|epoch| !shared.failovers().is_settled(topic.record.id, index, epoch))
}

/// Settles every failed-over partition this broker leads and has not settled under
/// its current epoch, and keeps every floor from the producer ids handed out here.
/// Runs every round, whatever the links (a link deleted after its failover leaves
/// its partitions to later leaders all the same).
pub(super) async fn settle_led_here(shared: &Arc<Shared>) {
    let failed_over: Vec<Arc<Topic>> = shared
        .topics()
        .all()
        .into_iter()
        .filter(|topic| floor_of(topic).is_some())
        .collect();
    // What no longer holds (a topic gone, a leadership lost) is forgotten.
    let led: HashSet<(Uuid, i32, i32)> = failed_over
        .iter()
        .flat_map(|topic| {
            (0..topic.record.partitions).filter_map(|index| {
                let epoch = shared.partitions().led_epoch(topic, index)?;
                Some((topic.record.id, index, epoch))
            })
        })
        .collect();
    shared.failovers().settled().retain(|key| led.contains(key));
    if failed_over.is_empty() {
        return;
    }
    for topic in &failed_over {
        for index in 0..topic.record.partitions {
            let Some(epoch) = shared.partitions().led_epoch(topic, index) else {
                continue;
            };
            if shared.failovers().is_settled(topic.record.id, index, epoch) {
                continue;
            }
            if let Err(error) = settle(shared, topic, index, epoch).await {
                tracing::error!(topic = %topic.record.name, partition = index, %error,
                    "settling a failed-over mirror partition failed; retried next round");
            }
        }
    }
    let floor = match shared.metadata().mirror_failover_floor().await {
        Ok(found) => found.max(failed_over.iter().filter_map(|t| floor_of(t)).max()),
        Err(error) => {
            tracing::warn!(%error, "reading the failovers' producer-id floor failed");
            return;
        }
    };
    if let Some(floor) = floor
        && let Err(error) = shared.producer_ids().raise_floor(floor, false).await
    {
        tracing::warn!(%error, "raising the producer-id floor failed");
    }
}

/// Settles partition `index` of failed-over `topic`, led here under `epoch`, unless
/// it is settled already. Answers the log end where the source's records end.
pub(super) async fn settle(
    shared: &Arc<Shared>,
    topic: &Arc<Topic>,
    index: i32,
    epoch: i32,
) -> Result<i64, String> {
    let failovers = shared.failovers();
    let _one_at_a_time = failovers.settling().lock().await;
    let store = |error: spool_metadata::MetadataError| error.to_string();
    if shared.partitions().led_epoch(topic, index) != Some(epoch) {
        return Err("this broker no longer leads it".to_owned());
    }
    // Read now, as this broker leads it: a settling recorded by an earlier leader
    // stands, and this cluster may have written since.
    if let Some(first) = shared
        .metadata()
        .mirror_failover(topic.record.id, index)
        .await
        .map_err(store)?
    {
        failovers.settled().insert((topic.record.id, index, epoch));
        return Ok(first.log_end);
    }
    let floor = floor_of(topic).ok_or("the topic is not failed over")?;
    let handle = led_here_handle(shared, topic, index)
        .await
        .ok_or("this broker does not lead it")?;
    let gate = failovers.copy_gate();
    let now = Timestamp(shared.clock().now_ms());
    let partition = handle.clone();
    // No write of this cluster's producers reached it (it awaits settling): every
    // producer in it is the source's, every transaction open in it the source's.
    let (floor, log_end) = on_blocking_pool(move || {
        let _no_copy_appends = gate
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let log = &partition.log;
        let floor = log
            .max_producer_id()
            .map_or(floor, |max| floor.max(max + 1));
        for (producer, producer_epoch) in log.open_transaction_producers() {
            let marker = marker_batch(producer, producer_epoch, Marker::Abort, 0, now);
            log.append(&[marker.as_slice()])?;
            partition.appended(marker.len());
            tracing::info!(partition = %log.dir().display(), producer,
                "aborted a source transaction left open by the failover");
        }
        log.forget_producers_below(floor);
        Ok::<_, spool_log::LogError>((floor, log.offsets().log_end.0))
    })
    .await
    .map_err(|error| error.to_string())?
    .map_err(|error| error.to_string())?;
    // The markers durable, and the floor in the store, before any write is taken.
    match tokio::time::timeout(DURABLE_WAIT, handle.log.wait_durable(Offset(log_end))).await {
        Ok(Ok(())) => {}
        Ok(Err(error)) => return Err(format!("the abort markers are not durable: {error}")),
        Err(_) => return Err("the abort markers did not become durable in time".to_owned()),
    }
    shared
        .producer_ids()
        .raise_floor(floor, true)
        .await
        .map_err(store)?;
    let record = MirrorFailoverRecord {
        topic_id: topic.record.id,
        partition: index,
        log_end,
        producer_id_floor: floor,
        settled_ms: now.0,
    };
    if !shared
        .metadata()
        .put_mirror_failover(&record)
        .await
        .map_err(store)?
    {
        // Another broker recorded it between the read above and now: it led the
        // partition then, and cannot have written to it since (it no longer leads).
        tracing::error!(topic = %topic.record.name, partition = index,
            "a failed-over partition was settled by two leaders at once");
    }
    failovers.settled().insert((topic.record.id, index, epoch));
    tracing::info!(topic = %topic.record.name, partition = index, log_end, floor,
        "settled a failed-over mirror partition: it takes writes");
    Ok(log_end)
}
