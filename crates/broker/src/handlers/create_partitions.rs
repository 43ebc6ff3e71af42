//! CreatePartitions (key 37): raise a topic's partition count.

use std::sync::Arc;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreatePartitionsResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;
use crate::topics::{self, AdminError};
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::CreatePartitions,
    min: 0,
    max: 3,
};

pub(crate) async fn handle(
    request: CreatePartitionsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        // An empty list is none, as a null one (some clients send one).
        let assignment: Option<Vec<Vec<i32>>> = topic
            .assignments
            .as_ref()
            .filter(|all| !all.is_empty())
            .map(|all| {
                all.iter()
                    .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
                    .collect()
            });
        let outcome = if access.topic(Operation::Alter, topic.name.0.as_str()) {
            topics::add_partitions(
                &shared,
                topic.name.0.as_str(),
                topic.count,
                assignment.as_deref(),
                request.validate_only,
            )
            .await
        } else {
            Err(AdminError {
                code: code::TOPIC_AUTHORIZATION_FAILED,
                message: format!("{} may not alter {}", access.principal(), topic.name.0),
            })
        };
        let mut result = CreatePartitionsTopicResult::default().with_name(topic.name);
        if let Err(error) = outcome {
            result = result
                .with_error_code(error.code)
                .with_error_message(Some(StrBytes::from_string(error.message)));
        }
        results.push(result);
    }
    crate::cluster::wait_for_followers(&shared).await;
    ResponseKind::CreatePartitions(CreatePartitionsResponse::default().with_results(results))
}
