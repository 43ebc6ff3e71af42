//! DescribeConfigs (key 32): a topic's configs (explicit, or inherited from the
//! broker's defaults), a group's (its own, or the broker's) and the broker's settings, each with where its value comes from;
//! with synonyms when asked (v1+: the settings that could give the value, the one in
//! force first), and types and documentation (v3+) for admin UIs.

use std::sync::Arc;

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{
    ApiKey, DescribeConfigsRequest, DescribeConfigsResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use super::configs::{self, BROKER, GROUP, TOPIC};
use crate::broker_configs;
use crate::config::BrokerConfig;
use crate::config::source::{DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG};
use crate::dynamic_config::BrokerEntry;
use crate::errors::code;
use crate::group_configs;
use crate::shared::Shared;
use crate::topic_configs::{self, Effect, TopicConfig};
use crate::topics;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DescribeConfigs,
    // Below v1: Kafka 3.9's versions, converted (spool_protocol::legacy).
    min: 0,
    max: 4,
};

pub(crate) async fn handle(
    request: DescribeConfigsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let access = &context.access;
    let with_synonyms = request.include_synonyms;
    let with_documentation = version >= 3 && request.include_documentation;
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
            let name = resource.resource_name.as_str();
            let operation = Operation::DescribeConfigs;
            if let Some(refusal) = configs::refusal(access, operation, resource.resource_type, name)
            {
                return result
                    .with_error_code(refusal.code)
                    .with_error_message(Some(StrBytes::from_string(refusal.message)));
            }
            let entries: Vec<Described> = match resource.resource_type {
                TOPIC => match shared.topics().get(resource.resource_name.as_str()) {
                    Some(topic) => {
                        let settings = shared.current_config();
                        topics::config_entries(&topic)
                            .into_iter()
                            .map(|(key, value, explicit)| {
                                describe_topic_config(shared, &settings, key, value, explicit)
                            })
                            .collect()
                    }
                    None => {
                        return result
                            .with_error_code(code::UNKNOWN_TOPIC_OR_PARTITION)
                            .with_error_message(Some(StrBytes::from_string(format!(
                                "topic {} does not exist",
                                resource.resource_name.as_str()
                            ))));
                    }
                },
                BROKER => match shared.dynamic().describe(resource.resource_name.as_str()) {
                    Ok(entries) => entries.into_iter().map(describe_broker_config).collect(),
                    Err(error) => {
                        return result
                            .with_error_code(error.code)
                            .with_error_message(Some(StrBytes::from_string(error.message)));
                    }
                },
                GROUP => group_configs::describe(shared, name)
                    .into_iter()
                    .map(|entry| Described {
                        synonyms: vec![(
                            entry.name.to_owned(),
                            Some(entry.value.clone()),
                            entry.source,
                        )],
                        name: entry.name.to_owned(),
                        value: Some(entry.value),
                        read_only: false,
                        sensitive: false,
                        source: entry.source,
                        kind: topic_configs::ConfigType::Int.code(),
                        documentation: Some(entry.documentation.to_owned()),
                    })
                    .collect(),
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
                .filter(|entry| wanted(&entry.name))
                .map(|entry| {
                    let mut config = DescribeConfigsResourceResult::default()
                        .with_name(StrBytes::from_string(entry.name))
                        .with_value(entry.value.map(StrBytes::from_string))
                        .with_read_only(entry.read_only)
                        .with_is_sensitive(entry.sensitive)
                        .with_config_source(entry.source)
                        .with_config_type(entry.kind);
                    if with_synonyms {
                        config = config.with_synonyms(
                            entry
                                .synonyms
                                .into_iter()
                                .map(|(name, value, source)| {
                                    DescribeConfigsSynonym::default()
                                        .with_name(StrBytes::from_string(name))
                                        .with_value(value.map(StrBytes::from_string))
                                        .with_source(source)
                                })
                                .collect(),
                        );
                    }
                    if with_documentation {
                        config = config
                            .with_documentation(entry.documentation.map(StrBytes::from_string));
                    }
                    config
                })
                .collect();
            result.with_configs(configs)
        })
        .collect();
    ResponseKind::DescribeConfigs(DescribeConfigsResponse::default().with_results(results))
}

