//! `spool bench reads`: reads anywhere (docs/cluster.md#racks-readers-and-preferred-
//! replicas) in a cluster of `spool serve` processes over shared storage: writers in
//! rack `w`, readers (`broker.roles=reader`) in rack `r`.
//!
//! A topic of `--bytes` is written once; then, for each reader count of `--readers`,
//! the cluster starts afresh (empty data directories: cold caches) and `--groups`
//! consumers with `client.rack=r` read the whole topic at once. Each round reports
//! the total read rate, the bytes each broker served and its object GETs (from its
//! `/metrics`), and the share of bytes served across racks (by writers to rack-`r`
//! consumers; the target is 0 while a reader is live). Last, with the most readers, a
//! producer sends at `--rate` and two consumers — one in rack `r`, one without a rack
//! (the leaders serve it) — measure end-to-end latency, which bounds the fetch's:
//! from a reader it adds at most the reader's refresh of the committed marks.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rdkafka::ClientConfig;
use rdkafka::Message;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use spool_loadgen::workload::parse_property;

use crate::CheckError;
use crate::host::{Host, SharedStorage, free_port};

const TOPIC: &str = "reads";
const WRITER_RACK: &str = "w";
const READER_RACK: &str = "r";

/// `spool bench reads` settings.
#[derive(Debug, Clone, clap::Args)]
pub struct Reads {
    /// Where the brokers keep partitions (`s3://bucket/prefix`; credentials and
    /// endpoint from the `AWS_*` variables).
    #[arg(long)]
    pub storage_url: String,
    /// The brokers' metadata store [default: a SQLite file in the data directory].
    #[arg(long)]
    pub metadata_url: Option<String>,
    /// Writer brokers (they lead the partitions).
    #[arg(long, default_value_t = 2)]
    pub writers: i32,
    /// The reader counts to measure, one round each.
    #[arg(long, value_delimiter = ',', default_value = "0,1,2")]
    pub readers: Vec<i32>,
    /// Consumer groups reading the whole topic at once.
    #[arg(long, default_value_t = 8)]
    pub groups: u32,
    /// Bytes of record values in the topic.
    #[arg(long, default_value_t = 1 << 30)]
    pub bytes: u64,
    #[arg(long, default_value_t = 1024)]
    pub record_bytes: usize,
    #[arg(long, default_value_t = 8)]
    pub partitions: i32,
    /// Messages per second of the latency round (0: no latency round).
    #[arg(long, default_value_t = 20_000)]
    pub rate: u64,
    /// Seconds the latency round measures.
    #[arg(long, default_value_t = 15)]
    pub latency_seconds: u64,
    /// A broker setting, as KEY=VALUE (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub settings: Vec<(String, String)>,
    /// Where the brokers' data directories and logs go [default: a temporary
    /// directory, removed after the run].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The `spool` binary to run as the brokers; this one by default.
    #[arg(long)]
    pub spool_bin: Option<PathBuf>,
}

/// One reader count's read round.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReadRound {
    pub readers: i32,
    /// Bytes of record values all groups read, per second of the round.
    pub read_mb_per_s: f64,
    pub seconds: f64,
    /// Object GETs per MB of values read, over all brokers.
    pub gets_per_mb: f64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Bytes of batches each broker returned to fetches, by node id.
    pub served_bytes: BTreeMap<i32, u64>,
    /// The share of those bytes writers served (across racks: every consumer is in
    /// rack `r`).
    pub cross_rack_share: f64,
}

/// End-to-end latency of one consumer, in ms.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct LatencyMs {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub samples: usize,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ReadsReport {
    pub writers: i32,
    pub groups: u32,
    pub topic_bytes: u64,
    pub partitions: i32,
    pub settings: Vec<String>,
    pub write_mb_per_s: f64,
    pub rounds: Vec<ReadRound>,
    /// At `rate` msg/s with the most readers: a rack-`r` consumer (from a reader)
    /// and one without a rack (from the leaders).
    pub rate: u64,
    pub latency_from_reader: Option<LatencyMs>,
    pub latency_from_leader: Option<LatencyMs>,
    pub seconds: f64,
}

