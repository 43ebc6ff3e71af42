//! `spool bench` as the tests run it: the command against a broker, and its JSON
//! report once it succeeded. Shared by the bench smoke test and the latency tripwire.

use std::net::SocketAddr;
use std::process::{Command, Output};

use serde_json::Value;

/// `spool bench ARGS --brokers BROKER --format json`.
pub(crate) fn bench_command(broker: SocketAddr, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spool"));
    command
        .arg("bench")
        .args(args)
        .args(["--brokers", &broker.to_string(), "--format", "json"]);
    command
}

/// The report of a bench run given `args`; fails the test if the run failed.
pub(crate) fn report_of(args: &[&str], output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}
