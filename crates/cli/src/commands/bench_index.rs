//! `spool bench index`: what a message index (docs/index.md) costs and gives, against
//! a running broker. Writes the same records (1 KiB values, a business id in the
//! header `id` and in the key, `--keys` distinct ids) into a plain topic and into one
//! with `index.fields=header:id`, one after the other: produce throughput without and
//! with the index; waits for the index to take everything; times `--lookups` searches
//! of random ids through the admin API (p50, p99, max); the index's size against the
//! data it covers; and a view of one id read with the index against one read by
//! scanning the source. With `--topic`, only the lookups, on a topic kept by an
//! earlier run (`--keep-topics`): run it right after restarting the broker for cold
//! lookups.

use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde::Serialize;
use serde_json::Value;

use crate::admin_api::{admin_url, call, percent_encoded};
use crate::error::CliError;

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct IndexBench {
    /// Records written into each topic.
    #[arg(long, default_value_t = 1_000_000)]
    records: u64,
    /// Distinct ids among them (default: a tenth of the records).
    #[arg(long)]
    keys: Option<u64>,
    /// Bytes per value (random, so incompressible).
    #[arg(long, default_value_t = 1024)]
    message_size: usize,
    #[arg(long, default_value_t = 8)]
    partitions: i32,
    /// Searches timed.
    #[arg(long, default_value_t = 1_000)]
    lookups: u64,
    /// Rounds of writing: each writes its share of the records into the plain topic,
    /// then into the indexed one (the rates are each round's).
    #[arg(long, default_value_t = 3)]
    rounds: u64,
    /// The broker's admin API (default: the first broker's host, port 9644).
    #[arg(long)]
    admin_url: Option<String>,
    /// Only the lookups, on this indexed topic of an earlier run.
    #[arg(long)]
    topic: Option<String>,
    /// Keep the topics after the run.
    #[arg(long)]
    keep_topics: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct IndexReport {
    topic: String,
    records: u64,
    keys: u64,
    /// Per round.
    plain_produce: Vec<Rate>,
    indexed_produce: Vec<Rate>,
    /// From the end of producing until the index held every record.
    index_caught_up_s: Option<f64>,
    lookups: Latencies,
    /// Records found per lookup, on average.
    found_per_lookup: f64,
    index: Value,
    view_with_index: Option<ViewRead>,
    view_by_scan: Option<ViewRead>,
}

#[derive(Debug, Serialize)]
struct Rate {
    records_per_s: f64,
    mb_per_s: f64,
}

#[derive(Debug, Serialize, Default)]
struct Latencies {
    first_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

#[derive(Debug, Serialize)]
struct ViewRead {
    records: u64,
    seconds: f64,
}

impl IndexReport {
    pub(crate) fn to_text(&self) -> String {
        let rate = |rates: &[Rate]| {
            if rates.is_empty() {
                return "—".to_owned();
            }
            let mut sorted: Vec<f64> = rates.iter().map(|r| r.records_per_s).collect();
            sorted.sort_by(f64::total_cmp);
            let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
            let each: Vec<String> = rates
                .iter()
                .map(|r| format!("{:.0}", r.records_per_s))
                .collect();
            format!("median {median:.0} records/s (rounds: {})", each.join(", "))
        };
        let view = |v: &Option<ViewRead>| {
            v.as_ref().map_or_else(
                || "—".to_owned(),
                |v| format!("{} records in {:.3} s", v.records, v.seconds),
            )
        };
        let size = |name: &str| self.index[name].as_u64().unwrap_or(0);
        let share = if size("covered_bytes") > 0 {
            100.0 * size("bytes") as f64 / size("covered_bytes") as f64
        } else {
            0.0
        };
        format!(
            "index bench: {} ({} records, {} ids)\n\
             produce, plain topic:   {}\n\
             produce, indexed topic: {}\n\
             index caught up:        {}\n\
             lookups:                first {:.1} ms, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({:.1} records each)\n\
             index:                  {} chunks, {} bytes for {} bytes of batches ({share:.2}%), {} records\n\
             view of one id:         with the index {}; by scanning {}",
            self.topic,
            self.records,
            self.keys,
            rate(&self.plain_produce),
            rate(&self.indexed_produce),
            self.index_caught_up_s
                .map_or_else(|| "—".to_owned(), |s| format!("{s:.1} s after producing")),
            self.lookups.first_ms,
            self.lookups.p50_ms,
            self.lookups.p99_ms,
            self.lookups.max_ms,
            self.found_per_lookup,
            size("chunks"),
            size("bytes"),
            size("covered_bytes"),
            size("records"),
            view(&self.view_with_index),
            view(&self.view_by_scan),
        )
    }
}

pub(crate) fn run(bench: &IndexBench, brokers: &str) -> Result<IndexReport, CliError> {
    let admin = admin_url(bench.admin_url.as_deref(), brokers);
    let keys = bench.keys.unwrap_or(bench.records / 10).max(1);
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", brokers);
    if let Some(topic) = &bench.topic {
        let (lookups, found) = lookups(&admin, topic, keys, bench.lookups)?;
        return Ok(IndexReport {
            topic: topic.clone(),
            records: 0,
            keys,
            plain_produce: Vec::new(),
            indexed_produce: Vec::new(),
            index_caught_up_s: None,
            lookups,
            found_per_lookup: found,
            index: index_info(&admin, topic)?,
            view_with_index: None,
            view_by_scan: None,
        });
    }
    let run = format!("bench-index-{:06x}", fastrand::u32(..0xff_ffff));
    let (plain, indexed) = (format!("{run}-plain"), format!("{run}-indexed"));
    let one = "id-1".to_owned();
    let views = [
        (format!("{run}-one"), format!("id = '{one}'")),
        (format!("{run}-one-scan"), format!("id = '{one}' OR FALSE")),
    ];
    create(&config, &plain, bench.partitions, &[])?;
    create(
        &config,
        &indexed,
        bench.partitions,
        &[("index.fields", "header:id")],
    )?;
    for (name, sql) in &views {
        create(
            &config,
            name,
            -1,
            &[
                ("view.source.topic", indexed.as_str()),
                ("view.filter.sql", sql.as_str()),
            ],
        )?;
    }
    let rounds = bench.rounds.max(1);
    let (mut plain_produce, mut indexed_produce) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        plain_produce.push(produce(
            &config,
            &plain,
            bench,
            keys,
            bench.records / rounds,
        )?);
        indexed_produce.push(produce(
            &config,
            &indexed,
            bench,
            keys,
            bench.records / rounds,
        )?);
    }
    let produced = Instant::now();
    wait_indexed(&admin, &indexed, bench.partitions)?;
    let caught_up = produced.elapsed().as_secs_f64();
    let (lookups, found) = lookups(&admin, &indexed, keys, bench.lookups)?;
    let view_with_index = read_view(&config, &views[0].0, bench.partitions)?;
    let view_by_scan = read_view(&config, &views[1].0, bench.partitions)?;
    let index = index_info(&admin, &indexed)?;
    if !bench.keep_topics {
        let mut names: Vec<&str> = views.iter().map(|(name, _)| name.as_str()).collect();
        names.extend([plain.as_str(), indexed.as_str()]);
        delete(&config, &names);
    }
    Ok(IndexReport {
        topic: indexed,
        records: bench.records,
        keys,
        plain_produce,
        indexed_produce,
        index_caught_up_s: Some(caught_up),
        lookups,
        found_per_lookup: found,
        index,
        view_with_index: Some(view_with_index),
        view_by_scan: Some(view_by_scan),
    })
}

/// Sends `record`, waiting while the producer's queue is full.
pub(super) fn send_waiting<K: rdkafka::message::ToBytes + ?Sized>(
    producer: &BaseProducer,
    mut record: BaseRecord<'_, K, [u8]>,
) -> Result<(), CliError> {
    loop {
        match producer.send(record) {
            Ok(()) => break,
            Err((error, back)) => {
                if !matches!(
                    error,
                    rdkafka::error::KafkaError::MessageProduction(
                        rdkafka::types::RDKafkaErrorCode::QueueFull
                    )
                ) {
                    return Err(CliError::Failed(format!("produce: {error}")));
                }
                record = back;
                producer.poll(Duration::from_millis(5));
            }
        }
    }
    producer.poll(Duration::ZERO);
    Ok(())
}

pub(super) fn failed(what: &str) -> impl Fn(rdkafka::error::KafkaError) -> CliError + '_ {
    move |error| CliError::Failed(format!("{what}: {error}"))
}