impl ReadsReport {
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "reads anywhere: {} writers, {} groups reading {} MiB of {} partitions (written at {:.1} MB/s)\n",
            self.writers,
            self.groups,
            self.topic_bytes >> 20,
            self.partitions,
            self.write_mb_per_s
        );
        text.push_str(
            "readers  read MB/s  GETs/MB  cache hits/misses  across racks  served bytes by node\n",
        );
        for round in &self.rounds {
            let served: Vec<String> = round
                .served_bytes
                .iter()
                .map(|(node, bytes)| format!("{node}: {} MiB", bytes >> 20))
                .collect();
            text.push_str(&format!(
                "{:>7}  {:>9.1}  {:>7.2}  {:>8}/{:<8}  {:>11.1}%  {}\n",
                round.readers,
                round.read_mb_per_s,
                round.gets_per_mb,
                round.cache_hits,
                round.cache_misses,
                round.cross_rack_share * 100.0,
                served.join(", ")
            ));
        }
        for (name, latency) in [
            ("from a reader", self.latency_from_reader),
            ("from the leaders", self.latency_from_leader),
        ] {
            if let Some(l) = latency {
                text.push_str(&format!(
                    "end-to-end at {} msg/s {name}: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} samples)\n",
                    self.rate, l.p50, l.p99, l.max, l.samples
                ));
            }
        }
        text.push_str(&format!("{:.0} s in all\n", self.seconds));
        text
    }
}

/// The cluster of one round.
struct Cluster {
    hosts: BTreeMap<i32, Host>,
    admins: BTreeMap<i32, SocketAddr>,
}

impl Cluster {
    fn bootstrap(&self) -> String {
        let writers: Vec<String> = self
            .hosts
            .values()
            .map(|h| h.address().to_string())
            .collect();
        writers.join(",")
    }

    fn stop(mut self) -> Result<(), CheckError> {
        for host in self.hosts.values_mut() {
            host.terminate()?;
        }
        Ok(())
    }
}

/// Runs the benchmark.
pub fn run(bench: &Reads) -> Result<ReadsReport, CheckError> {
    if bench.writers < 1 || bench.groups < 1 || bench.partitions < 1 || bench.record_bytes < 16 {
        return Err(CheckError::Invalid(
            "--writers, --groups and --partitions must be at least 1, --record-bytes 16".to_owned(),
        ));
    }
    let started = Instant::now();
    let dir = crate::scratch_dir(bench.data_dir.as_ref(), "reads");
    std::fs::create_dir_all(&dir).map_err(CheckError::io("create", &dir))?;
    let binary = crate::spool_binary(bench.spool_bin.as_ref())?;
    let metadata_url = bench
        .metadata_url
        .clone()
        .unwrap_or_else(|| format!("sqlite://{}", dir.join("metadata.db").display()));
    // Compaction would read objects back; held off, every GET is a consumer's.
    let mut settings = vec!["storage.compaction.min.ranges=100000".to_owned()];
    settings.extend(bench.settings.iter().map(|(k, v)| format!("{k}={v}")));
    let start = |round: usize, readers: i32| {
        start_cluster(
            &dir.join(format!("round-{round}")),
            &binary,
            bench,
            &metadata_url,
            &settings,
            readers,
        )
    };
    let records = bench.bytes / bench.record_bytes as u64;

    let cluster = start(0, 0)?;
    let client = client_config(&cluster.bootstrap());
    crate::create_topic(&client, TOPIC, bench.partitions, &[])?;
    let write_started = Instant::now();
    write(&client, records, bench.record_bytes, bench.partitions)?;
    let write_mb_per_s = megabytes(bench.bytes) / write_started.elapsed().as_secs_f64();
    cluster.stop()?;

    let mut rounds = Vec::new();
    for (round, readers) in bench.readers.iter().copied().enumerate() {
        let cluster = start(round + 1, readers)?;
        let result = read_round(&cluster, bench, records, readers);
        cluster.stop()?;
        rounds.push(result?);
    }

    let most = bench.readers.iter().copied().max().unwrap_or(0);
    let (latency_from_reader, latency_from_leader) = if bench.rate > 0 && most > 0 {
        let cluster = start(bench.readers.len() + 1, most)?;
        let measured = latency_round(&cluster, bench);
        cluster.stop()?;
        let (reader, leader) = measured?;
        (Some(reader), Some(leader))
    } else {
        (None, None)
    };
    if bench.data_dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    Ok(ReadsReport {
        writers: bench.writers,
        groups: bench.groups,
        topic_bytes: records * bench.record_bytes as u64,
        partitions: bench.partitions,
        settings,
        write_mb_per_s,
        rounds,
        rate: bench.rate,
        latency_from_reader,
        latency_from_leader,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Writers 1..=W in rack `w`, readers after them in rack `r`, each on an empty data
/// directory under `dir`, with an admin listener for `/metrics`.
fn start_cluster(
    dir: &Path,
    binary: &Path,
    bench: &Reads,
    metadata_url: &str,
    settings: &[String],
    readers: i32,
) -> Result<Cluster, CheckError> {
    let mut cluster = Cluster {
        hosts: BTreeMap::new(),
        admins: BTreeMap::new(),
    };
    for node_id in 1..=bench.writers + readers {
        let reader = node_id > bench.writers;
        let mut own = settings.to_vec();
        own.push(format!(
            "broker.rack={}",
            if reader { READER_RACK } else { WRITER_RACK }
        ));
        if reader {
            own.push("broker.roles=reader".to_owned());
        }
        let admin = free_port()?;
        let shared = SharedStorage {
            storage_url: bench.storage_url.clone(),
            metadata_url: metadata_url.to_owned(),
            node_id,
            settings: own,
            admin: Some(admin),
        };
        let mut host = Host::new(
            crate::Mode::Cluster,
            crate::Crash::Drop,
            &dir.join(format!("node-{node_id}")),
            binary.to_path_buf(),
            0,
            Some(shared),
        )?;
        host.start()?;
        cluster.hosts.insert(node_id, host);
        cluster.admins.insert(node_id, admin);
    }
    Ok(cluster)
}

fn client_config(bootstrap: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("log_level", "0");
    config
}

/// `records` values of `record_bytes` (incompressible), spread over the partitions,
/// `acks=all`.
fn write(
    config: &ClientConfig,
    records: u64,
    record_bytes: usize,
    partitions: i32,
) -> Result<(), CheckError> {
    let producer: BaseProducer = config
        .clone()
        .set("acks", "all")
        .set("linger.ms", "20")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.kbytes", "262144")
        .create()
        .map_err(CheckError::kafka("create a producer"))?;
    let mut value = vec![0u8; record_bytes];
    for i in 0..records {
        fastrand::fill(&mut value);
        let partition = i32::try_from(i % u64::try_from(partitions).unwrap_or(1)).unwrap_or(0);
        let mut record = BaseRecord::<(), [u8]>::to(TOPIC)
            .payload(&value[..])
            .partition(partition);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, unsent)) => {
                    record = unsent;
                    producer.poll(Duration::from_millis(5));
                }
            }
        }
        if i % 1024 == 0 {
            producer.poll(Duration::ZERO);
        }
    }
    producer
        .flush(Duration::from_secs(120))
        .map_err(CheckError::kafka("flush the producer"))
}

