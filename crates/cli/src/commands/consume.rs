//! `spool consume TOPIC`: print records as a template says or as JSON lines, from a
//! chosen start, alone (assigned partitions) or as a member of a group.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Duration;

use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Headers;
use rdkafka::{Message, Offset, TopicPartitionList};
use serde_json::{Value, json};

use crate::client::{CliConsumer, CliContext, ClientArgs};
use crate::commands::template::Template;
use crate::commands::topic;
use crate::error::CliError;
use crate::output::Format;
use crate::stop_signal;

#[derive(Debug, clap::Args)]
pub(crate) struct ConsumeArgs {
    topic: String,
    /// Where to start: `beginning`, `end`, an offset, or `@TIMESTAMP` in ms. With
    /// --group, where to start when the group has no committed offset (beginning or end).
    #[arg(short, long, default_value = "beginning", value_parser = parse_start)]
    offset: Start,
    /// Stop after this many records.
    #[arg(short = 'n', long)]
    num: Option<u64>,
    /// Stop when every partition is read to its end, instead of waiting for more.
    #[arg(short, long)]
    exit_at_end: bool,
    /// Read only this partition (repeatable; not with --group).
    #[arg(short, long = "partition")]
    partitions: Vec<i32>,
    /// Consume as a member of this group, committing what was written out (on exit,
    /// Ctrl-C or SIGTERM at the latest, then leaving the group).
    #[arg(short, long)]
    group: Option<String>,
    /// How each record is printed: %t %p %o %k %v %T %h %K %S (see docs/cli.md).
    #[arg(short = 'f', long, default_value = r"%v\n")]
    template: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    Beginning,
    End,
    At(i64),
    Time(i64),
}

pub(crate) fn parse_start(text: &str) -> Result<Start, String> {
    match text {
        "beginning" | "start" | "earliest" => Ok(Start::Beginning),
        "end" | "latest" => Ok(Start::End),
        _ => {
            if let Some(millis) = text.strip_prefix('@') {
                millis
                    .parse()
                    .map(Start::Time)
                    .map_err(|_| format!("`{text}`: expected @ and a timestamp in milliseconds"))
            } else {
                text.parse::<i64>()
                    .ok()
                    .filter(|offset| *offset >= 0)
                    .map(Start::At)
                    .ok_or_else(|| {
                        format!("`{text}`: expected beginning, end, an offset or @TIMESTAMP")
                    })
            }
        }
    }
}

pub(crate) async fn run(args: ConsumeArgs, client: &ClientArgs) -> Result<(), CliError> {
    let template = Template::parse(&args.template).map_err(CliError::Usage)?;
    let consumer = match &args.group {
        Some(group) => join(client, &args, group)?,
        None => assign(client, &args)?,
    };
    let mut out = Output::new(&args.topic, args.group.is_some());
    let mut line = Vec::new();
    let mut printed = 0u64;
    let mut at_end: BTreeSet<i32> = BTreeSet::new();
    let limit = args.num.unwrap_or(u64::MAX);
    let stop = stop_signal::received();
    tokio::pin!(stop);
    while printed < limit {
        let next = tokio::select! {
            () = &mut stop => break,
            next = tokio::time::timeout(Duration::from_millis(100), consumer.recv()) => next,
        };
        let message = match next {
            // Nothing for a moment: show what was printed so far.
            Err(_elapsed) => {
                out.write_out(&consumer)?;
                continue;
            }
            Ok(Err(KafkaError::PartitionEOF(partition))) => {
                at_end.insert(partition);
                if args.exit_at_end && everything_read(&consumer, &at_end) {
                    break;
                }
                continue;
            }
            Ok(Err(error)) => {
                return Err(CliError::kafka("consume", error).with_brokers(&client.brokers));
            }
            Ok(Ok(message)) => message,
        };
        at_end.remove(&message.partition());
        line.clear();
        match client.format {
            Format::Human => template.render(&message, &mut line),
            Format::Json => {
                line.extend_from_slice(record_json(&message).to_string().as_bytes());
                line.push(b'\n');
            }
        }
        out.add(&line, message.partition(), message.offset());
        printed += 1;
        if out.is_full() {
            out.write_out(&consumer)?;
        }
    }
    out.write_out(&consumer)?;
    if args.group.is_some() && printed > 0 {
        consumer
            .commit_consumer_state(CommitMode::Sync)
            .map_err(|e| CliError::kafka("commit offsets", e).with_brokers(&client.brokers))?;
    }
    // Dropping the consumer closes it: a member leaves its group at once.
    Ok(())
}

/// Records rendered but not yet written out, and where each partition's end among
/// them is. A group member stores a record's offset (for the next commit) only once
/// the record was written to stdout: a record that met a closed pipe, or that was
/// still waiting here when the command stopped, is not committed.
#[derive(Debug)]
struct Output<'a> {
    topic: &'a str,
    stores_offsets: bool,
    pending: Vec<u8>,
    /// Per partition, the offset of the last pending record.
    last: BTreeMap<i32, i64>,
}

/// Pending output past this size is written out.
const WRITE_OUT_AT: usize = 64 << 10;

