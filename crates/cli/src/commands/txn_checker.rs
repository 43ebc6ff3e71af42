//! `spool txn-checker`: the HTTP endpoints the transaction coordinator asks whether an
//! open transaction committed before it aborts it (check-back), per transactional-id
//! prefix. Kafka has no request for them: through the broker's admin API.

use std::time::Duration;

use serde_json::{Value, json};

use crate::admin_api::{AdminArgs, admin_url, call, percent_encoded};
use crate::client::ClientArgs;
use crate::error::CliError;
use crate::output::{self, Format};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum TxnCheckerCommand {
    /// Add the checker of transactional ids starting with PREFIX (replacing the one
    /// there was).
    Add {
        prefix: String,
        /// Where checks are POSTed (http:// or https://).
        #[arg(long)]
        url: String,
        /// A header sent with each check, NAME=VALUE (repeatable).
        #[arg(long = "header", value_name = "NAME=VALUE")]
        headers: Vec<String>,
        /// How long a check waits for its answer.
        #[arg(long, default_value_t = 5000)]
        timeout_ms: i32,
        /// PEM CA certificates an https endpoint may chain to, besides the system's.
        #[arg(long)]
        ca_location: Option<std::path::PathBuf>,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// List the checkers (header names only).
    List {
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Remove the checker of PREFIX.
    Remove {
        prefix: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

pub(crate) fn run(command: TxnCheckerCommand, client: &ClientArgs) -> Result<(), CliError> {
    let timeout = Duration::from_secs(client.timeout.max(1));
    match command {
        TxnCheckerCommand::Add {
            prefix,
            url,
            headers,
            timeout_ms,
            ca_location,
            admin,
        } => {
            let mut named = serde_json::Map::new();
            for pair in &headers {
                let (name, value) = pair
                    .split_once('=')
                    .ok_or_else(|| CliError::Usage(format!("{pair:?}: expected NAME=VALUE")))?;
                named.insert(name.to_owned(), Value::String(value.to_owned()));
            }
            let ca_pem = ca_location
                .map(|path| {
                    std::fs::read_to_string(&path).map_err(|error| CliError::Io {
                        what: format!("read {}", path.display()),
                        error,
                    })
                })
                .transpose()?;
            let body = json!({
                "prefix": prefix,
                "url": url,
                "headers": named,
                "timeout_ms": timeout_ms,
                "ca_pem": ca_pem,
            });
            let base = admin_url(admin.admin_url.as_deref(), &client.brokers);
            let added = call(&base, "POST", "/api/txn-checkers", Some(&body), timeout)?;
            match client.format {
                Format::Json => output::print_json(&added),
                Format::Human => println!("added the transaction checker of {prefix:?}"),
            }
        }
        TxnCheckerCommand::List { admin } => {
            let base = admin_url(admin.admin_url.as_deref(), &client.brokers);
            let checkers = call(&base, "GET", "/api/txn-checkers", None, timeout)?;
            match client.format {
                Format::Json => output::print_json(&checkers),
                Format::Human => {
                    let mut table =
                        output::table(["PREFIX", "URL", "HEADERS", "TIMEOUT MS", "OWN CA"]);
                    for checker in checkers.as_array().into_iter().flatten() {
                        let names: Vec<&str> = checker["header_names"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect();
                        table.add_row([
                            checker["prefix"].as_str().unwrap_or_default().to_owned(),
                            checker["url"].as_str().unwrap_or_default().to_owned(),
                            names.join(","),
                            checker["timeout_ms"].to_string(),
                            checker["own_ca"].to_string(),
                        ]);
                    }
                    output::print_table(&table, "no transaction checkers");
                }
            }
        }
        TxnCheckerCommand::Remove { prefix, admin } => {
            let base = admin_url(admin.admin_url.as_deref(), &client.brokers);
            let path = format!("/api/txn-checkers/{}", percent_encoded(&prefix));
            call(&base, "DELETE", &path, None, timeout)?;
            if client.format == Format::Human {
                println!("removed the transaction checker of {prefix:?}");
            }
        }
    }
    Ok(())
}
