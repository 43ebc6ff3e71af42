//! The write side of a partition for produced batches: everything between a
//! produce request's records and the log's append. Each batch is validated once
//! (framing, CRC-32C, header fields; never per record), checked against its topic
//! (a view or a mirror takes no writes; timestamps within bounds; keys on a compacted topic;
//! schema ids where the topic validates them),
//! split when records are due later (delayed delivery), recompressed to the topic's
//! `compression.type`, then all are appended with one write and counted. Handlers
//! decode the request and encode the answer; the Kafka codes of a refusal are chosen
//! here, from the domain errors, through `crate::errors`.

use std::borrow::Cow;
use std::sync::Arc;

use spool_log::{AppendInfo, LogError};
use spool_model::{Timestamp, TimestampType, TopicPartition};
use spool_protocol::batch::{self, BatchFrames, BatchRules};
use spool_protocol::compression::CodecError;
use spool_protocol::keyed::{self, BatchRecords};
use spool_protocol::recompress::recompress;

use super::{PartitionHandle, Partitions};
use crate::errors::{self, code};
use crate::metrics::BrokerMetrics;
use crate::schema_registry::SchemaIds;
use crate::schema_registry::validation::Invalid;
use crate::topics::{Recompression, Topic};

/// The most a batch may inflate to when its topic recompresses it.
const MAX_INFLATED_BATCH: usize = 256 << 20;

/// Why a partition's batches were refused: the code, and for bad records (KIP-467,
/// Produce v8+) which ones and why.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) code: i16,
    pub(crate) message: Option<String>,
    /// (index of the record in its batch, why).
    pub(crate) record_errors: Vec<(i32, String)>,
}

impl From<i16> for Refusal {
    fn from(code: i16) -> Refusal {
        Refusal {
            code,
            message: None,
            record_errors: Vec::new(),
        }
    }
}

