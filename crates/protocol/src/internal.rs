//! Spool's own records inside a partition, which every Kafka consumer skips: a control
//! batch (attributes bit 5) of one control record whose key is `version i16 (0) |
//! type i16` with a type Kafka does not define, from no producer (id -1), never
//! compressed, the record on the batch's last offset.
//!
//! librdkafka, the Java client, kafka-python (2.0.6 on) and KafkaJS all skip such a
//! batch without a word under both isolation levels, and move their position past its
//! last offset; KafkaJS moves to the record's offset + 1, which is why the record sits
//! on the last offset (a batch with no records at all stalls KafkaJS). No client reads
//! a control record's value, so Spool keeps its own data there.
//!
//! - [`Kind::Skip`]: a span of offsets with nothing to show (a view's gap).
//! - [`Kind::Hold`]: a delayed record, kept until it is due ([`Hold`]).
#![deny(clippy::indexing_slicing)]

use spool_model::{BATCH_HEADER_LEN, RecordBatchHeader, Timestamp, batch_attributes};

use crate::batch::BrokerBatch;
use crate::records::{put_bytes, put_varint, read_bytes, read_varint};

/// The control types Spool writes (ASCII `SP` and `SD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Skip,
    Hold,
}

impl Kind {
    fn type_code(self) -> i16 {
        match self {
            Kind::Skip => 0x5350,
            Kind::Hold => 0x5344,
        }
    }

    fn from_code(code: i16) -> Option<Kind> {
        [Kind::Skip, Kind::Hold]
            .into_iter()
            .find(|kind| kind.type_code() == code)
    }
}

/// A delayed record as it waits in its partition: when it is due, when it was
/// produced, and the record itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    pub due: Timestamp,
    pub produced: Timestamp,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// The version of the hold value's layout.
const HOLD_VERSION: i16 = 0;

/// The producer epoch of a delivery batch (ASCII `SD`): with producer id -1, what
/// marks a batch as one Spool wrote, so that a record a client forwarded with the same
/// headers is not taken for a delivery. (Clients send -1 or 0 with producer id -1.)
const DELIVERY_EPOCH: i16 = 0x5344;

/// Whether the batch of `header` is a delivery batch Spool wrote.
#[must_use]
pub fn is_delivery(header: &RecordBatchHeader) -> bool {
    !header.is_control() && header.producer_id.0 == -1 && header.producer_epoch.0 == DELIVERY_EPOCH
}

/// A skip marker covering `span` offsets (at least 1) from `base_offset`: one control
/// record on the last of them.
#[must_use]
pub fn skip_batch(base_offset: i64, span: i32, now: Timestamp) -> Vec<u8> {
    internal_batch(base_offset, span.max(1), Kind::Skip, &[], now)
}

/// A hold batch: one offset, the record in the control record's value. `baseOffset`
/// is 0 (the log assigns it).
#[must_use]
pub fn hold_batch(hold: &Hold, now: Timestamp) -> Vec<u8> {
    let mut value = Vec::with_capacity(
        32 + hold.key.as_ref().map_or(0, Vec::len) + hold.value.as_ref().map_or(0, Vec::len),
    );
    value.extend_from_slice(&HOLD_VERSION.to_be_bytes());
    value.extend_from_slice(&hold.due.0.to_be_bytes());
    value.extend_from_slice(&hold.produced.0.to_be_bytes());
    put_bytes(&mut value, hold.key.as_deref());
    put_bytes(&mut value, hold.value.as_deref());
    put_varint(&mut value, i64::try_from(hold.headers.len()).unwrap_or(0));
    for (key, header) in &hold.headers {
        put_bytes(&mut value, Some(key));
        put_bytes(&mut value, header.as_deref());
    }
    internal_batch(0, 1, Kind::Hold, &value, now)
}

/// A batch of delayed records being delivered: plain (producer -1), uncompressed,
/// their timestamps all `now` (the delivery time); `baseOffset` 0 (the log assigns
/// it).
#[must_use]
pub fn delivery_batch(
    records: &[Hold],
    extra_headers: &[Vec<(&str, Vec<u8>)>],
    now: Timestamp,
) -> Vec<u8> {
    let mut body = Vec::new();
    for (delta, hold) in records.iter().enumerate() {
        let delta = i64::try_from(delta).unwrap_or(0);
        let mut record = vec![0_u8]; // attributes
        put_varint(&mut record, 0); // timestamp delta
        put_varint(&mut record, delta);
        put_bytes(&mut record, hold.key.as_deref());
        put_bytes(&mut record, hold.value.as_deref());
        let extra = extra_headers.get(usize::try_from(delta).unwrap_or(0));
        let count = hold.headers.len() + extra.map_or(0, Vec::len);
        put_varint(&mut record, i64::try_from(count).unwrap_or(0));
        for (name, value) in &hold.headers {
            put_bytes(&mut record, Some(name));
            put_bytes(&mut record, value.as_deref());
        }
        for (name, value) in extra.into_iter().flatten() {
            put_bytes(&mut record, Some(name.as_bytes()));
            put_bytes(&mut record, Some(value));
        }
        put_varint(&mut body, i64::try_from(record.len()).unwrap_or(0));
        body.extend_from_slice(&record);
    }
    let count = i32::try_from(records.len()).unwrap_or(i32::MAX);
    BrokerBatch {
        base_offset: 0,
        last_offset_delta: (count - 1).max(0),
        timestamp: now,
        producer_id: -1,
        producer_epoch: DELIVERY_EPOCH,
    }
    .build(0, count, &body)
}

