//! Produce (key 0): validate each batch once (framing, CRC-32C, header fields), append
//! every partition's batches with one write, and answer per `acks`: 0 not at all, 1
//! once written, -1 (all) once durable.
//!
//! Two phases: [`append`] runs in request order on the connection's worker, so that
//! two requests' batches for one partition land in the order they were sent;
//! [`Appended::answer`] waits for durability, and the connection runs it while it
//! goes on with the next requests (answers still leave in request order). A client
//! with several produce requests in flight thus shares one fsync, or one object
//! upload in shared-storage mode, instead of waiting for each in turn.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ProduceRequest, ProduceResponse, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_log::{AppendInfo, LogError};
use spool_metadata::BrokerRecord;
use spool_model::{Timestamp, TimestampType, TopicPartition};
use spool_protocol::batch::{self, BatchFrames, BatchRules};
use spool_protocol::compression::CodecError;
use spool_protocol::keyed;
use spool_protocol::recompress::recompress;

use super::api::ApiDecl;
use crate::errors::{self, code};
use crate::leader_hint::LeaderHint;
use crate::partitions::{PartitionHandle, per_partition};
use crate::shared::Shared;
use crate::topics::{self, Recompression, Topic};
use spool_security::acl::Operation;
use spool_security::authorizer::Access;
use spool_shared_storage::SharedStorage;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::Produce,
    min: 3,
    // v10 (KIP-951): a refusal names the partition's leader. v11 is KIP-890's
    // transactions, not built yet.
    max: 10,
};

/// One partition's part of the request, validated and appended or refused.
struct PartitionOutcome {
    index: i32,
    result: Result<(PartitionHandle, AppendInfo), Refused>,
}

/// Why a partition's batches were refused: the code, and for bad records (KIP-467,
/// Produce v8+) which ones and why.
#[derive(Debug)]
struct Refused {
    code: i16,
    message: Option<String>,
    /// (index of the record in its batch, why).
    record_errors: Vec<(i32, String)>,
    /// `NOT_LEADER_OR_FOLLOWER`: the broker that leads the partition (KIP-951).
    leader: Option<LeaderHint>,
}

impl From<i16> for Refused {
    fn from(code: i16) -> Refused {
        Refused {
            code,
            message: None,
            record_errors: Vec::new(),
            leader: None,
        }
    }
}

/// A partition's batches to append: everything the blocking append needs.
struct Appending {
    index: i32,
    records: bytes::Bytes,
    topic: Arc<Topic>,
}

/// The most a batch may inflate to when its topic recompresses it.
const MAX_INFLATED_BATCH: usize = 256 << 20;

/// Per topic, each partition's index and its append or the error found up front.
type Plan = Vec<(TopicName, Vec<(i32, Result<Appending, i16>)>)>;

/// Why a partition of no known topic is refused: the name is not one Kafka allows, or
/// no such topic exists (yet).
fn unknown_topic_code(name: &str) -> i16 {
    if topics::is_illegal_name(name) {
        code::INVALID_TOPIC_EXCEPTION
    } else {
        code::UNKNOWN_TOPIC_OR_PARTITION
    }
}

/// `None` for `acks=0`: no response at all.
/// Appended batches, waiting to be answered.
pub(crate) struct Appended {
    acks: i16,
    timeout: Duration,
    topics: Vec<(TopicName, Vec<PartitionOutcome>)>,
    /// The brokers named as leaders of refused partitions, with their addresses.
    leaders: Vec<BrokerRecord>,
    /// Shared-storage mode: where to ask why a write did not become durable.
    storage: Option<Arc<SharedStorage>>,
}

