//! Dead letters (KIP-1191): records rejected, or delivered as often as the group's
//! limit allows, are archived and written to the group's dead-letter topic
//! (`errors.deadletterqueue.topic.name`). Each letter carries headers naming where it
//! came from and why; with `errors.deadletterqueue.copy.record.enable` also the
//! record's key, value and headers, else a null value.
//!
//! A letter goes to the partition of the dead-letter topic with the source
//! partition's index (modulo its count). When this broker leads it, the letter is
//! written there before the share-partition's new state is stored (a crash between
//! the two writes it again: at least once, never lost). When another broker leads it
//! (a cluster), the letter is queued in the metadata store in the same store
//! transaction as the new state, and that partition's leader writes it and takes it
//! off the queue ([`run`]; a crash between those two writes it again). A letter that
//! cannot be written either way (its topic missing and not to be created) is logged
//! and counted; the record stays archived.

use std::sync::Arc;

use spool_metadata::QueuedDeadLetter;
use spool_protocol::plain::{PlainRecord, plain_batch};
use spool_share::{DeadLetter, ShareSettings};

use super::{SharePartitionId, ShareStats};
use crate::partitions::{PartitionError, PartitionHandle, on_blocking_pool};
use crate::shared::Shared;
use crate::topics::{self, NewTopic, Topic};

/// The headers of a dead letter (KIP-1191's names).
pub(crate) const TOPIC_HEADER: &str = "__dlq.errors.topic";
pub(crate) const PARTITION_HEADER: &str = "__dlq.errors.partition";
pub(crate) const OFFSET_HEADER: &str = "__dlq.errors.offset";
pub(crate) const GROUP_HEADER: &str = "__dlq.errors.group";
pub(crate) const DELIVERY_COUNT_HEADER: &str = "__dlq.errors.delivery.count";
pub(crate) const MESSAGE_HEADER: &str = "__dlq.errors.message";

/// How often a broker of a cluster looks for queued letters it can write.
const DRAIN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// The most queued letters read at once.
const DRAIN_LIMIT: u32 = 1000;

/// Writes `letters` of share-partition `id` to the group's dead-letter topic, if it
/// has one: durable when this returns, or returned to be queued with the
/// share-partition's new state (another broker leads their partition), or logged as
/// failed.
pub(crate) async fn write(
    shared: &Arc<Shared>,
    id: &SharePartitionId,
    letters: &[DeadLetter],
    settings: &ShareSettings,
) -> Vec<QueuedDeadLetter> {
    let stats = &shared.share().stats;
    ShareStats::add(&stats.dead_letters, letters.len() as u64);
    let Some(name) = settings.dead_letter_topic.as_deref() else {
        return Vec::new();
    };
    match write_to(shared, id, letters, settings, name).await {
        Ok(Written::Here) => {
            ShareStats::add(&stats.dead_letters_written, letters.len() as u64);
            Vec::new()
        }
        Ok(Written::Queued(queued)) => {
            ShareStats::add(&stats.dead_letters_queued, queued.len() as u64);
            queued
        }
        Err(error) => {
            tracing::error!(group = %id.group, topic = %id.topic_id, partition = id.partition,
                dead_letter_topic = name, records = letters.len(), %error,
                "writing dead letters failed; the records stay archived");
            Vec::new()
        }
    }
}

/// Where letters went.
enum Written {
    /// Into a partition this broker leads.
    Here,
    /// Nowhere yet: to be queued for the leader of their partition.
    Queued(Vec<QueuedDeadLetter>),
}

async fn write_to(
    shared: &Arc<Shared>,
    id: &SharePartitionId,
    letters: &[DeadLetter],
    settings: &ShareSettings,
    name: &str,
) -> Result<Written, String> {
    let source = shared
        .topics()
        .by_id(id.topic_id)
        .ok_or("the source topic is gone")?;
    let topic = dead_letter_topic(shared, name, settings).await?;
    let target_partition = id.partition.rem_euclid(topic.record.partitions.max(1));
    let copy_from = if settings.dead_letter_copy_record {
        Some(
            shared
                .partitions()
                .open(source.clone(), id.partition, -1)
                .await
                .map_err(|e| e.to_string())?,
        )
    } else {
        None
    };
    let records: Vec<PlainRecord> = {
        let (letters, group, source_name) = (
            letters.to_vec(),
            id.group.clone(),
            source.record.name.as_str().to_owned(),
        );
        let partition = id.partition;
        on_blocking_pool(move || {
            letters
                .iter()
                .map(|letter| {
                    let mut record = match &copy_from {
                        Some(handle) => handle.record_at(letter.offset).unwrap_or_default(),
                        None => PlainRecord::default(),
                    };
                    record
                        .headers
                        .extend(headers(&source_name, partition, &group, letter));
                    record
                })
                .collect()
        })
        .await
        .map_err(|e| e.to_string())?
    };
    let now = shared.clock().timestamp();
    match shared
        .partitions()
        .open(topic.clone(), target_partition, -1)
        .await
    {
        Ok(target) => {
            append_durably(&target, vec![plain_batch(&records, now)]).await?;
            Ok(Written::Here)
        }
        // Another broker leads it (or nobody yet, a topic just created): queued for
        // whoever does.
        Err(_) if shared.cluster().is_some() => Ok(Written::Queued(
            letters
                .iter()
                .zip(&records)
                .map(|(letter, record)| QueuedDeadLetter {
                    group: id.group.clone(),
                    topic_id: id.topic_id,
                    partition: id.partition,
                    offset: letter.offset,
                    dead_letter_topic: name.to_owned(),
                    target_partition,
                    batch: plain_batch(std::slice::from_ref(record), now),
                })
                .collect(),
        )),
        Err(error) => Err(error.to_string()),
    }
}