/// Every group reads the whole topic at once from rack `r`.
fn read_round(
    cluster: &Cluster,
    bench: &Reads,
    records: u64,
    readers: i32,
) -> Result<ReadRound, CheckError> {
    let before: BTreeMap<i32, Scraped> = scrape_all(cluster)?;
    let started = Instant::now();
    let bytes = AtomicU64::new(0);
    let outcome: Result<(), CheckError> = std::thread::scope(|scope| {
        let groups: Vec<_> = (0..bench.groups)
            .map(|group| {
                let bytes = &bytes;
                scope.spawn(move || read_everything(cluster, bench, group, records, bytes))
            })
            .collect();
        for group in groups {
            group
                .join()
                .map_err(|_| CheckError::Broker("a consumer thread panicked".to_owned()))??;
        }
        Ok(())
    });
    outcome?;
    let seconds = started.elapsed().as_secs_f64();
    let after = scrape_all(cluster)?;
    let delta = |node: &i32, of: fn(&Scraped) -> u64| {
        of(&after[node]).saturating_sub(before.get(node).map_or(0, of))
    };
    let served_bytes: BTreeMap<i32, u64> = after
        .keys()
        .map(|node| (*node, delta(node, |s| s.served_bytes)))
        .collect();
    let total_served: u64 = served_bytes.values().sum();
    let by_writers: u64 = served_bytes
        .iter()
        .filter(|(node, _)| **node <= bench.writers)
        .map(|(_, bytes)| bytes)
        .sum();
    let gets: u64 = after.keys().map(|node| delta(node, |s| s.gets)).sum();
    let read = bytes.load(Ordering::Relaxed);
    #[allow(clippy::cast_precision_loss)]
    Ok(ReadRound {
        readers,
        read_mb_per_s: megabytes(read) / seconds,
        seconds,
        gets_per_mb: gets as f64 / megabytes(read).max(f64::MIN_POSITIVE),
        cache_hits: after.keys().map(|node| delta(node, |s| s.cache_hits)).sum(),
        cache_misses: after
            .keys()
            .map(|node| delta(node, |s| s.cache_misses))
            .sum(),
        served_bytes,
        cross_rack_share: by_writers as f64 / (total_served.max(1)) as f64,
    })
}

