//! An index chunk: the index of one offset range `[first, next)` of one partition,
//! written once and never changed (a chunk built again replaces it whole). The byte
//! format (big-endian; docs/index.md):
//!
//! ```text
//! header   "SPIX" | version u8 = 1 | summary_len u32 | first i64 | next i64
//!          | records u64 | data_bytes u64 | min_timestamp i64 | max_timestamp i64
//!          | field_count u16 | per field: name_len u16, name, entries u32,
//!            bucket_bits u8, bloom_words u32, entries_at u64
//!          | header_crc u32
//! summary  per field: bloom (bloom_words × u64), buckets ((2^bucket_bits + 1) × u32)
//!          | summary_crc u32                      (the chunk's first summary_len bytes)
//! entries  per field: entries × (hash_low u32, offset − first u32), sorted by hash
//! trailer  entries_crc u32
//! ```
//!
//! A field's entries are sorted by the value hash; bucket `b` (the hash's top
//! `bucket_bits` bits) holds entries `buckets[b]..buckets[b + 1]`, and an entry keeps
//! the hash's low 32 bits. A lookup keeps the summary (the first `summary_len` bytes:
//! about 1.3 bytes per distinct value and 0.25 per record) and reads one bucket's
//! entries, 8 bytes each, with one ranged read.

use crate::bloom::Bloom;
use crate::field::{IndexFields, RecordView, ValueReader};
use crate::{IndexError, value_hash};

const MAGIC: &[u8; 4] = b"SPIX";
const VERSION: u8 = 1;
/// Bytes of one entry.
const ENTRY_BYTES: u64 = 8;
/// Entries per bucket the builder aims at.
const ENTRIES_PER_BUCKET: usize = 16;
/// The most bucket bits (16 M buckets).
const MAX_BUCKET_BITS: u32 = 24;
/// Bytes a reader takes first: the header and, for a small chunk, the summary too.
pub const FIRST_READ_BYTES: u64 = 16 << 10;

/// Where a [`ChunkBuilder`] was, to go back to.
#[derive(Debug, Clone)]
pub struct BuilderMark {
    next: i64,
    records: u64,
    data_bytes: u64,
    min_timestamp: i64,
    max_timestamp: i64,
    entries: Vec<usize>,
}

/// The index of an offset range being built, from records read in offset order.
#[derive(Debug, Clone)]
pub struct ChunkBuilder {
    fields: Vec<String>,
    first: i64,
    next: i64,
    records: u64,
    data_bytes: u64,
    min_timestamp: i64,
    max_timestamp: i64,
    /// Per field: (value hash, offset − first).
    entries: Vec<Vec<(u64, u32)>>,
}

impl ChunkBuilder {
    /// An empty index of `fields` from offset `first`.
    #[must_use]
    pub fn new(fields: &IndexFields, first: i64) -> ChunkBuilder {
        ChunkBuilder {
            fields: fields.fields().iter().map(ToString::to_string).collect(),
            first,
            next: first,
            records: 0,
            data_bytes: 0,
            min_timestamp: i64::MAX,
            max_timestamp: i64::MIN,
            entries: vec![Vec::new(); fields.fields().len()],
        }
    }

    #[must_use]
    pub fn first(&self) -> i64 {
        self.first
    }

    /// The offset after the last batch taken.
    #[must_use]
    pub fn next(&self) -> i64 {
        self.next
    }

    /// Bytes of batches taken.
    #[must_use]
    pub fn data_bytes(&self) -> u64 {
        self.data_bytes
    }

