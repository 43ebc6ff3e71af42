//! OffsetDelete (key 47): removes a group's committed offsets of some partitions,
//! refused (`GROUP_SUBSCRIBED_TO_TOPIC`) for topics its members consume. Needs DELETE
//! on the group and READ on each topic.

use std::sync::Arc;

use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::{ApiKey, OffsetDeleteRequest, OffsetDeleteResponse, ResponseKind};
use spool_protocol::consumer_protocol::subscribed_topics;

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, group_error_code, group_result_code};
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::OffsetDelete,
    min: 0,
    max: 0,
};

pub(crate) async fn handle(
    request: OffsetDeleteRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let group = request.group_id.0.as_str();
    if !access.group(Operation::Delete, group) {
        return ResponseKind::OffsetDelete(
            OffsetDeleteResponse::default().with_error_code(code::GROUP_AUTHORIZATION_FAILED),
        );
    }
    let readable = |topic: &str| access.topic(Operation::Read, topic);
    let partitions: Vec<(String, i32)> = request
        .topics
        .iter()
        .filter(|t| readable(t.name.0.as_str()))
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index))
        })
        .collect();
    let mut subscriptions: Vec<Option<Vec<String>>> = shared
        .groups()
        .member_metadata(group)
        .iter()
        .map(|metadata| subscribed_topics(metadata))
        .collect();
    // A consumer-protocol group: the topics its members name, and those their
    // regular expressions matched.
    if let Some((names, ids)) = shared.groups().consumer_subscriptions(group) {
        let matched = ids
            .into_iter()
            .filter_map(|id| shared.topics().by_id(id))
            .map(|topic| topic.record.name.as_str().to_owned());
        subscriptions.push(Some(names.into_iter().chain(matched).collect()));
    }
    // A member whose subscription cannot be read may consume anything.
    let subscribed = |topic: &str| {
        subscriptions.iter().any(|s| {
            s.as_ref()
                .is_none_or(|topics| topics.iter().any(|t| t == topic))
        })
    };
    let outcome = shared
        .groups()
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
            let denied = !readable(topic.name.0.as_str());
            let partitions = topic
                .partitions
                .iter()
                .map(|p| {
                    let error = if denied {
                        code::TOPIC_AUTHORIZATION_FAILED
                    } else {
                        results.next().map_or(0, group_result_code)
                    };
                    OffsetDeleteResponsePartition::default()
                        .with_partition_index(p.partition_index)
                        .with_error_code(error)
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
