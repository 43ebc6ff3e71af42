//! `spool faultcheck`, short: a few deaths of the broker in each mode, with the
//! transactional workload beside the idempotent one, and the report says nothing was
//! violated and that the clients got somewhere. The checker's ability
//! to find violations is tested on crafted histories in `crates/faultcheck`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one run may take before it is taken for stuck (a short run takes under a
/// minute on a loaded 2-core machine): it and its brokers are killed and the test
/// fails with what it printed, instead of holding up the whole suite.
const RUN_LIMIT: Duration = Duration::from_secs(300);

fn faultcheck(args: &[&str]) -> (i32, String, String) {
    spool(&[&["faultcheck"], args].concat())
}

/// Runs `spool` with `args` for at most [`RUN_LIMIT`]: its exit code and output.
fn spool(args: &[&str]) -> (i32, String, String) {
    // A process group of its own, so that its brokers go with it.
    let mut child = Command::new(env!("CARGO_BIN_EXE_spool"))
        .args(args)
        .env_remove("RUST_LOG")
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read_all = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().unwrap()));
    let stderr = read_all(Box::new(child.stderr.take().unwrap()));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > RUN_LIMIT {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    let Some(status) = status else {
        panic!("spool {args:?} was still running after {RUN_LIMIT:?}: killed\n{stdout}\n{stderr}");
    };
    (status.code().unwrap_or(-1), stdout, stderr)
}

fn clean_run(mode: &str, crash: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "--mode",
        mode,
        "--crash",
        crash,
        "--cycles",
        "4",
        "--seed",
        "7",
        "--transactions",
        "1",
        "--format",
        "json",
    ];
    args.extend(extra);
    let (code, stdout, stderr) = faultcheck(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["mode"], mode);
    assert_eq!(report["cycles"], 4);
    assert!(
        report["findings"]["violations"]
            .as_object()
            .unwrap()
            .is_empty()
    );
    let acknowledged = report["acknowledged"].as_u64().unwrap();
    assert!(acknowledged > 1000, "{report}");
    assert!(report["log_records"].as_u64().unwrap() >= acknowledged);
    assert!(report["polls"].as_u64().unwrap() > 0, "{report}");
    assert!(report["commits"].as_u64().unwrap() > 0, "{report}");
    assert_transactions_got_somewhere(&report);
    report
}

/// The transactional workload committed transactions and transformed records.
fn assert_transactions_got_somewhere(report: &serde_json::Value) {
    let transactions = &report["transactions"];
    assert!(transactions["committed"].as_u64().unwrap() > 0, "{report}");
    assert!(transactions["in_log"].as_u64().unwrap() > 0, "{report}");
    assert!(
        transactions["transformed"].as_u64().unwrap() > 0,
        "{report}"
    );
}

/// With check-back: every writer's transaction ends as the writer decided (the
/// broker asked the run's checker about those the kills left open).
#[test]
fn kill_cycles_lose_nothing_acknowledged() {
    let report = clean_run("kill", "drop", &["--check-back"]);
    assert!(
        report["transactions"]["checked_back"].as_u64().unwrap() > 0,
        "no transaction was checked back: {report}"
    );
}

#[test]
fn machine_crashes_lose_nothing_acknowledged() {
    clean_run("machine", "drop", &[]);
}

#[test]
fn machine_crashes_that_garble_unsynced_writes_lose_nothing_acknowledged() {
    clean_run("machine", "garble", &[]);
}

