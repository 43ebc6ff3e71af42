//! What the CLI says when the cluster refuses or cannot be reached (issue 32): the
//! refusal's name and the broker's message, the documented exit code, within the
//! timeout given, and nothing that looks like success.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use spool_testkit::TestBroker;
use tokio::io::AsyncWriteExt;

use crate::cli_run;
use cli_run::run;

/// The configs set on `topic`, as `topic describe` shows them.
async fn own_configs(broker: &TestBroker, topic: &str) -> Vec<(String, String)> {
    let described = run(broker, &["topic", "describe", topic, "--format", "json"])
        .await
        .ok()
        .json();
    described["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn refused_config_changes_fail_with_the_brokers_message() {
    let broker = TestBroker::start().await;
    run(&broker, &["topic", "create", "orders", "-p", "3"])
        .await
        .ok();
    run(
        &broker,
        &[
            "topic",
            "alter-config",
            "orders",
            "--set",
            "retention.ms=60000",
        ],
    )
    .await
    .ok();

    let not_a_number = run(
        &broker,
        &[
            "topic",
            "alter-config",
            "orders",
            "--set",
            "retention.ms=abc",
        ],
    )
    .await;
    assert_eq!(not_a_number.code, 1, "{not_a_number:?}");
    assert!(
        not_a_number.stderr.contains("InvalidConfig")
            && not_a_number
                .stderr
                .contains("retention.ms=abc is not a number"),
        "the refusal and the broker's reason: {not_a_number:?}"
    );
    assert!(
        !not_a_number.stdout.contains("set to"),
        "nothing printed as done: {not_a_number:?}"
    );

    let unknown = run(
        &broker,
        &[
            "topic",
            "alter-config",
            "orders",
            "--set",
            "no.such.config=1",
        ],
    )
    .await;
    assert_eq!(unknown.code, 1, "{unknown:?}");
    assert!(
        unknown.stderr.contains("InvalidConfig") && unknown.stderr.contains("no.such.config"),
        "{unknown:?}"
    );
    assert_eq!(
        own_configs(&broker, "orders").await,
        [("retention.ms".to_owned(), "60000".to_owned())],
        "the refused changes left the topic as it was"
    );

    let missing = run(
        &broker,
        &["topic", "alter-config", "nope", "--set", "retention.ms=1"],
    )
    .await;
    assert_eq!(missing.code, 3, "{missing:?}");
    assert!(missing.stderr.contains("does not exist"), "{missing:?}");

    let grown = run(&broker, &["topic", "add-partitions", "nope", "-n", "1"]).await;
    assert_eq!(grown.code, 3, "{grown:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn topic_create_leaves_the_partition_count_to_the_broker_and_shows_its_refusals() {
    let broker = TestBroker::start().await;
    run(&broker, &["topic", "create", "orders", "-p", "3"])
        .await
        .ok();

    let view = run(
        &broker,
        &[
            "topic",
            "create",
            "orders-eu",
            "-c",
            "view.source.topic=orders",
        ],
    )
    .await
    .ok();
    assert!(view.stdout.contains("created"), "{view:?}");
    let listed = run(&broker, &["topic", "list", "--format", "json"])
        .await
        .ok()
        .json();
    let partitions = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "orders-eu")
        .map(|t| t["partitions"].clone());
    assert_eq!(
        partitions,
        Some(3.into()),
        "without -p a view gets its source's count: {listed}"
    );

    let refused = run(
        &broker,
        &[
            "topic",
            "create",
            "orders-us",
            "-p",
            "2",
            "-c",
            "view.source.topic=orders",
        ],
    )
    .await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stdout.contains("InvalidPartitions")
            && refused
                .stdout
                .contains("a view has its source's partitions"),
        "the table shows the broker's reason: {refused:?}"
    );
    let json = run(
        &broker,
        &[
            "topic",
            "create",
            "orders-us",
            "-p",
            "2",
            "-c",
            "view.source.topic=orders",
            "--format",
            "json",
        ],
    )
    .await;
    assert_eq!(json.code, 1, "{json:?}");
    let outcome = &json.json()[0];
    assert_eq!(outcome["error"], "InvalidPartitions", "{json:?}");
    assert!(
        outcome["message"]
            .as_str()
            .is_some_and(|m| m.contains("orders has 3")),
        "{json:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn produce_with_a_delay_to_a_topic_that_delivers_at_once_is_refused() {
    let broker = TestBroker::start().await;
    run(&broker, &["topic", "create", "orders"]).await.ok();
    let refused =
        cli_run::run_with_input(&broker, &["produce", "orders", "--delay", "1h"], "later\n").await;
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("delivery.delay.enable"),
        "says what to set: {refused:?}"
    );
    let missing =
        cli_run::run_with_input(&broker, &["produce", "nope", "--delay", "1h"], "later\n").await;
    assert_eq!(missing.code, 3, "{missing:?}");
    let consumed = run(&broker, &["consume", "orders", "-e"]).await.ok();
    assert_eq!(consumed.stdout, "", "nothing was produced: {consumed:?}");
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// `spool produce` of one record to a port nothing listens on, with `RUST_LOG` as
/// given; how it ended and how long it took.
async fn produce_to_nowhere(timeout: &str, rust_log: Option<&str>) -> (cli_run::Run, Duration) {
    let brokers = format!("127.0.0.1:{}", closed_port());
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_spool"));
    command
        .args([
            "produce",
            "orders",
            "--brokers",
            &brokers,
            "--timeout",
            timeout,
        ])
        .env_remove("RUST_LOG")
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n").await.unwrap();
    drop(stdin);
    (cli_run::finished(child).await, started.elapsed())
}

#[tokio::test(flavor = "multi_thread")]
async fn produce_to_a_cluster_that_is_down_exits_4_within_its_timeout_quietly() {
    let (ended, took) = produce_to_nowhere("3", None).await;
    assert_eq!(ended.code, 4, "unreachable, as documented: {ended:?}");
    assert!(
        took < Duration::from_secs(7),
        "gave up after --timeout (3 s), not three times it: {took:?}"
    );
    assert!(
        !ended.stderr.contains("librdkafka") && !ended.stderr.contains("ERROR"),
        "librdkafka's own log lines are off: {ended:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn log_lines_are_plain_text_off_a_terminal() {
    let (ended, _) = produce_to_nowhere("2", Some("librdkafka=info")).await;
    assert!(
        ended.stderr.contains("librdkafka"),
        "RUST_LOG shows librdkafka's lines: {ended:?}"
    );
    assert!(
        !ended.stderr.contains('\u{1b}'),
        "no colour escapes in a pipe: {ended:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_status_of_an_embedded_brokers_store_says_there_is_no_cluster() {
    let broker = TestBroker::start().await;
    run(&broker, &["topic", "create", "orders", "-p", "3"])
        .await
        .ok();
    let url = format!(
        "sqlite://{}",
        broker.data_dir().join("metadata.db").display()
    );
    let status = run(&broker, &["cluster", "status", "--metadata-url", &url]).await;
    assert_eq!(status.code, 3, "{status:?}");
    assert!(
        status.stderr.contains("embedded") && !status.stdout.contains("without a live leader"),
        "{status:?}"
    );
}