pub(super) fn block_on<T>(future: impl std::future::Future<Output = T>) -> Result<T, CliError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map(|runtime| runtime.block_on(future))
        .map_err(|e| CliError::Failed(format!("a runtime: {e}")))
}

pub(super) fn create(
    config: &ClientConfig,
    name: &str,
    partitions: i32,
    configs: &[(&str, &str)],
) -> Result<(), CliError> {
    let admin: AdminClient<DefaultClientContext> =
        config.create().map_err(failed("an admin client"))?;
    let mut topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for (key, value) in configs {
        topic = topic.set(key, value);
    }
    let results = block_on(admin.create_topics([&topic], &AdminOptions::new()))?
        .map_err(failed("create topics"))?;
    for result in results {
        result.map_err(|(topic, code)| CliError::Failed(format!("create {topic}: {code}")))?;
    }
    Ok(())
}

pub(super) fn delete(config: &ClientConfig, names: &[&str]) {
    if let Ok(admin) = config.create::<AdminClient<DefaultClientContext>>() {
        let _ = block_on(admin.delete_topics(names, &AdminOptions::new()));
    }
}

/// Writes the records as fast as the broker takes them; their rate.
fn produce(
    config: &ClientConfig,
    topic: &str,
    bench: &IndexBench,
    keys: u64,
    records: u64,
) -> Result<Rate, CliError> {
    let producer: BaseProducer = config
        .clone()
        .set("linger.ms", "5")
        .set("batch.size", "1000000")
        .set("queue.buffering.max.kbytes", "262144")
        .create()
        .map_err(failed("a producer"))?;
    let mut value = vec![0_u8; bench.message_size];
    let started = Instant::now();
    for _ in 0..records {
        let id = format!("id-{}", fastrand::u64(..keys));
        value.iter_mut().for_each(|byte| *byte = fastrand::u8(..));
        let headers = OwnedHeaders::new().insert(Header {
            key: "id",
            value: Some(id.as_bytes()),
        });
        let record = BaseRecord::<str, [u8]>::to(topic)
            .key(id.as_str())
            .payload(&value[..])
            .headers(headers);
        send_waiting(&producer, record)?;
    }
    producer
        .flush(Duration::from_secs(600))
        .map_err(failed("flush"))?;
    let seconds = started.elapsed().as_secs_f64();
    Ok(Rate {
        records_per_s: records as f64 / seconds,
        mb_per_s: (records as f64 * bench.message_size as f64) / seconds / 1e6,
    })
}

