//! The REST API's message browser: up to `limit` records of one partition from an
//! offset, a time, or the newest, with keys, values and headers as UTF-8 or base64.
//! Reads go through the same partition reads as Fetch (read_uncommitted, up to the
//! high watermark); control batches (transaction markers) are left out. In a
//! cluster, a partition another broker leads is read from what the catalogue has
//! committed, straight from object storage. A view's page holds its source's records
//! that match the view's filter. This is
//! per-record work, for a person looking, never on the Kafka path.

use std::sync::Arc;

use base64::Engine;
use spool_admin::{
    ApiError, Bytes, Encoding, FoundMessages, Header, Message, MessagePage, MessageQuery,
    MessageSearch, MessageStart,
};
use spool_model::{Offset, Timestamp, TimestampType};
use spool_protocol::batch::BatchFrames;
use spool_protocol::keyed::BatchRecords;

use super::kafka_error;
use crate::errors::code;
use crate::partitions::{PartitionError, PartitionHandle, on_blocking_pool};
use crate::shared::Shared;
use crate::topics::Topic;
use spool_metadata::PartitionKey;
use spool_shared_storage::SharedStorage;
use spool_views::filter::Filter;

/// Bytes of batches one read takes.
const READ_BYTES: u64 = 1 << 20;
/// Bytes of batches a page reads at most, whatever `limit` says.
const PAGE_READ_BYTES: usize = 16 << 20;
/// Keys, values and headers a page returns at most: a page stops after the record
/// that passes it.
const PAGE_PAYLOAD_BYTES: usize = 4 << 20;
/// The most a compressed batch may inflate to.
const MAX_INFLATED_BATCH: usize = 256 << 20;

pub(super) async fn read(
    shared: &Arc<Shared>,
    query: MessageQuery,
) -> Result<MessagePage, ApiError> {
    let topic = shared.topics().get(&query.topic).ok_or_else(|| {
        kafka_error(
            code::UNKNOWN_TOPIC_OR_PARTITION,
            format!("topic {} does not exist", query.topic),
        )
    })?;
    if !topic.has_partition(query.partition) {
        return Err(kafka_error(
            code::UNKNOWN_TOPIC_OR_PARTITION,
            format!(
                "topic {} has partitions 0 to {}, not {}",
                query.topic,
                topic.record.partitions - 1,
                query.partition
            ),
        ));
    }
    let shared = shared.clone();
    // A view shows its source's records that match its filter.
    let filter = topic.view.as_ref().map(|view| view.filter.clone());
    let data = shared.partitions().source_of(&topic).ok_or_else(|| {
        kafka_error(
            code::UNKNOWN_TOPIC_OR_PARTITION,
            format!("the source of view {} does not exist", query.topic),
        )
    })?;
    let led = shared
        .partitions()
        .open(topic.clone(), query.partition, -1)
        .await;
    on_blocking_pool(move || {
        let source = match led {
            Ok(partition) => Source::Led(partition),
            Err(PartitionError::NotLeader) => committed_source(&shared, &data, query.partition)
                .ok_or_else(|| {
                    partition_error(&shared, &topic, query.partition, &PartitionError::NotLeader)
                })?,
            Err(error) => return Err(partition_error(&shared, &topic, query.partition, &error)),
        };
        read_page(&source, &query, filter.as_deref())
    })
    .await
    .map_err(|error| kafka_error(error.code(), error.to_string()))?
}

/// Where a page's batches come from.
enum Source {
    /// A partition this broker serves.
    Led(PartitionHandle),
    /// Shared-storage mode, a partition another broker leads: what the catalogue has
    /// committed, read from objects.
    Committed {
        storage: Arc<SharedStorage>,
        key: PartitionKey,
        log_start: i64,
        high_watermark: i64,
    },
}

/// A partition another broker leads, read from what is committed. Blocking.
fn committed_source(shared: &Shared, topic: &Topic, index: i32) -> Option<Source> {
    let state = super::bounds::committed_state(shared, topic, index)?;
    Some(Source::Committed {
        storage: shared.storage().cloned()?,
        key: topic.partition_key(index),
        log_start: state.log_start,
        high_watermark: state.high_watermark,
    })
}

