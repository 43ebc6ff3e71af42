//! DeleteRecords (key 21): move partitions' log start offsets forward; `-1` means the
//! high watermark. The new start is checkpointed before the answer.

use std::sync::Arc;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{ApiKey, DeleteRecordsRequest, DeleteRecordsResponse, ResponseKind};
use spool_model::{Offset, TopicPartition};

use super::ApiDecl;
use crate::errors::{self, code};
use crate::server::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DeleteRecords,
    min: 0,
    max: 2,
};

pub(crate) async fn handle(request: DeleteRecordsRequest, shared: Arc<Shared>) -> ResponseKind {
    let topics = tokio::task::spawn_blocking(move || {
        request
            .topics
            .into_iter()
            .map(|topic| {
                let known = shared.topics.get(topic.name.0.as_str());
                let partitions = topic
                    .partitions
                    .into_iter()
                    .map(|p| {
                        let result = DeleteRecordsPartitionResult::default()
                            .with_partition_index(p.partition_index);
                        let tp = known.as_ref().and_then(|t| t.partition(p.partition_index));
                        match tp.map(|tp| delete_before(&shared, &tp, p.offset)) {
                            None => result
                                .with_error_code(code::UNKNOWN_TOPIC_OR_PARTITION)
                                .with_low_watermark(-1),
                            Some(Ok(low)) => result.with_low_watermark(low),
                            Some(Err(error)) => {
                                result.with_error_code(error).with_low_watermark(-1)
                            }
                        }
                    })
                    .collect();
                DeleteRecordsTopicResult::default()
                    .with_name(topic.name)
                    .with_partitions(partitions)
            })
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    ResponseKind::DeleteRecords(DeleteRecordsResponse::default().with_topics(topics))
}

fn delete_before(shared: &Shared, partition: &TopicPartition, offset: i64) -> Result<i64, i16> {
    let log = shared
        .logs
        .partition(partition)
        .map_err(|e| errors::log_error_code(&e))?
        .ok_or(code::UNKNOWN_TOPIC_OR_PARTITION)?;
    let target = if offset == -1 {
        log.offsets().high_watermark
    } else {
        Offset(offset)
    };
    if target.0 < 0 {
        return Err(code::OFFSET_OUT_OF_RANGE);
    }
    log.advance_log_start(target)
        .map(|start| start.0)
        .map_err(|e| errors::log_error_code(&e))
}
