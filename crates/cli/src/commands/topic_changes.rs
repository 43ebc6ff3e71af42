//! `spool topic create|delete|alter-config|add-partitions`: Kafka's admin requests
//! (CreateTopics, DeleteTopics, IncrementalAlterConfigs, CreatePartitions) sent over
//! [`kafka_admin`](crate::kafka_admin), not through librdkafka. The `rdkafka` crate
//! drops the broker's error messages (and, for AlterConfigs, the per-topic error codes
//! altogether, so a refused change looked applied); a user needs both to see why a
//! change was refused. Any broker of a Spool cluster, or of a KRaft Kafka cluster,
//! applies or forwards these, so the first bootstrap broker that answers is asked.

use std::collections::BTreeMap;

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest,
    CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::client::ClientArgs;
use crate::error::CliError;
use crate::kafka_admin::{Connection, connect};
use crate::output::{self, Format, Outcome, OutcomeKind};

/// IncrementalAlterConfigs' resource type of a topic, and its operations.
const TOPIC_RESOURCE: i8 = 2;
const SET: i8 = 0;
const DELETE: i8 = 1;

fn topic_outcomes(done: &'static str) -> OutcomeKind<'static> {
    OutcomeKind {
        column: "TOPIC",
        plural: "topics",
        done,
        not_found: "UnknownTopicOrPartition",
        failed_hint: "",
    }
}

fn text(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_owned())
}

fn topic_name(name: &str) -> TopicName {
    TopicName(text(name))
}

/// How long the broker may take, in the requests that carry a timeout.
fn timeout_ms(client: &ClientArgs) -> i32 {
    i32::try_from(client.timeout().as_millis()).unwrap_or(i32::MAX)
}

async fn connection(client: &ClientArgs, what: &str) -> Result<Connection, CliError> {
    Ok(connect(client, what).await?.0)
}

/// Creates `names`. Without `partitions` or `replicas` the broker's defaults apply
/// (`num.partitions`; a view gets its source's count), as `kafka-topics.sh` does.
pub(crate) async fn create(
    client: &ClientArgs,
    names: &[String],
    partitions: Option<i32>,
    replicas: Option<i16>,
    configs: &[(String, String)],
) -> Result<(), CliError> {
    let mut connection = connection(client, "create topics").await?;
    let version = connection.version_of(ApiKey::CreateTopics, 2..=7).await?;
    // Before v4 (KIP-464) a topic must say its partitions and replicas.
    let default = |asked: Option<i32>| asked.unwrap_or(if version >= 4 { -1 } else { 1 });
    let configs: Vec<CreatableTopicConfig> = configs
        .iter()
        .map(|(key, value)| {
            CreatableTopicConfig::default()
                .with_name(text(key))
                .with_value(Some(text(value)))
        })
        .collect();
    let topics = names
        .iter()
        .map(|name| {
            CreatableTopic::default()
                .with_name(topic_name(name))
                .with_num_partitions(default(partitions))
                .with_replication_factor(
                    i16::try_from(default(replicas.map(i32::from))).unwrap_or(-1),
                )
                .with_configs(configs.clone())
        })
        .collect();
    let request = CreateTopicsRequest::default()
        .with_topics(topics)
        .with_timeout_ms(timeout_ms(client));
    let response: CreateTopicsResponse = connection.call(request, version).await?;
    let outcomes: Vec<Outcome> = response
        .topics
        .into_iter()
        .map(|t| Outcome::of(t.name.0.to_string(), t.error_code, t.error_message.as_ref()))
        .collect();
    output::report_outcomes(client.format, &topic_outcomes("created"), &outcomes)
}

pub(crate) async fn delete(client: &ClientArgs, names: &[String]) -> Result<(), CliError> {
    let mut connection = connection(client, "delete topics").await?;
    let version = connection.version_of(ApiKey::DeleteTopics, 1..=6).await?;
    let mut request = DeleteTopicsRequest::default().with_timeout_ms(timeout_ms(client));
    if version >= 6 {
        request.topics = names
            .iter()
            .map(|name| DeleteTopicState::default().with_name(Some(topic_name(name))))
            .collect();
    } else {
        request.topic_names = names.iter().map(|name| topic_name(name)).collect();
    }
    let response: DeleteTopicsResponse = connection.call(request, version).await?;
    let outcomes: Vec<Outcome> = response
        .responses
        .into_iter()
        .map(|t| {
            let name = t.name.map(|n| n.0.to_string()).unwrap_or_default();
            Outcome::of(name, t.error_code, t.error_message.as_ref())
        })
        .collect();
    output::report_outcomes(client.format, &topic_outcomes("deleted"), &outcomes)
}

