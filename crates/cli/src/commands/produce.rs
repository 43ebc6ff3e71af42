//! `spool produce TOPIC`: one record per input line, from stdin or a file.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use serde::Serialize;
use spool_loadgen::Compression;
use spool_loadgen::workload::parse_property;

use crate::client::{CliContext, ClientArgs};
use crate::error::{CliError, is_unreachable};
use crate::output::Format;

/// Deliveries awaited at most at once; beyond it, the oldest is awaited first.
const IN_FLIGHT: usize = 50_000;

#[derive(Debug, clap::Args)]
pub(crate) struct ProduceArgs {
    topic: String,
    /// Read records from this file instead of stdin.
    #[arg(short, long)]
    file: Option<PathBuf>,
    /// Split each line at the first SEP into key and value (e.g. `-K :`).
    #[arg(short = 'K', long, value_name = "SEP")]
    key_separator: Option<String>,
    /// A header added to every record (repeatable).
    #[arg(short = 'H', long = "header", value_name = "KEY=VALUE", value_parser = parse_property)]
    headers: Vec<(String, String)>,
    /// Send every record to this partition [default: by key, murmur2 as the Java client].
    #[arg(short, long)]
    partition: Option<i32>,
    /// Compression codec.
    #[arg(short = 'z', long, value_enum, default_value_t = Compression::None)]
    compression: Compression,
    /// Acknowledgements to wait for: all, 1 (the leader) or 0 (none).
    #[arg(long, value_parser = ["all", "1", "0"], default_value = "all")]
    acks: String,
    /// Hold every record this long before consumers see it (`30s`, `5m`, `2h`,
    /// `1500ms`): a `spool.delay-ms` header, for topics with
    /// `delivery.delay.enable=true` (see docs/delayed-delivery.md).
    #[arg(long, value_name = "DURATION", value_parser = parse_delay)]
    delay: Option<u64>,
    /// Print the partition and offset of every record.
    #[arg(short, long)]
    verbose: bool,
}

/// A delay as milliseconds: a whole number with `ms`, `s`, `m`, `h` or `d`.
fn parse_delay(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text}: expected a number with a unit, e.g. 30s"))?;
    let unit_ms = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(format!("{text}: the unit is ms, s, m, h or d")),
    };
    number
        .checked_mul(unit_ms)
        .ok_or_else(|| format!("{text}: too long"))
}

#[derive(Debug, Serialize)]
struct Delivered {
    partition: i32,
    offset: i64,
}

#[derive(Debug, Serialize)]
struct Summary<'a> {
    topic: &'a str,
    records: u64,
    failed: u64,
}

/// Counts deliveries and prints them as they come, in input order.
struct Deliveries<'a> {
    args: &'a ProduceArgs,
    format: Format,
    pending: VecDeque<DeliveryFuture>,
    delivered: u64,
    failed: u64,
    first_error: Option<KafkaError>,
}

impl std::fmt::Debug for Deliveries<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliveries")
            .field("pending", &self.pending.len())
            .field("delivered", &self.delivered)
            .field("failed", &self.failed)
            .finish()
    }
}

impl Deliveries<'_> {
    async fn await_oldest(&mut self) {
        let Some(future) = self.pending.pop_front() else {
            return;
        };
        match future.await {
            Ok(Ok(delivery)) => {
                self.delivered += 1;
                if self.args.verbose {
                    match self.format {
                        Format::Json => println!(
                            "{}",
                            serde_json::json!(Delivered {
                                partition: delivery.partition,
                                offset: delivery.offset
                            })
                        ),
                        Format::Human => println!(
                            "{}[{}]@{}",
                            self.args.topic, delivery.partition, delivery.offset
                        ),
                    }
                }
            }
            Ok(Err((error, _))) => self.fail(error),
            Err(_canceled) => self.fail(KafkaError::Canceled),
        }
    }

    fn fail(&mut self, error: KafkaError) {
        self.failed += 1;
        self.first_error.get_or_insert(error);
    }
}

