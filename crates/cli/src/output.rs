//! Printing results: aligned tables for people, JSON for scripts. Every command builds
//! a serializable value and hands it to one of these.

use comfy_table::{Table, presets};
use serde::Serialize;

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
