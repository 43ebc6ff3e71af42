//! `spool bench databus`: many small producers, directly and through Databus
//! (docs/databus.md), in one session. Starts its own broker (embedded, this binary,
//! a temporary data directory) and Databus in front of it, as processes; then, for
//! each way in turn, `--producers` librdkafka producers (`linger.ms=5`, acks=1) each
//! send `--message-size`-byte records at `--rate` per second for `--seconds`, while
//! a consumer reads them from the broker. Per way: the connections open at the
//! broker, the produce requests per second it answered, its CPU (and Databus's), and
//! the end-to-end latency (record timestamp to consumer) p50/p99.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde::Serialize;

use super::bench_index::{create, failed};
use crate::error::CliError;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DatabusBench {
    /// Producers (each its own librdkafka client and connections).
    #[arg(long, default_value_t = 200)]
    producers: usize,
    /// Records per second each producer sends.
    #[arg(long, default_value_t = 500)]
    rate: u64,
    #[arg(long, default_value_t = 100)]
    message_size: usize,
    /// Seconds measured per way (after `--warmup`).
    #[arg(long, default_value_t = 15)]
    seconds: u64,
    #[arg(long, default_value_t = 5)]
    warmup: u64,
    #[arg(long, default_value_t = 8)]
    partitions: i32,
    /// `--set` settings for Databus (`databus.linger.ms=5`, …).
    #[arg(long = "databus-set", value_name = "KEY=VALUE")]
    databus_settings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct DatabusReport {
    producers: usize,
    offered_msg_per_s: u64,
    direct: Way,
    through_databus: Way,
    /// Produce requests at the broker, direct against through Databus.
    fewer_requests: f64,
    /// Through Databus minus direct, in ms.
    added_p50_ms: f64,
    added_p99_ms: f64,
}

#[derive(Debug, Serialize, Default)]
struct Way {
    delivered_msg_per_s: f64,
    broker_connections: u64,
    produce_requests_per_s: f64,
    broker_cpu_percent: f64,
    databus_cpu_percent: Option<f64>,
    e2e_p50_ms: f64,
    e2e_p99_ms: f64,
    e2e_max_ms: f64,
    errors: u64,
}

impl DatabusReport {
    pub(crate) fn to_text(&self) -> String {
        let way = |name: &str, w: &Way| {
            format!(
                "{name:<16} {:>9.0} msg/s  {:>5} conns  {:>8.0} produce req/s  broker CPU {:>4.0}%{}  e2e p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms  errors {}",
                w.delivered_msg_per_s,
                w.broker_connections,
                w.produce_requests_per_s,
                w.broker_cpu_percent,
                w.databus_cpu_percent
                    .map_or_else(String::new, |c| format!(" (Databus {c:.0}%)")),
                w.e2e_p50_ms,
                w.e2e_p99_ms,
                w.e2e_max_ms,
                w.errors
            )
        };
        format!(
            "databus bench: {} producers, {} msg/s offered\n{}\n{}\n\
             produce requests at the broker: {:.1}x fewer through Databus; e2e added p50 {:+.1} ms, p99 {:+.1} ms",
            self.producers,
            self.offered_msg_per_s,
            way("direct", &self.direct),
            way("through Databus", &self.through_databus),
            self.fewer_requests,
            self.added_p50_ms,
            self.added_p99_ms
        )
    }
}

/// A directory removed when dropped.
struct Scratch(std::path::PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn run(bench: &DatabusBench) -> Result<DatabusReport, CliError> {
    let exe = std::env::current_exe().map_err(|e| CliError::Failed(e.to_string()))?;
    let dir = Scratch(std::env::temp_dir().join(format!(
        "spool-bench-databus-{:06x}",
        fastrand::u32(..0xff_ffff)
    )));
    let port = |listener: std::net::TcpListener| listener.local_addr().map(|a| a.port());
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(port)
            .map_err(|e| CliError::Failed(e.to_string()))
    };
    let (kafka, admin, bus) = (free()?, free()?, free()?);
    let broker_address = format!("127.0.0.1:{kafka}");
    let broker = Process(
        Command::new(&exe)
            .args(["--listen", &broker_address])
            .args(["--admin-listen", &format!("127.0.0.1:{admin}")])
            .arg("--data-dir")
            .arg(dir.0.join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| CliError::Failed(format!("start the broker: {e}")))?,
    );
    wait_for_port(kafka)?;
    let bus_address = format!("127.0.0.1:{bus}");
    let mut databus = Command::new(&exe);
    databus.args([
        "databus",
        "--listen",
        &bus_address,
        "--brokers",
        &broker_address,
    ]);
    for setting in &bench.databus_settings {
        databus.args(["--set", setting]);
    }
    let databus = Process(
        databus
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| CliError::Failed(format!("start Databus: {e}")))?,
    );
    wait_for_port(bus)?;
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", &broker_address);
    let metrics = format!("http://127.0.0.1:{admin}/metrics");
    let pids = (broker.0.id(), databus.0.id());
    create(&config, "databus-bench-direct", bench.partitions, &[])?;
    create(&config, "databus-bench-bus", bench.partitions, &[])?;
    let direct = measure(
        bench,
        &broker_address,
        "databus-bench-direct",
        &broker_address,
        &metrics,
        pids,
        false,
    )?;
    let through = measure(
        bench,
        &bus_address,
        "databus-bench-bus",
        &broker_address,
        &metrics,
        pids,
        true,
    )?;
    Ok(DatabusReport {
        producers: bench.producers,
        offered_msg_per_s: bench.rate * bench.producers as u64,
        fewer_requests: direct.produce_requests_per_s / through.produce_requests_per_s.max(1e-9),
        added_p50_ms: through.e2e_p50_ms - direct.e2e_p50_ms,
        added_p99_ms: through.e2e_p99_ms - direct.e2e_p99_ms,
        direct,
        through_databus: through,
    })
}