    #[must_use]
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Whether a record at `offset` can be taken (the range spans at most 2^32
    /// offsets; a builder past it is finished and another begun).
    #[must_use]
    pub fn takes(&self, offset: i64) -> bool {
        offset >= self.first && u32::try_from(offset - self.first).is_ok()
    }

    /// Takes a record: each indexed field's values (`reader` reads its value). A
    /// record at an offset the builder does not take ([`ChunkBuilder::takes`]) is
    /// left out; a record whose value cannot be read now is not taken at all.
    pub fn add_record(
        &mut self,
        fields: &IndexFields,
        offset: i64,
        timestamp: i64,
        record: &RecordView<'_>,
        reader: &dyn ValueReader,
    ) -> Result<(), IndexError> {
        let Some(relative) = u32::try_from(offset - self.first)
            .ok()
            .filter(|_| offset >= self.first)
        else {
            return Ok(());
        };
        let entries = &mut self.entries;
        // The reader is asked before any value is taken: a failure takes nothing.
        fields.each_value(record, reader, |field, value| {
            if let Some(list) = entries.get_mut(field) {
                list.push((value_hash(value), relative));
            }
        })?;
        self.records += 1;
        self.min_timestamp = self.min_timestamp.min(timestamp);
        self.max_timestamp = self.max_timestamp.max(timestamp);
        Ok(())
    }

    /// Where the builder is now, to go back to with [`ChunkBuilder::rollback`] (a
    /// batch read in part is taken again whole).
    #[must_use]
    pub fn mark(&self) -> BuilderMark {
        BuilderMark {
            next: self.next,
            records: self.records,
            data_bytes: self.data_bytes,
            min_timestamp: self.min_timestamp,
            max_timestamp: self.max_timestamp,
            entries: self.entries.iter().map(Vec::len).collect(),
        }
    }

    /// Forgets what was taken since `mark`.
    pub fn rollback(&mut self, mark: &BuilderMark) {
        self.next = mark.next;
        self.records = mark.records;
        self.data_bytes = mark.data_bytes;
        self.min_timestamp = mark.min_timestamp;
        self.max_timestamp = mark.max_timestamp;
        for (entries, len) in self.entries.iter_mut().zip(&mark.entries) {
            entries.truncate(*len);
        }
    }

    /// Notes that the batches up to `next` (`bytes` of them) were taken.
    pub fn covered(&mut self, next: i64, bytes: u64) {
        self.next = self.next.max(next);
        self.data_bytes += bytes;
    }

    /// The offsets of the records whose field `field` may be `hash`, ascending.
    #[must_use]
    pub fn lookup(&self, field: usize, hash: u64) -> Vec<i64> {
        let mut found: Vec<i64> = self
            .entries
            .get(field)
            .into_iter()
            .flatten()
            .filter(|(h, _)| *h == hash)
            .map(|(_, relative)| self.first + i64::from(*relative))
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    /// [`ChunkBuilder::lookup`] of the field written as `name`; `None` when the
    /// builder does not index it.
    #[must_use]
    pub fn lookup_named(&self, name: &str, hash: u64) -> Option<Vec<i64>> {
        let field = self.fields.iter().position(|field| field == name)?;
        Some(self.lookup(field, hash))
    }

    /// Whether a record's timestamp in the range may be in `[from, to]`.
    #[must_use]
    pub fn may_hold_times(&self, from: i64, to: i64) -> bool {
        self.records > 0 && self.min_timestamp <= to && self.max_timestamp >= from
    }

    /// Bytes the builder holds in memory, roughly.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.entries
            .iter()
            .map(|e| e.capacity() * 16)
            .sum::<usize>()
            + 128
    }

    /// The chunk's bytes.
    #[must_use]
    pub fn finish(mut self) -> Vec<u8> {
        let mut sections = Vec::with_capacity(self.entries.len());
        for entries in &mut self.entries {
            entries.sort_unstable();
            let bits = bucket_bits(entries.len());
            let mut distinct = 0;
            let mut last = None;
            for (hash, _) in entries.iter() {
                if last != Some(*hash) {
                    distinct += 1;
                    last = Some(*hash);
                }
            }
            let mut bloom = Bloom::with_capacity(distinct);
            let mut buckets = vec![0_u32; (1 << bits) + 1];
            for (hash, _) in entries.iter() {
                bloom.insert(*hash);
                if let Some(count) = buckets.get_mut(bucket_of(*hash, bits) + 1) {
                    *count += 1;
                }
            }
            for i in 1..buckets.len() {
                let before = buckets.get(i - 1).copied().unwrap_or(0);
                if let Some(count) = buckets.get_mut(i) {
                    *count += before;
                }
            }
            sections.push((bits, bloom, buckets));
        }
        // The header's size, to place the entries.
        let names: usize = self.fields.iter().map(|name| 2 + name.len() + 17).sum();
        let header_len = 4 + 1 + 4 + 6 * 8 + 2 + names + 4;
        let summary_len = header_len
            + sections
                .iter()
                .map(|(_, bloom, buckets)| bloom.words().len() * 8 + buckets.len() * 4)
                .sum::<usize>()
            + 4;
        let mut out = Vec::with_capacity(
            summary_len + self.entries.iter().map(|e| e.len() * 8).sum::<usize>() + 4,
        );
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&u32::try_from(summary_len).unwrap_or(u32::MAX).to_be_bytes());
        for value in [self.first, self.next] {
            out.extend_from_slice(&value.to_be_bytes());
        }
        out.extend_from_slice(&self.records.to_be_bytes());
        out.extend_from_slice(&self.data_bytes.to_be_bytes());
        let (min, max) = if self.records == 0 {
            (0, 0)
        } else {
            (self.min_timestamp, self.max_timestamp)
        };
        out.extend_from_slice(&min.to_be_bytes());
        out.extend_from_slice(&max.to_be_bytes());
        out.extend_from_slice(&u16::try_from(self.fields.len()).unwrap_or(0).to_be_bytes());
        let mut entries_at = summary_len as u64;
        for ((name, entries), (bits, bloom, _)) in
            self.fields.iter().zip(&self.entries).zip(&sections)
        {
            out.extend_from_slice(&u16::try_from(name.len()).unwrap_or(0).to_be_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&u32::try_from(entries.len()).unwrap_or(0).to_be_bytes());
            out.push(u8::try_from(*bits).unwrap_or(0));
            out.extend_from_slice(
                &u32::try_from(bloom.words().len())
                    .unwrap_or(0)
                    .to_be_bytes(),
            );
            out.extend_from_slice(&entries_at.to_be_bytes());
            entries_at += entries.len() as u64 * ENTRY_BYTES;
        }
        out.extend_from_slice(&crc32c::crc32c(&out).to_be_bytes());
        let summary_start = out.len();
        for (_, bloom, buckets) in &sections {
            for word in bloom.words() {
                out.extend_from_slice(&word.to_be_bytes());
            }
            for bucket in buckets {
                out.extend_from_slice(&bucket.to_be_bytes());
            }
        }
        let summary_crc = crc32c::crc32c(out.get(summary_start..).unwrap_or_default());
        out.extend_from_slice(&summary_crc.to_be_bytes());
        let entries_start = out.len();
        for entries in &self.entries {
            for (hash, relative) in entries {
                #[allow(clippy::cast_possible_truncation)]
                out.extend_from_slice(&(*hash as u32).to_be_bytes());
                out.extend_from_slice(&relative.to_be_bytes());
            }
        }
        let entries_crc = crc32c::crc32c(out.get(entries_start..).unwrap_or_default());
        out.extend_from_slice(&entries_crc.to_be_bytes());
        out
    }
}

