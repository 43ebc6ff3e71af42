//! `spool-cleaner-bench`: how fast the log cleaner compacts, and what it does to the
//! latency of durable appends running beside it, next to the disk's raw limits
//! measured in the same run.
//!
//! Phases:
//! 1. raw sequential write with an fsync every 256 KiB (the disk's durable ceiling);
//! 2. a compacted partition filled with `--bytes` of keyed records (`--keys` distinct
//!    keys, so most records are obsolete), in segments of `--segment-bytes`;
//! 3. durable appends (one batch, then its fsync, as `acks=all`) to another partition
//!    of the same disk, timed alone: the baseline latency;
//! 4. the same appends while one cleaning pass runs over the filled partition
//!    (throttled to `--io-limit-mb` when given): cleaning MB/s read and written, and
//!    the append latency percentiles during the pass.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clap::Parser;
use serde_json::json;
use spool_loadgen::limits::{self, mb_per_s};
use spool_log::{CleanerSettings, Cleanup, FileCache, LogConfig, PartitionLog};
use spool_model::Timestamp;
use spool_store::{LocalStore, Store};
use spool_testkit::{BatchBuilder, TestRecord};

#[derive(Debug, Parser)]
#[command(about = "Benchmark Spool's log cleaner and the appends beside it")]
struct Args {
    /// Directory on the disk under test; emptied first.
    #[arg(long, default_value = "target/cleaner-bench")]
    dir: PathBuf,
    /// Bytes of keyed records in the compacted partition.
    #[arg(long, default_value_t = 256 << 20)]
    bytes: u64,
    /// Distinct keys among them.
    #[arg(long, default_value_t = 20_000)]
    keys: u64,
    #[arg(long, default_value_t = 1024)]
    record_bytes: usize,
    #[arg(long, default_value_t = 16)]
    records_per_batch: usize,
    #[arg(long, default_value_t = 64 << 20)]
    segment_bytes: u64,
    /// Throttle the cleaner to this many MB/s (read and written); none by default.
    #[arg(long)]
    io_limit_mb: Option<u64>,
    /// Durable appends timed for the baseline.
    #[arg(long, default_value_t = 2000)]
    baseline_appends: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Fallible<()> {
    let args = Args::parse();
    let _ = fs::remove_dir_all(&args.dir);
    fs::create_dir_all(&args.dir)?;
    let raw = limits::raw_write(
        &args.dir.join("raw"),
        256 << 10,
        args.bytes.min(256 << 20),
        true,
    )?;
    let _ = fs::remove_file(args.dir.join("raw"));

    let store: Arc<dyn Store> = Arc::new(LocalStore::open(&args.dir)?);
    let files = Arc::new(FileCache::new(store, 256));
    let compacted = LogConfig {
        segment_bytes: args.segment_bytes,
        retention_ms: None,
        cleanup: Cleanup {
            delete: false,
            compact: true,
            min_dirty_ratio_ppm: 0,
            ..Cleanup::default()
        },
        ..LogConfig::default()
    };
    let table = PartitionLog::open(files.clone(), "topics/table/0", compacted)?;
    let filled = fill(&table, &args)?;
    let appends = PartitionLog::open(files, "topics/appends/0", LogConfig::default())?;
    let batch = BatchBuilder::new()
        .values(args.records_per_batch, args.record_bytes)
        .build();
    let baseline = time_appends(&appends, &batch, Until::Count(args.baseline_appends))?;

    let settings = CleanerSettings {
        io_bytes_per_second: args.io_limit_mb.map(|mb| mb * 1_000_000),
        ..CleanerSettings::default()
    };
    let done = Arc::new(AtomicBool::new(false));
    let table = Arc::new(table);
    let cleaner = {
        let (table, done) = (table.clone(), done.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            let stats = table.clean(Timestamp::now(), &settings, &AtomicBool::new(false));
            done.store(true, Ordering::SeqCst);
            stats.map(|stats| (stats, started.elapsed()))
        })
    };
    let during = time_appends(&appends, &batch, Until::Flag(&done))?;
    let (stats, elapsed) = cleaner.join().map_err(|_| "the cleaner panicked")??;
    let stats = stats.ok_or("the cleaner found nothing to do")?;
    let _ = fs::remove_dir_all(&args.dir);

