//! `spool-table-bench`: how fast records become table rows (issue 39), per core.
//!
//! `--records` records of about 1 KiB of JSON each are written into one Parquet file
//! of an Iceberg table on the local disk, on one thread (a current-thread runtime):
//! in `key_value` mode (the value kept as bytes) and in `registry` mode (the JSON
//! parsed, checked against a JSON Schema's columns and written as typed columns).
//! Reported: rows per second of that one core, and the file's size. The broker's read
//! of the log and the decompression of batches come on top (measured through
//! Kafka clients in docs/performance.md).

use std::time::Instant;

use clap::Parser;
use serde_json::json;
use spool_tables::{
    Datum, PartitionFile, Row, TableCatalog, TableName, ValueSchema, key_value_schema,
    registry_schema,
};

#[derive(Debug, Parser)]
#[command(about = "Benchmark turning records into Iceberg table rows")]
struct Args {
    /// Data directory; emptied first.
    #[arg(long, default_value = "target/bench-table-data")]
    dir: std::path::PathBuf,
    #[arg(long, default_value_t = 200_000)]
    records: usize,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

type Fallible<T> = Result<T, Box<dyn std::error::Error>>;

/// Rows handed to the file at a time (as the broker hands a read's records).
const CHUNK: usize = 4_096;

fn main() -> Fallible<()> {
    let args = Args::parse();
    let _ = std::fs::remove_dir_all(&args.dir);
    std::fs::create_dir_all(&args.dir)?;
    let dir = std::fs::canonicalize(&args.dir)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let records: Vec<Vec<u8>> = (0..args.records).map(record).collect();
    let value_bytes: usize = records.iter().map(Vec::len).sum();
    let (key_value, key_value_size) = runtime.block_on(key_value_run(&dir, &records))?;
    let (registry, registry_size) = runtime.block_on(registry_run(&dir, &records))?;
    let per_second = |seconds: f64| args.records as f64 / seconds;
    if args.json {
        println!(
            "{}",
            json!({
                "records": args.records,
                "value_bytes": value_bytes,
                "key_value_rows_per_s": per_second(key_value),
                "key_value_file_bytes": key_value_size,
                "registry_rows_per_s": per_second(registry),
                "registry_file_bytes": registry_size,
            })
        );
    } else {
        println!(
            "{} records, {:.1} MiB of JSON values, one core",
            args.records,
            value_bytes as f64 / 1_048_576.0
        );
        println!("mode        rows/s      MB/s   file MiB");
        for (mode, seconds, size) in [
            ("key_value", key_value, key_value_size),
            ("registry", registry, registry_size),
        ] {
            println!(
                "{mode:<10} {:>8.0} {:>8.1} {:>9.1}",
                per_second(seconds),
                value_bytes as f64 / seconds / 1e6,
                size as f64 / 1_048_576.0
            );
        }
    }
    let _ = std::fs::remove_dir_all(&args.dir);
    Ok(())
}

/// Record `i`: an order of about 1 KiB of JSON.
fn record(i: usize) -> Vec<u8> {
    let items: Vec<serde_json::Value> = (0..4)
        .map(|n| json!({"sku": format!("sku-{:06}", (i * 7 + n) % 100_000), "quantity": n + 1, "price": (i % 997) as f64 / 10.0}))
        .collect();
    let status = ["placed", "paid", "shipped"][i % 3];
    let mut order = json!({
        "id": i,
        "customer": format!("customer-{:05}", i % 50_000),
        "status": status,
        "amount": (i % 10_000) as f64 / 100.0,
        "items": items,
        "note": "",
    });
    let length = serde_json::to_vec(&order).map_or(0, |bytes| bytes.len());
    // Text that compresses as prose does, not as one repeated letter.
    let mut seed = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let note: String = (0..1024usize.saturating_sub(length))
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            char::from(b"etaoin shrdlu"[(seed % 13) as usize])
        })
        .collect();
    order["note"] = json!(note);
    serde_json::to_vec(&order).unwrap_or_default()
}

fn row(offset: usize, value: Option<Vec<u8>>) -> Row {
    Row {
        partition: 0,
        offset: i64::try_from(offset).unwrap_or(i64::MAX),
        timestamp_ms: 1_764_950_400_000,
        key: Some(format!("k{}", offset % 50_000).into_bytes()),
        value,
        headers: Vec::new(),
    }
}

async fn catalog(dir: &std::path::Path, mode: &str) -> Fallible<TableCatalog> {
    let uri = format!("sqlite://{}/{mode}.db?mode=rwc", dir.display());
    let warehouse = format!("file://{}/{mode}", dir.display());
    Ok(TableCatalog::open(&uri, &warehouse, None).await?)
}

fn name(table: &str) -> TableName {
    TableName {
        namespace: "spool".to_owned(),
        table: table.to_owned(),
    }
}

/// Seconds to write `records` as `key_value` rows, and the file's size.
async fn key_value_run(dir: &std::path::Path, records: &[Vec<u8>]) -> Fallible<(f64, u64)> {
    let catalog = catalog(dir, "key_value").await?;
    let table = catalog
        .ensure_table(&name("orders"), key_value_schema()?)
        .await?;
    let started = Instant::now();
    let mut file = PartitionFile::create(&table, 0, 0).await?;
    for (index, chunk) in records.chunks(CHUNK).enumerate() {
        let rows: Vec<Row> = chunk
            .iter()
            .enumerate()
            .map(|(n, value)| row(index * CHUNK + n, Some(value.clone())))
            .collect();
        file.write(&rows).await?;
    }
    let written = file.close().await?;
    Ok((
        started.elapsed().as_secs_f64(),
        written.iter().map(|f| f.size_bytes).sum(),
    ))
}

/// Seconds to write `records` as `registry` rows (parsed, checked, typed columns),
/// and the file's size.
async fn registry_run(dir: &std::path::Path, records: &[Vec<u8>]) -> Fallible<(f64, u64)> {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "customer": {"type": "string"},
            "status": {"type": "string"},
            "amount": {"type": "number"},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "sku": {"type": "string"}, "quantity": {"type": "integer"},
                "price": {"type": "number"}}}},
            "note": {"type": "string"}
        }
    });
    let catalog = catalog(dir, "registry").await?;
    let table = catalog
        .ensure_table(
            &name("orders"),
            registry_schema(ValueSchema::Json(&schema))?,
        )
        .await?;
    let started = Instant::now();
    let mut file = PartitionFile::create(&table, 0, 0).await?;
    for (index, chunk) in records.chunks(CHUNK).enumerate() {
        let mut rows = Vec::with_capacity(chunk.len());
        let mut values = Vec::with_capacity(chunk.len());
        for (n, value) in chunk.iter().enumerate() {
            let datum = Datum::from_json(serde_json::from_slice(value)?);
            file.check(&datum)?;
            rows.push(row(index * CHUNK + n, None));
            values.push(datum);
        }
        file.write_decoded(&rows, &values).await?;
    }
    let written = file.close().await?;
    Ok((
        started.elapsed().as_secs_f64(),
        written.iter().map(|f| f.size_bytes).sum(),
    ))
}
