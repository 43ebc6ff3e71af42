//! A seconds-long run of the storage benchmark, checking that its JSON report holds
//! every measure and that the numbers are sane. The real run is documented in
//! `docs/performance.md`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

/// Runs a benchmark binary with `args` and parses its JSON report.
fn report_of(binary: &str, args: &[&str]) -> serde_json::Value {
    let output = Command::new(binary).args(args).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn the_benchmark_reports_every_measure() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_spool-log-bench"))
        .args(["--dir", dir.path().join("bench").to_str().unwrap()])
        .args([
            "--bytes",
            "4194304",
            "--rounds",
            "2",
            "--partitions",
            "200",
            "--index-max-power",
            "4",
        ])
        .args(["--lookups", "2000"])
        .args(["--producers", "2", "--json"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for key in [
        "raw_write_fsync_mb_s",
        "raw_write_no_fsync_mb_s",
        "log_durable_append_mb_s",
        "log_concurrent_durable_append_mb_s",
        "log_read_mb_s",
        "raw_read_mb_s",
        "log_durable_vs_raw",
        "partitions_manager_open_ms",
    ] {
        let value = report[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing in {report}"));
        assert!(value.is_finite() && value > 0.0, "{key} = {value}");
    }
    let lookups = report["index_lookup"].as_array().unwrap();
    assert_eq!(lookups.len(), 2, "10^3 and 10^4 entries");
    assert_eq!(report["partitions"], 200);
    assert!(report["partitions_idle_bytes_each"].as_f64().unwrap() < 4096.0);
}

#[test]
fn the_fetch_benchmark_reports_every_measure() {
    let dir = tempfile::tempdir().unwrap();
    let fetch = dir.path().join("fetch");
    let report = report_of(
        env!("CARGO_BIN_EXE_spool-fetch-bench"),
        &[
            "--dir",
            fetch.to_str().unwrap(),
            "--mib",
            "8",
            "--batch-kib",
            "64",
            "--fetch-mib",
            "1",
            "--rounds",
            "2",
            "--json",
        ],
    );
    assert!(report["stored_bytes"].as_u64().unwrap() > 7 << 20);
    for key in [
        "produce_acks_all_mb_s",
        "raw_loopback_tcp_mb_s",
        "raw_page_cache_read_mb_s",
        "fetch_mb_s",
    ] {
        let value = report[key].as_f64().unwrap_or(-1.0);
        assert!(value > 0.0, "{key} = {value}");
    }
    assert_eq!(report["fetch_rounds_mb_s"].as_array().unwrap().len(), 2);
}

#[test]
fn the_cleaner_benchmark_reports_its_measures() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("bench");
    let report = report_of(
        env!("CARGO_BIN_EXE_spool-cleaner-bench"),
        &[
            "--dir",
            bench.to_str().unwrap(),
            "--bytes",
            "3000000",
            "--keys",
            "500",
            "--segment-bytes",
            "262144",
            "--baseline-appends",
            "50",
            "--json",
        ],
    );
    for key in [
        "raw_write_fsync_mb_s",
        "clean_read_mb_s",
        "clean_written_mb_s",
    ] {
        let value = report[key].as_f64().unwrap();
        assert!(value.is_finite() && value > 0.0, "{key} = {value}");
    }
    assert!(report["records_removed"].as_u64().unwrap() > 0);
    assert!(report["append_baseline"]["p99_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_view_benchmark_reads_every_view_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let views = dir.path().join("views");
    let report = report_of(
        env!("CARGO_BIN_EXE_spool-view-bench"),
        &[
            "--dir",
            views.to_str().unwrap(),
            "--mib",
            "2",
            "--rounds",
            "1",
            "--json",
        ],
    );
    let reads = report["reads"].as_array().unwrap();
    // Per layout: the source and three views.
    assert_eq!(reads.len(), 8, "{report}");
    for read in reads {
        let records = read["records"].as_u64().unwrap();
        assert!(records > 0, "{read}");
        assert!(read["source_mb_s"].as_f64().unwrap() > 0.0, "{read}");
    }
    let records = |topic: &str| {
        reads
            .iter()
            .find(|read| read["topic"] == topic)
            .and_then(|read| read["records"].as_u64())
            .unwrap()
    };
    assert_eq!(
        records("source-per-batch-100"),
        records("source-per-batch"),
        "every tag named: every record"
    );
    assert!(records("source-per-record-10") < records("source-per-record-50"));
}

#[test]
fn the_delayed_benchmark_delivers_every_record_once_and_not_early() {
    let report = report_of(
        env!("CARGO_BIN_EXE_spool-delayed-bench"),
        &[
            "--records",
            "3000",
            "--partitions",
            "2",
            "--lead-s",
            "3",
            "--window-s",
            "1",
            "--json",
        ],
    );
    assert_eq!(report["delivered"], 3000, "{report}");
    assert_eq!(report["delivered_early"], 0, "{report}");
    assert_eq!(report["delivered_twice"], 0, "{report}");
    assert!(report["rss_mib_peak_while_pending"].as_u64().unwrap() > 0);
}

#[test]
fn the_acl_benchmark_lists_what_each_principal_may_describe() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("acls");
    let report = report_of(
        env!("CARGO_BIN_EXE_spool-acl-bench"),
        &[
            "--dir",
            data.to_str().unwrap(),
            "--topics",
            "200",
            "--acls",
            "300",
            "--rounds",
            "3",
            "--json",
        ],
    );
    assert_eq!(report["super_user"]["listed"], 200);
    // The wildcard DESCRIBE, less the topics with a DENY: bindings 0, 100 and 200 name
    // topics 0, 100 and 0 again.
    assert_eq!(report["anonymous"]["listed"], 198);
    assert!(report["anonymous"]["median_ms"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_table_benchmark_writes_rows_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("tables");
    let report = report_of(
        env!("CARGO_BIN_EXE_spool-table-bench"),
        &[
            "--dir",
            data.to_str().unwrap(),
            "--records",
            "5000",
            "--json",
        ],
    );
    assert_eq!(report["records"], 5000);
    assert!(
        report["value_bytes"].as_u64().unwrap() >= 5000 * 1000,
        "{report}"
    );
    for mode in ["key_value", "registry"] {
        assert!(
            report[format!("{mode}_rows_per_s")].as_f64().unwrap() > 0.0,
            "{report}"
        );
        assert!(
            report[format!("{mode}_file_bytes")].as_u64().unwrap() > 0,
            "{report}"
        );
    }
}
