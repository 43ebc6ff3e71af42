//! DescribeConfigs (key 32): a topic's configs (explicit, or inherited from the
//! broker's defaults) and the broker's settings, each with where its value comes from.

use std::sync::Arc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult,
};
use kafka_protocol::messages::{
    ApiKey, DescribeConfigsRequest, DescribeConfigsResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::ApiDecl;
use super::configs::{BROKER, TOPIC};
use crate::config::TOPIC_DEFAULTS;
use crate::config::source::{DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG};
use crate::errors::code;
use crate::server::Shared;
use crate::topics;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DescribeConfigs,
    min: 1,
    max: 4,
};

pub(crate) fn handle(request: DescribeConfigsRequest, shared: &Arc<Shared>) -> ResponseKind {
    let results = request
        .resources
        .into_iter()
        .map(|resource| {
            // No list, or an empty one, asks for every config.
            let wanted = |key: &str| {
                resource
                    .configuration_keys
                    .as_ref()
                    .is_none_or(|keys| keys.is_empty() || keys.iter().any(|k| k.as_str() == key))
            };
            let result = DescribeConfigsResult::default()
                .with_resource_type(resource.resource_type)
                .with_resource_name(resource.resource_name.clone());
            let entries: Vec<(String, String, bool, i8)> = match resource.resource_type {
                TOPIC => match shared.topics.get(resource.resource_name.as_str()) {
                    Some(topic) => topics::config_entries(&topic)
                        .into_iter()
                        .map(|(key, value, explicit)| {
                            let source = if explicit {
                                DYNAMIC_TOPIC_CONFIG
                            } else {
                                inherited_source(shared, key)
                            };
                            (key.to_owned(), value, false, source)
                        })
                        .collect(),
                    None => {
                        return result
                            .with_error_code(code::UNKNOWN_TOPIC_OR_PARTITION)
                            .with_error_message(Some(StrBytes::from_string(format!(
                                "topic {} does not exist",
                                resource.resource_name.as_str()
                            ))));
                    }
                },
                BROKER => match shared.dynamic.describe(resource.resource_name.as_str()) {
                    Ok(entries) => entries,
                    Err(error) => {
                        return result
                            .with_error_code(error.code)
                            .with_error_message(Some(StrBytes::from_string(error.message)));
                    }
                },
                other => {
                    return result
                        .with_error_code(code::INVALID_REQUEST)
                        .with_error_message(Some(StrBytes::from_string(format!(
                            "resource type {other} has no configs"
                        ))));
                }
            };
            let configs = entries
                .into_iter()
                .filter(|(key, ..)| wanted(key))
                .map(|(key, value, read_only, source)| {
                    DescribeConfigsResourceResult::default()
                        .with_name(StrBytes::from_string(key))
                        .with_value(Some(StrBytes::from_string(value)))
                        .with_read_only(read_only)
                        .with_config_source(source)
                })
                .collect();
            result.with_configs(configs)
        })
        .collect();
    ResponseKind::DescribeConfigs(DescribeConfigsResponse::default().with_results(results))
}

/// Where a topic config that the topic does not set gets its value: the broker
/// setting that defaults it, or Kafka's default.
fn inherited_source(shared: &Shared, topic_config: &str) -> i8 {
    TOPIC_DEFAULTS
        .iter()
        .find(|(_, topic)| *topic == topic_config)
        .map_or(DEFAULT_CONFIG, |(broker, _)| {
            shared.dynamic.source_of(broker)
        })
}
