//! OffsetDelete (key 47): removes a group's committed offsets of some partitions,
//! refused (`GROUP_SUBSCRIBED_TO_TOPIC`) for topics its members consume.

use std::sync::Arc;

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetDeleteRequest, OffsetDeleteResponse, ResponseKind};
use spool_protocol::consumer_protocol::subscribed_topics;

use super::ApiDecl;
use crate::errors::{group_error_code, group_result_code};
use crate::server::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::OffsetDelete,
    min: 0,
    max: 0,
};

pub(crate) async fn handle(request: OffsetDeleteRequest, shared: Arc<Shared>) -> ResponseKind {
    let group = request.group_id.0.as_str();
    let partitions: Vec<(String, i32)> = request
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index))
        })
        .collect();
    let subscriptions: Vec<Option<Vec<String>>> = shared
        .groups
        .member_metadata(group)
        .iter()
        .map(|metadata| subscribed_topics(metadata))
        .collect();
    // A member whose subscription cannot be read may consume anything.
    let subscribed = |topic: &str| {
        subscriptions.iter().any(|s| {
            s.as_ref()
                .is_none_or(|topics| topics.iter().any(|t| t == topic))
        })
    };
    let outcome = shared
        .groups
        .delete_offsets(group, &partitions, subscribed)
        .await;
    let mut results = match &outcome {
        Ok(results) => results.clone(),
        Err(_) => Vec::new(),
    }
    .into_iter();
    let topics = request
        .topics
        .into_iter()
        .map(|topic| {
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    OffsetDeleteResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(results.next().map_or(0, group_result_code))
                })
                .collect();
            OffsetDeleteResponseTopic::default()
                .with_name(topic.name)
                .with_partitions(partitions)
        })
        .collect();
    let error = outcome.err().map_or(0, group_error_code);
    ResponseKind::OffsetDelete(
        OffsetDeleteResponse::default()
            .with_error_code(error)
            .with_topics(topics),
    )
}