impl Source {
    /// The log start and the high watermark.
    fn bounds(&self) -> (i64, i64) {
        match self {
            Source::Led(partition) => (
                partition.log_start().0,
                partition.log.offsets().high_watermark.0,
            ),
            Source::Committed {
                log_start,
                high_watermark,
                ..
            } => (*log_start, *high_watermark),
        }
    }

    /// The first offset at or after `time`; `None` if every record is older.
    fn offset_for_timestamp(&self, time: Timestamp) -> Result<Option<i64>, PartitionError> {
        let found = match self {
            Source::Led(partition) => partition.offset_for_timestamp(time)?,
            Source::Committed {
                storage,
                key,
                log_start,
                ..
            } => {
                let (reader, key, log_start) = (storage.reader.clone(), *key, Offset(*log_start));
                storage.wait_for(async move {
                    reader.offset_for_timestamp(key, time, log_start).await
                })??
            }
        };
        Ok(found.map(|(offset, _)| offset.0))
    }

    /// Whole batches from the one holding `offset`, about [`READ_BYTES`] of them.
    fn read(&self, offset: i64) -> Result<Vec<u8>, ApiError> {
        let failed = |error: PartitionError| kafka_error(error.code(), error.to_string());
        match self {
            Source::Led(partition) => partition
                .read_bytes(Offset(offset), READ_BYTES)
                .map_err(failed),
            Source::Committed {
                storage,
                key,
                high_watermark,
                ..
            } => {
                let (reader, key, end) = (storage.reader.clone(), *key, Offset(*high_watermark));
                let read = storage
                    .wait_for(async move {
                        reader
                            .read(key, Offset(offset), end, READ_BYTES, true)
                            .await
                    })
                    .and_then(|read| read)
                    .map_err(|error| failed(error.into()))?;
                Ok(read.batches.concat())
            }
        }
    }
}

/// The error for a partition this broker cannot read, naming its leader when
/// another broker leads it.
fn partition_error(shared: &Shared, topic: &Topic, index: i32, error: &PartitionError) -> ApiError {
    let mut message = format!("partition {}-{index}: {error}", topic.record.name);
    if let Some(hint) = shared.leader_hint(topic, index) {
        let leader = shared
            .hinted_brokers([hint.leader], &shared.first_listener())
            .into_iter()
            .next()
            .map_or_else(String::new, |b| format!(" ({}:{})", b.host, b.port));
        message.push_str(&format!("; broker {}{leader} leads it", hint.leader));
    }
    kafka_error(error.code(), message)
}