fn search(admin: &str, topic: &str, query: &str) -> Result<Value, CliError> {
    call(
        admin,
        "GET",
        &format!("/api/topics/{}/messages?{query}", percent_encoded(topic)),
        None,
        Duration::from_secs(60),
    )
}

/// Until each partition's search reads nothing past the index.
fn wait_indexed(admin: &str, topic: &str, partitions: i32) -> Result<(), CliError> {
    let deadline = Instant::now() + Duration::from_secs(3_600);
    for partition in 0..partitions {
        loop {
            let answer = search(
                admin,
                topic,
                &format!("header.id=id-0&partition={partition}"),
            )?;
            if answer["scanned_bytes"].as_u64() == Some(0) {
                break;
            }
            if Instant::now() > deadline {
                return Err(CliError::Failed(
                    "the index did not catch up in an hour".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    Ok(())
}

/// Times searches of random ids; the latencies and the records found per search.
fn lookups(admin: &str, topic: &str, keys: u64, count: u64) -> Result<(Latencies, f64), CliError> {
    let mut took = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    let mut found = 0_u64;
    for _ in 0..count.max(1) {
        let id = format!("id-{}", fastrand::u64(..keys));
        let started = Instant::now();
        let answer = search(admin, topic, &format!("header.id={id}&limit=1000"))?;
        took.push(started.elapsed());
        let messages = answer["messages"].as_array().cloned().unwrap_or_default();
        for message in &messages {
            let id_header = message["headers"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|h| h["key"] == "id")
                .and_then(|h| h["value"]["data"].as_str());
            if id_header != Some(id.as_str()) {
                return Err(CliError::Failed(format!(
                    "a search of {id} found {message}"
                )));
            }
        }
        found += messages.len() as u64;
    }
    let first = took.first().copied().unwrap_or_default();
    took.sort();
    let at = |percent: usize| {
        let i = (took.len().saturating_sub(1) * percent).div_ceil(100);
        took.get(i).copied().unwrap_or_default().as_secs_f64() * 1e3
    };
    Ok((
        Latencies {
            first_ms: first.as_secs_f64() * 1e3,
            p50_ms: at(50),
            p99_ms: at(99),
            max_ms: at(100),
        },
        found as f64 / took.len().max(1) as f64,
    ))
}

fn index_info(admin: &str, topic: &str) -> Result<Value, CliError> {
    let detail = call(
        admin,
        "GET",
        &format!("/api/topics/{}", percent_encoded(topic)),
        None,
        Duration::from_secs(60),
    )?;
    Ok(detail["index"].clone())
}

/// Reads a view from the start to its end; the records and the time taken.
fn read_view(config: &ClientConfig, view: &str, partitions: i32) -> Result<ViewRead, CliError> {
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", format!("{view}-reader"))
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("fetch.wait.max.ms", "10")
        .create()
        .map_err(failed("a consumer"))?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..partitions {
        assignment
            .add_partition_offset(view, partition, Offset::Beginning)
            .map_err(failed("assign"))?;
    }
    consumer.assign(&assignment).map_err(failed("assign"))?;
    let started = Instant::now();
    let (mut records, mut ended) = (0_u64, 0);
    while ended < partitions {
        match consumer.poll(Duration::from_secs(10)) {
            None => return Err(CliError::Failed(format!("reading {view} stalled"))),
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(_))) => ended += 1,
            Some(Err(error)) => return Err(CliError::Failed(format!("reading {view}: {error}"))),
            Some(Ok(_)) => records += 1,
        }
    }
    Ok(ViewRead {
        records,
        seconds: started.elapsed().as_secs_f64(),
    })
}