impl Partitions {
    /// Validates produced batches for partition `index` of `topic` and appends them, at
    /// `now` by the broker's clock, checking schema ids with `schema_ids` where the
    /// topic says so; counts them in `metrics`. Blocking: runs on the blocking pool.
    pub(crate) fn append_produced(
        &self,
        topic: Arc<Topic>,
        index: i32,
        records_bytes: &[u8],
        now: Timestamp,
        metrics: Option<&BrokerMetrics>,
        schema_ids: Option<&SchemaIds>,
    ) -> Result<(PartitionHandle, AppendInfo), Refusal> {
        if let Some(view) = &topic.view {
            // Kafka's answer to a write to a topic that takes none (an internal one):
            // not retriable, so the producer fails the records at once.
            return Err(Refusal {
                message: Some(format!(
                    "{} is a read-only view of {}: produce to {} instead",
                    topic.record.name, view.source, view.source
                )),
                ..Refusal::from(code::INVALID_TOPIC_EXCEPTION)
            });
        }
        if let Some(link) = &topic.mirror {
            return Err(Refusal {
                message: Some(format!(
                    "{} is a read-only mirror (link {link}): produce to the source cluster, \
                     or make it writable with spool mirror failover {link}",
                    topic.record.name
                )),
                ..Refusal::from(code::INVALID_TOPIC_EXCEPTION)
            });
        }
        let name = TopicPartition::new(topic.record.name.clone(), index);
        let max_message_bytes = topic.max_message_bytes;
        let check_timestamps = topic.log.timestamp_type == TimestampType::CreateTime
            && !topic.timestamps.is_unlimited();
        let now = now.0;
        // Batch frames lie back to back from the start of `records`.
        let mut batches: Vec<Cow<'_, [u8]>> = Vec::new();
        // Records in the batches, from their headers (for the per-topic metrics).
        let mut records = 0u64;
        for frame in BatchFrames::new(records_bytes) {
            let (_, bytes) = frame.map_err(|e| errors::batch_error_code(&e))?;
            if bytes.len() > max_message_bytes {
                return Err(code::MESSAGE_TOO_LARGE.into());
            }
            let header = batch::validate_batch(bytes, BatchRules::Produce).map_err(|error| {
                tracing::debug!(partition = %name, %error, "refusing a produced batch");
                errors::batch_error_code(&error)
            })?;
            // Kafka checks every record; the header's first and newest timestamps are the
            // batch's bounds for all but out-of-order records, and cost nothing to read.
            if check_timestamps
                && !(topic.timestamps.allows(header.base_timestamp.0, now)
                    && topic.timestamps.allows(header.max_timestamp.0, now))
            {
                return Err(code::INVALID_TIMESTAMP.into());
            }
            if topic.log.cleanup.compact {
                refuse_keyless(bytes, &name)?;
            }
            if topic.schema_validation.any()
                && let Some(schema_ids) = schema_ids
            {
                refuse_unregistered(bytes, &topic, schema_ids, &name)?;
            }
            records += u64::try_from(header.last_offset_delta).unwrap_or(0) + 1;
            let (bytes, holds) = match topic.delay {
                Some(policy) => {
                    // Retention would remove a hold before it is due.
                    let policy = crate::topics::DelayPolicy {
                        max_ms: topic
                            .log
                            .retention_ms
                            .map_or(policy.max_ms, |retention| policy.max_ms.min(retention)),
                    };
                    held_back(bytes, &header, policy, &name, Timestamp(now))?
                }
                None => (Some(Cow::Borrowed(bytes)), Vec::new()),
            };
            if let Some(bytes) = bytes {
                batches.push(match topic.recompression {
                    None => bytes,
                    Some(target) => match recompressed(&bytes, target, max_message_bytes, &name)? {
                        Cow::Borrowed(_) => bytes,
                        Cow::Owned(owned) => Cow::Owned(owned),
                    },
                });
            }
            batches.extend(holds.into_iter().map(Cow::Owned));
        }
        if batches.is_empty() {
            return Err(code::CORRUPT_MESSAGE.into());
        }
        let slices: Vec<&[u8]> = batches.iter().map(AsRef::as_ref).collect();
        let partition = self
            .partition_of(topic.clone(), index, -1)
            .map_err(|e| e.code())?;
        let log = partition.log.clone();
        let info = log.append(&slices).map_err(|e| {
            if let LogError::Producer(refused) = &e {
                tracing::info!(partition = %name, %refused, "refusing an idempotent batch");
            } else if let LogError::NotLeader { .. } = &e {
                // Being handed over (or fenced): the client finds the next leader.
                tracing::debug!(partition = %name, "refusing an append: not the leader");
            } else {
                tracing::error!(partition = %name, %e, "append failed");
            }
            errors::log_error_code(&e)
        })?;
        if info.duplicate {
            tracing::debug!(partition = %name, base = %info.base_offset, "a retried batch was already written");
        } else {
            let bytes = slices.iter().map(|s| s.len()).sum();
            partition.appended(bytes);
            if let Some(metrics) = metrics {
                metrics.topic(topic.record.id, topic.record.name.as_str(), |counters| {
                    counters.bytes_in.inc_by(bytes as u64);
                    counters.records_in.inc_by(records);
                });
            }
        }
        Ok((partition, info))
    }
}

/// The batch to append (`None`: nothing left of it) and the hold batches after it.
type HeldBack<'a> = (Option<Cow<'a, [u8]>>, Vec<Vec<u8>>);

/// A batch of a topic with delayed delivery: its records due later taken out as hold
/// batches (appended after it), the rest as the batch to append (`None`: nothing
/// left). A bad due time refuses the batch with `INVALID_RECORD`, naming the record.
fn held_back<'a>(
    bytes: &'a [u8],
    header: &spool_model::RecordBatchHeader,
    policy: crate::topics::DelayPolicy,
    partition: &TopicPartition,
    now: Timestamp,
) -> Result<HeldBack<'a>, Refusal> {
    match crate::delayed::split::split(bytes, header, policy, now) {
        Ok(None) => Ok((Some(Cow::Borrowed(bytes)), Vec::new())),
        Ok(Some(split)) => Ok((split.batch.map(Cow::Owned), split.holds)),
        Err(error) => {
            tracing::debug!(%partition, %error, "refusing a batch with a bad due time");
            let message = error.to_string();
            Err(Refusal {
                code: code::INVALID_RECORD,
                message: Some(message.clone()),
                record_errors: error
                    .index()
                    .map(|index| (i32::try_from(index).unwrap_or(i32::MAX), message))
                    .into_iter()
                    .collect(),
            })
        }
    }
}

