//! The two things a member does to a share-partition, for ShareFetch and
//! ShareAcknowledge alike: acknowledge what it holds, and acquire what it may have
//! next (with the bytes of the batches that hold it).

use std::sync::Arc;

use bytes::Bytes;
use spool_model::{Offset, RecordBatchHeader};
use spool_security::acl::Operation;
use spool_security::authorizer::Access;
use spool_share::partition::MemberId;
use spool_share::{AckBatch, AcquiredRange, ShareSettings};

use super::{SharePartitionId, ShareStats, held};
use crate::errors::{code, share_error_code};
use crate::leader_hint::LeaderHint;
use crate::partitions::{PartitionHandle, on_blocking_pool};
use crate::shared::Shared;
use crate::topics::Topic;

/// Why a partition's part of a request failed: the code, what the client is told,
/// and where the leader is when it is elsewhere.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) code: i16,
    pub(crate) message: String,
    pub(crate) leader: Option<LeaderHint>,
}

impl Refusal {
    fn new(code: i16, message: impl Into<String>) -> Refusal {
        Refusal {
            code,
            message: message.into(),
            leader: None,
        }
    }
}

/// The bytes of log read for one partition of a ShareFetch (at least one whole
/// batch): a share consumer takes a few hundred records a poll at most.
const READ_BYTES: u64 = 256 << 10;

/// The topic and partition a member names, if it may read them and this broker
/// leads the partition.
async fn partition(
    shared: &Arc<Shared>,
    access: &Access,
    id: &SharePartitionId,
) -> Result<(Arc<Topic>, PartitionHandle), Refusal> {
    let topic = shared.topics().by_id(id.topic_id).ok_or_else(|| {
        Refusal::new(
            code::UNKNOWN_TOPIC_ID,
            format!("no topic has id {}", id.topic_id),
        )
    })?;
    if !access.topic(Operation::Read, topic.record.name.as_str()) {
        return Err(Refusal::new(
            code::TOPIC_AUTHORIZATION_FAILED,
            format!(
                "{} may not read topic {}",
                access.principal(),
                topic.record.name
            ),
        ));
    }
    if topic.view.is_some() {
        return Err(Refusal::new(
            code::INVALID_REQUEST,
            format!(
                "{} is a view: share groups read topics with logs",
                topic.record.name
            ),
        ));
    }
    match shared
        .partitions()
        .open(topic.clone(), id.partition, -1)
        .await
    {
        Ok(handle) => Ok((topic, handle)),
        Err(error) => Err(Refusal {
            code: error.code(),
            message: error.to_string(),
            leader: if error.is_not_leader() {
                shared.leader_hint(&topic, id.partition)
            } else {
                None
            },
        }),
    }
}

/// Applies `member`'s acknowledgements of records of `id`, written to the store
/// before this returns.
pub(crate) async fn acknowledge(
    shared: &Arc<Shared>,
    access: &Access,
    id: &SharePartitionId,
    member: &str,
    batches: &[AckBatch],
    settings: &ShareSettings,
) -> Result<(), Refusal> {
    let (_, handle) = partition(shared, access, id).await?;
    let mut guard = held::lock(shared, id, &handle, settings)
        .await
        .map_err(|failure| Refusal::new(failure.code(), failure.to_string()))?;
    let Some(held) = guard.as_mut() else {
        return Err(Refusal::new(
            code::NOT_LEADER_OR_FOLLOWER,
            "the share-partition is not held here",
        ));
    };
    let outcome = held
        .partition
        .acknowledge(member, batches, shared.clock().instant(), settings)
        .map_err(|error| Refusal::new(share_error_code(&error), error.to_string()))?;
    held::commit(shared, id, &mut guard, outcome, settings)
        .await
        .map_err(|failure| Refusal::new(failure.code(), failure.to_string()))
}