/// The kind of Spool's control batch `batch` is; `None` for any other batch.
#[must_use]
pub fn kind_of(batch: &[u8]) -> Option<Kind> {
    let (kind, _) = control_record(batch)?;
    Some(kind)
}

/// The delayed record a hold batch keeps; `None` for any other batch or a malformed
/// one.
#[must_use]
pub fn read_hold(batch: &[u8]) -> Option<Hold> {
    let (Kind::Hold, mut value) = control_record(batch)? else {
        return None;
    };
    let version = i16::from_be_bytes(take_array(&mut value)?);
    if version != HOLD_VERSION {
        return None;
    }
    let due = Timestamp(i64::from_be_bytes(take_array(&mut value)?));
    let produced = Timestamp(i64::from_be_bytes(take_array(&mut value)?));
    let key = owned(read_bytes(&mut value)?);
    let record_value = owned(read_bytes(&mut value)?);
    let count = usize::try_from(read_varint(&mut value)?).ok()?;
    // Each header takes at least 2 bytes: the count cannot outrun the bytes.
    let mut headers = Vec::with_capacity(count.min(value.len() / 2));
    for _ in 0..count {
        let name = read_bytes(&mut value)??.to_vec();
        headers.push((name, owned(read_bytes(&mut value)?)));
    }
    Some(Hold {
        due,
        produced,
        key,
        value: record_value,
        headers,
    })
}

/// The kind and value of the one control record of a Spool control batch.
fn control_record(batch: &[u8]) -> Option<(Kind, &[u8])> {
    let header = RecordBatchHeader::parse(batch)?;
    if !header.is_control() || header.record_count != 1 || header.producer_id.0 != -1 {
        return None;
    }
    let mut rest = batch.get(BATCH_HEADER_LEN..header.total_len())?;
    let _length = read_varint(&mut rest)?;
    rest = rest.get(1..)?; // attributes
    let _timestamp_delta = read_varint(&mut rest)?;
    let _offset_delta = read_varint(&mut rest)?;
    if read_varint(&mut rest)? != 4 {
        return None;
    }
    let key: [u8; 4] = take_array(&mut rest)?;
    let [v0, v1, t0, t1] = key;
    if i16::from_be_bytes([v0, v1]) != 0 {
        return None;
    }
    let kind = Kind::from_code(i16::from_be_bytes([t0, t1]))?;
    let length = usize::try_from(read_varint(&mut rest)?).ok()?;
    Some((kind, rest.get(..length)?))
}

/// A control batch of one record of `kind` on offset delta `span - 1`.
fn internal_batch(
    base_offset: i64,
    span: i32,
    kind: Kind,
    value: &[u8],
    now: Timestamp,
) -> Vec<u8> {
    let last_delta = span - 1;
    let mut record = vec![0_u8]; // attributes
    put_varint(&mut record, 0); // timestamp delta
    put_varint(&mut record, i64::from(last_delta));
    put_varint(&mut record, 4);
    record.extend_from_slice(&0_i16.to_be_bytes());
    record.extend_from_slice(&kind.type_code().to_be_bytes());
    put_varint(&mut record, i64::try_from(value.len()).unwrap_or(0));
    record.extend_from_slice(value);
    put_varint(&mut record, 0); // headers
    let mut records = Vec::with_capacity(record.len() + 5);
    put_varint(&mut records, i64::try_from(record.len()).unwrap_or(0));
    records.extend_from_slice(&record);

    BrokerBatch {
        base_offset,
        last_offset_delta: last_delta,
        timestamp: now,
        producer_id: -1,
        producer_epoch: -1,
    }
    .build(batch_attributes::CONTROL, 1, &records)
}

fn take_array<const N: usize>(rest: &mut &[u8]) -> Option<[u8; N]> {
    let (head, tail) = rest.split_first_chunk::<N>()?;
    *rest = tail;
    Some(*head)
}

fn owned(bytes: Option<&[u8]>) -> Option<Vec<u8>> {
    bytes.map(<[u8]>::to_vec)
}

#[cfg(test)]
mod tests;