/// The first phase: appends every partition's batches.
pub(crate) async fn append(
    request: ProduceRequest,
    access: &Access,
    listener: &str,
    shared: Arc<Shared>,
) -> Appended {
    let acks = request.acks;
    // CVE-2018-17196: what the batches are decides, not what the request claims.
    let transactional_refused = access.enforced()
        && carries_transactional_batches(&request)
        && !request
            .transactional_id
            .as_ref()
            .is_some_and(|id| access.transactional_id(Operation::Write, id));
    // What each partition gets: an error found up front, or an append.
    let mut planned: Plan = Vec::with_capacity(request.topic_data.len());
    for topic_data in request.topic_data {
        let topic = shared.topics.get(topic_data.name.0.as_str());
        let denied = if transactional_refused {
            Some(code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        } else {
            (!access.topic(Operation::Write, topic_data.name.0.as_str()))
                .then_some(code::TOPIC_AUTHORIZATION_FAILED)
        };
        let partitions = topic_data
            .partition_data
            .into_iter()
            .map(|partition| {
                let index = partition.index;
                let plan = if let Some(denied) = denied {
                    Err(denied)
                } else if !matches!(acks, -1..=1) {
                    Err(code::INVALID_REQUIRED_ACKS)
                } else {
                    topic
                        .as_ref()
                        .filter(|t| t.has_partition(index))
                        .map(|topic| Appending {
                            index,
                            records: partition.records.unwrap_or_default(),
                            topic: topic.clone(),
                        })
                        .ok_or_else(|| unknown_topic_code(topic_data.name.0.as_str()))
                };
                (index, plan)
            })
            .collect();
        planned.push((topic_data.name, partitions));
    }
    // Every partition of the request is validated and appended in one blocking task.
    let topics = per_partition(&shared, planned, |shared, name: &TopicName, index, plan| {
        Ok(plan
            .map_err(Refused::from)
            .and_then(|work| append_partition(shared, work))
            .map_err(|mut refused| {
                if refused.code == code::NOT_LEADER_OR_FOLLOWER {
                    refused.leader = shared
                        .topics
                        .get(name.0.as_str())
                        .and_then(|topic| shared.leader_hint(&topic, index));
                }
                refused
            }))
    })
    .await
    .into_iter()
    .map(|(name, answers)| {
        let outcomes = answers
            .into_iter()
            .map(|(index, answer)| PartitionOutcome {
                index,
                // An interrupted task may or may not have written the batches: its
                // code is retriable, so an idempotent producer sends them again.
                result: answer.unwrap_or_else(|code| Err(Refused::from(code))),
            })
            .collect::<Vec<_>>();
        (name, outcomes)
    })
    .collect::<Vec<_>>();
    let hinted = topics
        .iter()
        .flat_map(|(_, outcomes)| outcomes)
        .filter_map(|outcome| {
            outcome
                .result
                .as_ref()
                .err()
                .and_then(|refused| refused.leader)
                .map(|hint| hint.leader)
        });
    let leaders = shared.hinted_brokers(hinted, listener);
    Appended {
        acks,
        timeout: Duration::from_millis(u64::try_from(request.timeout_ms.max(0)).unwrap_or(0)),
        topics,
        leaders,
        storage: shared.storage.clone(),
    }
}

/// Whether any batch of the request is transactional (a header read per batch).
fn carries_transactional_batches(request: &ProduceRequest) -> bool {
    request
        .topic_data
        .iter()
        .flat_map(|topic| &topic.partition_data)
        .filter_map(|partition| partition.records.as_ref())
        .any(|records| {
            BatchFrames::new(records)
                .map_while(Result::ok)
                .any(|(header, _)| header.is_transactional())
        })
}

impl Appended {
    /// The second phase: waits (with acks=all) until the batches are durable; `None`
    /// for acks=0, which is not answered.
    pub(crate) async fn answer(self) -> Option<ResponseKind> {
        if self.acks == 0 {
            return None;
        }
        answer(self).await
    }
}

async fn answer(appended: Appended) -> Option<ResponseKind> {
    let Appended {
        acks,
        timeout,
        topics,
        leaders,
        storage,
    } = appended;
    // Why a write did not become durable, when the object store said why.
    let not_durable = |code: i16| {
        let failure = storage.as_ref().and_then(|storage| storage.write_failure());
        let message =
            failure.map(|why| format!("not durable: writing to object storage failed: {why}"));
        (code, message)
    };
    let mut responses = Vec::with_capacity(topics.len());
    for (name, outcomes) in topics {
        let mut partitions = Vec::with_capacity(outcomes.len());
        for outcome in outcomes {
            let response = PartitionProduceResponse::default().with_index(outcome.index);
            let response = match outcome.result {
                Err(refused) => response
                    .with_current_leader(refused.leader.map_or_else(Default::default, |hint| {
                        LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(hint.leader))
                            .with_leader_epoch(hint.epoch)
                    }))
                    .with_error_code(refused.code)
                    .with_base_offset(-1)
                    .with_error_message(refused.message.map(StrBytes::from_string))
                    .with_record_errors(
                        refused
                            .record_errors
                            .into_iter()
                            .map(|(index, message)| {
                                BatchIndexAndErrorMessage::default()
                                    .with_batch_index(index)
                                    .with_batch_index_error_message(Some(StrBytes::from_string(
                                        message,
                                    )))
                            })
                            .collect(),
                    ),
                Ok((partition, info)) => {
                    let (durable, message) = if acks == -1 {
                        let written = partition.log.wait_durable(info.next_offset());
                        match tokio::time::timeout(timeout, written).await {
                            Ok(Ok(())) => (code::NONE, None),
                            Ok(Err(error)) => not_durable(errors::log_error_code(&error)),
                            Err(_) => not_durable(code::REQUEST_TIMED_OUT),
                        }
                    } else {
                        (code::NONE, None)
                    };
                    response
                        .with_error_code(durable)
                        .with_error_message(message.map(StrBytes::from_string))
                        .with_base_offset(info.base_offset.0)
                        .with_log_append_time_ms(info.log_append_time.map_or(-1, |t| t.0))
                        .with_log_start_offset(partition.log_start().0)
                }
            };
            partitions.push(response);
        }
        responses.push(
            TopicProduceResponse::default()
                .with_name(name)
                .with_partition_responses(partitions),
        );
    }
    // Encoded from v10 on (KIP-951); earlier versions leave them out.
    let endpoints = leaders
        .into_iter()
        .map(|broker| {
            NodeEndpoint::default()
                .with_node_id(BrokerId(broker.node_id))
                .with_host(StrBytes::from_string(broker.host))
                .with_port(broker.port)
                .with_rack(broker.rack.map(StrBytes::from_string))
        })
        .collect();
    Some(ResponseKind::Produce(
        ProduceResponse::default()
            .with_responses(responses)
            .with_node_endpoints(endpoints),
    ))
}

