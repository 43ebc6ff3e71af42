//! Every client command of the `spool` binary against a running broker: output
//! parsed (JSON, and the human tables where they matter), exit codes checked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::Value;
use spool_testkit::TestBroker;
use tokio::process::{Child, Command};

use crate::cli_run;
use cli_run::{Run, finished, run, run_with_input, spool};

#[tokio::test(flavor = "multi_thread")]
async fn topic_commands_create_list_describe_alter_grow_and_delete() {
    let broker = TestBroker::start().await;
    let created = run(
        &broker,
        &[
            "topic",
            "create",
            "orders",
            "audit",
            "-p",
            "3",
            "-c",
            "retention.ms=60000",
            "--format",
            "json",
        ],
    )
    .await
    .ok()
    .json();
    assert_eq!(created.as_array().unwrap().len(), 2);
    assert!(created[0]["error"].is_null());

    let again = run(&broker, &["topic", "create", "orders"]).await;
    assert_eq!(again.code, 1, "{again:?}");
    assert!(again.stdout.contains("TopicAlreadyExists"), "{again:?}");

    let human = run(&broker, &["topic", "list"]).await.ok();
    assert!(
        human.stdout.lines().next().unwrap().starts_with("NAME"),
        "{human:?}"
    );
    let listed = run(&broker, &["topic", "list", "--format", "json"])
        .await
        .ok()
        .json();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["audit", "orders"]);
    assert_eq!(listed[1]["partitions"], 3);

    run(
        &broker,
        &[
            "topic",
            "alter-config",
            "orders",
            "--set",
            "cleanup.policy=delete",
            "--delete",
            "retention.ms",
        ],
    )
    .await
    .ok();
    let described = run(
        &broker,
        &["topic", "describe", "orders", "--format", "json"],
    )
    .await
    .ok()
    .json();
    let configs: Vec<(&str, &str)> = described["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["value"].as_str().unwrap()))
        .collect();
    assert_eq!(
        configs,
        [("cleanup.policy", "delete")],
        "retention.ms removed, the rest kept"
    );
    assert_eq!(described["partitions"].as_array().unwrap().len(), 3);
    assert_eq!(described["partitions"][0]["high_watermark"], 0);

    run(&broker, &["topic", "add-partitions", "orders", "-n", "2"])
        .await
        .ok();
    let grown = run(
        &broker,
        &["topic", "describe", "orders", "--format", "json"],
    )
    .await
    .ok()
    .json();
    assert_eq!(grown["partitions"].as_array().unwrap().len(), 5);
    let all = run(
        &broker,
        &[
            "topic",
            "describe",
            "orders",
            "--all-configs",
            "--format",
            "json",
        ],
    )
    .await
    .ok()
    .json();
    assert!(
        all["configs"].as_array().unwrap().len() > 5,
        "defaults shown too"
    );

    let deleted = run(&broker, &["topic", "delete", "audit", "nope"]).await;
    assert_eq!(
        deleted.code, 3,
        "an unknown topic is not found: {deleted:?}"
    );
    assert!(
        deleted.stdout.contains("audit") && deleted.stdout.contains("deleted"),
        "{deleted:?}"
    );
    let missing = run(&broker, &["topic", "describe", "audit"]).await;
    assert_eq!(missing.code, 3, "{missing:?}");
    assert!(missing.stderr.contains("does not exist"), "{missing:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn produce_and_consume_with_keys_headers_offsets_templates_and_times() {
    let broker = TestBroker::start().await;
    run(&broker, &["topic", "create", "events", "-p", "2"])
        .await
        .ok();
    let before = spool_time_millis();
    let produced = run_with_input(
        &broker,
        &[
            "produce",
            "events",
            "-K",
            ":",
            "-H",
            "source=cli",
            "-p",
            "1",
            "-z",
            "zstd",
            "-v",
            "--format",
            "json",
        ],
        "a:1\nb:2\nno key\n",
    )
    .await
    .ok()
    .json_lines();
    let offsets: Vec<(i64, i64)> = produced
        .iter()
        .map(|d| {
            (
                d["partition"].as_i64().unwrap(),
                d["offset"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(offsets, [(1, 0), (1, 1), (1, 2)]);
    let many: String = (0..1000).map(|i| format!("{i}\n")).collect();
    let summary = run_with_input(
        &broker,
        &["produce", "events", "-p", "0", "--format", "json"],
        &many,
    )
    .await
    .ok()
    .json();
    assert_eq!(
        (summary["records"].as_u64(), summary["failed"].as_u64()),
        (Some(1000), Some(0))
    );

    let records = run(
        &broker,
        &["consume", "events", "-p", "1", "-e", "--format", "json"],
    )
    .await
    .ok()
    .json_lines();
    assert_eq!(records.len(), 3);
    assert_eq!(
        (records[0]["key"].as_str(), records[0]["value"].as_str()),
        (Some("a"), Some("1"))
    );
    assert_eq!(records[2]["key"], Value::Null);
    assert_eq!(records[2]["value"], "no key");
    assert_eq!(records[1]["headers"][0]["key"], "source");
    assert_eq!(records[1]["headers"][0]["value"], "cli");
    assert!(records[0]["timestamp"].as_i64().unwrap() >= before);

    let templated = run(
        &broker,
        &[
            "consume",
            "events",
            "-p",
            "1",
            "-e",
            "-f",
            r"%p/%o %k=%v [%h]\n",
        ],
    )
    .await
    .ok();
    assert_eq!(
        templated.stdout,
        "1/0 a=1 [source=cli]\n1/1 b=2 [source=cli]\n1/2 =no key [source=cli]\n"
    );

    let all = run(&broker, &["consume", "events", "-e"]).await.ok();
    assert_eq!(
        all.stdout.lines().count(),
        1003,
        "both partitions to their ends"
    );
    let from_offset = run(
        &broker,
        &["consume", "events", "-p", "0", "-o", "990", "-e"],
    )
    .await
    .ok();
    assert_eq!(
        from_offset.stdout,
        (990..1000).map(|i| format!("{i}\n")).collect::<String>()
    );
    let limited = run(&broker, &["consume", "events", "-p", "0", "-n", "5"])
        .await
        .ok();
    assert_eq!(limited.stdout, "0\n1\n2\n3\n4\n");
    let future = format!("@{}", spool_time_millis() + 3_600_000);
    let after_all = run(&broker, &["consume", "events", "-o", &future, "-e"])
        .await
        .ok();
    assert_eq!(
        after_all.stdout, "",
        "nothing at or after a time in the future"
    );
    let since = format!("@{before}");
    let by_time = run(
        &broker,
        &["consume", "events", "-p", "1", "-o", &since, "-e"],
    )
    .await
    .ok();
    assert_eq!(by_time.stdout.lines().count(), 3);

    let bad_template = run(&broker, &["consume", "events", "-f", "%x"]).await;
    assert_eq!(bad_template.code, 2, "{bad_template:?}");
    let no_topic = run(&broker, &["consume", "nope", "-e"]).await;
    assert_eq!(no_topic.code, 3, "{no_topic:?}");
    let refused = run_with_input(&broker, &["produce", "events", "-p", "9"], "x\ny\n").await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("2 of 2 records were not produced"),
        "every record is tried and reported: {refused:?}"
    );
    let no_partition = run(&broker, &["consume", "events", "-p", "7", "-e"]).await;
    assert_eq!(no_partition.code, 3, "{no_partition:?}");
}

fn spool_time_millis() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Starts `spool consume -g group` in the background, as a live member.
fn member(broker: &TestBroker, topic: &str, group: &str) -> Child {
    spool(broker, &["consume", topic, "-g", group])
        .spawn()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn group_commands_show_members_and_lag_seek_and_delete() {
    let broker = TestBroker::start_with(&[("group.initial.rebalance.delay.ms", "0")]).await;
    run(&broker, &["topic", "create", "jobs", "-p", "2"])
        .await
        .ok();
    let lines: String = (0..10).map(|i| format!("{i}\n")).collect();
    run_with_input(&broker, &["produce", "jobs", "-p", "0"], &lines)
        .await
        .ok();
    run_with_input(&broker, &["produce", "jobs", "-p", "1"], &lines)
        .await
        .ok();

    // Consume 4 records as group "workers": its offsets are committed on exit.
    let first = run(&broker, &["consume", "jobs", "-g", "workers", "-n", "4"])
        .await
        .ok();
    assert_eq!(first.stdout.lines().count(), 4);
    let listed = run(&broker, &["group", "list", "--format", "json"])
        .await
        .ok()
        .json();
    assert_eq!(listed[0]["group"], "workers");
    assert_eq!(listed[0]["members"], 0);
    let described = run(
        &broker,
        &["group", "describe", "workers", "--format", "json"],
    )
    .await
    .ok()
    .json();
    let offsets = described["offsets"].as_array().unwrap();
    let committed: i64 = offsets
        .iter()
        .map(|o| o["committed"].as_i64().unwrap())
        .sum();
    assert_eq!(committed, 4, "{described}");
    for offset in offsets {
        assert_eq!(offset["high_watermark"], 10);
        assert_eq!(
            offset["lag"].as_i64().unwrap(),
            10 - offset["committed"].as_i64().unwrap()
        );
    }
    let lag = described["total_lag"].clone();

    // Seek: a dry run changes nothing; a real one moves both partitions of the topic.
    let dry = run(
        &broker,
        &[
            "group",
            "seek",
            "workers",
            "--to",
            "end",
            "--topic",
            "jobs",
            "--dry-run",
            "--format",
            "json",
        ],
    )
    .await
    .ok()
    .json();
    assert_eq!(dry["moves"].as_array().unwrap().len(), 2);
    assert_eq!(dry["moves"][0]["to"], 10);
    let unchanged = run(
        &broker,
        &["group", "describe", "workers", "--format", "json"],
    )
    .await
    .ok()
    .json();
    assert_eq!(unchanged["total_lag"], lag);
    run(
        &broker,
        &["group", "seek", "workers", "--to", "8", "--topic", "jobs"],
    )
    .await
    .ok();
    let moved = run(
        &broker,
        &["group", "describe", "workers", "--format", "json"],
    )
    .await
    .ok()
    .json();
    assert_eq!(moved["total_lag"], 4);
    let resumed = run(&broker, &["consume", "jobs", "-g", "workers", "-e"])
        .await
        .ok();
    assert_eq!(
        resumed.stdout.lines().count(),
        4,
        "the group resumes at the sought offsets"
    );

    // A live member: described with its assignment; seek and delete refuse.
    let mut live = member(&broker, "jobs", "workers");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let detail = loop {
        let detail = run(
            &broker,
            &["group", "describe", "workers", "--format", "json"],
        )
        .await
        .ok()
        .json();
        let assigned = detail["members"][0]["assignment"]["jobs"]
            .as_array()
            .map_or(0, Vec::len);
        if assigned == 2 {
            break detail;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the member never got both partitions: {detail}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(detail["state"], "Stable");
    assert_eq!(
        detail["offsets"][0]["member"],
        detail["members"][0]["member_id"]
    );
    let human = run(&broker, &["group", "describe", "workers"]).await.ok();
    assert!(human.stdout.contains("jobs[0,1]"), "{human:?}");
    let refused = run(&broker, &["group", "seek", "workers", "--to", "beginning"]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("stop them first"), "{refused:?}");
    live.kill().await.unwrap();

    let unknown = run(&broker, &["group", "describe", "nobody"]).await;
    assert_eq!(unknown.code, 3, "{unknown:?}");
    let topic_seek = run(
        &broker,
        &[
            "group",
            "seek",
            "fresh",
            "--to",
            "beginning",
            "--topic",
            "jobs",
            "--format",
            "json",
        ],
    )
    .await
    .ok()
    .json();
    assert_eq!(
        topic_seek["moves"].as_array().unwrap().len(),
        2,
        "a new group gets offsets for the topic"
    );
    let gone = run(&broker, &["group", "delete", "fresh", "nobody"]).await;
    assert_eq!(gone.code, 3, "{gone:?}");
    assert!(gone.stdout.contains("deleted"), "{gone:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_info_usage_errors_and_an_unreachable_cluster() {
    let broker = TestBroker::start().await;
    let info = run(&broker, &["cluster", "info", "--format", "json"])
        .await
        .ok()
        .json();
    assert_eq!(info["brokers"][0]["port"], i64::from(broker.addr().port()));
    assert_eq!(info["controller_id"], 1);
    let produce = info["apis"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "Produce")
        .unwrap();
    assert_eq!(
        (
            produce["min_version"].as_i64(),
            produce["max_version"].as_i64()
        ),
        // From v0: the versions Kafka 4 removed are served (docs/api-coverage.md).
        (Some(0), Some(10))
    );
    let human = run(&broker, &["cluster", "info"]).await.ok();
    assert!(human.stdout.contains("API VERSIONS"), "{human:?}");

    let nothing = run(&broker, &["topic", "alter-config", "t"]).await;
    assert_eq!(nothing.code, 2, "{nothing:?}");
    let mixed = run(&broker, &["consume", "t", "-g", "g", "-o", "5"]).await;
    assert_eq!(mixed.code, 2, "{mixed:?}");
    let clap = run(&broker, &["topic", "create"]).await;
    assert_eq!(clap.code, 2, "{clap:?}");

    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().to_string()
    };
    for args in [["topic", "list"], ["cluster", "info"]] {
        let output = Command::new(env!("CARGO_BIN_EXE_spool"))
            .args(args)
            .args(["--brokers", &closed, "--timeout", "2"])
            .output()
            .await
            .unwrap();
        assert_eq!(output.status.code(), Some(4), "{args:?}: {output:?}");
        assert!(String::from_utf8_lossy(&output.stderr).contains("SPOOL_BROKERS"));
    }
}

/// Runs a command whose output pipe is closed before it writes (`... | head -0`).
async fn run_into_closed_pipe(broker: &TestBroker, args: &[&str]) -> Run {
    let mut child = spool(broker, args).spawn().unwrap();
    drop(child.stdout.take());
    drop(child.stdin.take());
    finished(child).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_output_pipe_ends_commands_quietly() {
    let broker = TestBroker::start().await;
    run(&broker, &["topic", "create", "piped", "-p", "64"])
        .await
        .ok();
    run_with_input(&broker, &["produce", "piped"], &"line\n".repeat(2000))
        .await
        .ok();
    // Printed with println! (tables) and through a buffered writer (consume).
    for args in [
        &["topic", "describe", "piped"][..],
        &["topic", "list"],
        &["consume", "piped", "-e"],
    ] {
        let run = run_into_closed_pipe(&broker, args).await;
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
        assert!(run.stderr.trim().is_empty(), "{args:?}: {}", run.stderr);
    }
}

/// `spool cluster status --format json` of the cluster whose metadata store is `url`
/// (no broker address needed: it reads the store).
async fn cluster_status(url: &str) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_spool"))
        .args([
            "cluster",
            "status",
            "--metadata-url",
            url,
            "--format",
            "json",
        ])
        .env_remove("RUST_LOG")
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_status_reads_brokers_leases_and_leaders_from_the_metadata_store() {
    let dir = tempfile::tempdir().unwrap();
    let catalogue = dir.path().join("catalogue.db");
    let objects = spool_broker::ObjectStorage::new(
        std::sync::Arc::new(object_store::memory::InMemory::new()),
        "spool".into(),
    );
    let broker = TestBroker::start_shared(
        tempfile::tempdir().unwrap(),
        objects,
        Some(spool_broker::MetadataUrl::Sqlite(catalogue.clone())),
        &[],
    )
    .await;
    run(&broker, &["topic", "create", "four", "-p", "4"])
        .await
        .ok();
    let url = format!("sqlite://{}", catalogue.display());
    let status = cluster_status(&url).await;
    assert_eq!(status["controller"], 1, "{status}");
    assert_eq!(status["partitions"], 4);
    assert_eq!(status["unassigned_partitions"], 0);
    let brokers = status["brokers"].as_array().unwrap();
    assert_eq!(brokers.len(), 1);
    assert_eq!(brokers[0]["node_id"], 1);
    assert_eq!(brokers[0]["live"], true);
    assert_eq!(brokers[0]["partitions"], 4);
    assert!(brokers[0]["lease_left_ms"].as_i64().unwrap() > 0);
    let human = run(&broker, &["cluster", "status", "--metadata-url", &url])
        .await
        .ok()
        .stdout;
    assert!(human.contains("CONTROLLER  1"), "{human}");
    assert!(human.contains("live"), "{human}");
    // Drained: marked so in the store (alone, it keeps its partitions: there is no
    // other broker to take them).
    let alone = run(&broker, &["cluster", "drain", "1", "--metadata-url", &url])
        .await
        .ok();
    assert!(
        alone
            .stderr
            .contains("no other live broker takes partitions"),
        "draining the last broker warns: {alone:?}"
    );
    let status = cluster_status(&url).await;
    assert_eq!(status["brokers"][0]["draining"], true, "{status}");
    run(
        &broker,
        &["cluster", "drain", "1", "--undo", "--metadata-url", &url],
    )
    .await
    .ok();
    let unknown = run(&broker, &["cluster", "drain", "9", "--metadata-url", &url]).await;
    assert_ne!(unknown.code, 0, "an unknown broker is an error");
    // A broker stopped cleanly leaves the cluster.
    drop(broker.stop().await);
    let status = cluster_status(&url).await;
    assert_eq!(status["brokers"].as_array().unwrap().len(), 0, "{status}");
    assert_eq!(status["unassigned_partitions"], 4);
}

/// Each partition's leader of `topic`, by index, as the metadata store has it.
async fn leaders_of(
    store: &std::sync::Arc<dyn spool_metadata::MetadataStore>,
    topic: &str,
) -> Vec<i32> {
    let id = store
        .topics()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name.as_str() == topic)
        .unwrap()
        .id;
    store
        .leaderships()
        .await
        .unwrap()
        .into_iter()
        .filter(|l| l.key.topic_id == id)
        .map(|l| l.leader)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn cluster_move_hands_a_partition_to_the_broker_named_and_it_stays_there() {
    let dir = tempfile::tempdir().unwrap();
    let catalogue = dir.path().join("catalogue.db");
    let memory = std::sync::Arc::new(object_store::memory::InMemory::new());
    let metadata = spool_broker::MetadataUrl::Sqlite(catalogue.clone());
    let fast = [
        ("cluster.heartbeat.ms", "100"),
        ("cluster.lease.ms", "1000"),
    ];
    let first = TestBroker::start_shared(
        tempfile::tempdir().unwrap(),
        spool_broker::ObjectStorage::new(memory.clone(), "spool".into()),
        Some(metadata.clone()),
        &fast,
    )
    .await;
    run(&first, &["topic", "create", "moving", "-p", "2"])
        .await
        .ok();
    let second_dir = tempfile::tempdir().unwrap();
    let mut config = spool_broker::BrokerConfig {
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        data_dir: second_dir.path().to_path_buf(),
        metadata_url: Some(metadata.clone()),
        node_id: 2,
        ..spool_broker::BrokerConfig::default()
    };
    for (name, value) in fast {
        config.set(name, value).unwrap();
    }
    let second = spool_broker::Broker::builder(config)
        .objects(spool_broker::ObjectStorage::new(
            memory.clone(),
            "spool".into(),
        ))
        .start()
        .await
        .unwrap();

    let store = spool_metadata::open(&metadata).await.unwrap();
    let started = std::time::Instant::now();
    let on_first = loop {
        let leaders = leaders_of(&store, "moving").await;
        if let Some(index) = leaders.iter().position(|l| *l == 1)
            && leaders.contains(&2)
        {
            break index;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{leaders:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let url = format!("sqlite://{}", catalogue.display());
    let partition = on_first.to_string();
    let moved = run(
        &first,
        &[
            "cluster",
            "move",
            "moving",
            &partition,
            "2",
            "--metadata-url",
            &url,
        ],
    )
    .await
    .ok()
    .stdout;
    assert!(moved.contains("led by broker 2"), "{moved}");
    // The controller evens the counts by moving the other partition, not this one.
    let started = std::time::Instant::now();
    loop {
        let leaders = leaders_of(&store, "moving").await;
        assert_eq!(
            leaders[on_first], 2,
            "the moved partition stays: {leaders:?}"
        );
        if leaders.contains(&1) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{leaders:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for refused in [
        vec![
            "cluster",
            "move",
            "moving",
            "0",
            "9",
            "--metadata-url",
            &url,
        ],
        vec![
            "cluster",
            "move",
            "moving",
            "7",
            "2",
            "--metadata-url",
            &url,
        ],
        vec![
            "cluster",
            "move",
            "nothing",
            "0",
            "2",
            "--metadata-url",
            &url,
        ],
    ] {
        assert_ne!(run(&first, &refused).await.code, 0, "{refused:?}");
    }
    second.shutdown().await.unwrap();
    drop(first.stop().await);
}

#[tokio::test]
async fn produce_delay_holds_records_until_due() {
    let broker = TestBroker::start().await;
    run(
        &broker,
        &[
            "topic",
            "create",
            "later",
            "-c",
            "delivery.delay.enable=true",
        ],
    )
    .await
    .ok();
    run_with_input(&broker, &["produce", "later", "--delay", "4s"], "held\n")
        .await
        .ok();
    let count = async || {
        run(&broker, &["consume", "later", "-e", "--format", "json"])
            .await
            .ok()
            .json_lines()
            .len()
    };
    assert_eq!(count().await, 0, "held, not yet seen");
    // `topic describe` shows it pending, from the admin API.
    let admin = format!("http://{}", broker.admin_addr().unwrap());
    let noted = std::time::Instant::now();
    loop {
        let described = run(
            &broker,
            &[
                "topic",
                "describe",
                "later",
                "--admin-url",
                &admin,
                "--format",
                "json",
            ],
        )
        .await
        .ok()
        .json();
        if described["partitions"][0]["delayed"]["pending"] == 1 {
            break;
        }
        assert!(
            noted.elapsed() < std::time::Duration::from_secs(3),
            "the hold is noted: {described}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let human = run(
        &broker,
        &["topic", "describe", "later", "--admin-url", &admin],
    )
    .await
    .ok()
    .stdout;
    assert!(human.contains("DELAYED-PENDING"), "{human}");
    let started = std::time::Instant::now();
    while count().await == 0 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(15),
            "never delivered"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