pub(crate) async fn run(args: ProduceArgs, client: &ClientArgs) -> Result<(), CliError> {
    if args.delay.is_some() {
        check_delays_held(client, &args.topic).await?;
    }
    let mut config = client.config();
    config
        .set("compression.codec", args.compression.codec())
        .set("acks", &args.acks)
        .set("partitioner", "murmur2_random")
        .set("linger.ms", "5")
        .set(
            "message.timeout.ms",
            client.timeout().as_millis().to_string(),
        );
    let producer: FutureProducer<CliContext> = config
        .create_with_context(CliContext)
        .map_err(|e| CliError::kafka("create a producer", e))?;
    let (input, progress): (Box<dyn Read>, ProgressBar) = match &args.file {
        Some(path) => {
            let file = std::fs::File::open(path)
                .map_err(CliError::io(format!("open {}", path.display())))?;
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            let bar = ProgressBar::new(size).with_style(
                ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            (Box::new(bar.wrap_read(file)), bar)
        }
        None => (Box::new(std::io::stdin().lock()), ProgressBar::hidden()),
    };
    let delay = args
        .delay
        .map(|ms| ("spool.delay-ms".to_owned(), ms.to_string()));
    let headers = args
        .headers
        .iter()
        .chain(&delay)
        .fold(OwnedHeaders::new(), |headers, (k, v)| {
            headers.insert(Header {
                key: k,
                value: Some(v),
            })
        });
    let mut deliveries = Deliveries {
        args: &args,
        format: client.format,
        pending: VecDeque::new(),
        delivered: 0,
        failed: 0,
        first_error: None,
    };
    for line in BufReader::new(input).split(b'\n') {
        let line = line.map_err(CliError::io("read the input"))?;
        let (key, value) = split_key(&line, args.key_separator.as_deref());
        let mut record = FutureRecord::<[u8], [u8]>::to(&args.topic)
            .payload(value)
            .headers(headers.clone());
        if let Some(key) = key {
            record = record.key(key);
        }
        if let Some(partition) = args.partition {
            record = record.partition(partition);
        }
        loop {
            match producer.send_result(record) {
                Ok(future) => {
                    deliveries.pending.push_back(future);
                    break;
                }
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                    record = back;
                    if deliveries.pending.is_empty() {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    } else {
                        deliveries.await_oldest().await;
                    }
                }
                // Refused before sending (too large, no such partition): counted as
                // failed, and the next record is tried.
                Err((error, _)) => {
                    deliveries.fail(error);
                    break;
                }
            }
        }
        if deliveries.pending.len() >= IN_FLIGHT {
            deliveries.await_oldest().await;
        }
    }
    while !deliveries.pending.is_empty() {
        deliveries.await_oldest().await;
    }
    progress.finish_and_clear();
    let summary = Summary {
        topic: &args.topic,
        records: deliveries.delivered,
        failed: deliveries.failed,
    };
    match client.format {
        Format::Json if !args.verbose => crate::output::print_json(&summary),
        _ => eprintln!(
            "produced {} records to {}{}",
            summary.records,
            summary.topic,
            if summary.failed > 0 {
                format!(", {} failed", summary.failed)
            } else {
                String::new()
            }
        ),
    }
    match deliveries.first_error {
        None => Ok(()),
        // Nothing got through for want of a broker: exit 4, as documented.
        Some(error) if deliveries.delivered == 0 && is_unreachable(&error) => {
            Err(CliError::kafka("produce", error).with_brokers(&client.brokers))
        }
        Some(error) => Err(CliError::Failed(format!(
            "{} of {} records were not produced; the first error: {error}",
            deliveries.failed,
            deliveries.failed + deliveries.delivered
        ))),
    }
}

/// Refuses `--delay` to a topic that would deliver the records at once: one without
/// `delivery.delay.enable=true` (or one that does not exist yet, which would be
/// created without it).
async fn check_delays_held(client: &ClientArgs, topic: &str) -> Result<(), CliError> {
    let metadata = super::topic::metadata(client)?;
    if let Err(CliError::NotFound(_)) = super::topic::partition_ids(&metadata, topic) {
        return Err(CliError::NotFound(format!(
            "topic {topic} does not exist, and --delay needs one that holds delayed records: create it with `spool topic create {topic} -c delivery.delay.enable=true`"
        )));
    }
    let enabled = super::topic::config_value(client, topic, "delivery.delay.enable").await?;
    if enabled.as_deref() == Some("true") {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "{topic} would deliver the records at once: it does not hold delayed records (delivery.delay.enable is not true). Set it with `spool topic alter-config {topic} --set delivery.delay.enable=true`, or produce without --delay"
    )))
}

/// Splits a line into key and value at the first separator; no separator in the line
/// means no key.
fn split_key<'a>(line: &'a [u8], separator: Option<&str>) -> (Option<&'a [u8]>, &'a [u8]) {
    let Some(separator) = separator.map(str::as_bytes).filter(|s| !s.is_empty()) else {
        return (None, line);
    };
    match line
        .windows(separator.len())
        .position(|window| window == separator)
    {
        Some(at) => (
            line.get(..at),
            line.get(at + separator.len()..).unwrap_or_default(),
        ),
        None => (None, line),
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_delay, split_key};

    #[test]
    fn delays_read_with_their_unit() {
        assert_eq!(parse_delay("1500ms"), Ok(1_500));
        assert_eq!(parse_delay("30s"), Ok(30_000));
        assert_eq!(parse_delay("2h"), Ok(7_200_000));
        assert!(parse_delay("30").is_err(), "a unit is needed");
        assert!(parse_delay("soon").is_err());
        assert!(parse_delay("99999999999999999999d").is_err());
    }

    #[test]
    fn keys_split_at_the_first_separator() {
        assert_eq!(
            split_key(b"k::v::w", Some("::")),
            (Some(&b"k"[..]), &b"v::w"[..])
        );
        assert_eq!(split_key(b"value", Some(":")), (None, &b"value"[..]));
        assert_eq!(split_key(b"a:b", None), (None, &b"a:b"[..]));
        assert_eq!(split_key(b":v", Some(":")), (Some(&b""[..]), &b"v"[..]));
    }
}