#[derive(Debug, Serialize)]
struct ConfigChange {
    topic: String,
    set: BTreeMap<String, String>,
    deleted: Vec<String>,
}

/// Sets and removes single configs of a topic with IncrementalAlterConfigs: the
/// topic's other configs stay as they are, whoever else changes them meanwhile.
pub(crate) async fn alter_config(
    client: &ClientArgs,
    name: &str,
    set: &[(String, String)],
    delete: &[String],
) -> Result<(), CliError> {
    if set.is_empty() && delete.is_empty() {
        return Err(CliError::Usage(
            "nothing to change: give --set KEY=VALUE or --delete KEY".to_string(),
        ));
    }
    let mut connection = connection(client, "alter configs").await?;
    let version = connection
        .version_of(ApiKey::IncrementalAlterConfigs, 0..=1)
        .await?;
    let changes = set
        .iter()
        .map(|(key, value)| {
            AlterableConfig::default()
                .with_name(text(key))
                .with_config_operation(SET)
                .with_value(Some(text(value)))
        })
        .chain(delete.iter().map(|key| {
            AlterableConfig::default()
                .with_name(text(key))
                .with_config_operation(DELETE)
        }))
        .collect();
    let request = IncrementalAlterConfigsRequest::default().with_resources(vec![
        AlterConfigsResource::default()
            .with_resource_type(TOPIC_RESOURCE)
            .with_resource_name(text(name))
            .with_configs(changes),
    ]);
    let response: IncrementalAlterConfigsResponse = connection.call(request, version).await?;
    for answer in response.responses {
        refused(
            name,
            answer.error_code,
            answer.error_message.as_ref(),
            "change the configs of",
        )?;
    }
    let change = ConfigChange {
        topic: name.to_string(),
        set: set.iter().cloned().collect(),
        deleted: delete.to_vec(),
    };
    match client.format {
        Format::Json => output::print_json(&change),
        Format::Human => {
            let mut table = output::table(["KEY", "CHANGE"]);
            for (key, value) in &change.set {
                table.add_row([key.as_str(), &format!("set to {value}")]);
            }
            for key in &change.deleted {
                table.add_row([key.as_str(), "removed"]);
            }
            output::print_table(&table, "");
        }
    }
    Ok(())
}

#[derive(Debug, Serialize)]
struct PartitionsAdded {
    topic: String,
    partitions: usize,
}

/// Adds `num` partitions to `name`, whose current count the metadata gives.
pub(crate) async fn add_partitions(
    client: &ClientArgs,
    name: &str,
    num: usize,
    current: usize,
) -> Result<(), CliError> {
    if num == 0 {
        return Err(CliError::Usage("--num must be at least 1".to_string()));
    }
    let total = current + num;
    let count = i32::try_from(total)
        .map_err(|_| CliError::Usage(format!("{total} partitions are too many")))?;
    let mut connection = connection(client, "add partitions").await?;
    let version = connection
        .version_of(ApiKey::CreatePartitions, 0..=3)
        .await?;
    let request = CreatePartitionsRequest::default()
        .with_topics(vec![
            CreatePartitionsTopic::default()
                .with_name(topic_name(name))
                .with_count(count),
        ])
        .with_timeout_ms(timeout_ms(client));
    let response: CreatePartitionsResponse = connection.call(request, version).await?;
    for answer in response.results {
        refused(
            name,
            answer.error_code,
            answer.error_message.as_ref(),
            "add partitions to",
        )?;
    }
    let added = PartitionsAdded {
        topic: name.to_string(),
        partitions: total,
    };
    match client.format {
        Format::Json => output::print_json(&added),
        Format::Human => println!("{name} now has {total} partitions ({num} added)"),
    }
    Ok(())
}

/// A topic's refusal as the command's error: `NotFound` for an unknown topic, else
/// `Failed` with the code's name and the broker's message.
fn refused(name: &str, code: i16, message: Option<&StrBytes>, what: &str) -> Result<(), CliError> {
    let outcome = Outcome::of(name.to_owned(), code, message);
    match outcome.error.as_deref() {
        None => Ok(()),
        Some("UnknownTopicOrPartition") => {
            Err(CliError::NotFound(format!("topic {name} does not exist")))
        }
        Some(_) => Err(CliError::Failed(format!(
            "the cluster refused to {what} {name}: {}",
            outcome.status("")
        ))),
    }
}
