//! `spool schema`: the schema registry every broker serves (Confluent's REST API on
//! `schema.registry.listen`): register, read, list, delete and check schemas. A
//! refusal (an incompatible schema, a subject not found) is an error and a non-zero
//! exit, never a success.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::admin_api::{call, http_url, percent_encoded};
use crate::client::ClientArgs;
use crate::error::CliError;
use crate::output::{self, Format};

/// `schema.registry.listen`'s default port.
const DEFAULT_REGISTRY_PORT: u16 = 8081;

#[derive(Debug, clap::Args)]
pub(crate) struct RegistryArgs {
    /// The schema registry (default: the first broker's host, port 8081).
    #[arg(long)]
    registry_url: Option<String>,
}

/// A schema from a file, as a registration or a check sends it.
#[derive(Debug, clap::Args)]
pub(crate) struct SchemaFile {
    /// The schema's file (`-`: standard input).
    #[arg(long)]
    file: PathBuf,
    /// AVRO (JSON and PROTOBUF are not supported yet).
    #[arg(long = "type", default_value = "AVRO")]
    schema_type: String,
    /// A schema it refers to, NAME=SUBJECT:VERSION (repeatable).
    #[arg(long = "reference", value_name = "NAME=SUBJECT:VERSION")]
    references: Vec<String>,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum SchemaCommand {
    /// Register a schema under SUBJECT; prints its id (the same schema again: its id).
    Register {
        subject: String,
        #[command(flatten)]
        schema: SchemaFile,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Show a version of SUBJECT (the latest by default), or the schema with --id.
    Get {
        subject: Option<String>,
        /// A version number, or `latest`.
        #[arg(long, default_value = "latest")]
        version: String,
        /// The schema with this global id, instead of a subject's version.
        #[arg(long, conflicts_with = "subject")]
        id: Option<i32>,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// List the subjects, or SUBJECT's versions.
    List {
        subject: Option<String>,
        /// Soft-deleted ones too.
        #[arg(long)]
        deleted: bool,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Delete SUBJECT (or one --version of it): soft first, then with --permanent for
    /// good.
    Delete {
        subject: String,
        #[arg(long)]
        version: Option<String>,
        #[arg(long)]
        permanent: bool,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Check whether a schema may be registered under SUBJECT (at its compatibility
    /// level): exits 0 when it may, 1 (with the reasons) when not.
    Compat {
        subject: String,
        #[command(flatten)]
        schema: SchemaFile,
        /// Against this version only (default: what the subject's level names).
        #[arg(long)]
        version: Option<String>,
        #[command(flatten)]
        registry: RegistryArgs,
    },
}

pub(crate) fn run(command: SchemaCommand, client: &ClientArgs) -> Result<(), CliError> {
    let timeout = Duration::from_secs(client.timeout.max(1));
    let base = |registry: &RegistryArgs| {
        http_url(
            registry.registry_url.as_deref(),
            &client.brokers,
            DEFAULT_REGISTRY_PORT,
        )
    };
    match command {
        SchemaCommand::Register {
            subject,
            schema,
            registry,
        } => {
            let path = format!("/subjects/{}/versions", percent_encoded(&subject));
            let registered = call(
                &base(&registry),
                "POST",
                &path,
                Some(&body_of(&schema)?),
                timeout,
            )?;
            match client.format {
                Format::Json => output::print_json(&registered),
                Format::Human => println!(
                    "{subject}: version {}, id {}",
                    registered["version"], registered["id"]
                ),
            }
        }
        SchemaCommand::Get {
            subject,
            version,
            id,
            registry,
        } => {
            let path = match (id, subject) {
                (Some(id), _) => format!("/schemas/ids/{id}"),
                (None, Some(subject)) => format!(
                    "/subjects/{}/versions/{}",
                    percent_encoded(&subject),
                    percent_encoded(&version)
                ),
                (None, None) => {
                    return Err(CliError::Usage("name a SUBJECT, or --id".to_owned()));
                }
            };
            let found = call(&base(&registry), "GET", &path, None, timeout)?;
            match client.format {
                Format::Json => output::print_json(&found),
                Format::Human => print_schema(&found),
            }
        }
        SchemaCommand::List {
            subject,
            deleted,
            registry,
        } => {
            let path = match &subject {
                Some(subject) => format!("/subjects/{}/versions", percent_encoded(subject)),
                None => "/subjects".to_owned(),
            };
            let found = call(
                &base(&registry),
                "GET",
                &format!("{path}?deleted={deleted}"),
                None,
                timeout,
            )?;
            match client.format {
                Format::Json => output::print_json(&found),
                Format::Human => {
                    for item in found.as_array().into_iter().flatten() {
                        println!(
                            "{}",
                            item.as_str()
                                .map_or_else(|| item.to_string(), str::to_owned)
                        );
                    }
                }
            }
        }
        SchemaCommand::Delete {
            subject,
            version,
            permanent,
            registry,
        } => {
            let mut path = format!("/subjects/{}", percent_encoded(&subject));
            if let Some(version) = &version {
                path.push_str(&format!("/versions/{}", percent_encoded(version)));
            }
            path.push_str(&format!("?permanent={permanent}"));
            let deleted = call(&base(&registry), "DELETE", &path, None, timeout)?;
            match client.format {
                Format::Json => output::print_json(&deleted),
                Format::Human => println!(
                    "{}deleted {subject}: version(s) {deleted}",
                    if permanent { "permanently " } else { "soft-" }
                ),
            }
        }
        SchemaCommand::Compat {
            subject,
            schema,
            version,
            registry,
        } => {
            let mut path = format!(
                "/compatibility/subjects/{}/versions",
                percent_encoded(&subject)
            );
            if let Some(version) = &version {
                path.push_str(&format!("/{}", percent_encoded(version)));
            }
            path.push_str("?verbose=true");
            let answer = call(
                &base(&registry),
                "POST",
                &path,
                Some(&body_of(&schema)?),
                timeout,
            )?;
            if client.format == Format::Json {
                output::print_json(&answer);
            }
            if answer["is_compatible"] != Value::Bool(true) {
                let reasons: Vec<String> = answer["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|m| m.as_str().unwrap_or_default().to_owned())
                    .collect();
                return Err(CliError::Failed(format!(
                    "the schema is not compatible with {subject}: {}",
                    reasons.join("; ")
                )));
            }
            if client.format == Format::Human {
                println!("compatible with {subject}");
            }
        }
    }
    Ok(())
}

/// The request body of a schema from its file.
fn body_of(schema: &SchemaFile) -> Result<Value, CliError> {
    let text = if schema.file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())
    } else {
        std::fs::read_to_string(&schema.file)
    }
    .map_err(|error| CliError::Io {
        what: format!("read {}", schema.file.display()),
        error,
    })?;
    let mut references = Vec::new();
    for reference in &schema.references {
        let parsed = reference.split_once('=').and_then(|(name, rest)| {
            let (subject, version) = rest.rsplit_once(':')?;
            Some(json!({"name": name, "subject": subject, "version": version.parse::<i32>().ok()?}))
        });
        references.push(parsed.ok_or_else(|| {
            CliError::Usage(format!("{reference:?}: expected NAME=SUBJECT:VERSION"))
        })?);
    }
    Ok(json!({
        "schema": text,
        "schemaType": schema.schema_type.to_ascii_uppercase(),
        "references": references,
    }))
}

fn print_schema(found: &Value) {
    if let Some(subject) = found["subject"].as_str() {
        println!("subject: {subject}");
        println!("version: {}", found["version"]);
    }
    if !found["id"].is_null() {
        println!("id:      {}", found["id"]);
    }
    println!(
        "type:    {}",
        found["schemaType"].as_str().unwrap_or("AVRO")
    );
    let schema = found["schema"].as_str().unwrap_or_default();
    let pretty = serde_json::from_str::<Value>(schema)
        .ok()
        .and_then(|value| serde_json::to_string_pretty(&value).ok())
        .unwrap_or_else(|| schema.to_owned());
    println!("{pretty}");
}