fn wait_for_port(port: u16) -> Result<(), CliError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return Err(CliError::Failed(format!("nothing listens on port {port}")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Databus answers once the upstream is reached: a moment more.
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

/// One way: the producers through `bootstrap`, the consumer at the broker.
fn measure(
    bench: &DatabusBench,
    bootstrap: &str,
    topic: &str,
    broker: &str,
    metrics: &str,
    (broker_pid, databus_pid): (u32, u32),
    through_databus: bool,
) -> Result<Way, CliError> {
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let consumer = {
        let (broker, topic, stop) = (broker.to_owned(), topic.to_owned(), stop.clone());
        let partitions = bench.partitions;
        let measure_from = Instant::now() + Duration::from_secs(bench.warmup);
        std::thread::spawn(move || consume(&broker, &topic, partitions, &stop, measure_from))
    };
    let drivers = 4.min(bench.producers.max(1));
    let mut threads = Vec::new();
    for driver in 0..drivers {
        let mine: Vec<usize> = (0..bench.producers)
            .filter(|i| i % drivers == driver)
            .collect();
        let (bootstrap, topic, stop, errors) = (
            bootstrap.to_owned(),
            topic.to_owned(),
            stop.clone(),
            errors.clone(),
        );
        let (rate, size) = (bench.rate, bench.message_size);
        threads.push(std::thread::spawn(move || {
            produce(&bootstrap, &topic, &mine, rate, size, &stop, &errors)
        }));
    }
    std::thread::sleep(Duration::from_secs(bench.warmup));
    let requests_before = produce_requests(metrics)?;
    let cpu_before = (cpu_seconds(broker_pid), cpu_seconds(databus_pid));
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(bench.seconds));
    let elapsed = started.elapsed().as_secs_f64();
    let requests = produce_requests(metrics)? - requests_before;
    let cpu_after = (cpu_seconds(broker_pid), cpu_seconds(databus_pid));
    let connections = connections_open(metrics)?;
    stop.store(true, Ordering::Relaxed);
    for thread in threads {
        thread
            .join()
            .map_err(|_| CliError::Failed("a producer thread panicked".into()))??;
    }
    let (delivered, mut latencies) = consumer
        .join()
        .map_err(|_| CliError::Failed("the consumer thread panicked".into()))??;
    latencies.sort_unstable();
    let at = |percent: usize| {
        let i = (latencies.len().saturating_sub(1) * percent).div_ceil(100);
        latencies.get(i).copied().unwrap_or_default() as f64
    };
    Ok(Way {
        delivered_msg_per_s: delivered as f64 / elapsed,
        broker_connections: connections,
        produce_requests_per_s: requests / elapsed,
        broker_cpu_percent: (cpu_after.0 - cpu_before.0) / elapsed * 100.0,
        databus_cpu_percent: through_databus
            .then(|| (cpu_after.1 - cpu_before.1) / elapsed * 100.0),
        e2e_p50_ms: at(50),
        e2e_p99_ms: at(99),
        e2e_max_ms: at(100),
        errors: errors.load(Ordering::Relaxed),
    })
}

/// Drives `indexes`' producers: each sends `rate` records a second until `stop`.
fn produce(
    bootstrap: &str,
    topic: &str,
    indexes: &[usize],
    rate: u64,
    size: usize,
    stop: &AtomicBool,
    errors: &AtomicU64,
) -> Result<(), CliError> {
    let producers: Vec<BaseProducer> = indexes
        .iter()
        .map(|i| {
            ClientConfig::new()
                .set("bootstrap.servers", bootstrap)
                .set("client.id", format!("bench-producer-{i}"))
                .set("linger.ms", "5")
                .set("acks", "1")
                .create()
                .map_err(failed("a producer"))
        })
        .collect::<Result<_, _>>()?;
    let value = vec![b'x'; size];
    let interval = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        for producer in &producers {
            if producer
                .send(BaseRecord::<(), [u8]>::to(topic).payload(&value[..]))
                .is_err()
            {
                errors.fetch_add(1, Ordering::Relaxed);
            }
            producer.poll(Duration::ZERO);
        }
        next += interval;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    for producer in &producers {
        let _ = producer.flush(Duration::from_secs(30));
    }
    Ok(())
}

/// Reads `topic` from its end at the broker until `stop`; the records seen after
/// `measure_from` and their end-to-end latencies in ms.
fn consume(
    broker: &str,
    topic: &str,
    partitions: i32,
    stop: &AtomicBool,
    measure_from: Instant,
) -> Result<(u64, Vec<u64>), CliError> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", broker)
        .set("group.id", format!("{topic}-reader"))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "5")
        .create()
        .map_err(failed("a consumer"))?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::End)
            .map_err(failed("assign"))?;
    }
    consumer.assign(&assignment).map_err(failed("assign"))?;
    let (mut seen, mut latencies) = (0_u64, Vec::new());
    while !stop.load(Ordering::Relaxed) {
        let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        if Instant::now() < measure_from {
            continue;
        }
        seen += 1;
        if let Some(sent) = message.timestamp().to_millis() {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            latencies.push(
                u64::try_from(now)
                    .unwrap_or(0)
                    .saturating_sub(u64::try_from(sent).unwrap_or(0)),
            );
        }
    }
    Ok((seen, latencies))
}

fn metrics_text(url: &str) -> Result<String, CliError> {
    ureq::Agent::new_with_defaults()
        .get(url)
        .call()
        .and_then(|mut answer| answer.body_mut().read_to_string())
        .map_err(|e| CliError::Failed(format!("{url}: {e}")))
}

/// Produce requests the broker answered so far.
fn produce_requests(url: &str) -> Result<f64, CliError> {
    Ok(metrics_text(url)?
        .lines()
        .filter(|line| line.starts_with("spool_requests_total{api=\"Produce\""))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Client connections open at the broker now.
fn connections_open(url: &str) -> Result<u64, CliError> {
    Ok(metrics_text(url)?
        .lines()
        .find_map(|line| line.strip_prefix("spool_connections_open "))
        .and_then(|value| value.trim().split('.').next()?.parse::<u64>().ok())
        .unwrap_or(0))
}

/// A process's user and system CPU seconds so far (Linux `/proc`).
fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}