/// What a member acquired of one partition: the ranges, and whole batches holding
/// them.
#[derive(Debug)]
pub(crate) struct Acquired {
    pub(crate) records: Bytes,
    pub(crate) ranges: Vec<AcquiredRange>,
}

/// Acquires for `member` at most `max_records` records of `id`: those available
/// again first, then new ones. `None` when there is nothing to acquire now.
pub(crate) async fn acquire(
    shared: &Arc<Shared>,
    access: &Access,
    id: &SharePartitionId,
    member: &MemberId,
    max_records: usize,
    settings: &ShareSettings,
) -> Result<Option<Acquired>, Refusal> {
    let (_, handle) = partition(shared, access, id).await?;
    let failed = |failure: held::ShareFailure| Refusal::new(failure.code(), failure.to_string());
    let from = {
        let mut guard = held::lock(shared, id, &handle, settings)
            .await
            .map_err(failed)?;
        let Some(held) = guard.as_mut() else {
            return Ok(None);
        };
        if held.partition.follow_log_start(handle.log_start().0) {
            let moved = spool_share::Outcome {
                changed: true,
                ..spool_share::Outcome::default()
            };
            held::commit(shared, id, &mut guard, moved, settings)
                .await
                .map_err(failed)?;
        }
        let Some(held) = guard.as_ref() else {
            return Ok(None);
        };
        let high_watermark = handle.log.offsets().high_watermark.0;
        match held
            .partition
            .next_to_read(shared.clock().instant(), high_watermark, settings)
        {
            Some(from) => from,
            None => return Ok(None),
        }
    };
    // Read without the lock: another member's fetch may acquire meanwhile, and the
    // acquisition below takes only what is still there to take.
    let read = {
        let handle = handle.clone();
        on_blocking_pool(move || handle.read_bytes(Offset(from), READ_BYTES))
            .await
            .and_then(|read| read)
            .map_err(|error| Refusal::new(error.code(), error.to_string()))?
    };
    let batches = batch_spans(&read);
    let (Some(first), Some(last)) = (batches.first(), batches.last()) else {
        return Ok(None);
    };
    let covered = (first.first, last.last);
    let ranges = {
        let mut guard = held::lock(shared, id, &handle, settings)
            .await
            .map_err(failed)?;
        let Some(held) = guard.as_mut() else {
            return Ok(None);
        };
        held.partition.acquire(
            member,
            shared.clock().instant(),
            covered,
            max_records,
            settings,
        )
    };
    if ranges.is_empty() {
        return Ok(None);
    }
    let stats = &shared.share().stats;
    for range in &ranges {
        let count = u64::try_from(range.last - range.first + 1).unwrap_or(0);
        ShareStats::add(&stats.acquired, count);
        if range.delivery_count > 1 {
            ShareStats::add(&stats.redelivered, count);
        }
    }
    let mut records = Vec::new();
    for batch in &batches {
        let holds_acquired = ranges
            .iter()
            .any(|range| range.first <= batch.last && batch.first <= range.last);
        if holds_acquired && let Some(bytes) = read.get(batch.bytes.clone()) {
            records.extend_from_slice(bytes);
        }
    }
    Ok(Some(Acquired {
        records: Bytes::from(records),
        ranges,
    }))
}

/// One batch of a read: its offsets and where its bytes are.
#[derive(Debug)]
struct BatchSpan {
    first: i64,
    last: i64,
    bytes: std::ops::Range<usize>,
}

/// The whole batches in `read`, in order (a torn one at the end is left out).
fn batch_spans(read: &[u8]) -> Vec<BatchSpan> {
    let mut spans = Vec::new();
    let mut position = 0;
    while let Some(rest) = read.get(position..) {
        let Some(header) = RecordBatchHeader::parse(rest) else {
            break;
        };
        let end = position + header.total_len();
        if end > read.len() {
            break;
        }
        spans.push(BatchSpan {
            first: header.base_offset.0,
            last: header.last_offset().0,
            bytes: position..end,
        });
        position = end;
    }
    spans
}
