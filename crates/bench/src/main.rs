//! `spool-log-bench`: the storage engine's throughput next to the raw limits of the
//! same disk, measured in the same run with the same fsync cadence.
//!
//! Phases:
//! 1. raw sequential write, fsync after every `--group-bytes` (the ceiling for
//!    durable appends), and without fsync (the page cache);
//! 2. durable append: batches of `--records-per-batch` records of `--record-bytes`,
//!    appended `--group-bytes` at a time, each group synced before the next;
//! 3. concurrent durable append: `--producers` threads each appending one batch and
//!    waiting for it to be durable, sharing fsyncs through group commit;
//! 4. read of the written log by offset with a 1 MiB budget, next to a raw
//!    sequential read of the same files;
//! 5. index lookup time for 10^3 … 10^6 index entries, to show O(log n).

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use clap::Parser;
use serde_json::json;
use spool_loadgen::limits::{self, RawWrite, mb_per_s};
use spool_log::{FileCache, LogConfig, PartitionLog};
use spool_model::Offset;
use spool_store::{LocalStore, MemoryStore, Store};
use spool_testkit::BatchBuilder;

#[derive(Debug, Parser)]
#[command(about = "Benchmark Spool's storage engine against the raw disk")]
struct Args {
    /// Directory on the disk under test; emptied first.
    #[arg(long, default_value = "target/bench-data")]
    dir: PathBuf,
    /// Bytes written by each write phase.
    #[arg(long, default_value_t = 512 << 20)]
    bytes: u64,
    /// Bytes per fsync (the group-commit size).
    #[arg(long, default_value_t = 256 << 10)]
    group_bytes: u64,
    #[arg(long, default_value_t = 1024)]
    record_bytes: usize,
    #[arg(long, default_value_t = 16)]
    records_per_batch: usize,
    #[arg(long, default_value_t = 4)]
    producers: usize,
    /// Largest index size for the lookup phase, as a power of ten.
    #[arg(long, default_value_t = 6)]
    index_max_power: u32,
    /// Random lookups timed per index size.
    #[arg(long, default_value_t = 200_000)]
    lookups: usize,
    /// Partitions for the many-partitions phase (0 skips it).
    #[arg(long, default_value_t = 10_000)]
    partitions: u32,
    /// Alternating rounds of raw writes and durable appends.
    #[arg(long, default_value_t = 5)]
    rounds: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> Fallible<()> {
    let args = Args::parse();
    let _ = fs::remove_dir_all(&args.dir);
    fs::create_dir_all(&args.dir)?;

    // The disk's speed drifts (virtual disks especially), so raw writes and durable
    // appends alternate in rounds on the same disk, and medians are compared.
    let rounds = args.rounds.max(1);
    let mut raw_rounds = Vec::new();
    let mut log_rounds = Vec::new();
    let mut fsync_micros = Vec::new();
    let mut log_dir = PathBuf::new();
    for round in 0..rounds {
        let raw = raw_write(&args, true, args.bytes / rounds)?;
        raw_rounds.push(raw.mb_per_s);
        fsync_micros.push(raw.fsync_micros);
        let (durable, dir) = durable_append(&args, args.bytes / rounds, round + 1 == rounds)?;
        log_rounds.push(durable);
        log_dir = dir;
    }
    let raw_fsync = RawWrite {
        mb_per_s: median(&mut raw_rounds.clone()),
        fsync_micros: median(&mut fsync_micros),
    };
    let durable = median(&mut log_rounds.clone());
    let raw_buffered = raw_write(&args, false, args.bytes)?;
    let concurrent = concurrent_append(&args)?;
    let (read, raw_read) = read_back(&args, &log_dir)?;
    let lookups = index_lookups(&args)?;
    let many = many_partitions(&args)?;
    let _ = fs::remove_dir_all(&args.dir);

    let ratio = durable / raw_fsync.mb_per_s;
    if args.json {
        let report = json!({
            "bytes": args.bytes,
            "group_bytes": args.group_bytes,
            "record_bytes": args.record_bytes,
            "records_per_batch": args.records_per_batch,
            "raw_write_fsync_mb_s": raw_fsync.mb_per_s,
            "raw_fsync_latency_us": raw_fsync.fsync_micros,
            "raw_write_no_fsync_mb_s": raw_buffered.mb_per_s,
            "log_durable_append_mb_s": durable,
            "log_durable_vs_raw": ratio,
            "raw_write_fsync_rounds_mb_s": raw_rounds,
            "log_durable_append_rounds_mb_s": log_rounds,
            "log_concurrent_durable_append_mb_s": concurrent,
            "producers": args.producers,
            "log_read_mb_s": read,
            "raw_read_mb_s": raw_read,
            "partitions": many.partitions,
            "partitions_create_s": many.create_s,
            "partitions_manager_open_ms": many.manager_open_ms,
            "partitions_first_access_us": many.first_access_us,
            "partitions_idle_bytes_each": many.idle_bytes_each,
            "index_lookup": lookups.iter().map(|l| json!({"entries": l.entries, "search_ns": l.search_ns, "read_ns": l.read_ns})).collect::<Vec<_>>(),
        });
        println!("{report}");
    } else {
        println!("disk under test: {}", args.dir.display());
        println!("{:<48} {:>12}", "measure", "MB/s");
        println!(
            "{:<48} {:>12.1}",
            format!("raw write, fsync every {} KiB", args.group_bytes >> 10),
            raw_fsync.mb_per_s
        );
        println!(
            "{:<48} {:>12.1}",
            "raw write, no fsync (page cache)", raw_buffered.mb_per_s
        );
        println!("{:<48} {:>12.1}", "log durable append, 1 writer", durable);
        println!(
            "{:<48} {:>12.1}",
            format!("log durable append, {} producers", args.producers),
            concurrent
        );
        println!(
            "{:<48} {:>12.1}",
            "raw sequential read (page cache)", raw_read
        );
        println!("{:<48} {:>12.1}", "log read by offset, 1 MiB budget", read);
        println!("raw fsync latency: {:.0} us", raw_fsync.fsync_micros);
        println!(
            "durable append / raw write with fsync: {:.0}% (medians of {rounds} alternating rounds)",
            ratio * 100.0
        );
        println!("  raw rounds: {raw_rounds:.0?}");
        println!("  log rounds: {log_rounds:.0?}");
        println!(
            "{} partitions: created in {:.1} s; data dir opened in {:.1} ms; first access {:.0} us each; {:.0} bytes each when idle",
            many.partitions,
            many.create_s,
            many.manager_open_ms,
            many.first_access_us,
            many.idle_bytes_each
        );
        println!(
            "{:<14} {:>8} {:>18} {:>22}",
            "index entries", "log2(n)", "index search (ns)", "1-batch read (ns)"
        );
        for l in &lookups {
            println!(
                "{:<14} {:>8.1} {:>18.1} {:>22.0}",
                l.entries,
                (l.entries as f64).log2(),
                l.search_ns,
                l.read_ns
            );
        }
    }
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Sequential writes of `group_bytes`, each followed by `fdatasync` when `fsync`.
fn raw_write(args: &Args, fsync: bool, bytes: u64) -> Fallible<RawWrite> {
    let path = args
        .dir
        .join(if fsync { "raw-fsync" } else { "raw-buffered" });
    let chunk = usize::try_from(args.group_bytes)?;
    Ok(limits::raw_write(&path, chunk, bytes, fsync)?)
}

fn bench_log(store: Arc<dyn Store>, dir: &str, config: LogConfig) -> Fallible<PartitionLog> {
    let files = Arc::new(FileCache::new(store, 256));
    Ok(PartitionLog::open(files, PathBuf::from(dir), config)?)
}

fn big_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 1 << 30,
        retention_ms: None,
        ..LogConfig::default()
    }
}

