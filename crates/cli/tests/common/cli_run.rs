//! The `spool` binary as the CLI tests run it: a command against a test broker, with
//! what it printed and how it ended. Shared by the command tests.

#![allow(dead_code)]

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use spool_testkit::TestBroker;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

/// What a command printed and how it ended.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\nstderr: {}", self.stdout, self.stderr))
    }

    /// One JSON value per line (consume's output).
    pub(crate) fn json_lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    pub(crate) fn ok(self) -> Run {
        assert_eq!(self.code, 0, "failed: {self:?}");
        self
    }
}

pub(crate) fn spool(broker: &TestBroker, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_spool"));
    command
        .args(args)
        .args(["--brokers", &broker.addr().to_string(), "--timeout", "5"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

pub(crate) async fn run_with_input(broker: &TestBroker, args: &[&str], input: &str) -> Run {
    let mut child = spool(broker, args).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    finished(child).await
}

/// How `child` ended, and what it printed.
pub(crate) async fn finished(child: Child) -> Run {
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the command finishes")
        .unwrap();
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

pub(crate) async fn run(broker: &TestBroker, args: &[&str]) -> Run {
    run_with_input(broker, args, "").await
}
