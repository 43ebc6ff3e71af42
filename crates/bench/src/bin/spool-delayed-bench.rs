//! `spool-delayed-bench`: a million pending delayed records. Measures the broker's
//! memory before, while they wait and after, how long producing and noting them takes,
//! and how late they are delivered, with every record checked to arrive once and not
//! early.
//!
//! Phases (one broker in this process, embedded mode, its metadata in SQLite):
//! 1. `--records` records are produced over `--partitions` partitions of a topic with
//!    `delivery.delay.enable`, in batches of `--batch` records, each with a
//!    `spool.deliver-at` header; the due times are spread evenly over `--window-s`
//!    seconds starting `--lead-s` seconds after the first produce;
//! 2. the admin API is polled until every hold is noted (the pending count reaches
//!    the number produced), then until none is pending;
//! 3. every partition is read back: each delivered record's lateness is its delivery
//!    batch's timestamp (the time it was appended) minus its due time.
//!
//! Memory is the process's resident set (`VmRSS`), the broker's and this client's.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::{Value, json};
use spool_model::Timestamp;
use spool_protocol::batch::BatchFrames;
use spool_protocol::internal::is_delivery;
use spool_protocol::keyed::BatchRecords;
use spool_testkit::{BatchBuilder, FetchAt, RawClient, TestBroker, TestRecord, http, http_get};

#[derive(Debug, Parser)]
#[command(about = "Benchmark a million pending delayed records: memory and lateness")]
struct Args {
    #[arg(long, default_value_t = 1_000_000)]
    records: usize,
    #[arg(long, default_value_t = 4)]
    partitions: i32,
    /// Records per produced batch.
    #[arg(long, default_value_t = 1000)]
    batch: usize,
    #[arg(long, default_value_t = 100)]
    value_bytes: usize,
    /// Seconds from the first produce to the first due time.
    #[arg(long, default_value_t = 90)]
    lead_s: u64,
    /// Seconds over which the due times are spread.
    #[arg(long, default_value_t = 60)]
    window_s: u64,
    /// Print one JSON object instead of the lines.
    #[arg(long)]
    json: bool,
}

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

const TOPIC: &str = "delayed-bench";

fn main() -> Fallible<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Runtime::new()?;
    let report = runtime.block_on(run(&args))?;
    if args.json {
        println!("{report}");
    } else {
        for (key, value) in report.as_object().into_iter().flatten() {
            println!("{key:<36} {value}");
        }
    }
    Ok(())
}

async fn run(args: &Args) -> Fallible<Value> {
    let broker = TestBroker::start().await;
    let admin = broker
        .admin_addr()
        .ok_or("the broker has no admin listener")?;
    let body = format!(
        r#"{{"name":"{TOPIC}","partitions":{},"configs":{{"delivery.delay.enable":"true"}}}}"#,
        args.partitions
    );
    let created = http(admin, "POST", "/api/topics", Some(&body)).await;
    if created.status != 201 {
        return Err(format!("creating the topic: {}", created.body).into());
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss_before = rss_mib();

    let started = Instant::now();
    let first_due = Timestamp::now().0 + i64::try_from(args.lead_s * 1000)?;
    let window_ms = i64::try_from(args.window_s * 1000)?;
    let records = i64::try_from(args.records)?;
    let due_of = |i: i64| first_due + i * window_ms / records;
    produce(broker.addr(), args, &due_of).await?;
    let produced_s = started.elapsed().as_secs_f64();

    let mut peak_rss = rss_mib();
    let deadline = Instant::now() + Duration::from_secs(args.lead_s + args.window_s + 600);
    let mut noted_s = None;
    loop {
        let pending = pending(admin).await?;
        peak_rss = peak_rss.max(rss_mib());
        if noted_s.is_none() && pending >= args.records as u64 {
            noted_s = Some(started.elapsed().as_secs_f64());
        }
        if noted_s.is_some() && pending == 0 {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{pending} records still pending at the deadline").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rss_pending = peak_rss;
    let delivered_s = started.elapsed().as_secs_f64();
    let rss_after = rss_mib();

    let (mut lateness, early, duplicates) = read_back(broker.addr(), args).await?;
    lateness.sort_unstable();
    let at = |q: f64| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let index = ((lateness.len() as f64 * q) as usize).min(lateness.len().saturating_sub(1));
        lateness.get(index).copied().unwrap_or(-1)
    };
    let report = json!({
        "records": args.records,
        "partitions": args.partitions,
        "produce_s": produced_s,
        "produce_records_per_s": args.records as f64 / produced_s,
        "all_noted_at_s": noted_s,
        "first_due_at_s": args.lead_s,
        "last_due_at_s": args.lead_s + args.window_s,
        "all_delivered_at_s": delivered_s,
        "rss_mib_before": rss_before,
        "rss_mib_peak_while_pending": rss_pending,
        "rss_mib_after_delivery": rss_after,
        "delivered": lateness.len(),
        "delivered_early": early,
        "delivered_twice": duplicates,
        "lateness_ms_p50": at(0.5),
        "lateness_ms_p99": at(0.99),
        "lateness_ms_max": lateness.last().copied().unwrap_or(-1),
    });
    broker.stop().await;
    Ok(report)
}

/// The resident set of this process, in MiB.
fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
        })
        .map_or(0, |kib| kib / 1024)
}

