//! `spool bench lanes`: what lanes (docs/lanes.md) cost a base consumer, against a
//! running broker. Writes the same records (`--message-size` values, lz4) into a
//! plain topic and into one where every `--lane-every`th record comes from a lane
//! producer (`client.id` `…;lane=bench`, its own batches: 1% by default). A group
//! gets a base member and a member in lane `bench`, so that the broker leaves lane
//! `bench` out of the base member's fetches (no fallback). Then reads each topic from
//! the start, as a client of no group (a plain read) and as the group's base member
//! (the lane filter: the first read fills the per-batch lane summaries, the second
//! finds them), and reports the read rates.

use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};
use serde::Serialize;

use super::bench_index::{create, delete, failed, send_waiting};
use crate::admin_api::admin_url;
use crate::error::CliError;

/// The lane the bench's lane producer and member are in.
const LANE: &str = "bench";

#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LanesBench {
    /// Records written into each topic.
    #[arg(long, default_value_t = 500_000)]
    records: u64,
    /// Bytes per value (random, so incompressible).
    #[arg(long, default_value_t = 1024)]
    message_size: usize,
    /// One record in this many is the lane's (100: 1% lane traffic).
    #[arg(long, default_value_t = 100)]
    lane_every: u64,
    #[arg(long, default_value_t = 4)]
    partitions: i32,
    /// The broker's admin API, for the lane presence in `/metrics` (default: the
    /// first broker's host, port 9644).
    #[arg(long)]
    admin_url: Option<String>,
}

#[derive(Debug, Serialize)]
pub(crate) struct LanesReport {
    records: u64,
    lane_share: f64,
    /// The topic without lanes, read by a client of no group.
    plain: Read,
    /// The topic without lanes, read by the group's base member (filtered).
    plain_as_base_member: Read,
    /// The topic with lane traffic, read by the group's base member: first (the lane
    /// summaries filled) and second (found).
    laned_first: Read,
    laned_again: Read,
    /// `laned_again` against `plain`, in records' bytes per second.
    ratio: f64,
}

#[derive(Debug, Serialize, Default)]
struct Read {
    records: u64,
    seconds: f64,
    mb_per_s: f64,
}

impl LanesReport {
    pub(crate) fn to_text(&self) -> String {
        let read = |r: &Read| {
            format!(
                "{} records in {:.2} s: {:.0} MB/s",
                r.records, r.seconds, r.mb_per_s
            )
        };
        format!(
            "lanes bench: {} records per topic, {:.1}% lane traffic\n\
             plain topic, no group:            {}\n\
             plain topic, base member:         {}\n\
             laned topic, base member (first): {}\n\
             laned topic, base member (again): {}\n\
             base member on the laned topic against a plain read: {:.0}%",
            self.records,
            self.lane_share * 100.0,
            read(&self.plain),
            read(&self.plain_as_base_member),
            read(&self.laned_first),
            read(&self.laned_again),
            self.ratio * 100.0
        )
    }
}

pub(crate) fn run(bench: &LanesBench, brokers: &str) -> Result<LanesReport, CliError> {
    let admin = admin_url(bench.admin_url.as_deref(), brokers);
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", brokers);
    let run = format!("bench-lanes-{:06x}", fastrand::u32(..0xff_ffff));
    let (plain, laned, idle) = (
        format!("{run}-plain"),
        format!("{run}-laned"),
        format!("{run}-idle"),
    );
    let group = format!("{run}-group");
    let base_client = format!("{run}-consumer");
    create(&config, &plain, bench.partitions, &[])?;
    create(&config, &laned, bench.partitions, &[])?;
    create(&config, &idle, 1, &[])?;
    let every = bench.lane_every.max(1);
    produce(&config, &plain, bench, None)?;
    let lane_records = produce(&config, &laned, bench, Some((&run, every)))?;
    let base_records = bench.records - lane_records;

    let plain_read = read(&config, &plain, bench, "bench-lanes-auditor", bench.records)?;
    // The group's members, on a topic of their own: membership is the group's.
    let _base_member = member(&config, &group, &idle, &base_client)?;
    let _lane_member = member(&config, &group, &idle, &format!("{run};lane={LANE}"))?;
    wait_for_presence(&admin, &group)?;
    let plain_filtered = read(&config, &plain, bench, &base_client, bench.records)?;
    let laned_first = read(&config, &laned, bench, &base_client, base_records)?;
    let laned_again = read(&config, &laned, bench, &base_client, base_records)?;
    delete(&config, &[plain.as_str(), laned.as_str(), idle.as_str()]);
    Ok(LanesReport {
        records: bench.records,
        lane_share: lane_records as f64 / bench.records.max(1) as f64,
        ratio: laned_again.mb_per_s / plain_read.mb_per_s.max(f64::MIN_POSITIVE),
        plain: plain_read,
        plain_as_base_member: plain_filtered,
        laned_first,
        laned_again,
    })
}

