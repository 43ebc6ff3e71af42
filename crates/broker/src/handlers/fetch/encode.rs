//! The Fetch response, encoded by hand around the stored records.
//!
//! `kafka-protocol` encodes records from one in-memory buffer; Spool's records are
//! byte ranges of segment files that go to the socket with `sendfile`. So this module
//! writes the response's fields itself (v4–v16 layout: Kafka's `FetchResponse.json`)
//! and hands the records to the [`ResponseWriter`] as file ranges. The test decodes
//! every version with `kafka-protocol` to prove the layout.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use kafka_protocol::messages::{ApiKey, TopicName};
use spool_log::{AbortedTxn, ReadChunk};
use spool_metadata::BrokerRecord;
use uuid::Uuid;

use crate::leader_hint::LeaderHint;
use crate::metrics::BrokerMetrics;
use crate::response::ResponseWriter;
use crate::topics::Topic;

/// The first version with compact arrays, compact strings and tagged fields.
const FLEXIBLE: i16 = 12;
/// The first version naming topics by id.
const TOPIC_IDS: i16 = 13;
/// The first version with the leaders' endpoints (KIP-951).
const NODE_ENDPOINTS: i16 = 16;

/// A Fetch response body before encoding.
#[derive(Debug, Default)]
pub(crate) struct FetchBody {
    pub(crate) topics: Vec<TopicOut>,
    /// The brokers named as leaders of refused partitions, with their addresses.
    pub(crate) leaders: Vec<BrokerRecord>,
    /// A consumer over its quota: how long it is throttled (KIP-219).
    pub(crate) throttle_time_ms: i32,
    /// The time the request spent reading (not waiting for data).
    pub(crate) busy: std::time::Duration,
}

#[derive(Debug)]
pub(crate) struct TopicOut {
    /// The topic as the request named it: by name before v13, by id from v13 on.
    pub(crate) name: TopicName,
    pub(crate) id: Uuid,
    /// The topic, when it exists: its id and name for the per-topic metrics.
    pub(crate) known: Option<Arc<Topic>>,
    pub(crate) partitions: Vec<PartitionOut>,
}

#[derive(Debug)]
pub(crate) struct PartitionOut {
    pub(crate) index: i32,
    pub(crate) error: i16,
    pub(crate) high_watermark: i64,
    pub(crate) last_stable: i64,
    pub(crate) log_start: i64,
    /// read_committed: the aborted transactions with records in `records`.
    pub(crate) aborted: Vec<AbortedTxn>,
    /// Whole batches; none for a partition with an error. Never sent as null:
    /// librdkafka drops a whole response that has null records (Kafka sends empty
    /// ones too).
    pub(crate) records: Vec<ReadChunk>,
    /// Refused because another broker leads it: that broker (KIP-951).
    pub(crate) leader: Option<LeaderHint>,
    /// KIP-392 (v11+): the broker the consumer is to fetch this partition from
    /// instead (one of its rack); -1 for none.
    pub(crate) preferred_replica: i32,
}

impl PartitionOut {
    /// A partition answered with only an error.
    pub(crate) fn error(index: i32, error: i16) -> PartitionOut {
        PartitionOut {
            index,
            error,
            high_watermark: -1,
            last_stable: -1,
            log_start: -1,
            aborted: Vec::new(),
            records: Vec::new(),
            leader: None,
            preferred_replica: -1,
        }
    }
}

impl FetchBody {
    /// The bytes of records returned.
    pub(crate) fn bytes(&self) -> u64 {
        self.topics
            .iter()
            .flat_map(|topic| &topic.partitions)
            .flat_map(|partition| &partition.records)
            .map(ReadChunk::len)
            .sum()
    }

    /// Counts the bytes returned per topic and the partitions' error codes.
    pub(crate) fn count(&self, metrics: &BrokerMetrics) {
        for topic in &self.topics {
            let bytes: u64 = topic
                .partitions
                .iter()
                .flat_map(|partition| &partition.records)
                .map(ReadChunk::len)
                .sum();
            if let Some(known) = topic.known.as_ref().filter(|_| bytes > 0) {
                metrics.topic(known.record.id, known.record.name.as_str(), |counters| {
                    counters.bytes_out.inc_by(bytes);
                });
            }
            for partition in topic.partitions.iter().filter(|p| p.error != 0) {
                metrics.error(ApiKey::Fetch, partition.error);
            }
        }
    }
}