/// Blocking: reads the partition's files or objects.
fn read_page(
    source: &Source,
    query: &MessageQuery,
    filter: Option<&Filter>,
) -> Result<MessagePage, ApiError> {
    let (log_start, high_watermark) = source.bounds();
    let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
    let start = match query.start {
        MessageStart::Offset(offset) if offset < log_start || offset > high_watermark => {
            return Err(kafka_error(
                code::OFFSET_OUT_OF_RANGE,
                format!(
                    "offset {offset}: the partition holds offsets {log_start} to {high_watermark} (exclusive)"
                ),
            ));
        }
        MessageStart::Offset(offset) => offset,
        MessageStart::Newest => high_watermark.saturating_sub(limit).max(log_start),
        MessageStart::Timestamp(time) => source
            .offset_for_timestamp(Timestamp(time))
            .map_err(|error| kafka_error(error.code(), error.to_string()))?
            .unwrap_or(high_watermark),
    };
    let mut page = MessagePage {
        messages: Vec::new(),
        next_offset: start,
        log_start,
        high_watermark,
    };
    let (mut read_bytes, mut payload) = (0usize, 0usize);
    while page.messages.len() < query.limit
        && page.next_offset < high_watermark
        && read_bytes < PAGE_READ_BYTES
        && payload < PAGE_PAYLOAD_BYTES
    {
        let bytes = source.read(page.next_offset)?;
        if bytes.is_empty() {
            break;
        }
        read_bytes += bytes.len();
        let before = page.next_offset;
        for frame in BatchFrames::new(&bytes) {
            let (header, batch) = frame.map_err(|error| corrupt(&error))?;
            let batch_end = header.last_offset().0 + 1;
            if header.is_control() {
                page.next_offset = page.next_offset.max(batch_end);
                continue;
            }
            let records = BatchRecords::read(batch, MAX_INFLATED_BATCH).map_err(|e| corrupt(&e))?;
            for record in records.records().map_err(|e| corrupt(&e))? {
                let offset = header.base_offset.0 + record.offset_delta;
                if offset < page.next_offset || offset >= high_watermark {
                    continue;
                }
                let timestamp = match header.timestamp_type() {
                    TimestampType::LogAppendTime => header.max_timestamp.0,
                    TimestampType::CreateTime => header.base_timestamp.0 + record.timestamp_delta,
                };
                let headers = record
                    .headers()
                    .ok_or_else(|| corrupt(&"a record's headers"))?;
                if filter.is_some_and(|filter| !filter.matches(&headers)) {
                    continue;
                }
                payload += record.key.map_or(0, <[u8]>::len) + record.value.map_or(0, <[u8]>::len);
                page.messages.push(Message {
                    partition: query.partition,
                    offset,
                    timestamp,
                    timestamp_type: format!("{:?}", header.timestamp_type()),
                    key: record.key.map(|key| shown(key, query.encoding)),
                    value: record.value.map(|value| shown(value, query.encoding)),
                    headers: headers
                        .into_iter()
                        .map(|(key, value)| Header {
                            key: String::from_utf8_lossy(key).into_owned(),
                            value: value.map(|value| shown(value, query.encoding)),
                        })
                        .collect(),
                });
                page.next_offset = offset + 1;
                if page.messages.len() == query.limit || payload >= PAGE_PAYLOAD_BYTES {
                    return Ok(page);
                }
            }
            // Records removed by compaction leave gaps: the batch's end is next.
            page.next_offset = page.next_offset.max(batch_end.min(high_watermark));
        }
        if page.next_offset == before {
            break;
        }
    }
    Ok(page)
}

fn corrupt(error: &dyn std::fmt::Display) -> ApiError {
    kafka_error(
        code::CORRUPT_MESSAGE,
        format!("a stored batch cannot be read: {error}"),
    )
}

/// A search of a topic's index (docs/index.md), its records shown as the message
/// browser shows them.
pub(super) async fn find(
    shared: &Arc<Shared>,
    search: MessageSearch,
) -> Result<FoundMessages, ApiError> {
    let encoding = search.encoding;
    let found = crate::index::search::find(
        shared,
        crate::index::search::Search {
            topic: search.topic,
            field: search.field,
            value: search.value,
            partition: search.partition,
            from: search.from.unwrap_or(i64::MIN),
            to: search.to.unwrap_or(i64::MAX),
            limit: search.limit,
            newest_first: search.newest_first,
        },
    )
    .await
    .map_err(|error| kafka_error(error.code, error.message))?;
    Ok(FoundMessages {
        messages: found
            .records
            .into_iter()
            .map(|record| Message {
                partition: record.partition,
                offset: record.offset,
                timestamp: record.timestamp,
                timestamp_type: format!("{:?}", record.timestamp_type),
                key: record.key.map(|key| shown(&key, encoding)),
                value: record.value.map(|value| shown(&value, encoding)),
                headers: record
                    .headers
                    .into_iter()
                    .map(|(key, value)| Header {
                        key: String::from_utf8_lossy(&key).into_owned(),
                        value: value.map(|value| shown(&value, encoding)),
                    })
                    .collect(),
            })
            .collect(),
        chunks_read: found.chunks_read,
        batches_read: found.batches_read,
        scanned_bytes: found.scanned_bytes,
    })
}

/// Bytes as the query asked: UTF-8 text when they are UTF-8 (and base64 was not
/// asked for), base64 otherwise.
fn shown(bytes: &[u8], encoding: Encoding) -> Bytes {
    match (encoding, std::str::from_utf8(bytes)) {
        (Encoding::Auto, Ok(text)) => Bytes {
            encoding: "utf8".to_owned(),
            data: text.to_owned(),
        },
        _ => Bytes {
            encoding: "base64".to_owned(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        },
    }
}