/// One config as DescribeConfigs reports it.
struct Described {
    name: String,
    /// `None` for a null value, and for a secret's.
    value: Option<String>,
    read_only: bool,
    source: i8,
    /// A secret (Kafka's `PASSWORD` type): its value is never shown.
    sensitive: bool,
    /// Kafka's type code (0: unknown).
    kind: i8,
    /// Where the value could come from, the one in force first: (name, value, source).
    synonyms: Vec<(String, Option<String>, i8)>,
    documentation: Option<String>,
}

fn describe_topic_config(
    shared: &Shared,
    settings: &BrokerConfig,
    key: &'static str,
    value: String,
    explicit: bool,
) -> Described {
    let config = topic_configs::lookup(key);
    let mut synonyms = Vec::new();
    if explicit {
        synonyms.push((key.to_owned(), Some(value.clone()), DYNAMIC_TOPIC_CONFIG));
    }
    let broker = config.map_or(&[][..], |c| c.broker);
    for synonym in broker {
        let source = shared.dynamic().source_of(synonym.name);
        if source == DEFAULT_CONFIG {
            continue;
        }
        if let Some(given) = settings.topic_default_settings.get(synonym.name) {
            synonyms.push((synonym.name.to_owned(), Some(given.clone()), source));
        }
    }
    if let Some(config) = config {
        let name = broker.first().map_or(key, |synonym| synonym.name);
        synonyms.push((
            name.to_owned(),
            Some(config.default.to_owned()),
            DEFAULT_CONFIG,
        ));
    }
    let source = synonyms
        .first()
        .map_or(DEFAULT_CONFIG, |(_, _, source)| *source);
    Described {
        name: key.to_owned(),
        value: Some(value),
        read_only: false,
        sensitive: false,
        source,
        kind: config.map_or(0, |c| c.kind.code()),
        synonyms,
        documentation: config.map(documentation),
    }
}

fn describe_broker_config(entry: BrokerEntry) -> Described {
    let value = entry.shown_value();
    let Some(kafka) = entry.compatibility else {
        return describe_broker_setting(entry.name, value, entry.read_only, entry.source);
    };
    Described {
        synonyms: vec![(entry.name.clone(), value.clone(), entry.source)],
        name: entry.name,
        value,
        read_only: entry.read_only,
        source: entry.source,
        sensitive: kafka.is_sensitive(),
        kind: kafka.kind.code(),
        documentation: Some(format!(
            "Kafka's broker config; Spool accepts it with no effect: {}.",
            broker_configs::no_effect(kafka.name)
        )),
    }
}

fn describe_broker_setting(
    name: String,
    value: Option<String>,
    read_only: bool,
    source: i8,
) -> Described {
    let defaulted = topic_configs::defaulted_by(&name);
    let documentation = defaulted.map(|(config, synonym)| {
        let unit = match synonym.unit_ms {
            3_600_000 => " (in hours)",
            60_000 => " (in minutes)",
            _ => "",
        };
        format!(
            "The default of the topic config {}{unit}. {}",
            config.name,
            documentation(config)
        )
    });
    Described {
        synonyms: vec![(name.clone(), value.clone(), source)],
        name,
        value,
        read_only,
        source,
        sensitive: false,
        kind: defaulted.map_or(0, |(config, _)| config.kind.code()),
        documentation,
    }
}

/// What a config does, and, for one Spool accepts without acting on it, why.
fn documentation(config: &TopicConfig) -> String {
    match config.effect {
        Effect::Honoured => config.doc.to_owned(),
        Effect::NoOp(why) => format!("{} Spool accepts it with no effect: {why}.", config.doc),
    }
}
