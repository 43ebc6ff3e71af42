//! `spool topic`: create, list, describe, delete, alter configs, add partitions (the
//! changes are in [`topic_changes`]).

use rdkafka::admin::{ConfigSource, ResourceSpecifier};
use rdkafka::consumer::Consumer;
use rdkafka::metadata::Metadata;
use serde::Serialize;
use spool_loadgen::workload::parse_property;

use super::topic_changes;
use crate::admin_api::{self, Delayed};
use crate::client::ClientArgs;
use crate::error::CliError;
use crate::output::{self, Format};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TopicCommand {
    /// Create topics.
    Create {
        #[arg(required = true)]
        names: Vec<String>,
        /// Partitions of each topic [default: the broker's `num.partitions`; a view's
        /// source's count].
        #[arg(short, long)]
        partitions: Option<i32>,
        /// Replicas of each partition [default: the broker's].
        #[arg(short, long)]
        replicas: Option<i16>,
        /// A topic config, e.g. `-c retention.ms=3600000` (repeatable).
        #[arg(short, long = "config", value_name = "KEY=VALUE", value_parser = parse_property)]
        configs: Vec<(String, String)>,
    },
    /// List topics.
    List,
    /// Show a topic's partitions, offsets and configs.
    Describe {
        name: String,
        /// Show every config, not just those set on the topic.
        #[arg(short, long)]
        all_configs: bool,
        /// The broker's HTTP admin API, for what the Kafka protocol does not tell
        /// (delayed records pending); default: the first bootstrap broker's host,
        /// port 9644.
        #[arg(long, env = "SPOOL_ADMIN_URL", value_name = "URL")]
        admin_url: Option<String>,
    },
    /// Delete topics.
    Delete {
        #[arg(required = true)]
        names: Vec<String>,
    },
    /// Set or remove topic configs; the others stay as they are.
    AlterConfig {
        name: String,
        /// A config to set (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_property)]
        set: Vec<(String, String)>,
        /// A config to remove, back to the broker's default (repeatable).
        #[arg(long = "delete", value_name = "KEY")]
        delete: Vec<String>,
    },
    /// Add partitions to a topic.
    AddPartitions {
        name: String,
        /// How many partitions to add.
        #[arg(short, long)]
        num: usize,
    },
}

pub(crate) async fn run(command: TopicCommand, client: &ClientArgs) -> Result<(), CliError> {
    match command {
        TopicCommand::Create {
            names,
            partitions,
            replicas,
            configs,
        } => topic_changes::create(client, &names, partitions, replicas, &configs).await,
        TopicCommand::List => list(client),
        TopicCommand::Describe {
            name,
            all_configs,
            admin_url,
        } => describe(client, &name, all_configs, admin_url.as_deref()).await,
        TopicCommand::Delete { names } => topic_changes::delete(client, &names).await,
        TopicCommand::AlterConfig { name, set, delete } => {
            topic_changes::alter_config(client, &name, &set, &delete).await
        }
        TopicCommand::AddPartitions { name, num } => {
            let current = partitions_of(&metadata(client)?, &name)?.len();
            topic_changes::add_partitions(client, &name, num, current).await
        }
    }
}

/// The cluster's metadata for every topic (asking for all topics never auto-creates one).
pub(crate) fn metadata(client: &ClientArgs) -> Result<Metadata, CliError> {
    let requester = client.requester()?;
    requester
        .fetch_metadata(None, client.timeout())
        .map_err(|e| client.failed(&requester, "fetch metadata", e))
}

#[derive(Debug, Serialize)]
struct TopicSummary {
    name: String,
    partitions: usize,
    replicas: usize,
}

fn list(client: &ClientArgs) -> Result<(), CliError> {
    let metadata = metadata(client)?;
    let mut topics: Vec<TopicSummary> = metadata
        .topics()
        .iter()
        .map(|topic| TopicSummary {
            name: topic.name().to_string(),
            partitions: topic.partitions().len(),
            replicas: topic.partitions().first().map_or(0, |p| p.replicas().len()),
        })
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    match client.format {
        Format::Json => output::print_json(&topics),
        Format::Human => {
            let mut table = output::table(["NAME", "PARTITIONS", "REPLICAS"]);
            for topic in &topics {
                table.add_row([
                    topic.name.clone(),
                    topic.partitions.to_string(),
                    topic.replicas.to_string(),
                ]);
            }
            output::print_table(&table, "no topics");
        }
    }
    Ok(())
}

#[derive(Debug, Serialize)]
struct PartitionDetail {
    partition: i32,
    leader: i32,
    replicas: Vec<i32>,
    log_start_offset: i64,
    high_watermark: i64,
    /// Topics with delayed delivery: the records held (from the admin API).
    #[serde(skip_serializing_if = "Option::is_none")]
    delayed: Option<Delayed>,
}