/// Bucket bits for `entries` entries: about [`ENTRIES_PER_BUCKET`] per bucket.
fn bucket_bits(entries: usize) -> u32 {
    let buckets = entries.div_ceil(ENTRIES_PER_BUCKET).max(1);
    buckets
        .next_power_of_two()
        .trailing_zeros()
        .min(MAX_BUCKET_BITS)
}

fn bucket_of(hash: u64, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        usize::try_from(hash >> (64 - bits)).unwrap_or(0)
    }
}

/// What a lookup keeps of a chunk: its header, bloom filters and buckets.
#[derive(Debug, Clone)]
pub struct ChunkSummary {
    pub first: i64,
    pub next: i64,
    pub records: u64,
    pub data_bytes: u64,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
    fields: Vec<FieldSummary>,
    summary_len: u64,
}

#[derive(Debug, Clone)]
struct FieldSummary {
    name: String,
    entries: u32,
    bits: u32,
    bloom: Bloom,
    buckets: Vec<u32>,
    entries_at: u64,
}

/// What a lookup reads of a chunk for one value: the byte range of a bucket's
/// entries, and what to keep of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryRange {
    pub start: u64,
    pub end: u64,
    hash_low: u32,
    first: i64,
    /// `next − first`: an entry past it is damage, left out.
    span: i64,
}

impl EntryRange {
    /// The offsets of the entries in `bytes` (the range's bytes) for the value.
    #[must_use]
    pub fn offsets(&self, bytes: &[u8]) -> Vec<i64> {
        let mut found: Vec<i64> = bytes
            .chunks_exact(8)
            .filter(|entry| entry.get(..4) == Some(&self.hash_low.to_be_bytes()[..]))
            .filter_map(|entry| entry.get(4..8)?.try_into().ok().map(u32::from_be_bytes))
            .filter(|relative| i64::from(*relative) < self.span)
            .map(|relative| self.first + i64::from(relative))
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }
}