/// Appends `batches` to `target` and waits until they are durable.
async fn append_durably(target: &PartitionHandle, batches: Vec<Vec<u8>>) -> Result<(), String> {
    let appended = {
        let target = target.clone();
        on_blocking_pool(move || {
            let slices: Vec<&[u8]> = batches.iter().map(Vec::as_slice).collect();
            let info = target.log.append(&slices)?;
            target.appended(batches.iter().map(Vec::len).sum());
            Ok::<_, PartitionError>(info)
        })
        .await
        .and_then(|appended| appended)
        .map_err(|e| e.to_string())?
    };
    target
        .log
        .wait_durable(appended.next_offset())
        .await
        .map_err(|e| e.to_string())
}

/// Writes the queued letters whose partitions this broker leads, every
/// [`DRAIN_INTERVAL`], until `stopped` (a cluster's brokers only: a single broker
/// leads every partition and queues nothing).
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: tokio::sync::watch::Receiver<bool>) {
    let mut ticks = tokio::time::interval(DRAIN_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stopped.changed() => return,
        }
        if let Err(error) = drain(&shared).await {
            tracing::warn!(%error, "writing queued dead letters failed; they are tried again");
        }
    }
}

/// One pass over the queue: each dead-letter partition's letters this broker leads
/// are appended in one write, then taken off the queue.
async fn drain(shared: &Arc<Shared>) -> Result<(), String> {
    let queued = shared
        .metadata()
        .queued_dead_letters(DRAIN_LIMIT)
        .await
        .map_err(|e| e.to_string())?;
    // The queue is ordered by topic and partition: one run per partition.
    let mut rest = queued.as_slice();
    while let Some(first) = rest.first() {
        let run = rest
            .iter()
            .take_while(|l| {
                l.dead_letter_topic == first.dead_letter_topic
                    && l.target_partition == first.target_partition
            })
            .count();
        let (letters, after) = rest.split_at(run);
        rest = after;
        let Some(topic) = shared.topics().get(&first.dead_letter_topic) else {
            drop_if_topic_deleted(shared, &first.dead_letter_topic, letters).await?;
            continue;
        };
        let Ok(target) = shared
            .partitions()
            .open(topic, first.target_partition, -1)
            .await
        else {
            continue; // Led elsewhere.
        };
        let batches = letters.iter().map(|l| l.batch.clone()).collect();
        append_durably(&target, batches).await?;
        shared
            .metadata()
            .dead_letters_written(letters)
            .await
            .map_err(|e| e.to_string())?;
        ShareStats::add(
            &shared.share().stats.dead_letters_written,
            letters.len() as u64,
        );
    }
    Ok(())
}

/// Takes `letters` off the queue if the store no longer has their topic (deleted
/// since they were queued); else leaves them for when this broker learns of it.
async fn drop_if_topic_deleted(
    shared: &Arc<Shared>,
    name: &str,
    letters: &[QueuedDeadLetter],
) -> Result<(), String> {
    let topics = shared
        .metadata()
        .topics()
        .await
        .map_err(|e| e.to_string())?;
    if topics.iter().any(|t| t.name.as_str() == name) {
        return Ok(());
    }
    tracing::error!(
        dead_letter_topic = name,
        records = letters.len(),
        "the dead-letter topic was deleted before its queued letters were written; they are dropped"
    );
    shared
        .metadata()
        .dead_letters_written(letters)
        .await
        .map_err(|e| e.to_string())
}

/// The dead-letter topic, created if it does not exist and the group allows it.
async fn dead_letter_topic(
    shared: &Arc<Shared>,
    name: &str,
    settings: &ShareSettings,
) -> Result<Arc<Topic>, String> {
    if let Some(topic) = shared.topics().get(name) {
        return Ok(topic);
    }
    if !settings.dead_letter_auto_create {
        return Err(format!(
            "the dead-letter topic {name} does not exist (errors.deadletterqueue.auto.create.topics.enable is false)"
        ));
    }
    // One partition per broker at least: the letters of every broker's
    // share-partitions spread over all of them.
    let brokers = shared.cluster().map_or(1, |view| {
        i32::try_from(view.live_brokers().len()).unwrap_or(1)
    });
    let request = NewTopic {
        name: name.to_owned(),
        partitions: shared.current_config().default_partitions.max(brokers),
        replication_factor: -1,
        replica_assignment: Vec::new(),
        configs: std::collections::BTreeMap::new(),
    };
    match topics::create(shared, request, false).await {
        Ok(topic) => {
            tracing::info!(topic = name, "created a dead-letter topic");
            Ok(topic)
        }
        // Created meanwhile by another writer.
        Err(_) if shared.topics().get(name).is_some() => {
            shared.topics().get(name).ok_or_else(|| name.to_owned())
        }
        Err(error) => Err(error.message),
    }
}

fn headers(
    topic: &str,
    partition: i32,
    group: &str,
    letter: &DeadLetter,
) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    [
        (TOPIC_HEADER, topic.to_owned()),
        (PARTITION_HEADER, partition.to_string()),
        (OFFSET_HEADER, letter.offset.to_string()),
        (GROUP_HEADER, group.to_owned()),
        (DELIVERY_COUNT_HEADER, letter.delivery_count.to_string()),
        (MESSAGE_HEADER, letter.reason.message().to_owned()),
    ]
    .into_iter()
    .map(|(name, value)| (name.as_bytes().to_vec(), Some(value.into_bytes())))
    .collect()
}
