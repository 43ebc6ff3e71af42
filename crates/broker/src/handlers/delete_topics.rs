//! DeleteTopics (key 20): by name, or (v6+) by topic id.

use std::sync::Arc;

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    ApiKey, DeleteTopicsRequest, DeleteTopicsResponse, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;
use crate::topics;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DeleteTopics,
    // Below v1: Kafka 3.9's versions, converted (spool_protocol::legacy).
    min: 0,
    max: 6,
};

pub(crate) async fn handle(
    request: DeleteTopicsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    let shared = Arc::clone(shared);
    // Names (v1-5) or name-or-id states (v6+), as (name, id) pairs.
    let wanted: Vec<(Option<TopicName>, uuid::Uuid)> = if version >= 6 {
        request
            .topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        request
            .topic_names
            .into_iter()
            .map(|n| (Some(n), uuid::Uuid::nil()))
            .collect()
    };
    let mut responses = Vec::with_capacity(wanted.len());
    for (name, id) in wanted {
        let resolved = match &name {
            Some(name) => Some(name.0.to_string()),
            None => shared
                .topics()
                .by_id(id)
                .map(|t| t.record.name.as_str().to_owned()),
        };
        let mut result = DeletableTopicResult::default().with_name(name.clone());
        if version >= 6 {
            result = result.with_topic_id(id);
        }
        match resolved {
            None => result = result.with_error_code(code::UNKNOWN_TOPIC_ID),
            Some(resolved) if !access.topic(Operation::Delete, &resolved) => {
                result = result.with_error_code(code::TOPIC_AUTHORIZATION_FAILED);
            }
            Some(resolved) => match topics::delete(&shared, &resolved).await {
                Ok(deleted) => {
                    if version >= 6 {
                        result = result
                            .with_topic_id(deleted.record.id)
                            .with_name(Some(TopicName(StrBytes::from_string(resolved))));
                    }
                }
                Err(error) => {
                    result = result.with_error_code(error.code);
                    if version >= 5 {
                        result =
                            result.with_error_message(Some(StrBytes::from_string(error.message)));
                    }
                }
            },
        }
        responses.push(result);
    }
    crate::cluster::wait_for_followers(&shared).await;
    ResponseKind::DeleteTopics(DeleteTopicsResponse::default().with_responses(responses))
}