    let report = json!({
        "bytes": filled,
        "keys": args.keys,
        "record_bytes": args.record_bytes,
        "io_limit_mb_s": args.io_limit_mb,
        "raw_write_fsync_mb_s": raw.mb_per_s,
        "raw_fsync_latency_us": raw.fsync_micros,
        "clean_seconds": elapsed.as_secs_f64(),
        "clean_read_mb_s": mb_per_s(stats.bytes_read, elapsed),
        "clean_written_mb_s": mb_per_s(stats.bytes_written, elapsed),
        "clean_bytes_after": stats.bytes_written,
        "records_removed": stats.records_removed,
        "append_baseline": percentiles(&baseline),
        "append_during_clean": percentiles(&during),
    });
    if args.json {
        println!("{report}");
    } else {
        println!(
            "raw write with fsync every 256 KiB: {:.0} MB/s, fsync {:.0} µs",
            raw.mb_per_s, raw.fsync_micros
        );
        println!(
            "cleaning {:.0} MB with {} keys: {:.2} s, {:.0} MB/s read, {:.0} MB/s written, {} records removed",
            filled as f64 / 1e6,
            args.keys,
            elapsed.as_secs_f64(),
            mb_per_s(stats.bytes_read, elapsed),
            mb_per_s(stats.bytes_written, elapsed),
            stats.records_removed
        );
        println!(
            "durable append latency alone:        {}",
            report["append_baseline"]
        );
        println!(
            "durable append latency while cleaning: {}",
            report["append_during_clean"]
        );
    }
    Ok(())
}

/// Fills the compacted partition with keyed records and closes its last segment.
fn fill(log: &PartitionLog, args: &Args) -> Fallible<u64> {
    let mut written = 0;
    let mut serial = 0u64;
    while written < args.bytes {
        let mut builder = BatchBuilder::new().timestamp(Timestamp::now().0);
        for _ in 0..args.records_per_batch {
            builder = builder.record(TestRecord {
                key: Some(format!("key-{}", serial % args.keys.max(1)).into_bytes()),
                ..TestRecord::value(vec![u8::try_from(serial % 251)?; args.record_bytes])
            });
            serial += 1;
        }
        let batch = builder.build();
        log.append(&[&batch])?;
        written += batch.len() as u64;
    }
    log.sync()?;
    // One more segment's worth, so that everything above is in closed segments.
    let filler = BatchBuilder::new()
        .record(TestRecord {
            key: Some(b"filler".to_vec()),
            ..TestRecord::value(vec![0; 1024])
        })
        .build();
    let mut extra = 0;
    while extra <= args.segment_bytes {
        log.append(&[&filler])?;
        extra += filler.len() as u64;
    }
    log.sync()?;
    Ok(written)
}

enum Until<'a> {
    Count(usize),
    Flag(&'a AtomicBool),
}

/// Appends `batch` and waits for its fsync, again and again; each one's latency.
fn time_appends(log: &PartitionLog, batch: &[u8], until: Until<'_>) -> Fallible<Vec<Duration>> {
    let mut samples = Vec::new();
    loop {
        match until {
            Until::Count(n) if samples.len() >= n => break,
            Until::Flag(flag) if flag.load(Ordering::SeqCst) => break,
            _ => {}
        }
        let started = Instant::now();
        let info = log.append(&[batch])?;
        log.sync_to(info.next_offset())?;
        samples.push(started.elapsed());
    }
    Ok(samples)
}

fn percentiles(samples: &[Duration]) -> serde_json::Value {
    let mut sorted = samples.to_vec();
    sorted.sort();
    // The sample at quantile `per_mille` / 1000, nearest rank.
    let at = |per_mille: usize| {
        let index = (sorted.len().saturating_sub(1) * per_mille + 500) / 1000;
        sorted.get(index).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    json!({
        "appends": sorted.len(),
        "p50_ms": at(500),
        "p99_ms": at(990),
        "p999_ms": at(999),
        "max_ms": sorted.last().map_or(0.0, |d| d.as_secs_f64() * 1000.0),
    })
}