/// Writes the records, every `every`th through a lane producer when `lane` names
/// the run; how many went to the lane.
fn produce(
    config: &ClientConfig,
    topic: &str,
    bench: &LanesBench,
    lane: Option<(&str, u64)>,
) -> Result<u64, CliError> {
    let producer = |client_id: String| -> Result<BaseProducer, CliError> {
        config
            .clone()
            .set("client.id", client_id)
            .set("linger.ms", "5")
            .set("batch.size", "1000000")
            .set("compression.type", "lz4")
            .set("queue.buffering.max.kbytes", "262144")
            .create()
            .map_err(failed("a producer"))
    };
    let base = producer("bench-lanes-producer".to_owned())?;
    let laned = match lane {
        Some((run, _)) => Some(producer(format!("{run}-producer;lane={LANE}"))?),
        None => None,
    };
    let mut value = vec![0_u8; bench.message_size];
    let mut to_lane = 0;
    for index in 0..bench.records {
        value.iter_mut().for_each(|byte| *byte = fastrand::u8(..));
        let through = match (&laned, lane) {
            (Some(laned), Some((_, every))) if index % every == every - 1 => {
                to_lane += 1;
                laned
            }
            _ => &base,
        };
        let record = BaseRecord::<(), [u8]>::to(topic).payload(&value[..]);
        send_waiting(through, record)?;
    }
    for producer in std::iter::once(&base).chain(laned.as_ref()) {
        producer
            .flush(Duration::from_secs(600))
            .map_err(failed("flush"))?;
    }
    Ok(to_lane)
}

/// A member of `group` as `client_id`, subscribed to `topic` and assigned.
fn member(
    config: &ClientConfig,
    group: &str,
    topic: &str,
    client_id: &str,
) -> Result<BaseConsumer, CliError> {
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", group)
        .set("client.id", client_id)
        .set("max.poll.interval.ms", "86400000")
        .create()
        .map_err(failed("a member"))?;
    consumer.subscribe(&[topic]).map_err(failed("subscribe"))?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while consumer.assignment().map_or(0, |a| a.count()) == 0 {
        if Instant::now() > deadline {
            return Err(CliError::Failed(format!("{client_id} was not assigned")));
        }
        consumer.poll(Duration::from_millis(100));
    }
    Ok(consumer)
}

/// Until the broker knows the group's lane member and its base member's client.
fn wait_for_presence(admin: &str, group: &str) -> Result<(), CliError> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let members = format!("spool_lane_members{{group=\"{group}\",lane=\"{LANE}\"}} 1");
    let clients = format!("spool_lane_base_clients{{group=\"{group}\"}} 1");
    loop {
        let metrics = ureq::Agent::new_with_defaults()
            .get(format!("{admin}/metrics"))
            .call()
            .ok()
            .and_then(|mut answer| answer.body_mut().read_to_string().ok())
            .unwrap_or_default();
        if metrics.lines().any(|l| l == members) && metrics.lines().any(|l| l == clients) {
            // Fetches already waiting finish under the old view.
            std::thread::sleep(Duration::from_secs(1));
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(CliError::Failed(format!(
                "the broker did not see the lane member of {group} in 30 s ({admin}/metrics)"
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads `topic` from the start as `client_id` (no group) until `expected` records
/// came; the rate.
fn read(
    config: &ClientConfig,
    topic: &str,
    bench: &LanesBench,
    client_id: &str,
    expected: u64,
) -> Result<Read, CliError> {
    let consumer: BaseConsumer = config
        .clone()
        .set("client.id", client_id)
        .set("group.id", format!("{topic}-unused"))
        .set("enable.auto.commit", "false")
        .create()
        .map_err(failed("a consumer"))?;
    let mut assignment = TopicPartitionList::new();
    for partition in 0..bench.partitions {
        assignment
            .add_partition_offset(topic, partition, Offset::Beginning)
            .map_err(failed("assign"))?;
    }
    consumer.assign(&assignment).map_err(failed("assign"))?;
    let started = Instant::now();
    let mut records = 0_u64;
    while records < expected {
        match consumer.poll(Duration::from_secs(10)) {
            None => {
                return Err(CliError::Failed(format!(
                    "reading {topic} stalled at {records} of {expected} records"
                )));
            }
            Some(Err(error)) => return Err(CliError::Failed(format!("reading {topic}: {error}"))),
            Some(Ok(_)) => records += 1,
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(Read {
        records,
        seconds,
        mb_per_s: records as f64 * bench.message_size as f64 / seconds / 1e6,
    })
}
