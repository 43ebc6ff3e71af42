//! `spool mirror`: mirror links, defined on the target cluster — which source
//! cluster's topics (and groups' offsets) are copied here at their own offsets, and
//! their failover. Kafka has no request for them: through the broker's admin API.

use std::time::Duration;

use serde_json::{Value, json};

use crate::admin_api::{AdminArgs, admin_url, call, percent_encoded};
use crate::client::ClientArgs;
use crate::error::CliError;
use crate::output::{self, Format};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum MirrorCommand {
    /// Create a link: mirror the source's topics matching --topics here, at their own
    /// offsets, read-only until failed over.
    Create {
        name: String,
        /// The source cluster's bootstrap brokers, HOST:PORT[,HOST:PORT…].
        #[arg(long)]
        source: String,
        /// A setting of the source client by librdkafka's name (security.protocol,
        /// sasl.*, ssl.*), KEY=VALUE (repeatable). ssl.*.location files are read here
        /// and sent as ssl.*.pem.
        #[arg(long = "source-config", value_name = "KEY=VALUE")]
        source_config: Vec<String>,
        /// The source topics to mirror: a regex matching whole names.
        #[arg(long)]
        topics: String,
        /// The consumer groups whose committed offsets are copied: a regex.
        #[arg(long)]
        groups: Option<String>,
        /// Where a new mirror topic starts on the source.
        #[arg(long, default_value = "earliest", value_parser = ["earliest", "latest"])]
        start: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// List the links.
    List {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// A link with its state, and the partitions the answering broker copies.
    Describe {
        name: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Stop copying (the mirror topics stay read-only).
    Pause {
        name: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Copy again from where each mirror topic ends.
    Resume {
        name: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Delete a link whose mirror topics were all failed over or deleted.
    Delete {
        name: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Stop copying the link's topics (those --topics matches) and make them writable:
    /// new records continue from the mirrored log end.
    Failover {
        name: String,
        /// Only the link's topics this regex matches.
        #[arg(long)]
        topics: Option<String>,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

pub(crate) fn run(command: MirrorCommand, client: &ClientArgs) -> Result<(), CliError> {
    let timeout = Duration::from_secs(client.timeout.max(1));
    let base = |admin: &AdminArgs| admin_url(admin.admin_url.as_deref(), &client.brokers);
    let path = |name: &str, action: &str| format!("/api/mirrors/{}{action}", percent_encoded(name));
    match command {
        MirrorCommand::Create {
            name,
            source,
            source_config,
            topics,
            groups,
            start,
            admin,
        } => {
            let body = json!({
                "name": name,
                "source": source,
                "source_config": source_settings(&source_config)?,
                "topics": topics,
                "groups": groups,
                "start": start,
            });
            let created = call(&base(&admin), "POST", "/api/mirrors", Some(&body), timeout)?;
            match client.format {
                Format::Json => output::print_json(&created),
                Format::Human => println!("created the mirror link {name:?}"),
            }
        }
        MirrorCommand::List { admin } => {
            let links = call(&base(&admin), "GET", "/api/mirrors", None, timeout)?;
            match client.format {
                Format::Json => output::print_json(&links),
                Format::Human => print_links(&links),
            }
        }
        MirrorCommand::Describe { name, admin } => {
            let link = call(&base(&admin), "GET", &path(&name, ""), None, timeout)?;
            match client.format {
                Format::Json => output::print_json(&link),
                Format::Human => print_link(&link),
            }
        }
        MirrorCommand::Pause { name, admin } => {
            let link = call(
                &base(&admin),
                "POST",
                &path(&name, "/pause"),
                Some(&json!({})),
                timeout,
            )?;
            match client.format {
                Format::Json => output::print_json(&link),
                Format::Human => println!("paused the mirror link {name:?}"),
            }
        }
        MirrorCommand::Resume { name, admin } => {
            let link = call(
                &base(&admin),
                "POST",
                &path(&name, "/resume"),
                Some(&json!({})),
                timeout,
            )?;
            match client.format {
                Format::Json => output::print_json(&link),
                Format::Human => println!("resumed the mirror link {name:?}"),
            }
        }
        MirrorCommand::Delete { name, admin } => {
            call(&base(&admin), "DELETE", &path(&name, ""), None, timeout)?;
            if client.format == Format::Human {
                println!("deleted the mirror link {name:?}");
            }
        }
        MirrorCommand::Failover {
            name,
            topics,
            admin,
        } => {
            let body = json!({ "topics": topics });
            let done = call(
                &base(&admin),
                "POST",
                &path(&name, "/failover"),
                Some(&body),
                timeout,
            )?;
            match client.format {
                Format::Json => output::print_json(&done),
                Format::Human => {
                    let mut table = output::table(["TOPIC", "LOG END OFFSETS"]);
                    for topic in done.as_array().into_iter().flatten() {
                        let ends: Vec<String> = topic["log_ends"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(Value::to_string)
                            .collect();
                        table.add_row([text(&topic["topic"]), ends.join(",")]);
                    }
                    output::print_table(&table, "no mirror topics to fail over");
                }
            }
        }
    }
    Ok(())
}

/// The source settings as sent: KEY=VALUE pairs, with `ssl.*.location` files read
/// into `ssl.*.pem` (the brokers that copy may not have the file).
fn source_settings(pairs: &[String]) -> Result<serde_json::Map<String, Value>, CliError> {
    let mut settings = serde_json::Map::new();
    for pair in pairs {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("{pair:?}: expected KEY=VALUE")))?;
        match name.strip_suffix(".location") {
            Some(stem) if stem.starts_with("ssl.") => {
                let pem = std::fs::read_to_string(value).map_err(|error| CliError::Io {
                    what: format!("read {value}"),
                    error,
                })?;
                settings.insert(format!("{stem}.pem"), Value::String(pem));
            }
            _ => {
                settings.insert(name.to_owned(), Value::String(value.to_owned()));
            }
        }
    }
    Ok(settings)
}

fn text(value: &Value) -> String {
    value
        .as_str()
        .map_or_else(|| value.to_string(), str::to_owned)
}

fn lag_of(link: &Value) -> i64 {
    link["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["lag_records"].as_i64())
        .sum()
}

fn print_links(links: &Value) {
    let mut table = output::table([
        "NAME",
        "SOURCE",
        "TOPICS",
        "GROUPS",
        "STATE",
        "MIRROR TOPICS",
        "LAG",
    ]);
    for link in links.as_array().into_iter().flatten() {
        let topics = link["mirror_topics"].as_array().map_or(0, Vec::len);
        table.add_row([
            text(&link["name"]),
            text(&link["source"]),
            text(&link["topics"]),
            link["groups"].as_str().unwrap_or("-").to_owned(),
            text(&link["state"]),
            topics.to_string(),
            lag_of(link).to_string(),
        ]);
    }
    output::print_table(&table, "no mirror links");
}

fn print_link(link: &Value) {
    println!("link:          {}", text(&link["name"]));
    println!("source:        {}", text(&link["source"]));
    if let Some(config) = link["source_config"].as_object().filter(|c| !c.is_empty()) {
        let shown: Vec<String> = config
            .iter()
            .map(|(k, v)| format!("{k}={}", text(v)))
            .collect();
        println!("source config: {}", shown.join(" "));
    }
    println!("topics:        {}", text(&link["topics"]));
    println!("groups:        {}", link["groups"].as_str().unwrap_or("-"));
    println!("start:         {}", text(&link["start"]));
    println!("state:         {}", text(&link["state"]));
    if let Some(error) = link["error"].as_str() {
        println!("error:         {error}");
    }
    let names = |key: &str| -> String {
        let names: Vec<String> = link[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(text)
            .collect();
        if names.is_empty() {
            "-".to_owned()
        } else {
            names.join(", ")
        }
    };
    println!("mirror topics: {}", names("mirror_topics"));
    println!("failed over:   {}", names("failed_over"));
    println!(
        "copied:        {} bytes, {} group offsets, {} errors",
        link["copied_bytes"], link["offsets_copied"], link["errors"]
    );
    if link["skipped_records"].as_u64().unwrap_or(0) > 0 {
        println!(
            "skipped:       {} records the source removed before they were copied",
            link["skipped_records"]
        );
    }
    let mut table = output::table([
        "TOPIC",
        "PARTITION",
        "SOURCE END",
        "MIRROR END",
        "LAG",
        "LAG S",
        "ERROR",
    ]);
    for partition in link["partitions"].as_array().into_iter().flatten() {
        table.add_row([
            text(&partition["topic"]),
            partition["partition"].to_string(),
            partition["source_end"].to_string(),
            partition["mirror_end"].to_string(),
            partition["lag_records"].to_string(),
            format!(
                "{:.1}",
                partition["lag_ms"].as_f64().unwrap_or(0.0) / 1000.0
            ),
            partition["error"].as_str().unwrap_or("").to_owned(),
        ]);
    }
    output::print_table(&table, "no partitions copied by this broker");
}