/// Validates the batches (CRC once per batch, never per record) and appends them.
/// Blocking: runs on the blocking pool.
fn append_partition(
    shared: &Shared,
    work: Appending,
) -> Result<(PartitionHandle, AppendInfo), Refused> {
    let Appending {
        index,
        records: records_bytes,
        topic,
    } = work;
    if let Some(view) = &topic.view {
        // Kafka's answer to a write to a topic that takes none (an internal one):
        // not retriable, so the producer fails the records at once.
        return Err(Refused {
            message: Some(format!(
                "{} is a read-only view of {}: produce to {} instead",
                topic.record.name, view.source, view.source
            )),
            ..Refused::from(code::INVALID_TOPIC_EXCEPTION)
        });
    }
    let name = TopicPartition::new(topic.record.name.clone(), index);
    let max_message_bytes = topic.max_message_bytes;
    let check_timestamps =
        topic.log.timestamp_type == TimestampType::CreateTime && !topic.timestamps.is_unlimited();
    let now = shared.clock.now_ms();
    // Batch frames lie back to back from the start of `records`.
    let mut batches: Vec<Cow<'_, [u8]>> = Vec::new();
    // Records in the batches, from their headers (for the per-topic metrics).
    let mut records = 0u64;
    for frame in BatchFrames::new(&records_bytes) {
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
    let partition = shared
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
        if let Some(metrics) = &shared.metrics {
            metrics.topic(topic.record.id, topic.record.name.as_str(), |counters| {
                counters.bytes_in.inc_by(bytes as u64);
                counters.records_in.inc_by(records);
            });
        }
    }
    Ok((partition, info))
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
) -> Result<HeldBack<'a>, Refused> {
    match crate::delayed::split::split(bytes, header, policy, now) {
        Ok(None) => Ok((Some(Cow::Borrowed(bytes)), Vec::new())),
        Ok(Some(split)) => Ok((split.batch.map(Cow::Owned), split.holds)),
        Err(error) => {
            tracing::debug!(%partition, %error, "refusing a batch with a bad due time");
            let message = error.to_string();
            Err(Refused {
                code: code::INVALID_RECORD,
                message: Some(message.clone()),
                record_errors: error
                    .index()
                    .map(|index| (i32::try_from(index).unwrap_or(i32::MAX), message))
                    .into_iter()
                    .collect(),
                leader: None,
            })
        }
    }
}

/// A compacted topic keeps the latest record of each key, so a record without a key
/// has no place in it: the whole batch is refused, naming each keyless record, as
/// Kafka does. The records are read (inflated if need be): compacted topics only.
fn refuse_keyless(batch: &[u8], partition: &TopicPartition) -> Result<(), Refused> {
    let keyless = keyed::keyless_records(batch, MAX_INFLATED_BATCH).map_err(|error| {
        tracing::debug!(%partition, %error, "cannot read the records of a produced batch");
        Refused::from(code::CORRUPT_MESSAGE)
    })?;
    if keyless.is_empty() {
        return Ok(());
    }
    let message = format!(
        "Compacted topic cannot accept message without key in topic partition {partition}."
    );
    Err(Refused {
        code: code::INVALID_RECORD,
        message: Some(message.clone()),
        record_errors: keyless
            .into_iter()
            .map(|index| (i32::try_from(index).unwrap_or(i32::MAX), message.clone()))
            .collect(),
        leader: None,
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
