//! ListOffsets (key 2): earliest (-2), latest (-1), or the first offset at or after a
//! timestamp.

use std::sync::Arc;

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ApiKey, ListOffsetsRequest, ListOffsetsResponse, ResponseKind};
use spool_model::{Timestamp, TopicPartition};

use super::ApiDecl;
use crate::errors::{self, code};
use crate::server::Shared;

/// Version 7 adds MAX_TIMESTAMP (-3), which is not implemented yet, so 6 is the top.
pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ListOffsets,
    min: 1,
    max: 6,
};

const EARLIEST: i64 = -2;
const LATEST: i64 = -1;

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
        EARLIEST => Ok((offsets.log_start.0, -1)),
        LATEST => Ok((offsets.high_watermark.0, -1)),
        t if t >= 0 => match log
            .offset_for_timestamp(Timestamp(t))
            .map_err(|e| errors::log_error_code(&e))?
        {
            Some((offset, found)) => Ok((offset.0, found.0)),
            None => Ok((-1, -1)),
        },
        _ => Err(code::INVALID_REQUEST),
    }
}