/// Why a body could not be encoded.
#[derive(Debug, thiserror::Error)]
#[error("cannot encode the fetch response: {0}")]
pub(crate) struct EncodeError(&'static str);

impl FetchBody {
    /// Writes the body (after the response header) into `out`.
    pub(crate) fn encode(&self, version: i16, out: &mut ResponseWriter) -> Result<(), EncodeError> {
        let flexible = version >= FLEXIBLE;
        let buf = out.buffer();
        buf.put_i32(self.throttle_time_ms);
        if version >= 7 {
            buf.put_i16(0); // top-level error_code
            buf.put_i32(0); // session_id: no fetch session (KIP-227 allows it)
        }
        put_array_len(out, flexible, self.topics.len())?;
        for topic in &self.topics {
            if version >= TOPIC_IDS {
                out.buffer().put_slice(topic.id.as_bytes());
            } else {
                put_string(out, flexible, topic.name.0.as_str())?;
            }
            put_array_len(out, flexible, topic.partitions.len())?;
            for partition in &topic.partitions {
                encode_partition(partition, version, out)?;
            }
            put_no_tags(out, flexible);
        }
        if version >= NODE_ENDPOINTS && !self.leaders.is_empty() {
            // Tagged field 0: the node endpoints.
            let endpoints = node_endpoints(&self.leaders)?;
            let len =
                u32::try_from(endpoints.len()).map_err(|_| EncodeError("too many endpoints"))?;
            let buf = out.buffer();
            put_uvarint(buf, 1);
            put_uvarint(buf, 0);
            put_uvarint(buf, len);
            buf.put_slice(&endpoints);
        } else {
            put_no_tags(out, flexible);
        }
        Ok(())
    }
}

/// The NodeEndpoints array (compact, flexible structs).
fn node_endpoints(brokers: &[BrokerRecord]) -> Result<BytesMut, EncodeError> {
    let mut buf = BytesMut::new();
    let count = u32::try_from(brokers.len()).map_err(|_| EncodeError("too many endpoints"))?;
    put_uvarint(&mut buf, count + 1);
    for broker in brokers {
        buf.put_i32(broker.node_id);
        put_compact_string(&mut buf, Some(&broker.host))?;
        buf.put_i32(broker.port);
        put_compact_string(&mut buf, broker.rack.as_deref())?;
        put_uvarint(&mut buf, 0);
    }
    Ok(buf)
}

/// A compact (nullable) string.
fn put_compact_string(buf: &mut BytesMut, value: Option<&str>) -> Result<(), EncodeError> {
    let Some(value) = value else {
        put_uvarint(buf, 0);
        return Ok(());
    };
    let len = u32::try_from(value.len()).map_err(|_| EncodeError("string too long"))?;
    put_uvarint(buf, len + 1);
    buf.put_slice(value.as_bytes());
    Ok(())
}

fn encode_partition(
    partition: &PartitionOut,
    version: i16,
    out: &mut ResponseWriter,
) -> Result<(), EncodeError> {
    let flexible = version >= FLEXIBLE;
    let buf = out.buffer();
    buf.put_i32(partition.index);
    buf.put_i16(partition.error);
    buf.put_i64(partition.high_watermark);
    buf.put_i64(partition.last_stable);
    if version >= 5 {
        buf.put_i64(partition.log_start);
    }
    put_array_len(out, flexible, partition.aborted.len())?;
    for aborted in &partition.aborted {
        let buf = out.buffer();
        buf.put_i64(aborted.producer_id);
        buf.put_i64(aborted.first_offset.0);
        put_no_tags(out, flexible);
    }
    if version >= 11 {
        out.buffer().put_i32(partition.preferred_replica);
    }
    let len: u64 = partition.records.iter().map(ReadChunk::len).sum();
    let len = i32::try_from(len).map_err(|_| EncodeError("records too large"))?;
    if flexible {
        put_uvarint(out.buffer(), len.unsigned_abs() + 1);
    } else {
        out.buffer().put_i32(len);
    }
    for chunk in &partition.records {
        out.push_chunk(chunk);
    }
    match partition.leader {
        Some(hint) if flexible => {
            // Tagged field 1: the current leader, a flexible struct of two int32s.
            let buf = out.buffer();
            put_uvarint(buf, 1);
            put_uvarint(buf, 1);
            put_uvarint(buf, 9);
            buf.put_i32(hint.leader);
            buf.put_i32(hint.epoch);
            put_uvarint(buf, 0);
        }
        _ => put_no_tags(out, flexible),
    }
    Ok(())
}

fn put_array_len(out: &mut ResponseWriter, flexible: bool, len: usize) -> Result<(), EncodeError> {
    let len = u32::try_from(len).map_err(|_| EncodeError("array too long"))?;
    if flexible {
        put_uvarint(out.buffer(), len + 1);
    } else {
        let len = i32::try_from(len).map_err(|_| EncodeError("array too long"))?;
        out.buffer().put_i32(len);
    }
    Ok(())
}

fn put_no_tags(out: &mut ResponseWriter, flexible: bool) {
    if flexible {
        put_uvarint(out.buffer(), 0);
    }
}

fn put_string(out: &mut ResponseWriter, flexible: bool, value: &str) -> Result<(), EncodeError> {
    if flexible {
        let len = u32::try_from(value.len()).map_err(|_| EncodeError("string too long"))?;
        put_uvarint(out.buffer(), len + 1);
    } else {
        let len = i16::try_from(value.len()).map_err(|_| EncodeError("string too long"))?;
        out.buffer().put_i16(len);
    }
    out.buffer().put_slice(value.as_bytes());
    Ok(())
}

/// Kafka's unsigned varint: seven bits at a time, low first, high bit = more follows.
/// (`kafka-protocol` keeps its encoder private.)
fn put_uvarint(buf: &mut impl BufMut, mut value: u32) {
    loop {
        let [low, ..] = value.to_le_bytes();
        value >>= 7;
        if value == 0 {
            buf.put_u8(low & 0x7f);
            return;
        }
        buf.put_u8(low | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use bytes::{Buf, Bytes};
    use kafka_protocol::messages::FetchResponse;
    use kafka_protocol::protocol::{Decodable, StrBytes};
    use spool_store::{MemoryStore, OpenMode, Store, StoreFile};

    use super::*;

    fn file_with(bytes: &[u8]) -> Arc<dyn StoreFile> {
        let store = MemoryStore::new();
        let file = store.open(Path::new("segment"), OpenMode::Create).unwrap();
        file.write_at(bytes, 0).unwrap();
        file
    }

    fn body() -> FetchBody {
        let file = file_with(b"....file-records....");
        let big = Bytes::from(vec![7u8; 100 * 1024]);
        let refused = PartitionOut {
            leader: Some(LeaderHint {
                leader: 2,
                epoch: 7,
            }),
            ..PartitionOut::error(4, 6)
        };
        FetchBody {
            topics: vec![
                TopicOut {
                    name: TopicName(StrBytes::from_static_str("orders")),
                    id: ORDERS,
                    known: None,
                    partitions: vec![
                        PartitionOut {
                            index: 0,
                            error: 0,
                            high_watermark: 42,
                            last_stable: 42,
                            log_start: 3,
                            aborted: Vec::new(),
                            leader: None,
                            preferred_replica: -1,
                            records: vec![
                                ReadChunk::Memory(Bytes::from_static(b"memory-first|")),
                                ReadChunk::File {
                                    file,
                                    position: 4,
                                    len: 12,
                                },
                                ReadChunk::Memory(big),
                            ],
                        },
                        PartitionOut {
                            index: 1,
                            error: 0,
                            high_watermark: 0,
                            last_stable: 0,
                            log_start: 0,
                            aborted: Vec::new(),
                            records: Vec::new(),
                            leader: None,
                            preferred_replica: 4,
                        },
                        PartitionOut::error(9, 3),
                        refused,
                    ],
                },
                TopicOut {
                    name: TopicName(StrBytes::from_static_str("unknown")),
                    id: Uuid::nil(),
                    known: None,
                    partitions: vec![PartitionOut::error(0, 3)],
                },
            ],
            leaders: vec![broker(2, Some("a")), broker(3, None)],
            throttle_time_ms: 0,
            busy: std::time::Duration::ZERO,
        }
    }

    fn broker(node_id: i32, rack: Option<&str>) -> BrokerRecord {
        BrokerRecord {
            node_id,
            incarnation: Uuid::nil(),
            host: format!("broker-{node_id}.example"),
            port: 9092,
            rack: rack.map(str::to_owned),
            lease_expires_ms: 0,
            draining: false,
            topics_seen: 0,
            assignments_seen: 0,
            listeners: Vec::new(),
            reader: false,
        }
    }

    const ORDERS: Uuid = Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef);

    #[test]
    fn every_version_decodes_to_what_was_encoded() {
        let body = body();
        for version in 4..=16 {
            let mut writer = ResponseWriter::new();
            body.encode(version, &mut writer).unwrap();
            let framed = writer.finish().unwrap().to_vec().unwrap();
            let mut bytes = Bytes::from(framed);
            let size = bytes.get_i32();
            assert_eq!(usize::try_from(size).unwrap(), bytes.len(), "v{version}");
            let decoded = FetchResponse::decode(&mut bytes, version).unwrap();
            assert!(!bytes.has_remaining(), "v{version}: trailing bytes");

            assert_eq!(decoded.responses.len(), 2);
            let orders = &decoded.responses[0];
            if version >= 13 {
                assert_eq!(orders.topic_id, ORDERS);
            } else {
                assert_eq!(orders.topic.0.as_str(), "orders");
            }
            let first = &orders.partitions[0];
            assert_eq!(first.high_watermark, 42);
            assert_eq!(first.last_stable_offset, 42);
            if version >= 5 {
                assert_eq!(first.log_start_offset, 3);
            }
            let records = first.records.as_ref().unwrap();
            assert!(
                records.starts_with(b"memory-first|file-records"),
                "v{version}"
            );
            assert_eq!(records.len(), 13 + 12 + 100 * 1024);
            assert_eq!(
                orders.partitions[1].records.as_deref(),
                Some(&[][..]),
                "v{version}"
            );
            let preferred = if version >= 11 { 4 } else { -1 };
            assert_eq!(
                (
                    first.preferred_read_replica.0,
                    orders.partitions[1].preferred_read_replica.0
                ),
                (-1, preferred),
                "v{version}"
            );
            let failed = &orders.partitions[2];
            assert_eq!((failed.partition_index, failed.error_code), (9, 3));
            assert_eq!(failed.records.as_deref(), Some(&[][..]), "empty, not null");
            assert_eq!(decoded.responses[1].partitions[0].error_code, 3);
            // The leader hint: its id and epoch from v12 on, its address from v16 on.
            let hinted = &orders.partitions[3];
            assert_eq!(hinted.error_code, 6);
            let leader = (
                hinted.current_leader.leader_id.0,
                hinted.current_leader.leader_epoch,
            );
            let endpoints: Vec<(i32, &str, i32, Option<&str>)> = decoded
                .node_endpoints
                .iter()
                .map(|e| (e.node_id.0, e.host.as_str(), e.port, e.rack.as_deref()))
                .collect();
            match version {
                ..=11 => assert_eq!(leader, (-1, -1), "v{version}"),
                _ => assert_eq!(leader, (2, 7), "v{version}"),
            }
            if version >= 16 {
                assert_eq!(
                    endpoints,
                    [
                        (2, "broker-2.example", 9092, Some("a")),
                        (3, "broker-3.example", 9092, None)
                    ]
                );
            } else {
                assert!(endpoints.is_empty(), "v{version}");
            }
        }
    }
}
