//! OffsetForLeaderEpoch (key 23): for each partition, the largest leader epoch at most
//! the one asked for, and the offset where the epoch after it began (the log end for
//! the current epoch). A consumer that read up to some offset under an epoch checks
//! with it that the log still holds what it read (KIP-320); the request's current
//! leader epoch is checked as Fetch checks it.

use std::sync::Arc;

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    ApiKey, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ResponseKind, TopicName,
};

use super::api::{ApiDecl, RequestContext};
use super::per_partition::{allowed_topic, per_partition};
use crate::errors::{self, code};
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::OffsetForLeaderEpoch,
    min: 0,
    max: 4,
};

pub(crate) async fn handle(
    request: OffsetForLeaderEpochRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    let shared = Arc::clone(shared);
    let access = access.clone();
    // The response's leader epoch exists from v1 on.
    let epoch_field = |epoch: i32| if version >= 1 { epoch } else { -1 };
    let asked = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| (p.partition, (p.current_leader_epoch, p.leader_epoch)))
                .collect();
            (topic.topic, partitions)
        })
        .collect();
    let answers = per_partition(
        &shared,
        asked,
        |name, _| allowed_topic(&shared, &context.access, Operation::Describe, name),
        move |shared, name: &TopicName, index, asked| {
            let (current_leader_epoch, leader_epoch) = asked;
            if !access.topic(Operation::Describe, name.0.as_str()) {
                return Err(code::TOPIC_AUTHORIZATION_FAILED);
            }
            let partition = shared
                .partitions()
                .partition(name.0.as_str(), index, current_leader_epoch)
                .map_err(|error| error.code())?;
            let answer = partition
                .log
                .end_offset_for_epoch(leader_epoch)
                .map_err(|error| errors::log_error_code(&error))?;
            if leader_epoch >= 0 && answer.0 < 0 {
                // The client resets its position by its auto.offset.reset.
                tracing::info!(topic = %name.0, partition = index, leader_epoch, history = ?partition.log.leader_epoch_history(), "leader epoch newer than any recorded");
            }
            Ok(answer)
        },
    )
    .await;
    let topics = answers
        .into_iter()
        .map(|(name, partitions)| {
            let partitions = partitions
                .into_iter()
                .map(|(index, answer)| {
                    let result = EpochEndOffset::default().with_partition(index);
                    match answer {
                        Ok((epoch, end)) => result
                            .with_leader_epoch(epoch_field(epoch))
                            .with_end_offset(end.0),
                        Err(error) => result.with_error_code(error).with_end_offset(-1),
                    }
                })
                .collect();
            OffsetForLeaderTopicResult::default()
                .with_topic(name)
                .with_partitions(partitions)
        })
        .collect();
    ResponseKind::OffsetForLeaderEpoch(OffsetForLeaderEpochResponse::default().with_topics(topics))
}
