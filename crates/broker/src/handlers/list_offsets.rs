//! ListOffsets (key 2): earliest (-2), latest (-1), the record with the largest
//! timestamp (-3, v7+), the earliest local offset (-4, v8+: the log start, as Spool
//! keeps the whole log local), or the first offset at or after a timestamp. Under
//! `read_committed` (v2+), the latest offset is the last stable offset, and a lookup
//! finds nothing at or past it.
//!
//! In shared-storage mode a reader broker (`broker.roles=reader`), which leads
//! nothing, answers from the catalogue (what is committed, as the leader would: see
//! `crate::replica_reads`); a writer that does not lead the partition refuses it, so
//! that a client with stale metadata finds the leader.
//!
//! Not advertised: v9's latest tiered offset (-5) and v10's timeout, which only mean
//! something with tiered storage.

use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{
    ApiKey, ListOffsetsRequest, ListOffsetsResponse, ResponseKind, TopicName,
};

use spool_model::{Offset, Timestamp};

use super::api::{ApiDecl, RequestContext};
use super::per_partition::{allowed_topic, per_partition};
use crate::consumer_offsets::{self, Lookup};
use crate::errors::code;
use crate::partitions::{PartitionError, PartitionHandle};
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ListOffsets,
    // Below v1: Kafka 3.9's versions, converted (spool_protocol::legacy).
    min: 0,
    max: 8,
};

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;

pub(crate) async fn handle(
    request: ListOffsetsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    let shared = Arc::clone(shared);
    let access = access.clone();
    let asked: Vec<TopicAsked> = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| (p.partition_index, (p.current_leader_epoch, p.timestamp)))
                .collect();
            (topic.name, partitions)
        })
        .collect();
    let committed = request.isolation_level == super::api::READ_COMMITTED;
    // `__consumer_offsets` is answered from the metadata store, the rest by the logs.
    let (offsets_topic, asked): (Vec<_>, Vec<_>) = asked
        .into_iter()
        .enumerate()
        .partition(|(_, (name, _))| consumer_offsets::named(&shared, name.0.as_str()));
    let offsets_topic = list_offsets_topic(&shared, &context.access, offsets_topic).await;
    let asked: Vec<_> = asked.into_iter().map(|(_, topic)| topic).collect();
    let mut answers = per_partition(
        &shared,
        asked,
        |name, _| allowed_topic(&shared, &context.access, Operation::Describe, name),
        move |shared, name: &TopicName, index, asked| {
            let (current_leader_epoch, timestamp) = asked;
            if !access.topic(Operation::Describe, name.0.as_str()) {
                return Err(code::TOPIC_AUTHORIZATION_FAILED);
            }
            let found = shared
                .partitions()
                .partition(name.0.as_str(), index, current_leader_epoch);
            match found {
                Ok(partition) => lookup(&partition, timestamp, committed),
                Err(PartitionError::NotLeader)
                    if shared.replicas().is_some()
                        && shared.cluster().is_some_and(|view| view.reader) =>
                {
                    let asked = Asked {
                        index,
                        current_leader_epoch,
                        timestamp,
                        committed,
                    };
                    lookup_committed(shared, name.0.as_str(), asked)
                }
                Err(error) => Err(error.code()),
            }
        },
    )
    .await;
    for (at, answer) in offsets_topic {
        answers.insert(at.min(answers.len()), answer);
    }
    let topics = answers
        .into_iter()
        .map(|(name, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|(index, answer)| {
                    let response =
                        ListOffsetsPartitionResponse::default().with_partition_index(index);
                    match answer {
                        Ok(found) => response
                            .with_offset(found.offset)
                            .with_timestamp(found.timestamp)
                            // From v4; the default (-1) before.
                            .with_leader_epoch(if version >= 4 { found.leader_epoch } else { -1 }),
                        Err(error) => response
                            .with_error_code(error)
                            .with_offset(-1)
                            .with_timestamp(-1),
                    }
                })
                .collect();
            ListOffsetsTopicResponse::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
    ResponseKind::ListOffsets(ListOffsetsResponse::default().with_topics(topics))
}

/// One topic of the request: its partitions, each with (current leader epoch,
/// timestamp asked for).
type TopicAsked = (TopicName, Vec<(i32, (i32, i64))>);
type TopicAnswered = (TopicName, Vec<(i32, Result<Found, i16>)>);

/// The answers for `__consumer_offsets`, each where the request named it.
async fn list_offsets_topic(
    shared: &Shared,
    access: &spool_security::authorizer::Access,
    asked: Vec<(usize, TopicAsked)>,
) -> Vec<(usize, TopicAnswered)> {
    let mut answered = Vec::with_capacity(asked.len());
    for (at, (name, partitions)) in asked {
        let mut answers = Vec::with_capacity(partitions.len());
        for (index, (_, timestamp)) in partitions {
            let answer = if access.topic(Operation::Describe, consumer_offsets::NAME) {
                let lookup = match timestamp {
                    EARLIEST | EARLIEST_LOCAL => Lookup::Earliest,
                    LATEST => Lookup::Latest,
                    MAX_TIMESTAMP => Lookup::MaxTimestamp,
                    at => Lookup::AtOrAfter(at),
                };
                consumer_offsets::list_offset(shared, index, lookup)
                    .await
                    .map(|(offset, timestamp)| Found {
                        offset,
                        timestamp,
                        leader_epoch: 0,
                    })
            } else {
                Err(code::TOPIC_AUTHORIZATION_FAILED)
            };
            answers.push((index, answer));
        }
        answered.push((at, (name, answers)));
    }
    answered
}

