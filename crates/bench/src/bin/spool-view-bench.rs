//! `spool-view-bench`: how fast consumers read view topics (tag filters) next to
//! reading their source, at 10%, 50% and 100% of the source's records matching.
//!
//! A source topic is filled with `--mib` MiB of records tagged `T0` to `T9`, in one of
//! two layouts:
//! - `per-batch`: every batch carries one tag (a producer per kind of record, or a
//!   producer that batches by tag): whole batches match or do not, which the tag index
//!   decides without reading records;
//! - `per-record`: the tags are mixed at random inside every batch: each batch is read
//!   and rewritten with its matching records.
//!
//! Then the source and three views of it (`T0`; `T0 || … || T4`; all ten tags, so that
//! the index is asked, not bypassed as `*` would be) are fetched from offset 0 to the
//! end, `--rounds` times each (the first round of a view fills the tag index). Reported
//! per read: seconds, MB/s of the **source** covered, MB/s and records/s returned.

use std::net::SocketAddr;
use std::time::Instant;

use clap::Parser;
use serde_json::json;
use spool_broker::{Broker, BrokerConfig};
use spool_loadgen::limits::mb_per_s;
use spool_model::{CompressionCodec, RecordBatchHeader};
use spool_protocol::recompress::recompress;
use spool_testkit::{BatchBuilder, FetchAt, RawClient, TestRecord};

