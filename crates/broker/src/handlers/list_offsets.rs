//! ListOffsets (key 2): earliest (-2), latest (-1), the record with the largest
//! timestamp (-3, v7+), the earliest local offset (-4, v8+: the log start, as Spool
//! keeps the whole log local), or the first offset at or after a timestamp.
//!
//! Not advertised: v9's latest tiered offset (-5) and v10's timeout, which only mean
//! something with tiered storage.

use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ApiKey, ListOffsetsRequest, ListOffsetsResponse, ResponseKind};
use spool_log::LogError;
use spool_model::{Offset, Timestamp, TopicPartition};

use super::ApiDecl;
use crate::errors::{self, code};
use crate::server::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ListOffsets,
    min: 1,
    max: 8,
};

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;

pub(crate) async fn handle(request: ListOffsetsRequest, shared: Arc<Shared>) -> ResponseKind {
    let shared_for_io = shared.clone();
    let topics = tokio::task::spawn_blocking(move || {
        request
            .topics
            .into_iter()
            .map(|topic| {
                let known = shared_for_io.topics.get(topic.name.0.as_str());
                let partitions = topic
                    .partitions
                    .into_iter()
                    .map(|p| {
                        let response = ListOffsetsPartitionResponse::default()
                            .with_partition_index(p.partition_index);
                        let found = known.as_ref().and_then(|t| t.partition(p.partition_index));
                        let Some(tp) = found else {
                            return response
                                .with_error_code(code::UNKNOWN_TOPIC_OR_PARTITION)
                                .with_offset(-1)
                                .with_timestamp(-1);
                        };
                        match lookup(&shared_for_io, &tp, p.timestamp) {
                            Ok((offset, timestamp)) => {
                                response.with_offset(offset).with_timestamp(timestamp)
                            }
                            Err(error) => response
                                .with_error_code(error)
                                .with_offset(-1)
                                .with_timestamp(-1),
                        }
                    })
                    .collect();
                ListOffsetsTopicResponse::default()
                    .with_name(topic.name)
                    .with_partitions(partitions)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    drop(shared);
    ResponseKind::ListOffsets(ListOffsetsResponse::default().with_topics(topics))
}

fn lookup(shared: &Shared, partition: &TopicPartition, timestamp: i64) -> Result<(i64, i64), i16> {
    let log = shared
        .logs
        .partition(partition)
        .map_err(|e| errors::log_error_code(&e))?
        .ok_or(code::UNKNOWN_TOPIC_OR_PARTITION)?;
    let offsets = log.offsets();
    match timestamp {
        EARLIEST | EARLIEST_LOCAL => Ok((offsets.log_start.0, -1)),
        LATEST => Ok((offsets.high_watermark.0, -1)),
        MAX_TIMESTAMP => found(log.max_timestamp_offset()),
        t if t >= 0 => found(log.offset_for_timestamp(Timestamp(t))),
        _ => Err(code::INVALID_REQUEST),
    }
}

/// A lookup's (offset, timestamp), or Kafka's (-1, -1) for none.
fn found(lookup: Result<Option<(Offset, Timestamp)>, LogError>) -> Result<(i64, i64), i16> {
    match lookup.map_err(|e| errors::log_error_code(&e))? {
        Some((offset, timestamp)) => Ok((offset.0, timestamp.0)),
        None => Ok((-1, -1)),
    }
}
