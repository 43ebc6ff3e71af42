//! Kafka's message sets — record formats v0 and v1, which Produce v0–v2 carry and
//! Fetch v0–v3 clients read — converted to and from v2 record batches, the only
//! format Spool stores (KIP-896's old clients; docs/api-coverage.md).
//!
//! Written by hand: `kafka-protocol` 0.16 and later dropped message sets, and 0.15's
//! decoder reads a compressed wrapper's value without inflating it; the format is a
//! few fixed fields per message.
//!
//! A message: `offset i64 | size i32 | crc u32 | magic i8 | attributes i8 |
//! timestamp i64 (v1) | key bytes | value bytes`, the CRC (CRC-32, not CRC-32C)
//! over what follows it. A compressed set is one wrapper message whose value is the
//! inner set compressed with the attributes' codec (gzip, snappy, lz4 for v1).
//!
//! Up-conversion (produce) keeps each message's key, value and (v1) timestamp, in
//! order, in one v2 batch compressed as the set was; v0 messages have no timestamp
//! (−1). Down-conversion (fetch) writes each record of the data batches as an
//! uncompressed message at its offset: headers are dropped (the formats have none),
//! control batches are left out, a batch cut short at the end of a read is left out
//! as Kafka leaves a partial message set.
#![deny(clippy::indexing_slicing)]

use spool_model::{CompressionCodec, TimestampType, batch_field};

use crate::batch::{BatchFrames, BrokerBatch, with_records, write_at};
use crate::compression::{compress, decompress};
use crate::keyed::BatchRecords;
use crate::records::{put_bytes, put_varint};

/// The most one compressed wrapper may inflate to.
const MAX_INFLATED: usize = 64 << 20;
/// Fixed bytes of a v0 message after its offset and size: crc, magic, attributes.
const V0_FIXED: usize = 4 + 1 + 1;

/// Why a message set could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageSetError {
    #[error("a message is cut short at byte {0}")]
    CutShort(usize),
    #[error("a message's CRC does not match (offset {0})")]
    Crc(i64),
    #[error("message format v{0} is not a message set")]
    Magic(i8),
    #[error("a compressed message set: {0}")]
    Codec(String),
    #[error("an empty message set")]
    Empty,
}

/// One message of a set, as up-conversion keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Message {
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
}

/// The v2 batch holding a Produce v0–v2 partition's message set: its messages in
/// order, compressed with the set's codec, timestamps kept (−1 for v0), no producer
/// id; base offset 0 (the log assigns it).
pub fn to_batch(set: &[u8]) -> Result<Vec<u8>, MessageSetError> {
    let mut messages = Vec::new();
    let codec = read_set(set, &mut messages, true)?;
    let first = messages.first().ok_or(MessageSetError::Empty)?;
    let base = first.timestamp;
    let max = messages.iter().map(|m| m.timestamp).max().unwrap_or(base);
    let mut body = Vec::new();
    for (delta, message) in messages.iter().enumerate() {
        let mut encoded = vec![0_u8]; // attributes
        put_varint(&mut encoded, message.timestamp.saturating_sub(base));
        put_varint(&mut encoded, i64::try_from(delta).unwrap_or(0));
        put_bytes(&mut encoded, message.key.as_deref());
        put_bytes(&mut encoded, message.value.as_deref());
        put_varint(&mut encoded, 0); // headers
        put_varint(&mut body, i64::try_from(encoded.len()).unwrap_or(0));
        body.extend_from_slice(&encoded);
    }
    let count = i32::try_from(messages.len()).unwrap_or(i32::MAX);
    let mut batch = BrokerBatch {
        base_offset: 0,
        last_offset_delta: count - 1,
        timestamp: spool_model::Timestamp(base),
        producer_id: -1,
        producer_epoch: -1,
    }
    .build(0, count, &body);
    write_at(&mut batch, batch_field::MAX_TIMESTAMP, &max.to_be_bytes());
    let compressed =
        compress(codec, None, &body).map_err(|e| MessageSetError::Codec(e.to_string()))?;
    with_records(&batch, codec.id(), count, &compressed).ok_or(MessageSetError::Empty)
}