/// One writer: append a group of batches, sync it, repeat. The log of the last round
/// is kept for the read phase.
fn durable_append(args: &Args, bytes: u64, keep: bool) -> Fallible<(f64, PathBuf)> {
    let _ = fs::remove_dir_all(args.dir.join("durable"));
    let store: Arc<dyn Store> = Arc::new(LocalStore::open(args.dir.join("durable"))?);
    let log = bench_log(store, "p0", big_segments())?;
    let batch = BatchBuilder::new()
        .values(args.records_per_batch, args.record_bytes)
        .build();
    let per_group = usize::try_from(args.group_bytes)?
        .div_ceil(batch.len())
        .max(1);
    let group: Vec<&[u8]> = std::iter::repeat_n(batch.as_slice(), per_group).collect();
    let group_len = (batch.len() * per_group) as u64;
    let started = Instant::now();
    let mut written = 0;
    while written < bytes {
        log.append(&group)?;
        log.sync()?;
        written += group_len;
    }
    let elapsed = started.elapsed();
    log.close()?;
    if !keep {
        fs::remove_dir_all(args.dir.join("durable"))?;
    }
    Ok((
        mb_per_s(written, elapsed),
        args.dir.join("durable").join("p0"),
    ))
}

/// Many producers, each appending one batch and waiting for it to be durable.
fn concurrent_append(args: &Args) -> Fallible<f64> {
    let store: Arc<dyn Store> = Arc::new(LocalStore::open(args.dir.join("concurrent"))?);
    let log = Arc::new(bench_log(store, "p0", big_segments())?);
    let batch = Arc::new(
        BatchBuilder::new()
            .values(args.records_per_batch, args.record_bytes)
            .build(),
    );
    let per_producer = args.bytes / batch.len() as u64 / args.producers.max(1) as u64;
    let started = Instant::now();
    let producers: Vec<_> = (0..args.producers.max(1))
        .map(|_| {
            let (log, batch) = (log.clone(), batch.clone());
            std::thread::spawn(move || -> Result<(), spool_log::LogError> {
                for _ in 0..per_producer {
                    let info = log.append(&[batch.as_slice()])?;
                    log.sync_to(info.next_offset())?;
                }
                Ok(())
            })
        })
        .collect();
    for producer in producers {
        producer.join().map_err(|_| "producer thread panicked")??;
    }
    let elapsed = started.elapsed();
    let written = per_producer * args.producers.max(1) as u64 * batch.len() as u64;
    fs::remove_dir_all(args.dir.join("concurrent"))?;
    Ok(mb_per_s(written, elapsed))
}

