//! CreateTopics (key 19): validate and create topics, or only validate.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{ApiKey, CreateTopicsRequest, CreateTopicsResponse, ResponseKind};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;
use crate::topics::{self, AdminError, NewTopic};
use spool_security::acl::Operation;
use spool_security::authorizer::Access;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::CreateTopics,
    // Below v2: Kafka 3.9's versions, converted (spool_protocol::legacy).
    min: 0,
    max: 7,
};

pub(crate) async fn handle(
    request: CreateTopicsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    let shared = Arc::clone(shared);
    let may_create_any = access.cluster(Operation::Create);
    let mut results = Vec::with_capacity(request.topics.len());
    for topic in request.topics {
        let name = topic.name.clone();
        let configs: BTreeMap<String, String> = topic
            .configs
            .iter()
            .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
            .collect();
        let outcome = if let Some(refusal) = refusal(access, may_create_any, &name.0, &configs) {
            Err(refusal)
        } else if !topic.assignments.is_empty() {
            assignment_of(&shared, &topic)
        } else {
            Ok((topic.num_partitions, Vec::new()))
        };
        let outcome = match outcome {
            Ok((partitions, replica_assignment)) => {
                let new = NewTopic {
                    name: name.0.to_string(),
                    partitions,
                    replication_factor: topic.replication_factor,
                    replica_assignment,
                    configs,
                };
                topics::create(&shared, new, request.validate_only).await
            }
            Err(error) => Err(error),
        };
        let mut result = CreatableTopicResult::default().with_name(name);
        match outcome {
            Ok(created) => {
                if version >= 5 {
                    result = result
                        .with_num_partitions(created.record.partitions)
                        .with_replication_factor(created.record.replication_factor);
                }
                if version >= 7 {
                    result = result.with_topic_id(created.record.id);
                }
            }
            Err(error) => {
                result = result
                    .with_error_code(error.code)
                    .with_error_message(Some(StrBytes::from_string(error.message)));
                if version >= 5 {
                    result = result.with_num_partitions(-1).with_replication_factor(-1);
                }
            }
        }
        results.push(result);
    }
    crate::cluster::wait_for_followers(&shared).await;
    ResponseKind::CreateTopics(CreateTopicsResponse::default().with_topics(results))
}

/// Why the principal may not create the topic: it needs CREATE on the cluster or the
/// topic, and, for a view, READ on its source (a view shows the source's records).
fn refusal(
    access: &Access,
    may_create_any: bool,
    name: &str,
    configs: &BTreeMap<String, String>,
) -> Option<AdminError> {
    let denied = |message: String| AdminError {
        code: code::TOPIC_AUTHORIZATION_FAILED,
        message,
    };
    if !may_create_any && !access.topic(Operation::Create, name) {
        return Some(denied(format!(
            "{} may not create topic {name}",
            access.principal()
        )));
    }
    let source = configs.get("view.source.topic")?.trim();
    (!access.topic(Operation::Read, source)).then(|| {
        denied(format!(
            "{} may not read {source}, so may not make a view of it",
            access.principal()
        ))
    })
}

/// A CreateTopics replica assignment: partitions 0 to n − 1 each named once, with
/// `num_partitions` and `replication_factor` left at −1 (Kafka's `INVALID_REQUEST`
/// otherwise), the brokers checked by [`topics::check_assignment`] (live writers of
/// the cluster; embedded, this broker alone). The partition count and the brokers by
/// partition.
fn assignment_of(
    shared: &Shared,
    topic: &kafka_protocol::messages::create_topics_request::CreatableTopic,
) -> Result<(i32, Vec<Vec<i32>>), AdminError> {
    if topic.num_partitions != -1 || topic.replication_factor != -1 {
        return Err(AdminError {
            code: code::INVALID_REQUEST,
            message: "with replica assignments, num_partitions and replication_factor must \
                      be -1"
                .to_owned(),
        });
    }
    let count = topic.assignments.len();
    let mut by_partition: Vec<Option<Vec<i32>>> = vec![None; count];
    for assignment in &topic.assignments {
        let slot = usize::try_from(assignment.partition_index)
            .ok()
            .and_then(|index| by_partition.get_mut(index))
            .filter(|slot| slot.is_none());
        let Some(slot) = slot else {
            return Err(AdminError {
                code: code::INVALID_REPLICA_ASSIGNMENT,
                message: format!(
                    "partition {} is out of 0..{count} or named twice: name each partition \
                     from 0 once",
                    assignment.partition_index
                ),
            });
        };
        *slot = Some(assignment.broker_ids.iter().map(|id| id.0).collect());
    }
    let lists: Vec<Vec<i32>> = by_partition.into_iter().flatten().collect();
    topics::check_assignment(shared, &lists, None)?;
    Ok((i32::try_from(count).unwrap_or(i32::MAX), lists))
}