impl ChunkSummary {
    /// How many of the chunk's first bytes the summary needs, from the first bytes
    /// read (at least 9 of them).
    pub fn summary_len(first_bytes: &[u8]) -> Result<u64, IndexError> {
        if first_bytes.get(..4) != Some(&MAGIC[..]) {
            return Err(IndexError::BadChunk("no SPIX magic"));
        }
        if first_bytes.get(4) != Some(&VERSION) {
            return Err(IndexError::BadChunk("a version this build does not read"));
        }
        let len = first_bytes
            .get(5..9)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes)
            .ok_or(IndexError::BadChunk("too short"))?;
        Ok(u64::from(len))
    }

    /// Reads the summary from the chunk's first bytes (at least
    /// [`ChunkSummary::summary_len`] of them).
    pub fn parse(bytes: &[u8]) -> Result<ChunkSummary, IndexError> {
        let summary_len = ChunkSummary::summary_len(bytes)?;
        let summary = bytes
            .get(..usize::try_from(summary_len).unwrap_or(usize::MAX))
            .ok_or(IndexError::BadChunk("shorter than its summary"))?;
        let mut at = Cursor {
            bytes: summary,
            at: 9,
        };
        let first = at.i64()?;
        let next = at.i64()?;
        let records = at.u64()?;
        let data_bytes = at.u64()?;
        let min_timestamp = at.i64()?;
        let max_timestamp = at.i64()?;
        let count = at.u16()?;
        let mut heads = Vec::new();
        for _ in 0..count {
            let len = at.u16()?;
            let name = String::from_utf8(at.take(usize::from(len))?.to_vec())
                .map_err(|_| IndexError::BadChunk("a field name is not UTF-8"))?;
            let entries = at.u32()?;
            let bits = u32::from(at.u8()?);
            if bits > MAX_BUCKET_BITS {
                return Err(IndexError::BadChunk("too many bucket bits"));
            }
            let bloom_words = at.u32()?;
            let entries_at = at.u64()?;
            if entries_at < summary_len {
                return Err(IndexError::BadChunk("entries inside the summary"));
            }
            heads.push((name, entries, bits, bloom_words, entries_at));
        }
        let header_end = at.at;
        let crc = at.u32()?;
        if crc != crc32c::crc32c(summary.get(..header_end).unwrap_or_default()) {
            return Err(IndexError::Damaged);
        }
        let summary_start = at.at;
        let mut fields = Vec::with_capacity(heads.len());
        for (name, entries, bits, bloom_words, entries_at) in heads {
            let words = (0..bloom_words)
                .map(|_| at.u64())
                .collect::<Result<Vec<_>, _>>()?;
            let buckets = (0..(1_u32 << bits) + 1)
                .map(|_| at.u32())
                .collect::<Result<Vec<_>, _>>()?;
            if buckets.last() != Some(&entries) || buckets.windows(2).any(|w| w[0] > w[1]) {
                return Err(IndexError::BadChunk("buckets do not count the entries"));
            }
            fields.push(FieldSummary {
                name,
                entries,
                bits,
                bloom: Bloom::from_words(words).ok_or(IndexError::BadChunk("no bloom filter"))?,
                buckets,
                entries_at,
            });
        }
        let summary_end = at.at;
        let crc = at.u32()?;
        if crc != crc32c::crc32c(summary.get(summary_start..summary_end).unwrap_or_default()) {
            return Err(IndexError::Damaged);
        }
        Ok(ChunkSummary {
            first,
            next,
            records,
            data_bytes,
            min_timestamp,
            max_timestamp,
            fields,
            summary_len,
        })
    }

    /// Checks a whole chunk's entries against their checksum.
    pub fn check_entries(&self, chunk: &[u8]) -> Result<(), IndexError> {
        let start = usize::try_from(self.summary_len).unwrap_or(usize::MAX);
        let entries = chunk
            .get(start..chunk.len().saturating_sub(4))
            .ok_or(IndexError::BadChunk("shorter than its summary"))?;
        let expected: u64 = self.fields.iter().map(|f| u64::from(f.entries) * 8).sum();
        let crc = chunk
            .get(chunk.len().saturating_sub(4)..)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_be_bytes);
        if entries.len() as u64 != expected || crc != Some(crc32c::crc32c(entries)) {
            return Err(IndexError::Damaged);
        }
        Ok(())
    }

    /// The fields the chunk indexes, as `index.fields` writes them.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|field| field.name.as_str())
    }

    /// Whether the chunk indexes the field written as `name`.
    #[must_use]
    pub fn indexes(&self, name: &str) -> bool {
        self.fields.iter().any(|field| field.name == name)
    }

    /// Entries in the chunk, over its fields.
    #[must_use]
    pub fn entries(&self) -> u64 {
        self.fields
            .iter()
            .map(|field| u64::from(field.entries))
            .sum()
    }

    /// Whether a record's timestamp in the chunk may be in `[from, to]`.
    #[must_use]
    pub fn may_hold_times(&self, from: i64, to: i64) -> bool {
        self.records > 0 && self.min_timestamp <= to && self.max_timestamp >= from
    }

    /// Bytes the summary takes in memory, roughly.
    #[must_use]
    pub fn memory_bytes(&self) -> usize {
        self.fields
            .iter()
            .map(|f| f.bloom.words().len() * 8 + f.buckets.len() * 4 + f.name.len() + 64)
            .sum::<usize>()
            + 96
    }

    /// Where the entries for `value` of the field named `name` are: `None` when the
    /// chunk does not index the field (the caller reads the records instead), `Some`
    /// of `None` when the chunk holds no such value for sure.
    #[must_use]
    pub fn entry_range(&self, name: &str, hash: u64) -> Option<Option<EntryRange>> {
        let field = self.fields.iter().find(|field| field.name == name)?;
        if !field.bloom.may_contain(hash) {
            return Some(None);
        }
        let bucket = bucket_of(hash, field.bits);
        let (Some(start), Some(end)) = (
            field.buckets.get(bucket).copied(),
            field.buckets.get(bucket + 1).copied(),
        ) else {
            return Some(None);
        };
        #[allow(clippy::cast_possible_truncation)]
        let hash_low = hash as u32;
        let at = |index: u32| {
            u64::from(index)
                .checked_mul(ENTRY_BYTES)?
                .checked_add(field.entries_at)
        };
        // Out of range only in a chunk made to look whole: read its records instead.
        let (start_at, end_at) = (at(start)?, at(end)?);
        Some((start < end).then_some(EntryRange {
            start: start_at,
            end: end_at,
            hash_low,
            first: self.first,
            span: self.next.saturating_sub(self.first),
        }))
    }
}

