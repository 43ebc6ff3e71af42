//! DeleteRecords (key 21): move partitions' log start offsets forward; `-1` means the
//! high watermark. The new start is checkpointed before the answer.

use std::sync::Arc;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{
    ApiKey, DeleteRecordsRequest, DeleteRecordsResponse, ResponseKind, TopicName,
};

use spool_model::Offset;

use super::api::{ApiDecl, RequestContext};
use super::per_partition::{allowed_topic, per_partition};
use crate::errors::code;
use crate::partitions::PartitionHandle;
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DeleteRecords,
    min: 0,
    max: 2,
};

pub(crate) async fn handle(
    request: DeleteRecordsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let access = access.clone();
    let asked = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.offset))
                .collect();
            (topic.name, partitions)
        })
        .collect();
    let answers = per_partition(
        &shared,
        asked,
        |name, _| allowed_topic(&shared, &context.access, Operation::Delete, name),
        move |shared, name: &TopicName, index, offset| {
            if !access.topic(Operation::Delete, name.0.as_str()) {
                return Err(code::TOPIC_AUTHORIZATION_FAILED);
            }
            if shared
                .topics()
                .get(name.0.as_str())
                .is_some_and(|topic| !topic.takes_writes())
            {
                // A view's or a mirror's records are its source's: delete them there.
                return Err(code::INVALID_TOPIC_EXCEPTION);
            }
            let partition = shared
                .partitions()
                .partition(name.0.as_str(), index, -1)
                .map_err(|error| error.code())?;
            delete_before(&partition, offset)
        },
    )
    .await;
    let topics = answers
        .into_iter()
        .map(|(name, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|(index, answer)| {
                    let result =
                        DeleteRecordsPartitionResult::default().with_partition_index(index);
                    match answer {
                        Ok(low) => result.with_low_watermark(low),
                        Err(error) => result.with_error_code(error).with_low_watermark(-1),
                    }
                })
                .collect();
            DeleteRecordsTopicResult::default()
                .with_name(name)
                .with_partitions(partitions)
        })
        .collect();
    ResponseKind::DeleteRecords(DeleteRecordsResponse::default().with_topics(topics))
}

fn delete_before(partition: &PartitionHandle, offset: i64) -> Result<i64, i16> {
    let high_watermark = partition.log.offsets().high_watermark;
    // -1: as far as may be, which an open transaction stops at its first offset.
    let target = if offset == -1 {
        partition.log.stable_offset()
    } else {
        Offset(offset)
    };
    if target.0 < 0 || target > high_watermark {
        return Err(code::OFFSET_OUT_OF_RANGE);
    }
    partition
        .advance_log_start(target)
        .map(|start| start.0)
        .map_err(|e| e.code())
}