/// A compacted topic keeps the latest record of each key, so a record without a key
/// has no place in it: the whole batch is refused, naming each keyless record, as
/// Kafka does. The records are read (inflated if need be): compacted topics only.
fn refuse_keyless(batch: &[u8], partition: &TopicPartition) -> Result<(), Refusal> {
    let keyless = keyed::keyless_records(batch, MAX_INFLATED_BATCH).map_err(|error| {
        tracing::debug!(%partition, %error, "cannot read the records of a produced batch");
        Refusal::from(code::CORRUPT_MESSAGE)
    })?;
    if keyless.is_empty() {
        return Ok(());
    }
    let message = format!(
        "Compacted topic cannot accept message without key in topic partition {partition}."
    );
    Err(Refusal {
        code: code::INVALID_RECORD,
        message: Some(message.clone()),
        record_errors: keyless
            .into_iter()
            .map(|index| (i32::try_from(index).unwrap_or(i32::MAX), message.clone()))
            .collect(),
    })
}

/// A topic that validates schema ids refuses a batch with a record whose value (key)
/// carries no id registered under the topic's subject, naming each such record. The
/// records are read (inflated if need be): validating topics only.
fn refuse_unregistered(
    batch: &[u8],
    topic: &Topic,
    schema_ids: &SchemaIds,
    partition: &TopicPartition,
) -> Result<(), Refusal> {
    let corrupt = |error: &dyn std::fmt::Display| {
        tracing::debug!(%partition, %error, "cannot read the records of a produced batch");
        Refusal::from(code::CORRUPT_MESSAGE)
    };
    let records = BatchRecords::read(batch, MAX_INFLATED_BATCH).map_err(|e| corrupt(&e))?;
    let refused = match schema_ids.check(
        topic.record.name.as_str(),
        topic.schema_validation,
        &records,
    ) {
        Ok(()) => return Ok(()),
        Err(Invalid::Corrupt) => return Err(corrupt(&"a record is malformed")),
        Err(Invalid::StoreUnavailable) => return Err(code::KAFKA_STORAGE_ERROR.into()),
        Err(Invalid::Records(refused)) => refused,
    };
    let first = refused
        .first()
        .map(|(_, why)| why.clone())
        .unwrap_or_default();
    tracing::debug!(%partition, records = refused.len(), %first, "refusing a batch failing schema validation");
    Err(Refusal {
        code: code::INVALID_RECORD,
        message: Some(format!(
            "{} record(s) of the batch failed schema validation for {partition}: {first}",
            refused.len()
        )),
        record_errors: refused
            .into_iter()
            .map(|(index, why)| (i32::try_from(index).unwrap_or(i32::MAX), why))
            .collect(),
    })
}

/// A batch in its topic's `compression.type` (the producer's own if it already is).
fn recompressed<'a>(
    bytes: &'a [u8],
    target: Recompression,
    max_message_bytes: usize,
    partition: &TopicPartition,
) -> Result<Cow<'a, [u8]>, i16> {
    match recompress(bytes, target.codec, target.level, MAX_INFLATED_BATCH) {
        Ok(None) => Ok(Cow::Borrowed(bytes)),
        Ok(Some(batch)) if batch.len() > max_message_bytes => Err(code::MESSAGE_TOO_LARGE),
        Ok(Some(batch)) => Ok(Cow::Owned(batch)),
        Err(error) => {
            tracing::debug!(%partition, %error, "cannot recompress a produced batch");
            Err(match error {
                CodecError::TooLarge(_) => code::MESSAGE_TOO_LARGE,
                _ => code::CORRUPT_MESSAGE,
            })
        }
    }
}