/// Reads big-endian numbers from bytes that may be short (an error, never a panic).
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], IndexError> {
        let taken = self
            .bytes
            .get(self.at..self.at.saturating_add(n))
            .ok_or(IndexError::BadChunk("cut short"))?;
        self.at += n;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], IndexError> {
        self.take(N)?
            .try_into()
            .map_err(|_| IndexError::BadChunk("cut short"))
    }

    fn u8(&mut self) -> Result<u8, IndexError> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, IndexError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, IndexError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, IndexError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, IndexError> {
        Ok(i64::from_be_bytes(self.array()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JsonValues;
    use proptest::prelude::*;

    fn fields() -> IndexFields {
        IndexFields::parse("key,header:order").unwrap_or_default()
    }

    /// Builds a chunk of `keys` (record i at offset first + 2i, header order = i % 7).
    fn built(first: i64, keys: &[String]) -> (ChunkBuilder, Vec<u8>) {
        let fields = fields();
        let mut builder = ChunkBuilder::new(&fields, first);
        for (i, key) in keys.iter().enumerate() {
            let order = (i % 7).to_string();
            let headers: [(&[u8], Option<&[u8]>); 1] = [(b"order", Some(order.as_bytes()))];
            let offset = first + 2 * i as i64;
            let record = RecordView {
                key: Some(key.as_bytes()),
                value: None,
                headers: &headers,
            };
            let taken = builder.add_record(&fields, offset, 1_000 + offset, &record, &JsonValues);
            assert_eq!(taken, Ok(()));
            builder.covered(offset + 2, 100);
        }
        let bytes = builder.clone().finish();
        (builder, bytes)
    }

    fn lookup(bytes: &[u8], name: &str, value: &[u8]) -> Option<Vec<i64>> {
        let summary = ChunkSummary::parse(bytes).ok()?;
        let range = summary.entry_range(name, value_hash(value))?;
        Some(range.map_or_else(Vec::new, |range| {
            let start = usize::try_from(range.start).unwrap_or(0);
            let end = usize::try_from(range.end).unwrap_or(0);
            range.offsets(bytes.get(start..end).unwrap_or_default())
        }))
    }

    #[test]
    fn a_rollback_forgets_what_was_taken_since_the_mark() {
        let keys: Vec<String> = (0..20).map(|i| format!("k{i}")).collect();
        let (mut builder, _) = built(100, &keys[..10]);
        let before = builder.clone().finish();
        let mark = builder.mark();
        let record = RecordView {
            key: Some(b"later"),
            value: None,
            headers: &[],
        };
        let taken = builder.add_record(&fields(), 150, 9_999, &record, &JsonValues);
        assert_eq!(taken, Ok(()));
        builder.covered(151, 10);
        builder.rollback(&mark);
        assert_eq!(builder.clone().finish(), before);
    }

    #[test]
    fn a_chunk_finds_what_its_builder_took() {
        let keys: Vec<String> = (0..5_000).map(|i| format!("k{}", i % 1_000)).collect();
        let (builder, bytes) = built(100, &keys);
        let summary = ChunkSummary::parse(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((summary.first, summary.next), (100, 100 + 10_000));
        assert_eq!(
            (summary.min_timestamp, summary.max_timestamp),
            (1_100, 1_100 + 9_998)
        );
        assert_eq!(summary.entries(), 10_000);
        assert!(summary.check_entries(&bytes).is_ok());
        let expected: Vec<i64> = (0..5).map(|j| 100 + 2 * (7 + 1_000 * j)).collect();
        assert_eq!(lookup(&bytes, "key", b"k7"), Some(expected.clone()));
        assert_eq!(builder.lookup(0, value_hash(b"k7")), expected);
        assert_eq!(lookup(&bytes, "key", b"absent"), Some(vec![]));
        assert_eq!(
            lookup(&bytes, "header:order", b"3").map(|o| o.len()),
            Some(714)
        );
        assert_eq!(lookup(&bytes, "header:other", b"3"), None);
    }

    #[test]
    fn damaged_or_cut_chunks_are_refused_not_misread() {
        let keys: Vec<String> = (0..300).map(|i| format!("k{i}")).collect();
        let (_, bytes) = built(0, &keys);
        let summary_len =
            usize::try_from(ChunkSummary::summary_len(&bytes).unwrap_or(0)).unwrap_or(0);
        for cut in [0, 3, 8, 20, summary_len - 1] {
            assert!(ChunkSummary::parse(bytes.get(..cut).unwrap_or_default()).is_err());
        }
        for flip in [12, 40, summary_len - 10] {
            let mut damaged = bytes.clone();
            if let Some(byte) = damaged.get_mut(flip) {
                *byte ^= 0x40;
            }
            assert!(ChunkSummary::parse(&damaged).is_err(), "flip at {flip}");
        }
        let mut damaged = bytes.clone();
        if let Some(byte) = damaged.get_mut(summary_len + 5) {
            *byte ^= 1;
        }
        let summary = ChunkSummary::parse(&damaged).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(summary.check_entries(&damaged), Err(IndexError::Damaged));
    }

    #[test]
    fn an_empty_chunk_holds_nothing() {
        let (_, bytes) = built(5, &[]);
        let summary = ChunkSummary::parse(&bytes).unwrap_or_else(|e| panic!("{e}"));
        assert!(!summary.may_hold_times(i64::MIN, i64::MAX));
        assert_eq!(lookup(&bytes, "key", b"x"), Some(vec![]));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let mut framed = b"SPIX\x01".to_vec();
            framed.extend_from_slice(&bytes);
            let _ = ChunkSummary::parse(&framed);
            let _ = ChunkSummary::parse(&bytes);
        }

        #[test]
        fn lookups_match_a_scan(keys in proptest::collection::vec(0_u16..50, 1..400), probe in 0_u16..60) {
            let keys: Vec<String> = keys.iter().map(|k| format!("k{k}")).collect();
            let (_, bytes) = built(1_000, &keys);
            let expected: Vec<i64> = keys
                .iter()
                .enumerate()
                .filter(|(_, k)| **k == format!("k{probe}"))
                .map(|(i, _)| 1_000 + 2 * i as i64)
                .collect();
            prop_assert_eq!(lookup(&bytes, "key", format!("k{probe}").as_bytes()), Some(expected));
        }
    }
}