impl<'a> Output<'a> {
    fn new(topic: &'a str, stores_offsets: bool) -> Output<'a> {
        Output {
            topic,
            stores_offsets,
            pending: Vec::with_capacity(WRITE_OUT_AT + 4096),
            last: BTreeMap::new(),
        }
    }

    fn add(&mut self, line: &[u8], partition: i32, offset: i64) {
        self.pending.extend_from_slice(line);
        self.last.insert(partition, offset);
    }

    fn is_full(&self) -> bool {
        self.pending.len() >= WRITE_OUT_AT
    }

    /// Writes the pending records to stdout, then, for a group member, stores their
    /// offsets.
    fn write_out(&mut self, consumer: &CliConsumer) -> Result<(), CliError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&self.pending)
            .and_then(|()| stdout.flush())
            .map_err(CliError::io("write the output"))?;
        self.pending.clear();
        if self.stores_offsets {
            for (partition, offset) in std::mem::take(&mut self.last) {
                match consumer.store_offset(self.topic, partition, offset) {
                    // A rebalance took the partition meanwhile: its new owner reads
                    // these records again.
                    Err(KafkaError::StoreOffset(RDKafkaErrorCode::State)) => {}
                    stored => stored.map_err(|e| CliError::kafka("store the offset", e))?,
                }
            }
        }
        // Written out without a group: nothing to store.
        self.last.clear();
        Ok(())
    }
}

/// Whether every assigned partition has been read to its end.
fn everything_read(consumer: &CliConsumer, at_end: &BTreeSet<i32>) -> bool {
    consumer.assignment().is_ok_and(|assignment| {
        let assigned = assignment.elements();
        !assigned.is_empty() && assigned.iter().all(|p| at_end.contains(&p.partition()))
    })
}

/// A consumer of the given (or all) partitions from the chosen start.
fn assign(client: &ClientArgs, args: &ConsumeArgs) -> Result<CliConsumer, CliError> {
    let partitions: Vec<i32> = {
        let metadata = topic::metadata(client)?;
        let all = topic::partition_ids(&metadata, &args.topic)?;
        if args.partitions.is_empty() {
            all
        } else if let Some(missing) = args.partitions.iter().find(|p| !all.contains(p)) {
            return Err(CliError::NotFound(format!(
                "{} has no partition {missing} (it has {})",
                args.topic,
                all.len()
            )));
        } else {
            args.partitions.clone()
        }
    };
    let consumer = client.consumer_reporting_ends(None, args.exit_at_end)?;
    let mut list = TopicPartitionList::new();
    for partition in &partitions {
        let offset = match args.offset {
            Start::Beginning | Start::Time(_) => Offset::Beginning,
            Start::End => Offset::End,
            Start::At(offset) => Offset::Offset(offset),
        };
        list.add_partition_offset(&args.topic, *partition, offset)
            .map_err(|e| CliError::kafka("choose the start", e))?;
    }
    if let Start::Time(millis) = args.offset {
        list.set_all_offsets(Offset::Offset(millis))
            .map_err(|e| CliError::kafka("look up offsets by time", e))?;
        list = consumer
            .offsets_for_times(list, client.timeout())
            .map_err(|e| {
                CliError::kafka("look up offsets by time", e).with_brokers(&client.brokers)
            })?;
        if let Some(failed) = list.elements().iter().find(|e| e.error().is_err()) {
            return Err(CliError::Failed(format!(
                "cannot look up partition {} by time: {:?}",
                failed.partition(),
                failed.error()
            )));
        }
    }
    consumer
        .assign(&list)
        .map_err(|e| CliError::kafka("assign partitions", e))?;
    Ok(consumer)
}

/// A group member subscribed to the topic.
fn join(client: &ClientArgs, args: &ConsumeArgs, group: &str) -> Result<CliConsumer, CliError> {
    if !args.partitions.is_empty() {
        return Err(CliError::Usage(
            "--partition and --group do not go together: a group assigns partitions itself"
                .to_string(),
        ));
    }
    let reset = match args.offset {
        Start::Beginning => "earliest",
        Start::End => "latest",
        Start::At(_) | Start::Time(_) => {
            return Err(CliError::Usage(
                "with --group, --offset says where to start without a committed offset: beginning or end (move a group with `spool group seek`)".to_string(),
            ));
        }
    };
    topic::partition_ids(&topic::metadata(client)?, &args.topic)?;
    let mut config = client.config();
    config
        .set("group.id", group)
        .set("enable.auto.commit", "true")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", reset)
        .set("enable.partition.eof", args.exit_at_end.to_string());
    let consumer: CliConsumer = config
        .create_with_context(CliContext)
        .map_err(|e| CliError::kafka("create a consumer", e))?;
    consumer
        .subscribe(&[&args.topic])
        .map_err(|e| CliError::kafka("subscribe", e))?;
    Ok(consumer)
}

/// Bytes as a JSON string when they are UTF-8, else as `{"hex": "..."}`.
fn bytes_json(bytes: Option<&[u8]>) -> Value {
    match bytes {
        None => Value::Null,
        Some(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => Value::String(text.to_string()),
            Err(_) => {
                json!({ "hex": bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() })
            }
        },
    }
}

pub(crate) fn record_json<M: Message>(message: &M) -> Value {
    let headers: Vec<Value> = message
        .headers()
        .map(|headers| {
            headers
                .iter()
                .map(|h| json!({ "key": h.key, "value": bytes_json(h.value) }))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "topic": message.topic(),
        "partition": message.partition(),
        "offset": message.offset(),
        "timestamp": message.timestamp().to_millis(),
        "key": bytes_json(message.key()),
        "value": bytes_json(message.payload()),
        "headers": headers,
    })
}
