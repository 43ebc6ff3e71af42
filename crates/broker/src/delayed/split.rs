//! The produce side of delayed delivery: a batch of a topic with
//! `delivery.delay.enable` is read record by record (the per-record cost only such
//! topics pay); records due later are taken out and become hold batches appended
//! right after it, in the same write.
//!
//! The producer's batch keeps its offsets and sequences (`rebuild_batch` keeps its
//! header and `lastOffsetDelta`): a held record's offset in it becomes a gap, as in a
//! compacted topic, and an idempotent producer's retry is still recognised (the whole
//! write is then skipped, holds included). A batch of a plain producer whose records
//! are all held is not written at all; an idempotent producer's is written empty, for
//! its sequences, and its holds follow it (a batch with no records followed by
//! nothing would stall KafkaJS).

use spool_model::{RecordBatchHeader, Timestamp, TimestampType};
use spool_protocol::internal::{Hold, hold_batch};
use spool_protocol::keyed::{BatchRecords, KeyedRecord, rebuild_batch};

use crate::topics::DelayPolicy;

/// The due time as epoch milliseconds (decimal ASCII).
pub(crate) const DELIVER_AT: &str = "spool.deliver-at";
/// The delay from now in milliseconds (decimal ASCII).
pub(crate) const DELAY_MS: &str = "spool.delay-ms";

/// The most a compressed batch may inflate to.
const MAX_INFLATED_BATCH: usize = 256 << 20;

/// A batch with its held records taken out.
#[derive(Debug)]
pub(crate) struct Split {
    /// The producer's batch without its held records; `None` when nothing of it is
    /// left to write.
    pub(crate) batch: Option<Vec<u8>>,
    /// One hold batch per held record, in the batch's order.
    pub(crate) holds: Vec<Vec<u8>>,
}

/// Why a batch cannot be taken: `INVALID_RECORD`, with what to fix.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum DelayError {
    #[error("record {index}: header {header} = {value:?}: {why}")]
    BadHeader {
        index: usize,
        header: &'static str,
        value: String,
        why: String,
    },
    #[error("delayed records are not supported in transactions (record {index} has {header})")]
    InTransaction { index: usize, header: &'static str },
    #[error("the batch's records cannot be read: {0}")]
    Unreadable(String),
}

impl DelayError {
    /// The record's index in its batch (KIP-467's `record_errors`).
    pub(crate) fn index(&self) -> Option<usize> {
        match self {
            DelayError::BadHeader { index, .. } | DelayError::InTransaction { index, .. } => {
                Some(*index)
            }
            DelayError::Unreadable(_) => None,
        }
    }
}

/// Splits `batch` (of header `header`); `None` when no record is held.
pub(crate) fn split(
    batch: &[u8],
    header: &RecordBatchHeader,
    policy: DelayPolicy,
    now: Timestamp,
) -> Result<Option<Split>, DelayError> {
    let records = BatchRecords::read(batch, MAX_INFLATED_BATCH)
        .map_err(|e| DelayError::Unreadable(e.to_string()))?;
    let records = records
        .records()
        .map_err(|e| DelayError::Unreadable(e.to_string()))?;
    let mut kept: Vec<KeyedRecord<'_>> = Vec::with_capacity(records.len());
    let mut holds = Vec::new();
    for (index, record) in records.iter().enumerate() {
        if header.is_transactional() {
            for name in [DELIVER_AT, DELAY_MS] {
                if has_header(record, name) {
                    return Err(DelayError::InTransaction {
                        index,
                        header: name,
                    });
                }
            }
        }
        let Some(due) = due_time(record, index, policy, now)? else {
            kept.push(*record);
            continue;
        };
        let produced = match header.timestamp_type() {
            TimestampType::CreateTime => {
                Timestamp(header.base_timestamp.0 + record.timestamp_delta)
            }
            TimestampType::LogAppendTime => now,
        };
        let headers = record
            .headers()
            .ok_or_else(|| DelayError::Unreadable(format!("record {index}'s headers")))?;
        let hold = Hold {
            due,
            produced,
            key: record.key.map(<[u8]>::to_vec),
            value: record.value.map(<[u8]>::to_vec),
            headers: headers
                .into_iter()
                .map(|(name, value)| (name.to_vec(), value.map(<[u8]>::to_vec)))
                .collect(),
        };
        holds.push(hold_batch(&hold, now));
    }
    if holds.is_empty() {
        return Ok(None);
    }
    let idempotent = header.producer_id.0 >= 0;
    let batch = if kept.is_empty() && !idempotent {
        None
    } else {
        Some(rebuild_batch(batch, &kept).map_err(|e| DelayError::Unreadable(e.to_string()))?)
    };
    Ok(Some(Split { batch, holds }))
}

/// When `record` is due, if it asks to be held and is due later than `now`.
fn due_time(
    record: &KeyedRecord<'_>,
    index: usize,
    policy: DelayPolicy,
    now: Timestamp,
) -> Result<Option<Timestamp>, DelayError> {
    let Some(headers) = record.headers() else {
        return Err(DelayError::Unreadable(format!("record {index}'s headers")));
    };
    let value_of = |name: &str| {
        headers
            .iter()
            .rev()
            .find(|(key, _)| *key == name.as_bytes())
            .map(|(_, value)| value.unwrap_or_default())
    };
    let bad = |header: &'static str, value: &[u8], why: String| DelayError::BadHeader {
        index,
        header,
        value: String::from_utf8_lossy(value).into_owned(),
        why,
    };
    let due = if let Some(value) = value_of(DELIVER_AT) {
        let at = decimal(value).ok_or_else(|| {
            bad(
                DELIVER_AT,
                value,
                "expected epoch milliseconds (decimal digits)".to_owned(),
            )
        })?;
        (at, DELIVER_AT, value)
    } else if let Some(value) = value_of(DELAY_MS) {
        let delay = decimal(value).ok_or_else(|| {
            bad(
                DELAY_MS,
                value,
                "expected milliseconds (decimal digits)".to_owned(),
            )
        })?;
        (now.0.saturating_add(delay), DELAY_MS, value)
    } else {
        return Ok(None);
    };
    let (at, header, value) = due;
    if at <= now.0 {
        return Ok(None);
    }
    let away = u64::try_from(at - now.0).unwrap_or(u64::MAX);
    if away > policy.max_ms {
        return Err(bad(
            header,
            value,
            format!(
                "due in {away} ms, beyond the topic's longest delay of {} ms (delivery.delay.max.ms, and retention.ms)",
                policy.max_ms
            ),
        ));
    }
    Ok(Some(Timestamp(at)))
}

fn has_header(record: &KeyedRecord<'_>, name: &str) -> bool {
    record
        .headers()
        .is_some_and(|headers| headers.iter().any(|(key, _)| *key == name.as_bytes()))
}

/// A non-negative whole number in decimal ASCII.
fn decimal(value: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(value).ok()?.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

#[cfg(test)]
mod tests;