async fn produce(addr: SocketAddr, args: &Args, due_of: &impl Fn(i64) -> i64) -> Fallible<()> {
    let mut client = RawClient::connect(addr).await;
    let padding = "x".repeat(args.value_bytes.saturating_sub(24));
    let mut next = 0i64;
    let mut partition = 0;
    let records = i64::try_from(args.records)?;
    while next < records {
        let mut builder = BatchBuilder::new().timestamp(Timestamp::now().0);
        let end = (next + i64::try_from(args.batch)?).min(records);
        for i in next..end {
            let due = due_of(i);
            let mut record = TestRecord::value(format!("{i}:{due}:{padding}").into_bytes());
            record.headers.push((
                "spool.deliver-at".to_owned(),
                Some(due.to_string().into_bytes()),
            ));
            builder = builder.record(record);
        }
        let (error, _) = client.produce(TOPIC, partition, builder.build()).await;
        if error != 0 {
            return Err(format!("produce failed with error {error}").into());
        }
        next = end;
        partition = (partition + 1) % args.partitions;
    }
    Ok(())
}

/// The pending holds of every partition, from the admin API.
async fn pending(admin: SocketAddr) -> Fallible<u64> {
    let topic: Value =
        serde_json::from_str(&http_get(admin, &format!("/api/topics/{TOPIC}")).await.body)?;
    Ok(topic["partitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["delayed"]["pending"].as_u64().unwrap_or(0))
        .sum())
}

/// Every delivered record's lateness (ms), how many came early, how many twice.
async fn read_back(addr: SocketAddr, args: &Args) -> Fallible<(Vec<i64>, usize, usize)> {
    let mut client = RawClient::connect(addr).await;
    let (mut lateness, mut early, mut seen) = (Vec::new(), 0, HashSet::new());
    let mut duplicates = 0;
    for partition in 0..args.partitions {
        let mut offset = 0i64;
        loop {
            let at = FetchAt {
                partition,
                offset,
                max_bytes: 16 << 20,
            };
            let answer = client.fetch(12, TOPIC, &[at], 1, 0, 16 << 20).await;
            let bytes = answer
                .first()
                .and_then(|p| p.records.clone())
                .unwrap_or_default();
            if bytes.is_empty() {
                break;
            }
            for frame in BatchFrames::new(&bytes) {
                let (header, batch) = frame?;
                offset = header.next_offset().0;
                if !is_delivery(&header) {
                    continue;
                }
                for record in BatchRecords::read(batch, 64 << 20)?.records()? {
                    let value =
                        String::from_utf8_lossy(record.value.unwrap_or_default()).into_owned();
                    let mut fields = value.split(':');
                    let index: i64 = fields.next().ok_or("no index")?.parse()?;
                    let due: i64 = fields.next().ok_or("no due time")?.parse()?;
                    let late = header.base_timestamp.0 + record.timestamp_delta - due;
                    if late < 0 {
                        early += 1;
                    }
                    if !seen.insert(index) {
                        duplicates += 1;
                    }
                    lateness.push(late);
                }
            }
        }
    }
    Ok((lateness, early, duplicates))
}