/// Over moto's S3 server (`SPOOL_TEST_S3_URL`, with the `AWS_*` variables that
/// `scripts/test` sets), in `mode` with `extra` arguments; `None` if there is no
/// server to run on.
fn clean_run_over_object_storage(mode: &str, extra: &[&str]) -> Option<serde_json::Value> {
    let Ok(bucket) = std::env::var("SPOOL_TEST_S3_URL") else {
        assert!(
            std::env::var("SPOOL_REQUIRE_S3").as_deref() != Ok("1"),
            "SPOOL_REQUIRE_S3=1 but SPOOL_TEST_S3_URL is not set"
        );
        eprintln!("SPOOL_TEST_S3_URL not set: skipped");
        return None;
    };
    let url = format!(
        "{}/faultcheck-{mode}-{}",
        bucket.trim_end_matches('/'),
        std::process::id()
    );
    let mut args = vec![
        "--mode",
        mode,
        "--storage-url",
        &url,
        "--seed",
        "7",
        "--transactions",
        "1",
        "--format",
        "json",
    ];
    args.extend(extra);
    let (code, stdout, stderr) = faultcheck(&args);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["storage_url"], url.as_str());
    assert!(
        report["findings"]["violations"]
            .as_object()
            .unwrap()
            .is_empty(),
        "{report}"
    );
    let acknowledged = report["acknowledged"].as_u64().unwrap();
    assert!(acknowledged > 1000, "{report}");
    assert!(report["log_records"].as_u64().unwrap() >= acknowledged);
    assert!(report["commits"].as_u64().unwrap() > 0, "{report}");
    assert_transactions_got_somewhere(&report);
    Some(report)
}

/// Every life starts on an empty data directory.
#[test]
fn kill_cycles_over_object_storage_on_empty_data_dirs_lose_nothing_acknowledged() {
    clean_run_over_object_storage("kill", &["--cycles", "4"]);
}

/// Three brokers sharing a metadata file and the object store; each cycle one of them
/// is killed (back at once or past its lease), paused past its lease, or stopped
/// with SIGTERM; the writers' transactions are checked back.
#[test]
fn faults_of_cluster_members_lose_nothing_acknowledged() {
    let extra = ["--cycles", "8", "--check-back"];
    if let Some(report) = clean_run_over_object_storage("cluster", &extra) {
        assert_eq!(report["mode"], "cluster");
        assert_eq!(report["cycles"], 8);
    }
}

#[test]
fn impossible_settings_are_usage_errors() {
    let (code, _, stderr) = faultcheck(&["--up-min-ms", "500", "--up-max-ms", "100"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--up-min-ms"), "{stderr}");
    let (code, _, stderr) = faultcheck(&["--topic-config", "flush.ms"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, stderr) = faultcheck(&["--mode", "cluster"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--storage-url"), "{stderr}");
}

/// `spool bench failover`, one trial of each kind over moto's S3 server: every kind
/// reports an outage, nothing is given up on, and no partition data is read back.
#[test]
fn bench_failover_measures_each_kind_of_trial() {
    let Ok(bucket) = std::env::var("SPOOL_TEST_S3_URL") else {
        assert!(
            std::env::var("SPOOL_REQUIRE_S3").as_deref() != Ok("1"),
            "SPOOL_REQUIRE_S3=1 but SPOOL_TEST_S3_URL is not set"
        );
        eprintln!("SPOOL_TEST_S3_URL not set: skipped");
        return;
    };
    let url = format!(
        "{}/failover-{}",
        bucket.trim_end_matches('/'),
        std::process::id()
    );
    let (code, stdout, stderr) = spool(&[
        "bench",
        "failover",
        "--storage-url",
        &url,
        "--trials",
        "1",
        // Balanced 2/1/1 over three brokers, so that a fourth takes one.
        "--partitions",
        "4",
        "--set",
        "cluster.lease.ms=1000",
        "--set",
        "cluster.heartbeat.ms=100",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let kinds: Vec<&str> = report["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["kill", "term", "drain", "join"], "{report}");
    for kind in report["kinds"].as_array().unwrap() {
        assert_eq!(kind["trials"], 1, "{report}");
        let outage = kind["outage_ms"]["max"].as_u64().unwrap();
        assert!(outage > 0 && outage < 30_000, "{report}");
    }
    assert!(report["kinds"][3]["settled_ms"]["max"].as_u64().is_some());
    assert_eq!(report["delivery_failures"], 0, "{report}");
    assert!(report["acknowledged"].as_u64().unwrap() > 100, "{report}");
    assert!(report["objects"]["puts"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(
        report["objects"]["gets"], 0,
        "no partition data read back: {report}"
    );
}
