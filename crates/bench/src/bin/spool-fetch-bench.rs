//! `spool-fetch-bench`: how fast a consumer reads stored records through the broker's
//! Fetch path (segment files to the socket with `sendfile`), next to the limits of
//! the same machine measured in the same run: loopback TCP and a page-cache read of
//! the same segment files.
//!
//! Phases:
//! 1. produce `--mib` MiB to one partition in batches of `--batch-kib` KiB (acks=all),
//!    all but the newest MiB then live only in the segment files;
//! 2. raw loopback TCP: one thread writes 1 MiB buffers, another reads them;
//! 3. raw read of the segment files (page cache);
//! 4. fetch the partition from offset 0 to the end, `--fetch-mib` MiB per request,
//!    `--rounds` times; only batch headers are looked at on the client side.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use bytes::Buf;
use clap::Parser;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, FetchResponse, RequestKind};
use kafka_protocol::protocol::Decodable;
use serde_json::json;
use spool_broker::{Broker, BrokerConfig};
use spool_loadgen::limits::{self, mb_per_s};
use spool_testkit::{BatchBuilder, RawClient, TestRecord, topic_name};

#[derive(Debug, Parser)]
#[command(about = "Benchmark Spool's fetch path against loopback TCP and the page cache")]
struct Args {
    /// Data directory on the disk under test; emptied first.
    #[arg(long, default_value = "target/bench-fetch-data")]
    dir: std::path::PathBuf,
    /// MiB stored in the partition.
    #[arg(long, default_value_t = 1024)]
    mib: u64,
    #[arg(long, default_value_t = 256)]
    batch_kib: usize,
    /// Response budget per Fetch request, in MiB.
    #[arg(long, default_value_t = 8)]
    fetch_mib: i32,
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

const TOPIC: &str = "bench";

/// The directory of the benchmark topic's one partition: `topics/<topic id>/0` (the
/// broker names topic directories by id; the data directory holds no other topic).
fn only_partition_dir(data_dir: &std::path::Path) -> Fallible<std::path::PathBuf> {
    let mut topics = std::fs::read_dir(data_dir.join("topics"))?;
    let topic = topics
        .next()
        .ok_or("the benchmark topic has no directory")??;
    Ok(topic.path().join("0"))
}

fn main() -> Fallible<()> {
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.dir);
    let runtime = tokio::runtime::Runtime::new()?;
    let config = BrokerConfig {
        listen: "127.0.0.1:0".parse()?,
        data_dir: args.dir.clone(),
        ..BrokerConfig::default()
    };
    let broker = runtime.block_on(Broker::builder(config).start())?;
    let addr = broker.local_addr();
    let (stored, produce_mb_s) = runtime.block_on(produce(addr, &args))?;
    let loopback = limits::loopback_mb_s(stored)?;
    let page_cache = read_files_mb_s(&only_partition_dir(&args.dir)?)?;
    let mut rounds = Vec::new();
    for _ in 0..args.rounds {
        rounds.push(runtime.block_on(fetch_all(addr, &args, stored))?);
    }
    runtime.block_on(broker.shutdown())?;
    let _ = std::fs::remove_dir_all(&args.dir);
    let mut sorted = rounds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
    if args.json {
        let report = json!({
            "stored_bytes": stored,
            "produce_acks_all_mb_s": produce_mb_s,
            "raw_loopback_tcp_mb_s": loopback,
            "raw_page_cache_read_mb_s": page_cache,
            "fetch_mb_s": median,
            "fetch_rounds_mb_s": rounds,
        });
        println!("{report}");
    } else {
        println!("stored                          {:>8} MiB", stored >> 20);
        println!("produce, acks=all, 1 connection {produce_mb_s:>8.0} MB/s");
        println!("raw loopback TCP                {loopback:>8.0} MB/s");
        println!("raw page-cache read of segments {page_cache:>8.0} MB/s");
        println!(
            "fetch (median of {:>2} rounds)     {median:>8.0} MB/s",
            args.rounds
        );
        println!("fetch rounds                    {rounds:.0?}");
    }
    Ok(())
}

async fn produce(addr: std::net::SocketAddr, args: &Args) -> Fallible<(u64, f64)> {
    let mut client = RawClient::connect(addr).await;
    assert_eq!(client.create_topic(TOPIC, 1).await, 0, "create topic");
    let value: Vec<u8> = (0..args.batch_kib * 1024 - 100)
        .map(|_| fastrand::u8(..))
        .collect();
    let batch = BatchBuilder::new().record(TestRecord::value(value)).build();
    let count = (args.mib << 20) / batch.len() as u64;
    let started = Instant::now();
    for _ in 0..count {
        let (error, _) = client.produce(TOPIC, 0, batch.clone()).await;
        if error != 0 {
            return Err(format!("produce failed with error {error}").into());
        }
    }
    let stored = count * batch.len() as u64;
    Ok((stored, mb_per_s(stored, started.elapsed())))
}

/// Reads the partition from offset 0 to its end; returns MB/s of record bytes.
async fn fetch_all(addr: std::net::SocketAddr, args: &Args, stored: u64) -> Fallible<f64> {
    let mut client = RawClient::connect(addr).await;
    let mut offset = 0i64;
    let mut received = 0u64;
    let started = Instant::now();
    while received < stored {
        let request = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(args.fetch_mib << 20)
            .with_topics(vec![
                FetchTopic::default()
                    .with_topic(topic_name(TOPIC))
                    .with_partitions(vec![
                        FetchPartition::default()
                            .with_fetch_offset(offset)
                            .with_partition_max_bytes(args.fetch_mib << 20),
                    ]),
            ]);
        client.send(&RequestKind::Fetch(request), 12).await;
        let mut frame = client.read_frame().await.ok_or("connection closed")?;
        frame.advance(5); // correlation id, header tagged fields
        let response = FetchResponse::decode(&mut frame, 12)?;
        let records = response
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .and_then(|p| p.records.clone())
            .ok_or("no records")?;
        if records.is_empty() {
            return Err("the fetch stopped short".into());
        }
        received += records.len() as u64;
        offset = next_offset(&records).ok_or("bad batch")?;
    }
    Ok(mb_per_s(received, started.elapsed()))
}

/// The offset after the last batch of `records`, from the batch headers alone.
fn next_offset(records: &[u8]) -> Option<i64> {
    let mut rest = records;
    let mut next = None;
    while rest.len() >= 61 {
        let base = i64::from_be_bytes(rest.get(..8)?.try_into().ok()?);
        let len = i32::from_be_bytes(rest.get(8..12)?.try_into().ok()?);
        let last_delta = i32::from_be_bytes(rest.get(23..27)?.try_into().ok()?);
        next = Some(base + i64::from(last_delta) + 1);
        rest = rest.get(12 + usize::try_from(len).ok()?..)?;
    }
    next
}

/// Reads every segment file of the partition directory sequentially, 1 MiB at a time.
fn read_files_mb_s(dir: &Path) -> Fallible<f64> {
    let mut buffer = vec![0u8; 1 << 20];
    let mut total = 0u64;
    let started = Instant::now();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "log") {
            let mut file = std::fs::File::open(path)?;
            loop {
                match file.read(&mut buffer)? {
                    0 => break,
                    n => total += n as u64,
                }
            }
        }
    }
    Ok(mb_per_s(total, started.elapsed()))
}