#[derive(Debug, Serialize)]
struct ConfigDetail {
    name: String,
    value: Option<String>,
    source: &'static str,
}

#[derive(Debug, Serialize)]
struct TopicDetail {
    name: String,
    partitions: Vec<PartitionDetail>,
    configs: Vec<ConfigDetail>,
    /// A table topic's table, as the admin API reports it (docs/tables.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    table: Option<serde_json::Value>,
}

fn source_name(source: &ConfigSource) -> &'static str {
    match source {
        ConfigSource::Unknown => "UNKNOWN",
        ConfigSource::DynamicTopic => "DYNAMIC_TOPIC_CONFIG",
        ConfigSource::DynamicBroker => "DYNAMIC_BROKER_CONFIG",
        ConfigSource::DynamicDefaultBroker => "DYNAMIC_DEFAULT_BROKER_CONFIG",
        ConfigSource::StaticBroker => "STATIC_BROKER_CONFIG",
        ConfigSource::Default => "DEFAULT_CONFIG",
    }
}

/// The topic's configs as the cluster reports them.
async fn topic_configs(client: &ClientArgs, name: &str) -> Result<Vec<ConfigDetail>, CliError> {
    let admin = client.admin()?;
    let results = admin
        .describe_configs([&ResourceSpecifier::Topic(name)], &client.admin_options())
        .await
        .map_err(|e| CliError::kafka("describe configs", e).with_brokers(&client.brokers))?;
    let mut configs = Vec::new();
    for result in results {
        let resource = result.map_err(|code| {
            CliError::Failed(format!("cannot describe the configs of {name}: {code:?}"))
        })?;
        for entry in resource.entries {
            configs.push(ConfigDetail {
                source: source_name(&entry.source),
                name: entry.name,
                value: if entry.is_sensitive {
                    None
                } else {
                    entry.value
                },
            });
        }
    }
    configs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(configs)
}

/// The value of one of the topic's configs, as the cluster reports it (set on the
/// topic or defaulted), or `None` if the cluster reports no such config.
pub(crate) async fn config_value(
    client: &ClientArgs,
    name: &str,
    key: &str,
) -> Result<Option<String>, CliError> {
    Ok(topic_configs(client, name)
        .await?
        .into_iter()
        .find(|c| c.name == key)
        .and_then(|c| c.value))
}

/// The partition ids of `name`, or `NotFound`.
pub(crate) fn partition_ids(metadata: &Metadata, name: &str) -> Result<Vec<i32>, CliError> {
    Ok(partitions_of(metadata, name)?
        .into_iter()
        .map(|(id, _, _)| id)
        .collect())
}

/// The partitions of `name` from the metadata, or `NotFound`.
fn partitions_of(metadata: &Metadata, name: &str) -> Result<Vec<(i32, i32, Vec<i32>)>, CliError> {
    let topic = metadata
        .topics()
        .iter()
        .find(|t| t.name() == name)
        .ok_or_else(|| CliError::NotFound(format!("topic {name} does not exist")))?;
    Ok(topic
        .partitions()
        .iter()
        .map(|p| (p.id(), p.leader(), p.replicas().to_vec()))
        .collect())
}

async fn describe(
    client: &ClientArgs,
    name: &str,
    all_configs: bool,
    admin_url: Option<&str>,
) -> Result<(), CliError> {
    let metadata = metadata(client)?;
    let admin = client.admin()?;
    let mut partitions = Vec::new();
    for (partition, leader, replicas) in partitions_of(&metadata, name)? {
        let (low, high) = admin
            .inner()
            .fetch_watermarks(name, partition, client.timeout())
            .map_err(|e| CliError::kafka("fetch offsets", e).with_brokers(&client.brokers))?;
        partitions.push(PartitionDetail {
            partition,
            leader,
            replicas,
            log_start_offset: low,
            high_watermark: high,
            delayed: None,
        });
    }
    partitions.sort_by_key(|p| p.partition);
    let mut configs = topic_configs(client, name).await?;
    let delay_enabled = configs
        .iter()
        .any(|c| c.name == "delivery.delay.enable" && c.value.as_deref() == Some("true"));
    let mut delayed_unknown = None;
    if delay_enabled {
        let url = admin_api::admin_url(admin_url, &client.brokers);
        match admin_api::delayed(&url, name, client.timeout()) {
            Ok(found) => {
                for (index, delayed) in found {
                    if let Some(partition) = partitions.iter_mut().find(|p| p.partition == index) {
                        partition.delayed = delayed;
                    }
                }
            }
            Err(error) => delayed_unknown = Some(error),
        }
    }
    let table_enabled = configs
        .iter()
        .any(|c| c.name == "table.enable" && c.value.as_deref() == Some("true"));
    let mut table = None;
    let mut table_unknown = None;
    if table_enabled {
        let url = admin_api::admin_url(admin_url, &client.brokers);
        match admin_api::table(&url, name, client.timeout()) {
            Ok(found) => table = found,
            Err(error) => table_unknown = Some(error),
        }
    }
    if !all_configs {
        configs.retain(|c| c.source == source_name(&ConfigSource::DynamicTopic));
    }
    let detail = TopicDetail {
        name: name.to_string(),
        partitions,
        configs,
        table,
    };
    match client.format {
        Format::Json => output::print_json(&detail),
        Format::Human => print_detail(&detail, all_configs),
    }
    if let Some(error) = delayed_unknown {
        eprintln!(
            "delayed records pending: unknown, the admin API did not answer ({error}); give --admin-url"
        );
    }
    if let Some(error) = table_unknown {
        eprintln!("the table: unknown, the admin API did not answer ({error}); give --admin-url");
    }
    Ok(())
}

