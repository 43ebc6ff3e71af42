//! Dead letters (KIP-1191): records rejected, or delivered as often as the group's
//! limit allows, are archived and written to the group's dead-letter topic
//! (`errors.deadletterqueue.topic.name`), before the share-partition's new state is
//! stored: a crash between the two writes the letter again (at least once, never
//! lost). Each letter carries headers naming where it came from and why; with
//! `errors.deadletterqueue.copy.record.enable` also the record's key, value and
//! headers, else a null value.
//!
//! A letter goes to the partition of the dead-letter topic with the source
//! partition's index (modulo its count) when this broker leads it, else to another
//! one this broker leads: in a cluster, give the dead-letter topic at least as many
//! partitions as there are brokers (an auto-created one gets that many). A letter
//! that cannot be written is logged and counted; the record stays archived.

use std::sync::Arc;

use spool_model::Offset;
use spool_protocol::keyed::BatchRecords;
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

/// How long a write waits for this broker to lead a partition of the dead-letter
/// topic (one just created has no leaders yet).
const LEADER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The most bytes of a source record's batch read to copy it.
const COPY_READ_BYTES: u64 = 1 << 20;

/// Writes `letters` of share-partition `id` to the group's dead-letter topic, if it
/// has one (durable when this returns, or logged as failed).
pub(crate) async fn write(
    shared: &Arc<Shared>,
    id: &SharePartitionId,
    letters: &[DeadLetter],
    settings: &ShareSettings,
) {
    let stats = &shared.share().stats;
    ShareStats::add(&stats.dead_letters, letters.len() as u64);
    let Some(name) = settings.dead_letter_topic.as_deref() else {
        return;
    };
    match write_to(shared, id, letters, settings, name).await {
        Ok(()) => ShareStats::add(&stats.dead_letters_written, letters.len() as u64),
        Err(error) => {
            tracing::error!(group = %id.group, topic = %id.topic_id, partition = id.partition,
                dead_letter_topic = name, records = letters.len(), %error,
                "writing dead letters failed; the records stay archived");
        }
    }
}

async fn write_to(
    shared: &Arc<Shared>,
    id: &SharePartitionId,
    letters: &[DeadLetter],
    settings: &ShareSettings,
    name: &str,
) -> Result<(), String> {
    let source = shared
        .topics()
        .by_id(id.topic_id)
        .ok_or("the source topic is gone")?;
    let topic = dead_letter_topic(shared, name, settings).await?;
    let target = led_partition(shared, &topic, id.partition).await?;
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
                        Some(handle) => copy_of(handle, letter.offset).unwrap_or_default(),
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
    let batch = plain_batch(&records, shared.clock().timestamp());
    let appended = {
        let target = target.clone();
        on_blocking_pool(move || {
            let info = target.log.append(&[&batch])?;
            target.appended(batch.len());
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
    // One partition per broker at least: a broker writes its letters to a partition
    // it leads.
    let brokers = shared.cluster().map_or(1, |view| {
        i32::try_from(view.live_brokers().len()).unwrap_or(1)
    });
    let request = NewTopic {
        name: name.to_owned(),
        partitions: shared.current_config().default_partitions.max(brokers),
        replication_factor: -1,
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

/// The partition of `topic` at `index` modulo its count if this broker leads it, else
/// the first one it leads.
async fn led_partition(
    shared: &Arc<Shared>,
    topic: &Arc<Topic>,
    index: i32,
) -> Result<PartitionHandle, String> {
    let count = topic.record.partitions.max(1);
    let preferred = index.rem_euclid(count);
    // A topic just created has no leaders until the controller assigns them.
    let deadline = tokio::time::Instant::now() + LEADER_WAIT;
    loop {
        for candidate in (0..count).map(|i| (preferred + i) % count) {
            if let Ok(handle) = shared.partitions().open(topic.clone(), candidate, -1).await {
                return Ok(handle);
            }
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    Err(format!(
        "this broker leads no partition of the dead-letter topic {}",
        topic.record.name
    ))
}

/// The record at `offset` (key, value and headers), if it can be read. Blocking.
fn copy_of(handle: &PartitionHandle, offset: i64) -> Option<PlainRecord> {
    let bytes = handle.read_bytes(Offset(offset), COPY_READ_BYTES).ok()?;
    let batch = BatchRecords::read(&bytes, 64 << 20).ok()?;
    let records = batch.records().ok()?;
    let delta = offset - batch.header.base_offset.0;
    let record = records.iter().find(|r| r.offset_delta == delta)?;
    Some(PlainRecord {
        key: record.key.map(<[u8]>::to_vec),
        value: record.value.map(<[u8]>::to_vec),
        headers: record
            .headers()?
            .into_iter()
            .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect(),
    })
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
