//! AlterConfigs (key 33, replaces the explicit configs of a topic or a group, or the
//! dynamic settings of the broker) and IncrementalAlterConfigs (key 44, sets, deletes,
//! appends to or subtracts from single ones).

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse as IncrementalResult;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, ApiKey, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use super::configs::{self, BROKER, GROUP, TOPIC};
use crate::dynamic_config;
use crate::errors::code;
use crate::group_configs;
use crate::shared::Shared;
use crate::topic_configs;
use crate::topics::{self, AdminError};
use spool_security::acl::Operation;
use spool_security::authorizer::Access;

pub(crate) const ALTER_API: ApiDecl = ApiDecl {
    key: ApiKey::AlterConfigs,
    min: 0,
    max: 2,
};
pub(crate) const INCREMENTAL_API: ApiDecl = ApiDecl {
    key: ApiKey::IncrementalAlterConfigs,
    min: 0,
    max: 1,
};

/// IncrementalAlterConfigs operations.
const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const SUBTRACT: i8 = 3;

pub(crate) async fn alter(
    request: AlterConfigsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let configs: BTreeMap<String, String> = resource
            .configs
            .iter()
            .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
            .collect();
        let outcome = apply(
            &shared,
            access,
            resource.resource_type,
            resource.resource_name.as_str(),
            request.validate_only,
            |_| Ok(configs),
        )
        .await;
        let mut response = AlterConfigsResourceResponse::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name);
        if let Err(error) = outcome {
            response = response
                .with_error_code(error.code)
                .with_error_message(Some(StrBytes::from_string(error.message)));
        }
        responses.push(response);
    }
    crate::cluster::wait_for_followers(&shared).await;
    ResponseKind::AlterConfigs(AlterConfigsResponse::default().with_responses(responses))
}

pub(crate) async fn incremental(
    request: IncrementalAlterConfigsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let mut responses = Vec::with_capacity(request.resources.len());
    for resource in request.resources {
        let changes: Vec<(String, i8, Option<String>)> = resource
            .configs
            .iter()
            .map(|c| {
                (
                    c.name.to_string(),
                    c.config_operation,
                    c.value.as_ref().map(ToString::to_string),
                )
            })
            .collect();
        let resource_type = resource.resource_type;
        let outcome = apply(
            &shared,
            access,
            resource_type,
            resource.resource_name.as_str(),
            request.validate_only,
            |current| apply_operations(resource_type, current, &changes),
        )
        .await;
        let mut response = IncrementalResult::default()
            .with_resource_type(resource.resource_type)
            .with_resource_name(resource.resource_name);
        if let Err(error) = outcome {
            response = response
                .with_error_code(error.code)
                .with_error_message(Some(StrBytes::from_string(error.message)));
        }
        responses.push(response);
    }
    crate::cluster::wait_for_followers(&shared).await;
    ResponseKind::IncrementalAlterConfigs(
        IncrementalAlterConfigsResponse::default().with_responses(responses),
    )
}

/// A resource's configs after IncrementalAlterConfigs' operations: SET and DELETE
/// for any config; APPEND and SUBTRACT for list-valued ones (`cleanup.policy`, say),
/// starting from the explicit value or else Kafka's default, as Kafka does.
fn apply_operations(
    resource_type: i8,
    current: &BTreeMap<String, String>,
    changes: &[(String, i8, Option<String>)],
) -> Result<BTreeMap<String, String>, AdminError> {
    let mut configs = current.clone();
    for (name, operation, value) in changes {
        let invalid = |code, message: String| Err(AdminError { code, message });
        match (*operation, value) {
            (SET, Some(value)) => {
                configs.insert(name.clone(), value.clone());
            }
            (DELETE, _) => {
                configs.remove(name);
            }
            (APPEND | SUBTRACT, Some(value)) => {
                let config = match resource_type {
                    TOPIC => topic_configs::lookup(name),
                    _ => topic_configs::defaulted_by(name).map(|(config, _)| config),
                };
                let Some(config) = config.filter(|c| c.is_list()) else {
                    return invalid(
                        code::INVALID_REQUEST,
                        format!(
                            "{name} is not a list: APPEND and SUBTRACT apply to list-valued configs"
                        ),
                    );
                };
                let old = configs
                    .get(name)
                    .map_or(config.default, String::as_str)
                    .to_owned();
                let mut items: Vec<&str> = topic_configs::list_items(&old);
                let given = topic_configs::list_items(value);
                if *operation == APPEND {
                    for item in given {
                        if !items.contains(&item) {
                            items.push(item);
                        }
                    }
                } else {
                    items.retain(|item| !given.contains(item));
                }
                configs.insert(name.clone(), items.join(","));
            }
            _ => {
                return invalid(
                    code::INVALID_CONFIG,
                    format!(
                        "operation {operation} on {name}: SET, APPEND and SUBTRACT need a value; known operations are 0 to 3"
                    ),
                );
            }
        }
    }
    Ok(configs)
}

/// Computes a resource's new configs from its current ones and stores them.
async fn apply(
    shared: &Arc<Shared>,
    access: &Access,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AdminError>,
) -> Result<(), AdminError> {
    if let Some(refusal) = configs::refusal(access, Operation::AlterConfigs, resource_type, name) {
        return Err(refusal);
    }
    match resource_type {
        TOPIC => topics::change_configs(shared, name, validate_only, change).await,
        BROKER => dynamic_config::change(shared, name, validate_only, change).await,
        GROUP => group_configs::change(shared, name, validate_only, change).await,
        other => Err(AdminError {
            code: code::INVALID_REQUEST,
            message: format!("resource type {other} has no configs"),
        }),
    }
}
