//! Builds valid magic-2 record batches byte by byte, as a producer would.

use spool_model::{Offset, ProducerEpoch, ProducerId, Sequence, Timestamp, batch_field};

/// One record to put in a batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TestRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
    /// Milliseconds after the batch's base timestamp.
    pub timestamp_delta: i64,
}

impl TestRecord {
    #[must_use]
    pub fn value(value: impl Into<Vec<u8>>) -> TestRecord {
        TestRecord {
            value: Some(value.into()),
            ..TestRecord::default()
        }
    }
}

/// Builds one record batch. Defaults: base offset 0, timestamp 0, plain producer,
/// no compression attribute.
#[derive(Debug, Clone)]
pub struct BatchBuilder {
    base_offset: Offset,
    base_timestamp: Timestamp,
    records: Vec<TestRecord>,
    producer_id: ProducerId,
    producer_epoch: ProducerEpoch,
    base_sequence: Sequence,
    attributes: i16,
    /// Record bytes taken as they are (compressed ones, say) and their record count,
    /// instead of `records`.
    raw_records: Option<(i32, Vec<u8>)>,
}

impl Default for BatchBuilder {
    fn default() -> Self {
        BatchBuilder {
            base_offset: Offset(0),
            base_timestamp: Timestamp(0),
            records: Vec::new(),
            producer_id: ProducerId::NONE,
            producer_epoch: ProducerEpoch::NONE,
            base_sequence: Sequence::NONE,
            attributes: 0,
            raw_records: None,
        }
    }
}

impl BatchBuilder {
    #[must_use]
    pub fn new() -> BatchBuilder {
        BatchBuilder::default()
    }

    #[must_use]
    pub fn base_offset(mut self, offset: i64) -> Self {
        self.base_offset = Offset(offset);
        self
    }

    #[must_use]
    pub fn timestamp(mut self, millis: i64) -> Self {
        self.base_timestamp = Timestamp(millis);
        self
    }

    #[must_use]
    pub fn record(mut self, record: TestRecord) -> Self {
        self.records.push(record);
        self
    }

    /// Adds `count` records whose values are `size` bytes each.
    #[must_use]
    pub fn values(mut self, count: usize, size: usize) -> Self {
        for i in 0..count {
            let fill = u8::try_from(i % 251).unwrap_or(0);
            self.records.push(TestRecord::value(vec![fill; size]));
        }
        self
    }

    #[must_use]
    pub fn producer(mut self, id: i64, epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = ProducerId(id);
        self.producer_epoch = ProducerEpoch(epoch);
        self.base_sequence = Sequence(base_sequence);
        self
    }

    /// Sets the raw attributes field (compression bits, transactional, control, ...).
    /// The records are not actually compressed: the log never looks inside.
    #[must_use]
    pub fn attributes(mut self, attributes: i16) -> Self {
        self.attributes = attributes;
        self
    }

    /// Puts `body` in the batch as its records section, claiming `count` records:
    /// with a compression attribute, `body` is what a producer's codec wrote.
    #[must_use]
    pub fn raw_records(mut self, count: i32, body: Vec<u8>) -> Self {
        self.raw_records = Some((count, body));
        self
    }