/// Reads the durable-append log back by offset, and its files raw.
fn read_back(args: &Args, log_dir: &Path) -> Fallible<(f64, f64)> {
    let store: Arc<dyn Store> = Arc::new(LocalStore::open(args.dir.join("durable"))?);
    let log = bench_log(store, "p0", big_segments())?;
    let end = log.offsets().high_watermark;
    let mut buffer = Vec::with_capacity(2 << 20);
    let mut offset = Offset(0);
    let mut read = 0u64;
    let started = Instant::now();
    while offset < end {
        let result = log.read(offset, 1 << 20)?;
        buffer.clear();
        for chunk in &result.chunks {
            chunk.append_to(&mut buffer)?;
        }
        read += buffer.len() as u64;
        let mut next = offset;
        for frame in spool_protocol_frames(&buffer) {
            next = frame;
        }
        offset = next;
    }
    let log_mb_s = mb_per_s(read, started.elapsed());

    let mut raw = 0u64;
    let started = Instant::now();
    let mut chunk = vec![0u8; 1 << 20];
    for entry in fs::read_dir(log_dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "log") {
            let file = File::open(&path)?;
            let mut position = 0;
            loop {
                let n = std::os::unix::fs::FileExt::read_at(&file, &mut chunk, position)?;
                if n == 0 {
                    break;
                }
                position += n as u64;
                raw += n as u64;
            }
        }
    }
    Ok((log_mb_s, mb_per_s(raw, started.elapsed())))
}

/// The offset after each batch in `bytes` (whole batches, as reads return).
fn spool_protocol_frames(bytes: &[u8]) -> impl Iterator<Item = Offset> + '_ {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        let header = spool_model::RecordBatchHeader::parse(rest)?;
        rest = rest.get(header.total_len()..)?;
        Some(header.next_offset())
    })
}

struct Lookup {
    entries: u64,
    /// The binary search alone.
    search_ns: f64,
    /// A whole read of one batch at that offset: search, header walk, range.
    read_ns: f64,
}