/// A table topic's table: its name, lag, what was written, errors, and where each
/// partition is.
fn print_table_section(table: &serde_json::Value) {
    let number = |key: &str| table[key].as_i64().unwrap_or(0);
    output::heading("TABLE");
    println!("TABLE        {}", table["table"].as_str().unwrap_or("-"));
    println!(
        "LAG          {} records, {} s",
        number("lag_records"),
        number("lag_ms") / 1000
    );
    println!(
        "WRITTEN      {} files, {} rows, {} bytes in {} commits",
        number("files_written"),
        number("rows_written"),
        number("bytes_written"),
        number("commits")
    );
    println!(
        "ERRORS       {}{}",
        number("errors"),
        table["last_error"]
            .as_str()
            .map_or_else(String::new, |error| format!(" (last: {error})"))
    );
    let mut partitions = output::table(["PARTITION", "TABLE-OFFSET", "HIGH-WATERMARK", "LAG"]);
    for partition in table["partitions"].as_array().into_iter().flatten() {
        let field = |key: &str| partition[key].as_i64().unwrap_or(0).to_string();
        partitions.add_row([
            field("partition"),
            field("committed_offset"),
            field("high_watermark"),
            field("lag_records"),
        ]);
    }
    output::print_table(&partitions, "no partition led by a broker that reported");
}

fn print_detail(detail: &TopicDetail, all_configs: bool) {
    println!("NAME        {}", detail.name);
    println!("PARTITIONS  {}", detail.partitions.len());
    output::heading(if all_configs {
        "CONFIGS"
    } else {
        "CONFIGS (set on the topic; --all-configs for the rest)"
    });
    let mut configs = output::table(["KEY", "VALUE", "SOURCE"]);
    for config in &detail.configs {
        configs.add_row([
            config.name.as_str(),
            config.value.as_deref().unwrap_or("(hidden)"),
            config.source,
        ]);
    }
    output::print_table(&configs, "none");
    output::heading("PARTITIONS");
    let delayed = detail.partitions.iter().any(|p| p.delayed.is_some());
    let mut columns = vec![
        "PARTITION",
        "LEADER",
        "REPLICAS",
        "LOG-START-OFFSET",
        "HIGH-WATERMARK",
    ];
    if delayed {
        columns.extend(["DELAYED-PENDING", "NEXT-DUE"]);
    }
    let mut partitions = output::table_of(&columns);
    for p in &detail.partitions {
        let replicas: Vec<String> = p.replicas.iter().map(ToString::to_string).collect();
        let mut row = vec![
            p.partition.to_string(),
            p.leader.to_string(),
            format!("[{}]", replicas.join(",")),
            p.log_start_offset.to_string(),
            p.high_watermark.to_string(),
        ];
        if delayed {
            let pending = p.delayed.map_or(0, |d| d.pending);
            let next = p.delayed.and_then(|d| d.next_due_ms);
            row.push(pending.to_string());
            row.push(next.map_or_else(|| "-".to_owned(), due_in));
        }
        partitions.add_row(row);
    }
    output::print_table(&partitions, "none");
    if let Some(table) = &detail.table {
        print_table_section(table);
    }
}

/// When a due time (epoch ms) comes, from now: `in 1h 5m`, `in 3s`, `now`.
fn due_in(due_ms: i64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let seconds = (due_ms - now).max(0) / 1000;
    match seconds {
        0 => "now".to_owned(),
        s if s < 60 => format!("in {s}s"),
        s if s < 3600 => format!("in {}m {}s", s / 60, s % 60),
        s if s < 86_400 => format!("in {}h {}m", s / 3600, s % 3600 / 60),
        s => format!("in {}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}