    #[must_use]
    pub fn build(&self) -> Vec<u8> {
        let (count, body) = match &self.raw_records {
            Some((count, body)) => (*count, body.clone()),
            None => {
                let mut body = Vec::new();
                for (delta, record) in self.records.iter().enumerate() {
                    encode_record(&mut body, record, i64::try_from(delta).unwrap_or(0));
                }
                (i32::try_from(self.records.len()).unwrap_or(i32::MAX), body)
            }
        };
        let max_delta = self
            .records
            .iter()
            .map(|r| r.timestamp_delta)
            .max()
            .unwrap_or(0);
        let mut batch = Vec::with_capacity(61 + body.len());
        batch.extend_from_slice(&self.base_offset.0.to_be_bytes());
        batch.extend_from_slice(&0i32.to_be_bytes()); // batchLength, patched below
        batch.extend_from_slice(&0i32.to_be_bytes()); // partitionLeaderEpoch
        batch.push(2); // magic
        batch.extend_from_slice(&0u32.to_be_bytes()); // crc, patched below
        batch.extend_from_slice(&self.attributes.to_be_bytes());
        batch.extend_from_slice(&(count - 1).max(0).to_be_bytes());
        batch.extend_from_slice(&self.base_timestamp.0.to_be_bytes());
        batch.extend_from_slice(&(self.base_timestamp.0 + max_delta).to_be_bytes());
        batch.extend_from_slice(&self.producer_id.0.to_be_bytes());
        batch.extend_from_slice(&self.producer_epoch.0.to_be_bytes());
        batch.extend_from_slice(&self.base_sequence.0.to_be_bytes());
        batch.extend_from_slice(&count.to_be_bytes());
        batch.extend_from_slice(&body);
        let length = i32::try_from(batch.len() - batch_field::LOG_OVERHEAD).unwrap_or(i32::MAX);
        batch[batch_field::BATCH_LENGTH..batch_field::BATCH_LENGTH + 4]
            .copy_from_slice(&length.to_be_bytes());
        let crc = crc32c::crc32c(&batch[batch_field::ATTRIBUTES..]);
        batch[batch_field::CRC..batch_field::CRC + 4].copy_from_slice(&crc.to_be_bytes());
        batch
    }
}

fn encode_record(out: &mut Vec<u8>, record: &TestRecord, offset_delta: i64) {
    let mut body = Vec::new();
    body.push(0); // attributes
    put_varint(&mut body, record.timestamp_delta);
    put_varint(&mut body, offset_delta);
    put_bytes(&mut body, record.key.as_deref());
    put_bytes(&mut body, record.value.as_deref());
    put_varint(&mut body, i64::try_from(record.headers.len()).unwrap_or(0));
    for (key, value) in &record.headers {
        put_bytes(&mut body, Some(key.as_bytes()));
        put_bytes(&mut body, value.as_deref());
    }
    put_varint(out, i64::try_from(body.len()).unwrap_or(0));
    out.extend_from_slice(&body);
}

fn put_bytes(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    match bytes {
        None => put_varint(out, -1),
        Some(bytes) => {
            put_varint(out, i64::try_from(bytes.len()).unwrap_or(0));
            out.extend_from_slice(bytes);
        }
    }
}

/// Zig-zag varint, as Kafka's record fields use.
pub fn put_varint(out: &mut Vec<u8>, value: i64) {
    let mut zigzag = ((value << 1) ^ (value >> 63)).cast_unsigned();
    while zigzag >= 0x80 {
        out.push(u8::try_from(zigzag & 0x7f).unwrap_or(0) | 0x80);
        zigzag >>= 7;
    }
    out.push(u8::try_from(zigzag).unwrap_or(0));
}

/// A random valid batch of 1 to `max_records` records with values of up to
/// `max_value` bytes, timestamps around `timestamp`.
#[must_use]
pub fn random_batch(
    rng: &mut fastrand::Rng,
    max_records: usize,
    max_value: usize,
    timestamp: i64,
) -> Vec<u8> {
    let count = rng.usize(1..=max_records.max(1));
    let mut builder = BatchBuilder::new().timestamp(timestamp);
    for _ in 0..count {
        let len = rng.usize(0..=max_value);
        let value: Vec<u8> = std::iter::repeat_with(|| rng.u8(..)).take(len).collect();
        let key = rng.bool().then(|| rng.u32(..).to_be_bytes().to_vec());
        builder = builder.record(TestRecord {
            key,
            value: Some(value),
            headers: Vec::new(),
            timestamp_delta: rng.i64(0..10),
        });
    }
    builder.build()
}
