//! What `spool consume -g` commits when its output or its process goes away (issue
//! 32): only records written out; on SIGTERM, as on Ctrl-C, what was written, and
//! the member leaves its group at once.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use spool_testkit::TestBroker;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::cli_run;
use cli_run::{finished, run, run_with_input, spool};

async fn broker_with_records(topic: &str) -> TestBroker {
    let broker = TestBroker::start_with(&[("group.initial.rebalance.delay.ms", "0")]).await;
    run(&broker, &["topic", "create", topic, "-p", "1"])
        .await
        .ok();
    run_with_input(&broker, &["produce", topic], "a\nb\nc\nd\ne\n")
        .await
        .ok();
    broker
}

/// The records the group `group` gets from where it committed, to the end.
async fn uncommitted(broker: &TestBroker, topic: &str, group: &str) -> usize {
    let again = run(broker, &["consume", topic, "-g", group, "-e"])
        .await
        .ok();
    again.stdout.lines().count()
}

#[tokio::test(flavor = "multi_thread")]
async fn records_that_meet_a_closed_pipe_are_not_committed() {
    let broker = broker_with_records("jobs").await;
    let mut reader = spool(&broker, &["consume", "jobs", "-g", "workers", "-e"])
        .spawn()
        .unwrap();
    // The reader is gone before the first record is written (`| head -0`).
    drop(reader.stdout.take());
    let ended = finished(reader).await;
    assert_eq!(ended.code, 0, "a closed pipe ends quietly: {ended:?}");
    assert_eq!(
        uncommitted(&broker, "jobs", "workers").await,
        5,
        "nothing reached the output, so nothing was committed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_commits_what_was_written_and_leaves_the_group() {
    let broker = broker_with_records("jobs").await;
    let mut member = spool(&broker, &["consume", "jobs", "-g", "workers"])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(member.stdout.take().unwrap()).lines();
    for expected in ["a", "b", "c", "d", "e"] {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the member prints every record")
            .unwrap();
        assert_eq!(line.as_deref(), Some(expected));
    }
    let pid = member.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(30), member.wait())
        .await
        .expect("SIGTERM ends the member")
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");

    let group = run(
        &broker,
        &["group", "describe", "workers", "--format", "json"],
    )
    .await
    .ok()
    .json();
    assert_eq!(
        group["members"].as_array().map(Vec::len),
        Some(0),
        "the member left at once, not after its session timed out: {group}"
    );
    assert_eq!(
        uncommitted(&broker, "jobs", "workers").await,
        0,
        "what was printed was committed"
    );
}