/// Reads the messages of `set` into `into`; the codec of its (first) wrapper.
/// `outer`: a set as a client sent it (not inside a wrapper).
fn read_set(
    set: &[u8],
    into: &mut Vec<Message>,
    outer: bool,
) -> Result<CompressionCodec, MessageSetError> {
    let mut codec = CompressionCodec::None;
    let mut at = 0;
    while at < set.len() {
        let rest = set.get(at..).unwrap_or_default();
        let (offset, rest) = take_i64(rest).ok_or(MessageSetError::CutShort(at))?;
        let (size, rest) = take_i32(rest).ok_or(MessageSetError::CutShort(at))?;
        let size = usize::try_from(size).map_err(|_| MessageSetError::CutShort(at))?;
        let message = rest.get(..size).ok_or(MessageSetError::CutShort(at))?;
        let (crc, covered) = take_u32(message).ok_or(MessageSetError::CutShort(at))?;
        if crc32fast::hash(covered) != crc {
            return Err(MessageSetError::Crc(offset));
        }
        let (&[magic, attributes], rest) = covered
            .split_first_chunk::<2>()
            .ok_or(MessageSetError::CutShort(at))?;
        let magic = i8::from_be_bytes([magic]);
        let (timestamp, rest) = match magic {
            0 => (-1, rest),
            1 => take_i64(rest).ok_or(MessageSetError::CutShort(at))?,
            other => return Err(MessageSetError::Magic(other)),
        };
        let (key, rest) = take_bytes(rest).ok_or(MessageSetError::CutShort(at))?;
        let (value, _) = take_bytes(rest).ok_or(MessageSetError::CutShort(at))?;
        let wrapper_codec = match attributes & 0b111 {
            0 => CompressionCodec::None,
            1 => CompressionCodec::Gzip,
            2 => CompressionCodec::Snappy,
            3 if magic == 1 => CompressionCodec::Lz4,
            other => {
                return Err(MessageSetError::Codec(format!(
                    "codec {other} in message format v{magic}"
                )));
            }
        };
        if wrapper_codec == CompressionCodec::None {
            into.push(Message {
                timestamp,
                key: key.map(<[u8]>::to_vec),
                value: value.map(<[u8]>::to_vec),
            });
        } else {
            if !outer {
                return Err(MessageSetError::Codec("a wrapper inside a wrapper".into()));
            }
            let inflated = decompress(wrapper_codec, value.unwrap_or_default(), MAX_INFLATED)
                .map_err(|e| MessageSetError::Codec(e.to_string()))?;
            let inner_start = into.len();
            read_set(&inflated, into, false)?;
            // A v1 wrapper stamped by the log (LogAppendTime) gives its time to all.
            if magic == 1 && attributes & 0b1000 != 0 {
                for message in into.iter_mut().skip(inner_start) {
                    message.timestamp = timestamp;
                }
            }
            codec = wrapper_codec;
        }
        at += 12 + size;
    }
    Ok(codec)
}

/// The data records of the whole v2 `batches` (as a read returned them) as an
/// uncompressed message set of format `magic` (0 or 1), each at its offset.
pub fn from_batches(batches: &[u8], magic: i8) -> Result<Vec<u8>, MessageSetError> {
    if !(0..=1).contains(&magic) {
        return Err(MessageSetError::Magic(magic));
    }
    let mut out = Vec::with_capacity(batches.len());
    for frame in BatchFrames::new(batches) {
        // A batch cut short ends the read, as a partial message set does.
        let Ok((header, batch)) = frame else { break };
        if header.is_control() {
            continue;
        }
        let append_time = header.timestamp_type() == TimestampType::LogAppendTime;
        let read = BatchRecords::read(batch, MAX_INFLATED)
            .map_err(|e| MessageSetError::Codec(e.to_string()))?;
        let records = read
            .records()
            .map_err(|e| MessageSetError::Codec(e.to_string()))?;
        for record in &records {
            let timestamp = header.record_timestamp(record.timestamp_delta);
            let offset = header.base_offset.0.saturating_add(record.offset_delta);
            write_message(
                &mut out,
                offset,
                magic,
                append_time,
                timestamp,
                record.key,
                record.value,
            );
        }
    }
    Ok(out)
}

fn write_message(
    out: &mut Vec<u8>,
    offset: i64,
    magic: i8,
    append_time: bool,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) {
    let mut covered = Vec::with_capacity(
        V0_FIXED + 8 + 8 + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len),
    );
    covered.extend_from_slice(&magic.to_be_bytes());
    let attributes: i8 = if magic == 1 && append_time { 0b1000 } else { 0 };
    covered.extend_from_slice(&attributes.to_be_bytes());
    if magic == 1 {
        covered.extend_from_slice(&timestamp.to_be_bytes());
    }
    for field in [key, value] {
        match field {
            Some(bytes) => {
                covered.extend_from_slice(
                    &i32::try_from(bytes.len()).unwrap_or(i32::MAX).to_be_bytes(),
                );
                covered.extend_from_slice(bytes);
            }
            None => covered.extend_from_slice(&(-1_i32).to_be_bytes()),
        }
    }
    out.extend_from_slice(&offset.to_be_bytes());
    let size = i32::try_from(covered.len() + 4).unwrap_or(i32::MAX);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&covered).to_be_bytes());
    out.extend_from_slice(&covered);
}

fn take_i64(bytes: &[u8]) -> Option<(i64, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<8>()?;
    Some((i64::from_be_bytes(*head), rest))
}

fn take_i32(bytes: &[u8]) -> Option<(i32, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<4>()?;
    Some((i32::from_be_bytes(*head), rest))
}

fn take_u32(bytes: &[u8]) -> Option<(u32, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<4>()?;
    Some((u32::from_be_bytes(*head), rest))
}

/// A length-prefixed byte string (−1: null); never longer than the bytes there are.
fn take_bytes(bytes: &[u8]) -> Option<(Option<&[u8]>, &[u8])> {
    let (len, rest) = take_i32(bytes)?;
    if len < 0 {
        return Some((None, rest));
    }
    let len = usize::try_from(len).ok()?;
    Some((Some(rest.get(..len)?), rest.get(len..)?))
}

#[cfg(test)]
mod tests;