/// One group's consumer reading every partition from the start until it has
/// `records` records.
fn read_everything(
    cluster: &Cluster,
    bench: &Reads,
    group: u32,
    records: u64,
    bytes: &AtomicU64,
) -> Result<(), CheckError> {
    let consumer: BaseConsumer = client_config(&cluster.bootstrap())
        .set("group.id", format!("reads-{group}"))
        .set("client.rack", READER_RACK)
        .set("enable.auto.commit", "false")
        .create()
        .map_err(CheckError::kafka("create a consumer"))?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..bench.partitions {
        assignment
            .add_partition_offset(TOPIC, partition, Offset::Beginning)
            .map_err(CheckError::kafka("assign"))?;
    }
    consumer
        .assign(&assignment)
        .map_err(CheckError::kafka("assign"))?;
    let deadline = Instant::now() + Duration::from_secs(1_800);
    let mut read = 0u64;
    while read < records {
        if Instant::now() > deadline {
            return Err(CheckError::Broker(format!(
                "group {group} read {read} of {records} records in 30 minutes"
            )));
        }
        // Errors on the way (a broker restarting) are retried by the client.
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(200)) {
            read += 1;
            let len = message.payload().map_or(0, <[u8]>::len);
            bytes.fetch_add(len as u64, Ordering::Relaxed);
        }
    }
    Ok(())
}

/// A producer at `--rate` msg/s for `--latency-seconds` (after a second's warm-up),
/// a rack-`r` consumer and one without a rack, reading from the end.
fn latency_round(cluster: &Cluster, bench: &Reads) -> Result<(LatencyMs, LatencyMs), CheckError> {
    let topic = "reads-latency";
    let config = client_config(&cluster.bootstrap());
    crate::create_topic(&config, topic, bench.partitions, &[])?;
    let stop = AtomicBool::new(false);
    let measure_from = Instant::now() + Duration::from_secs(1);
    let until = measure_from + Duration::from_secs(bench.latency_seconds);
    std::thread::scope(|scope| {
        let consumers: Vec<_> = [Some(READER_RACK), None]
            .into_iter()
            .map(|rack| {
                let (config, stop) = (&config, &stop);
                scope.spawn(move || {
                    latencies(config, topic, bench.partitions, rack, measure_from, stop)
                })
            })
            .collect();
        // The consumers find their positions before the first record goes out.
        std::thread::sleep(Duration::from_millis(500));
        let produced = send_at_rate(&config, topic, bench.rate, until);
        std::thread::sleep(Duration::from_secs(2));
        stop.store(true, Ordering::SeqCst);
        produced?;
        let mut measured = Vec::new();
        for consumer in consumers {
            measured.push(
                consumer
                    .join()
                    .map_err(|_| CheckError::Broker("a consumer thread panicked".to_owned()))??,
            );
        }
        let leader = measured.pop().unwrap_or_default();
        let reader = measured.pop().unwrap_or_default();
        Ok((reader, leader))
    })
}

fn send_at_rate(
    config: &ClientConfig,
    topic: &str,
    rate: u64,
    until: Instant,
) -> Result<(), CheckError> {
    let producer: BaseProducer = config
        .clone()
        .set("acks", "all")
        .set("linger.ms", "5")
        .create()
        .map_err(CheckError::kafka("create a producer"))?;
    let every = Duration::from_secs_f64(1.0 / rate.max(1) as f64);
    let started = Instant::now();
    let mut sent: u32 = 0;
    while Instant::now() < until {
        let due = started + every * sent;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let stamp = now_micros().to_be_bytes();
        let mut record = BaseRecord::<(), [u8]>::to(topic).payload(&stamp[..]);
        loop {
            match producer.send(record) {
                Ok(()) => break,
                Err((_, unsent)) => {
                    record = unsent;
                    producer.poll(Duration::from_millis(1));
                }
            }
        }
        producer.poll(Duration::ZERO);
        sent += 1;
    }
    producer
        .flush(Duration::from_secs(30))
        .map_err(CheckError::kafka("flush the producer"))
}

