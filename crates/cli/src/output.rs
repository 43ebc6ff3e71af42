//! Printing results: aligned tables for people, JSON for scripts. Every command builds
//! a serializable value and hands it to one of these.

use comfy_table::{Table, presets};
use kafka_protocol::error::ResponseError;
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use crate::error::CliError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    Human,
    Json,
}

/// A table with a header row and no borders, in the manner of `rpk`.
pub(crate) fn table<const N: usize>(header: [&str; N]) -> Table {
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    table.set_header(header);
    table
}

/// [`table`] with a header chosen at run time.
pub(crate) fn table_of(header: &[&str]) -> Table {
    let mut table = Table::new();
    table.load_preset(presets::NOTHING);
    table.set_header(header);
    table
}

/// Prints a table, or a line saying there is nothing to show.
pub(crate) fn print_table(table: &Table, empty: &str) {
    if table.row_count() == 0 {
        println!("{empty}");
    } else {
        println!("{}", trim_lines(&table.to_string()));
    }
}

/// A section heading between tables.
pub(crate) fn heading(title: &str) {
    println!("\n{title}");
}

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn print_json<T: Serialize>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => println!("{text}"),
        Err(error) => eprintln!("spool: cannot encode the result as JSON: {error}"),
    }
}

/// comfy-table pads the last column; trailing spaces only get in the way of `grep`.
fn trim_lines(text: &str) -> String {
    text.lines()
        .map(|line| line.strip_prefix(' ').unwrap_or(line).trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// One named thing's outcome of a create or delete.
#[derive(Debug, Serialize)]
pub(crate) struct Outcome {
    pub(crate) name: String,
    /// The error's name, as the cluster gave it.
    pub(crate) error: Option<String>,
    /// What the cluster said of the error, when it said something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

impl Outcome {
    /// An outcome from a Kafka answer's error code and message.
    pub(crate) fn of(name: String, code: i16, message: Option<&StrBytes>) -> Outcome {
        let error = ResponseError::try_from_code(code);
        Outcome {
            name,
            error: error.map(|e| e.to_string()),
            message: error
                .and(message)
                .map(|m| m.to_string())
                .filter(|m| !m.is_empty()),
        }
    }

    /// The table's status: `done`, or the error and what the cluster said of it.
    pub(crate) fn status(&self, done: &str) -> String {
        match (&self.error, &self.message) {
            (None, _) => done.to_owned(),
            (Some(error), None) => error.clone(),
            (Some(error), Some(message)) => format!("{error}: {message}"),
        }
    }
}

/// Outcomes from an admin call's per-name results.
pub(crate) fn outcomes<E: std::fmt::Debug>(
    results: Vec<Result<String, (String, E)>>,
) -> Vec<Outcome> {
    results
        .into_iter()
        .map(|result| match result {
            Ok(name) => Outcome {
                name,
                error: None,
                message: None,
            },
            Err((name, code)) => Outcome {
                name,
                error: Some(format!("{code:?}")),
                message: None,
            },
        })
        .collect()
}

/// What a batch of outcomes is about, for the table and the messages.
#[derive(Debug)]
pub(crate) struct OutcomeKind<'a> {
    /// The table's first column, e.g. `TOPIC`.
    pub(crate) column: &'a str,
    /// The plural, e.g. `topics`.
    pub(crate) plural: &'a str,
    /// The status of a success, e.g. `created`.
    pub(crate) done: &'a str,
    /// The error name that means "does not exist".
    pub(crate) not_found: &'a str,
    /// Said after the count of failures, e.g. why they may have failed.
    pub(crate) failed_hint: &'a str,
}

/// Prints the outcomes and fails if any failed: `NotFound` when every failure is the
/// kind's "does not exist", else `Failed`.
pub(crate) fn report_outcomes(
    format: Format,
    kind: &OutcomeKind<'_>,
    outcomes: &[Outcome],
) -> Result<(), CliError> {
    match format {
        Format::Json => print_json(&outcomes),
        Format::Human => {
            let mut table = table([kind.column, "STATUS"]);
            for outcome in outcomes {
                table.add_row([outcome.name.clone(), outcome.status(kind.done)]);
            }
            print_table(&table, "");
        }
    }
    let failed = outcomes.iter().filter(|o| o.error.is_some()).count();
    let not_found = outcomes
        .iter()
        .filter(|o| o.error.as_deref() == Some(kind.not_found))
        .count();
    if failed == 0 {
        Ok(())
    } else if failed == not_found {
        Err(CliError::NotFound(format!(
            "{failed} of {} {} do not exist",
            outcomes.len(),
            kind.plural
        )))
    } else {
        Err(CliError::Failed(format!(
            "{failed} of {} {} failed{}",
            outcomes.len(),
            kind.plural,
            kind.failed_hint
        )))
    }
}
