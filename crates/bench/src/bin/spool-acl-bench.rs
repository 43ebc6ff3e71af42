//! `spool-acl-bench`: what ACLs cost a broker with many topics and many bindings.
//!
//! An embedded broker with `authorizer.enabled=true` gets `--topics` topics and
//! `--acls` bindings: literal bindings of other users on single topics, PREFIXED ones
//! of several prefix lengths, a wildcard DESCRIBE and some DENYs for
//! `User:ANONYMOUS`. Then Metadata for all topics (v12, with the topic
//! authorized-operations bitfield) is asked `--rounds` times by a super user (no
//! binding is looked at) and by `User:ANONYMOUS` (every topic decided, and its
//! bitfield's eight operations too). Reported: ms per request (median and worst) and
//! the decisions per second that makes.

use std::net::SocketAddr;
use std::time::Instant;

use clap::Parser;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::{CreateTopicsRequest, MetadataRequest, RequestKind, ResponseKind};
use serde_json::json;
use spool_broker::{Broker, BrokerConfig};
use spool_testkit::{Acl, RawClient, topic_name};

#[derive(Debug, Parser)]
#[command(about = "Benchmark Metadata with many topics and many ACL bindings")]
struct Args {
    /// Data directory; emptied first.
    #[arg(long, default_value = "target/bench-acl-data")]
    dir: std::path::PathBuf,
    #[arg(long, default_value_t = 10_000)]
    topics: usize,
    #[arg(long, default_value_t = 10_000)]
    acls: usize,
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

const ANONYMOUS: &str = "User:ANONYMOUS";
const TOPIC: i8 = 2;
const READ: i8 = 3;
const WRITE: i8 = 4;
const DESCRIBE: i8 = 8;

fn main() -> Fallible<()> {
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.dir);
    let runtime = tokio::runtime::Runtime::new()?;
    let mut config = BrokerConfig {
        data_dir: args.dir.clone(),
        ..BrokerConfig::default()
    };
    for (name, value) in [
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        ),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("authorizer.enabled", "true"),
        ("super.users", "User:admin"),
        ("admin.listen", "off"),
    ] {
        config.set(name, value)?;
    }
    config.security.bootstrap_user = Some(("admin".to_owned(), "admin-secret".to_owned()));
    let broker = runtime.block_on(Broker::builder(config).start())?;
    let sasl = broker
        .listener_addr("SASL_PLAINTEXT")
        .ok_or("no SASL listener")?;
    let plaintext = broker
        .listener_addr("PLAINTEXT")
        .ok_or("no PLAINTEXT listener")?;
    let report = runtime.block_on(run(&args, sasl, plaintext))?;
    runtime.block_on(broker.shutdown())?;
    if args.json {
        println!("{report}");
    } else {
        println!(
            "{} topics, {} bindings: Metadata of all topics",
            args.topics, args.acls
        );
        for who in ["super_user", "anonymous"] {
            let row = &report[who];
            let ms = |key: &str| row[key].as_f64().unwrap_or(f64::NAN);
            println!(
                "  {who:<11} median {:>7.2} ms  worst {:>7.2} ms  {} topics listed",
                ms("median_ms"),
                ms("worst_ms"),
                row["listed"]
            );
        }
        println!(
            "  decisions/s by the anonymous requests (at least): {:.0}",
            report["anonymous"]["decisions_per_s"]
                .as_f64()
                .unwrap_or(f64::NAN)
        );
    }
    Ok(())
}

async fn run(args: &Args, sasl: SocketAddr, plaintext: SocketAddr) -> Fallible<serde_json::Value> {
    let mut admin = RawClient::connect(sasl).await;
    if admin.login_plain("admin", "admin-secret").await != 0 {
        return Err("the admin cannot log in".into());
    }
    let names: Vec<String> = (0..args.topics).map(|i| format!("topic-{i:05}")).collect();
    for chunk in names.chunks(500) {
        let topics = chunk
            .iter()
            .map(|name| {
                CreatableTopic::default()
                    .with_name(topic_name(name))
                    .with_num_partitions(1)
                    .with_replication_factor(1)
            })
            .collect();
        let request = CreateTopicsRequest::default()
            .with_timeout_ms(60_000)
            .with_topics(topics);
        admin.call(RequestKind::CreateTopics(request), 7).await;
    }
    for chunk in bindings(args).chunks(1000) {
        let codes = admin.create_acls(chunk).await;
        if codes.iter().any(|code| *code != 0) {
            return Err(format!("bindings refused: {codes:?}").into());
        }
    }
    let super_user = timed(&mut admin, args.rounds).await;
    let mut anonymous = RawClient::connect(plaintext).await;
    let mut anonymous_times = timed(&mut anonymous, args.rounds).await;
    // Per topic: DESCRIBE (is it listed?), then the eight operations of its bitfield.
    let decisions = (args.topics * 9) as f64;
    anonymous_times["decisions_per_s"] =
        json!(decisions / (anonymous_times["median_ms"].as_f64().unwrap_or(1.0) / 1000.0));
    Ok(json!({
        "topics": args.topics,
        "acls": args.acls,
        "rounds": args.rounds,
        "super_user": super_user,
        "anonymous": anonymous_times,
    }))
}

/// `--acls` bindings: nine in ten literal, of other users, on single topics; the rest
/// PREFIXED of lengths 7 to 10 for those users; a wildcard DESCRIBE and a DENY per
/// hundred for `User:ANONYMOUS`.
fn bindings(args: &Args) -> Vec<Acl> {
    let topic = |i: usize| format!("topic-{:05}", i % args.topics.max(1));
    let mut acls = vec![Acl::allow(TOPIC, "*", ANONYMOUS, DESCRIBE)];
    for i in 0..args.acls.saturating_sub(1) {
        let user = format!("User:u{}", i % 500);
        let acl = match i % 100 {
            0 => Acl::allow(TOPIC, &topic(i), ANONYMOUS, DESCRIBE).deny(),
            1..=9 => {
                let name = topic(i);
                let length = 7 + i % 4;
                Acl::allow(TOPIC, &name[..length.min(name.len())], &user, WRITE).prefixed()
            }
            _ => Acl::allow(TOPIC, &topic(i), &user, READ),
        };
        acls.push(acl);
    }
    acls
}

/// Metadata of all topics, `rounds` times: median and worst ms, topics listed.
async fn timed(client: &mut RawClient, rounds: usize) -> serde_json::Value {
    let mut times = Vec::with_capacity(rounds);
    let mut listed = 0;
    for _ in 0..rounds.max(1) {
        let request = MetadataRequest::default()
            .with_topics(None)
            .with_allow_auto_topic_creation(false)
            .with_include_topic_authorized_operations(true);
        let started = Instant::now();
        let response = client.call(RequestKind::Metadata(request), 12).await;
        times.push(started.elapsed().as_secs_f64() * 1000.0);
        if let ResponseKind::Metadata(response) = response {
            listed = response.topics.len();
        }
    }
    times.sort_by(f64::total_cmp);
    json!({
        "median_ms": times[times.len() / 2],
        "worst_ms": times[times.len() - 1],
        "listed": listed,
    })
}