/// End-to-end latencies of the records a consumer (in `rack`) reads that were sent
/// after `measure_from`, until `stop`.
fn latencies(
    config: &ClientConfig,
    topic: &str,
    partitions: i32,
    rack: Option<&str>,
    measure_from: Instant,
    stop: &AtomicBool,
) -> Result<LatencyMs, CheckError> {
    let mut config = config.clone();
    config
        .set("group.id", format!("latency-{}", rack.unwrap_or("leader")))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "500");
    if let Some(rack) = rack {
        config.set("client.rack", rack);
    }
    let consumer: BaseConsumer = config
        .create()
        .map_err(CheckError::kafka("create a consumer"))?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::End)
            .map_err(CheckError::kafka("assign"))?;
    }
    consumer
        .assign(&assignment)
        .map_err(CheckError::kafka("assign"))?;
    let from_micros = now_micros()
        + u64::try_from(
            measure_from
                .saturating_duration_since(Instant::now())
                .as_micros(),
        )
        .unwrap_or(0);
    let mut samples = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        if let Some(Ok(message)) = consumer.poll(Duration::from_millis(100)) {
            let Some(stamp) = message.payload().and_then(|p| <[u8; 8]>::try_from(p).ok()) else {
                continue;
            };
            let sent = u64::from_be_bytes(stamp);
            if sent >= from_micros {
                samples.push(now_micros().saturating_sub(sent));
            }
        }
    }
    Ok(summary(&mut samples))
}

#[allow(clippy::cast_precision_loss)]
fn summary(samples: &mut [u64]) -> LatencyMs {
    samples.sort_unstable();
    let at = |fraction: f64| {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let index = ((fraction * samples.len() as f64).ceil() as usize).saturating_sub(1);
        samples
            .get(index.min(samples.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0) as f64
            / 1000.0
    };
    LatencyMs {
        p50: at(0.5),
        p99: at(0.99),
        max: samples.last().copied().unwrap_or(0) as f64 / 1000.0,
        samples: samples.len(),
    }
}

fn now_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(0))
}

#[allow(clippy::cast_precision_loss)]
fn megabytes(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// What a round reads of one broker's `/metrics`.
#[derive(Debug, Clone, Copy, Default)]
struct Scraped {
    served_bytes: u64,
    gets: u64,
    cache_hits: u64,
    cache_misses: u64,
}

fn scrape_all(cluster: &Cluster) -> Result<BTreeMap<i32, Scraped>, CheckError> {
    cluster
        .admins
        .iter()
        .map(|(node, admin)| Ok((*node, scrape(*admin)?)))
        .collect()
}

/// The counters of a broker's `/metrics` (a plain HTTP/1.0 GET).
fn scrape(admin: SocketAddr) -> Result<Scraped, CheckError> {
    let failed =
        |e: std::io::Error| CheckError::Broker(format!("cannot read {admin}/metrics: {e}"));
    let mut stream = std::net::TcpStream::connect(admin).map_err(failed)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(failed)?;
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n")
        .map_err(failed)?;
    let mut text = String::new();
    stream.read_to_string(&mut text).map_err(failed)?;
    Ok(parse_metrics(&text))
}

fn parse_metrics(text: &str) -> Scraped {
    let mut scraped = Scraped::default();
    for line in text.lines().filter(|line| !line.starts_with('#')) {
        let Some((name, value)) = line.rsplit_once(' ') else {
            continue;
        };
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let value = value.parse::<f64>().unwrap_or(0.0) as u64;
        let name = name.split('{').next().unwrap_or(name);
        match name {
            "spool_topic_bytes_out_total" => scraped.served_bytes += value,
            "spool_object_gets_total" => scraped.gets = value,
            "spool_object_cache_hits_total" => scraped.cache_hits = value,
            "spool_object_cache_misses_total" => scraped.cache_misses = value,
            _ => {}
        }
    }
    scraped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_summed_over_topics() {
        let text = "# HELP x\nspool_topic_bytes_out_total{topic=\"a\"} 10\nspool_topic_bytes_out_total{topic=\"b\"} 5\nspool_object_gets_total 7\nspool_object_cache_hits_total 3\nspool_object_cache_misses_total 2\n";
        let scraped = parse_metrics(text);
        assert_eq!(
            (
                scraped.served_bytes,
                scraped.gets,
                scraped.cache_hits,
                scraped.cache_misses
            ),
            (15, 7, 3, 2)
        );
    }
}