#[derive(Debug, Parser)]
#[command(about = "Benchmark reading view topics against reading their source")]
struct Args {
    /// Data directory on the disk under test; emptied first.
    #[arg(long, default_value = "target/bench-view-data")]
    dir: std::path::PathBuf,
    /// MiB of records in the source (per layout).
    #[arg(long, default_value_t = 256)]
    mib: u64,
    /// Records per batch.
    #[arg(long, default_value_t = 64)]
    batch_records: usize,
    /// Bytes of each record's value.
    #[arg(long, default_value_t = 512)]
    value_bytes: usize,
    /// `per-batch`, `per-record`, or `both`.
    #[arg(long, default_value = "both")]
    layout: String,
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// The views: name suffix, share of the tags, filter.
const VIEWS: [(&str, u32, &str); 3] = [
    ("10", 10, "T0"),
    ("50", 50, "T0 || T1 || T2 || T3 || T4"),
    (
        "100",
        100,
        "T0 || T1 || T2 || T3 || T4 || T5 || T6 || T7 || T8 || T9",
    ),
];

/// One read of a topic from 0 to the end.
#[derive(Debug, Clone, serde::Serialize)]
struct Read {
    topic: String,
    matching_percent: u32,
    round: usize,
    seconds: f64,
    source_mb_s: f64,
    returned_mb_s: f64,
    records_per_s: f64,
    records: u64,
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
    let layouts: Vec<&str> = match args.layout.as_str() {
        "both" => vec!["per-batch", "per-record"],
        one => vec![one],
    };
    let mut reads = Vec::new();
    for layout in layouts {
        let source = format!("source-{layout}");
        let stored = runtime.block_on(fill(addr, &args, &source, layout == "per-batch"))?;
        for round in 1..=args.rounds {
            let mut read = runtime.block_on(read_all(addr, &source, stored))?;
            read.matching_percent = 100;
            read.round = round;
            reads.push(read);
        }
        for (suffix, percent, _) in VIEWS {
            for round in 1..=args.rounds {
                let view = format!("{source}-{suffix}");
                let mut read = runtime.block_on(read_all(addr, &view, stored))?;
                read.matching_percent = percent;
                read.round = round;
                reads.push(read);
            }
        }
    }
    runtime.block_on(broker.shutdown())?;
    let _ = std::fs::remove_dir_all(&args.dir);
    if args.json {
        println!("{}", json!({ "reads": reads }));
    } else {
        println!(
            "{:<28} {:>5} {:>5} {:>8} {:>10} {:>10} {:>12}",
            "topic", "match", "round", "seconds", "source MB/s", "out MB/s", "records/s"
        );
        for read in &reads {
            println!(
                "{:<28} {:>4}% {:>5} {:>8.2} {:>10.0} {:>10.0} {:>12.0}",
                read.topic,
                read.matching_percent,
                read.round,
                read.seconds,
                read.source_mb_s,
                read.returned_mb_s,
                read.records_per_s
            );
        }
    }
    Ok(())
}

/// Fills `source` and creates its views; returns the bytes stored.
async fn fill(addr: SocketAddr, args: &Args, source: &str, per_batch: bool) -> Fallible<u64> {
    let mut client = RawClient::connect(addr).await;
    assert_eq!(client.create_topic(source, 1).await, 0, "create the source");
    for (suffix, _, filter) in VIEWS {
        let view = format!("{source}-{suffix}");
        let configs = [("view.source.topic", source), ("view.filter", filter)];
        assert_eq!(
            client.create_topic_with(&view, -1, &configs).await,
            0,
            "create {view}"
        );
    }
    // Values compress somewhat, as real ones do: random words from a small alphabet.
    let value = || -> Vec<u8> {
        (0..args.value_bytes)
            .map(|_| b"abcdefgh "[fastrand::usize(..9)])
            .collect()
    };
    let mut stored = 0u64;
    let mut batch_index = 0usize;
    while stored < args.mib << 20 {
        let mut builder = BatchBuilder::new();
        for _ in 0..args.batch_records {
            let tag = if per_batch {
                batch_index % 10
            } else {
                fastrand::usize(..10)
            };
            let mut record = TestRecord::value(value());
            record
                .headers
                .push(("spool.tag".to_owned(), Some(format!("T{tag}").into_bytes())));
            builder = builder.record(record);
        }
        let plain = builder.build();
        let batch = recompress(&plain, CompressionCodec::Lz4, Some(0), 64 << 20)?.unwrap_or(plain);
        stored += batch.len() as u64;
        let (error, _) = client.produce(source, 0, batch).await;
        if error != 0 {
            return Err(format!("produce failed with error {error}").into());
        }
        batch_index += 1;
    }
    Ok(stored)
}

/// Reads `topic` from offset 0 to the source's end, 8 MiB per fetch.
async fn read_all(addr: SocketAddr, topic: &str, source_bytes: u64) -> Fallible<Read> {
    let mut client = RawClient::connect(addr).await;
    let (mut offset, mut end) = (0i64, i64::MAX);
    let (mut returned, mut records) = (0u64, 0u64);
    let started = Instant::now();
    while offset < end {
        let at = FetchAt {
            partition: 0,
            offset,
            max_bytes: 8 << 20,
        };
        let answer = client.fetch(12, topic, &[at], 1, 0, 8 << 20).await;
        let partition = answer.first().ok_or("no partition")?;
        if partition.error_code != 0 {
            return Err(format!("fetch of {topic} failed with {}", partition.error_code).into());
        }
        end = partition.high_watermark;
        let bytes = partition.records.clone().unwrap_or_default();
        if bytes.is_empty() {
            break;
        }
        returned += bytes.len() as u64;
        let mut rest: &[u8] = &bytes;
        while let Some(header) = RecordBatchHeader::parse(rest) {
            if !header.is_control() {
                records += u64::try_from(header.record_count).unwrap_or(0);
            }
            offset = header.next_offset().0;
            rest = rest.get(header.total_len()..).unwrap_or_default();
        }
    }
    let elapsed = started.elapsed();
    #[allow(clippy::cast_precision_loss)]
    let records_per_s = records as f64 / elapsed.as_secs_f64();
    Ok(Read {
        topic: topic.to_owned(),
        matching_percent: 0,
        round: 0,
        seconds: elapsed.as_secs_f64(),
        source_mb_s: mb_per_s(source_bytes, elapsed),
        returned_mb_s: mb_per_s(returned, elapsed),
        records_per_s,
        records,
    })
}
