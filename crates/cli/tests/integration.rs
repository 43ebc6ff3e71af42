//! The crate's integration tests, one module per file beside this one, linked into one
//! test binary (`latency_tripwire.rs`, which runs alone on the machine, is a binary of
//! its own): a binary per file filled CI's disk and spent minutes linking.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod bench;
#[path = "common/bench_run.rs"]
mod bench_run;
#[path = "common/cli_run.rs"]
mod cli_run;
mod commands;
mod consume_commits;
mod faultcheck;
mod refusals;
mod security_commands;
mod serve_start;
