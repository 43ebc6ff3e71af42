//! Kafka's `__consumer_offsets`, read-only: every group's committed offsets as Kafka
//! writes them (`records`), in the 50 partitions Kafka hashes groups to, read from the
//! offset store's log (`spool_metadata::OffsetLog`: a compacted log, the latest commit
//! of each key at the offset it took). Lag monitors that read the topic (Burrow and
//! its kind) work unchanged.
//!
//! It is served by name or id: Metadata describes it (internal, 50 partitions) when a
//! client asks for it, not in the list of all topics; Fetch and ListOffsets read it on
//! any broker (the store is shared); nobody produces to it, and no topic of that name
//! can be created. A topic of that name created before Spool served it stays what it
//! was (docs/groups.md#reading-__consumer_offsets).

mod records;

use std::time::Duration;

use kafka_protocol::messages::metadata_response::{
    MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use spool_metadata::OFFSETS_TOPIC_PARTITIONS;
use uuid::Uuid;

use crate::errors::code;
use crate::shared::Shared;

pub(crate) const NAME: &str = "__consumer_offsets";

/// The topic's id, the same on every broker ("__consumer_offse" in ASCII).
pub(crate) const TOPIC_ID: Uuid = Uuid::from_u128(0x5f5f_636f_6e73_756d_6572_5f6f_6666_7365);

/// How often a fetch that found nothing looks at the log again while it waits.
pub(crate) const POLL: Duration = Duration::from_millis(500);

/// The most records one partition's read takes from the store.
const READ_LIMIT: i64 = 1000;

/// Whether a request naming `name` means this topic (no real topic has the name).
pub(crate) fn named(shared: &Shared, name: &str) -> bool {
    name == NAME && shared.topics().get(NAME).is_none()
}

/// Whether a request naming topic id `id` means this topic.
pub(crate) fn with_id(id: Uuid) -> bool {
    id == TOPIC_ID
}

/// Partition `partition`'s leader as Metadata names it: this broker in embedded mode
/// (no `writers`); on a cluster, one of the live `writers` (by node id) in turn by
/// partition (any broker serves it: the log is in the shared store).
fn leader(shared: &Shared, writers: &[i32], partition: i32) -> i32 {
    let count = i32::try_from(writers.len()).unwrap_or(i32::MAX);
    if count == 0 {
        return shared.started_config().node_id;
    }
    usize::try_from(partition % count)
        .ok()
        .and_then(|at| writers.get(at).copied())
        .unwrap_or_else(|| shared.started_config().node_id)
}

/// The topic as Metadata describes it, with the client's authorized operations on it
/// when asked.
pub(crate) fn describe(
    shared: &Shared,
    writers: &[i32],
    version: i16,
    operations: Option<i32>,
) -> MetadataResponseTopic {
    let partitions = (0..OFFSETS_TOPIC_PARTITIONS)
        .map(|index| {
            let leader = BrokerId(leader(shared, writers, index));
            MetadataResponsePartition::default()
                .with_partition_index(index)
                .with_leader_id(leader)
                .with_leader_epoch(0)
                .with_replica_nodes(vec![leader])
                .with_isr_nodes(vec![leader])
        })
        .collect();
    let mut described = MetadataResponseTopic::default()
        .with_name(Some(TopicName(StrBytes::from_static_str(NAME))))
        .with_is_internal(true)
        .with_partitions(partitions);
    if let Some(operations) = operations {
        described = described.with_topic_authorized_operations(operations);
    }
    if version >= 10 {
        described.with_topic_id(TOPIC_ID)
    } else {
        described
    }
}

/// What one partition's read found.
#[derive(Debug, Default)]
pub(crate) struct Read {
    /// Record batches, one per record, in offset order.
    pub(crate) batches: Vec<u8>,
    pub(crate) high_watermark: i64,
}

/// Partition `partition`'s records from `offset`, about `max_bytes` of them (the first
/// whole when `first`). As in a compacted log, the log start stays 0 and an offset
/// whose record has moved on is read from the next one.
pub(crate) async fn read(
    shared: &Shared,
    partition: i32,
    offset: i64,
    max_bytes: u64,
    first: bool,
) -> Result<Read, i16> {
    check_partition(partition)?;
    let store = shared.metadata();
    let head = store
        .offset_log_head(partition)
        .await
        .map_err(|_| code::KAFKA_STORAGE_ERROR)?;
    if offset < 0 || offset > head {
        return Err(code::OFFSET_OUT_OF_RANGE);
    }
    let mut read = Read {
        batches: Vec::new(),
        high_watermark: head,
    };
    if offset == head || max_bytes == 0 && !first {
        return Ok(read);
    }
    let logged = store
        .offset_log(partition, offset, head, READ_LIMIT)
        .await
        .map_err(|_| code::KAFKA_STORAGE_ERROR)?;
    for record in &logged {
        let batch = records::batch(record);
        let fits = u64::try_from(read.batches.len() + batch.len()).unwrap_or(u64::MAX) <= max_bytes;
        if !(fits || first && read.batches.is_empty()) {
            break;
        }
        read.batches.extend_from_slice(&batch);
    }
    Ok(read)
}

/// What ListOffsets asks of a partition of this topic.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lookup {
    /// 0, as in a compacted log.
    Earliest,
    /// The head.
    Latest,
    /// The newest commit's, which has the largest timestamp.
    MaxTimestamp,
    /// The first commit at or after this time.
    AtOrAfter(i64),
}

/// ListOffsets of partition `partition`: (offset, timestamp), Kafka's −1s for none.
pub(crate) async fn list_offset(
    shared: &Shared,
    partition: i32,
    lookup: Lookup,
) -> Result<(i64, i64), i16> {
    check_partition(partition)?;
    let store = shared.metadata();
    let failed = |_| code::KAFKA_STORAGE_ERROR;
    let head = store.offset_log_head(partition).await.map_err(failed)?;
    match lookup {
        Lookup::Earliest => Ok((0, -1)),
        Lookup::Latest => Ok((head, -1)),
        Lookup::MaxTimestamp => {
            let newest = if head > 0 {
                store
                    .offset_log(partition, head - 1, head, 1)
                    .await
                    .map_err(failed)?
            } else {
                Vec::new()
            };
            Ok(newest.first().map_or((-1, -1), |record| {
                (record.log_offset, record.committed.commit_ms)
            }))
        }
        Lookup::AtOrAfter(wanted) => {
            // Commit times rise with offsets (each commit takes the head).
            let mut from = 0;
            loop {
                let page = store
                    .offset_log(partition, from, head, READ_LIMIT)
                    .await
                    .map_err(failed)?;
                if let Some(found) = page.iter().find(|r| r.committed.commit_ms >= wanted) {
                    return Ok((found.log_offset, found.committed.commit_ms));
                }
                match page.last() {
                    Some(last) => from = last.log_offset + 1,
                    None => return Ok((-1, -1)),
                }
            }
        }
    }
}

fn check_partition(partition: i32) -> Result<(), i16> {
    if (0..OFFSETS_TOPIC_PARTITIONS).contains(&partition) {
        Ok(())
    } else {
        Err(code::UNKNOWN_TOPIC_OR_PARTITION)
    }
}