/// What a lookup found: Kafka's -1s for none.
#[derive(Debug, Clone, Copy)]
struct Found {
    offset: i64,
    timestamp: i64,
    /// The epoch the offset was written under (the current one for the log end).
    leader_epoch: i32,
}

/// One partition's lookup as asked.
#[derive(Debug, Clone, Copy)]
struct Asked {
    index: i32,
    current_leader_epoch: i32,
    timestamp: i64,
    committed: bool,
}

/// A lookup on a broker that does not lead the partition: from the catalogue's
/// committed state (one read) and the objects. Blocking.
fn lookup_committed(shared: &Shared, topic: &str, asked: Asked) -> Result<Found, i16> {
    let topic = shared
        .topics()
        .get(topic)
        .filter(|topic| topic.view.is_none())
        .ok_or(code::NOT_LEADER_OR_FOLLOWER)?;
    let storage = shared.storage().ok_or(code::NOT_LEADER_OR_FOLLOWER)?;
    let key = topic.partition_key(asked.index);
    let catalogue = storage.catalogue().clone();
    let state = storage
        .wait_for(async move { catalogue.partition_state(key).await })
        .map_err(|error| PartitionError::from(error).code())?
        .map_err(|error| PartitionError::Catalogue(error).code())?
        .ok_or(code::UNKNOWN_TOPIC_OR_PARTITION)?;
    let current = shared
        .partitions()
        .leadership(&topic, asked.index)
        .map_or(state.leader_epoch, |(_, epoch)| epoch);
    if asked.current_leader_epoch >= 0 && asked.current_leader_epoch < current {
        return Err(code::FENCED_LEADER_EPOCH);
    }
    if asked.current_leader_epoch > current {
        return Err(code::UNKNOWN_LEADER_EPOCH);
    }
    let high_watermark = Offset(state.high_watermark);
    let log_start = Offset(state.log_start);
    let visible_end = match (&state.producer_state, asked.committed) {
        (Some(encoded), true) => {
            spool_log::stable_offset_in(encoded, high_watermark).unwrap_or(log_start)
        }
        _ => high_watermark,
    };
    let epoch_at = |offset: Offset| {
        state
            .epochs
            .iter()
            .rev()
            .find(|(_, start)| *start <= offset.0)
            .map_or(-1, |(epoch, _)| *epoch)
    };
    let at = |offset: Offset, timestamp: i64| Found {
        offset: offset.0,
        timestamp,
        leader_epoch: epoch_at(offset),
    };
    let reader = storage.reader.clone();
    let code_of = |error: spool_shared_storage::StorageError| PartitionError::from(error).code();
    let found = match asked.timestamp {
        EARLIEST | EARLIEST_LOCAL => Some(at(log_start, -1)),
        LATEST => Some(Found {
            offset: visible_end.0,
            timestamp: -1,
            leader_epoch: current,
        }),
        MAX_TIMESTAMP => storage
            .wait_for(async move { reader.max_timestamp_offset(key, log_start).await })
            .map_err(code_of)?
            .map_err(code_of)?
            .filter(|(offset, _)| *offset < visible_end)
            .map(|(offset, t)| at(offset, t.0)),
        t if t >= 0 => {
            let target = Timestamp(t);
            storage
                .wait_for(async move { reader.offset_for_timestamp(key, target, log_start).await })
                .map_err(code_of)?
                .map_err(code_of)?
                .filter(|(offset, _)| *offset < visible_end)
                .map(|(offset, t)| at(offset, t.0))
        }
        _ => return Err(code::INVALID_REQUEST),
    };
    Ok(found.unwrap_or(NOT_FOUND))
}

/// Kafka's answer when nothing matches.
const NOT_FOUND: Found = Found {
    offset: -1,
    timestamp: -1,
    leader_epoch: -1,
};

fn lookup(partition: &PartitionHandle, timestamp: i64, committed: bool) -> Result<Found, i16> {
    let storage = |error: PartitionError| error.code();
    let log = &partition.log;
    let offsets = log.offsets();
    // What the reader may see: up to the high watermark, or the last stable offset.
    let visible_end = if committed {
        log.stable_offset()
    } else {
        offsets.high_watermark
    };
    let at = |offset: Offset, timestamp: i64| Found {
        offset: offset.0,
        timestamp,
        leader_epoch: log.leader_epoch_at(offset),
    };
    let found = match timestamp {
        EARLIEST | EARLIEST_LOCAL => Some(at(partition.log_start(), -1)),
        LATEST => Some(Found {
            offset: visible_end.0,
            timestamp: -1,
            leader_epoch: partition.leader_epoch,
        }),
        MAX_TIMESTAMP => partition
            .max_timestamp_offset()
            .map_err(storage)?
            .filter(|(offset, _)| *offset < visible_end)
            .map(|(offset, t)| at(offset, t.0)),
        t if t >= 0 => partition
            .offset_for_timestamp(Timestamp(t))
            .map_err(storage)?
            .filter(|(offset, _)| *offset < visible_end)
            .map(|(offset, t)| at(offset, t.0)),
        _ => return Err(code::INVALID_REQUEST),
    };
    Ok(found.unwrap_or(NOT_FOUND))
}