/// For indexes of 10^3 … 10^max entries: the time of the index search alone, and of
/// a one-batch read at a random offset from a log whose single segment has that many
/// index entries (every batch indexed). The search is binary, so its time grows by a
/// constant step per tenfold growth of the index, not tenfold.
fn index_lookups(args: &Args) -> Fallible<Vec<Lookup>> {
    let mut results = Vec::new();
    let batch = BatchBuilder::new().values(1, 8).build();
    for power in 3..=args.index_max_power {
        let entries = 10u64.pow(power);
        let mut rng = fastrand::Rng::with_seed(power.into());
        let span = i64::try_from(entries)?;
        let offsets: Vec<Offset> = (0..args.lookups.max(1))
            .map(|_| Offset(rng.i64(0..span)))
            .collect();

        let index = spool_log::SegmentIndex::synthetic(u32::try_from(entries)?, 7);
        let started = Instant::now();
        for offset in &offsets {
            let relative = u32::try_from(offset.0 * 7).unwrap_or(u32::MAX);
            std::hint::black_box(index.position_for(std::hint::black_box(relative)));
        }
        let search_ns = started.elapsed().as_nanos() as f64 / offsets.len() as f64;

        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let config = LogConfig {
            index_interval_bytes: 1,
            tail_cache_bytes: 0,
            ..big_segments()
        };
        let log = bench_log(store, "p0", config)?;
        let group: Vec<&[u8]> = std::iter::repeat_n(batch.as_slice(), 1000).collect();
        for _ in 0..entries / 1000 {
            log.append(&group)?;
        }
        log.sync()?;
        let started = Instant::now();
        for offset in &offsets {
            std::hint::black_box(log.read(*offset, 1)?);
        }
        let read_ns = started.elapsed().as_nanos() as f64 / offsets.len() as f64;
        results.push(Lookup {
            entries,
            search_ns,
            read_ns,
        });
    }
    Ok(results)
}

struct ManyPartitions {
    partitions: u32,
    create_s: f64,
    manager_open_ms: f64,
    first_access_us: f64,
    idle_bytes_each: f64,
}

/// Creates `--partitions` partitions with one batch each on the disk under test,
/// shuts down cleanly, then times opening the data directory and the first access to
/// every partition, and measures what an idle partition keeps in memory.
fn many_partitions(args: &Args) -> Fallible<ManyPartitions> {
    use spool_log::{LogManager, ManagerConfig};
    use spool_model::{TopicName, TopicPartition};
    let root = args.dir.join("many");
    let store: Arc<dyn Store> = Arc::new(LocalStore::open(&root)?);
    let config = ManagerConfig {
        open_files_limit: 1024,
        ..ManagerConfig::default()
    };
    let batch = BatchBuilder::new().values(1, 100).build();
    let names: Vec<TopicPartition> = (0..args.partitions)
        .map(|i| {
            Ok(TopicPartition::new(
                TopicName::new(format!("topic-{}", i / 100))?,
                i32::try_from(i % 100)?,
            ))
        })
        .collect::<Fallible<_>>()?;
    let started = Instant::now();
    {
        let manager = LogManager::open(store.clone(), config.clone())?;
        for name in &names {
            manager
                .create_partition(name)?
                .append(&[batch.as_slice()])?;
        }
        manager.shutdown()?;
    }
    let create_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let manager = LogManager::open(store, config)?;
    let manager_open_ms = started.elapsed().as_secs_f64() * 1e3;
    let started = Instant::now();
    let mut idle_bytes = 0usize;
    for name in &names {
        let log = manager.partition(name)?.ok_or("partition vanished")?;
        std::hint::black_box(log.read(Offset(0), 1 << 20)?);
        log.release_memory();
        idle_bytes += log.memory_footprint();
    }
    let count = f64::from(args.partitions.max(1));
    let first_access_us = started.elapsed().as_secs_f64() * 1e6 / count;
    manager.shutdown()?;
    drop(manager);
    fs::remove_dir_all(&root)?;
    Ok(ManyPartitions {
        partitions: args.partitions,
        create_s,
        manager_open_ms,
        first_access_us,
        idle_bytes_each: idle_bytes as f64 / count,
    })
}
