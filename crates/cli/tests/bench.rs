//! A seconds-long smoke run of every `spool bench` mode against a running broker,
//! checking that the JSON report holds every measure and that the counts add up. The
//! real runs are in docs/performance.md; speed is never asserted here.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::bench_run;

use serde_json::Value;
use spool_testkit::TestBroker;
use tokio::process::Command;

async fn bench(broker: &TestBroker, args: &[&str]) -> Value {
    let mut command = Command::from(bench_run::bench_command(broker.addr(), args));
    bench_run::report_of(args, &command.output().await.unwrap())
}

fn assert_throughput(report: &Value, key: &str) {
    let t = &report[key];
    assert!(t["messages"].as_u64().unwrap() > 0, "{key}: {report}");
    assert!(t["msg_per_s"].as_f64().unwrap() > 0.0, "{key}: {report}");
    assert!(t["mb_per_s"].as_f64().unwrap() > 0.0, "{key}: {report}");
    assert_eq!(t["errors"], 0, "{key}: {report}");
}

fn assert_latency(report: &Value, key: &str) {
    let l = &report[key];
    let (p50, p99, p999, max) = (
        l["p50"].as_f64().unwrap(),
        l["p99"].as_f64().unwrap(),
        l["p999"].as_f64().unwrap(),
        l["max"].as_f64().unwrap(),
    );
    assert!(
        0.0 < p50 && p50 <= p99 && p99 <= p999 && p999 <= max,
        "{key}: {report}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_bench_mode_reports_its_measures() {
    let broker = TestBroker::start().await;
    let common = ["--partitions-per-topic", "4", "--message-size", "512"];

    let produce = bench(
        &broker,
        &[
            &["produce", "--duration", "1", "--warmup", "0.2"][..],
            &common,
        ]
        .concat(),
    )
    .await;
    assert_eq!(produce["mode"], "produce");
    assert_throughput(&produce, "produced");
    assert_latency(&produce, "publish_latency_ms");

    let consume = bench(
        &broker,
        &[
            &[
                "consume",
                "--backlog-bytes",
                "2000000",
                "--consumers-per-topic",
                "2",
            ][..],
            &common,
        ]
        .concat(),
    )
    .await;
    assert_throughput(&consume, "consumed");
    assert_eq!(
        consume["consumed"]["messages"], consume["produced"]["messages"],
        "the whole backlog is read: {consume}"
    );
    assert_eq!(consume["produced"]["messages"], 2_000_000 / 512);

    let e2e = bench(
        &broker,
        &[
            &[
                "e2e",
                "--producer-rate",
                "2000",
                "--duration",
                "1",
                "--warmup",
                "0.2",
                "--key-distribution",
                "round-robin",
            ][..],
            &common,
        ]
        .concat(),
    )
    .await;
    assert_throughput(&e2e, "produced");
    assert_throughput(&e2e, "consumed");
    assert_latency(&e2e, "end_to_end_latency_ms");
    let sent = e2e["produced"]["messages"].as_u64().unwrap();
    assert!((1800..=2200).contains(&sent), "the rate is kept: {e2e}");
    assert_eq!(e2e["consumed"]["messages"], e2e["produced"]["messages"]);

    // Transactions: producers commit every 50 messages; read back read_committed.
    let transactional = bench(
        &broker,
        &[
            &[
                "consume",
                "--backlog-bytes",
                "1000000",
                "--transaction-size",
                "50",
                "--consumer-config",
                "isolation.level=read_committed",
            ][..],
            &common,
        ]
        .concat(),
    )
    .await;
    assert_throughput(&transactional, "consumed");
    assert_latency(&transactional, "commit_latency_ms");
    assert_eq!(
        transactional["consumed"]["messages"], transactional["produced"]["messages"],
        "every committed message is read: {transactional}"
    );
    assert!(
        transactional["commit_latency_ms"]["count"]
            .as_u64()
            .unwrap()
            >= 1_000_000 / 512 / 50,
        "{transactional}"
    );

    let dir = tempfile::tempdir().unwrap();
    let limits = bench(
        &broker,
        &[
            "limits",
            "--dir",
            dir.path().to_str().unwrap(),
            "--bytes",
            "8388608",
        ],
    )
    .await;
    for key in [
        "write_no_fsync_mb_s",
        "write_fsync_mb_s",
        "fsync_p50_us",
        "fsync_p99_us",
        "loopback_mb_s",
    ] {
        assert!(limits[key].as_f64().unwrap() > 0.0, "{key}: {limits}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_impossible_workload_is_a_usage_error() {
    let broker = TestBroker::start().await;
    for args in [
        ["--message-size", "4"],
        ["--topics", "0"],
        ["--duration", "inf"],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_spool"))
            .args(["bench", "e2e"])
            .args(args)
            .args(["--brokers", &broker.addr().to_string()])
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
    }
}

/// A smoke run of `spool bench rebalance`: every protocol, one trial of a small
/// group, against a broker with short consumer-protocol heartbeats.
#[tokio::test(flavor = "multi_thread")]
async fn the_rebalance_bench_reports_each_protocol() {
    let broker = TestBroker::start_with(&[
        ("group.initial.rebalance.delay.ms", "0"),
        ("group.consumer.min.heartbeat.interval.ms", "100"),
        ("group.consumer.heartbeat.interval.ms", "500"),
    ])
    .await;
    let report = bench(
        &broker,
        &[
            "rebalance",
            "--partitions",
            "6",
            "--members",
            "2",
            "--trials",
            "1",
            "--rate",
            "200",
            "--settle-timeout",
            "60",
        ],
    )
    .await;
    let results = report["results"].as_array().unwrap();
    let protocols: Vec<&str> = results
        .iter()
        .map(|r| r["protocol"].as_str().unwrap())
        .collect();
    assert_eq!(protocols, ["eager", "cooperative", "consumer"], "{report}");
    for result in results {
        for change in ["join", "leave"] {
            let cost = &result[change][0];
            assert!(cost["settle_ms"].as_u64().unwrap() > 0, "{report}");
            assert!(cost["moved"].as_u64().unwrap() >= 1, "{report}");
            assert!(
                cost["revoked"].as_u64().unwrap() >= cost["kept_revoked"].as_u64().unwrap(),
                "{report}"
            );
        }
        assert!(result["produced"].as_u64().unwrap() > 0, "{report}");
    }
    // Eager members give everything up; incremental ones keep what they keep.
    assert!(
        results[0]["join"][0]["kept_revoked"].as_u64().unwrap() > 0,
        "{report}"
    );
    for incremental in &results[1..] {
        assert_eq!(incremental["join"][0]["kept_revoked"], 0, "{report}");
    }
}
