//! A fetch from a view, or by a consumer in a lane or standing in for fewer than all
//! of them (`docs/lanes.md`): the source partition's batches from the fetch offset,
//! each sent as stored when all its records match, rewritten with its offsets kept when
//! some do, and folded into a gap when none does. A gap goes out as one skip marker
//! (a control batch whose one record sits on the gap's last offset) that every
//! client steps past; see `spool_protocol::internal` for why that shape.
//!
//! Every batch of the output ends with a record on its last offset: a rewritten batch
//! ends at its last kept record, and the rest of its span joins the gap after it.
//! KafkaJS moves its position to the last record's offset + 1 rather than to the
//! batch's end, so a batch ending on a dropped record could bring it back to the same
//! place again and again.
//!
//! Reading goes on past gaps until the response budget holds data or
//! [`SCAN_LIMIT`] bytes of the source were looked at, so that a sparse view still
//! fills a fetch.
//!
//! When the source's message index covers a header the filter requires
//! (`crate::index::views`), the read jumps: what the index says holds no candidate is
//! a gap without being read, and each candidate's batch is read alone. A
//! read_committed read then leaves aborted transactions' batches out itself (as gaps)
//! rather than listing them for the client, since the markers that end them may lie
//! in a stretch it jumped over.

use spool_log::{AbortedTxn, Isolation, ReadChunk, ReadResult};
use spool_metadata::PartitionKey;
use spool_model::{BATCH_HEADER_LEN, Offset, RecordBatchHeader, Timestamp};
use spool_protocol::internal::skip_batch;
use spool_protocol::keyed::{BatchRecords, RecordHeader, filtered_batch};

use crate::index::Indexes;
use crate::index::views::{Candidates, IndexedFilter};
use crate::partitions::{PartitionError, PartitionHandle};
use spool_views::filter::Verdict;
use spool_views::selection::Selection;
use spool_views::tag_index::{BatchKey, BatchSummary, TagIndex};
use spool_views::{Outcome, ViewStats};

/// The most source bytes one fetch of one partition looks at.
const SCAN_LIMIT: u64 = 32 << 20;

/// The source bytes asked of the log at a time.
const SCAN_STEP: u64 = 4 << 20;

/// The most a batch may inflate to when its records are read.
const INFLATE_LIMIT: usize = 256 << 20;

/// What a filtered read needs besides the source partition.
pub(crate) struct ViewReader<'a> {
    pub(crate) filter: Selection<'a>,
    pub(crate) index: &'a TagIndex,
    /// The view's counts and the lane's, as the read has them.
    pub(crate) stats: &'a [std::sync::Arc<ViewStats>],
    /// The source partition, for the tag index's keys.
    pub(crate) source: PartitionKey,
    /// The source's message index, when it covers a header the filter requires.
    pub(crate) indexed: Option<(&'a Indexes, IndexedFilter)>,
}

/// Candidates denser than one in this many offsets are read as without an index.
const SPARSE: i64 = 8;
/// Candidate batches one fetch reads alone, at most.
const JUMP_READS: usize = 1_000;

impl ViewReader<'_> {
    /// The view's records from `offset`, within `max_bytes` (the first batch whole
    /// past it when `first_whole`), with the source's offsets and watermarks.
    pub(crate) fn read(
        &self,
        partition: &PartitionHandle,
        offset: Offset,
        max_bytes: u64,
        first_whole: bool,
        isolation: Isolation,
    ) -> Result<ReadResult, PartitionError> {
        if self.filter.passes_everything() {
            return partition.read(offset, max_bytes, first_whole, isolation);
        }
        if let Some((indexes, filter)) = &self.indexed
            && let Some(found) = indexes.candidates(self.source, filter, offset.0)
            && i64::try_from(found.offsets.len()).unwrap_or(i64::MAX) * SPARSE
                < found.covered - offset.0
        {
            return self.jump(partition, offset, max_bytes, first_whole, isolation, found);
        }
        let mut out = Output::new(max_bytes, first_whole);
        let mut cursor = offset;
        let mut scanned = 0_u64;
        let mut aborted: Vec<AbortedTxn> = Vec::new();
        let mut marks;
        'reads: loop {
            let read = partition.read(cursor, SCAN_STEP, true, isolation)?;
            marks = (read.log_start, read.high_watermark, read.last_stable);
            scanned += read.len();
            for txn in &read.aborted {
                if !aborted.contains(txn) {
                    aborted.push(*txn);
                }
            }
            let empty = read.chunks.is_empty();
            for chunk in &read.chunks {
                let mut position = 0;
                while let Some(piece) = Piece::at(chunk, position)? {
                    let header = piece.header;
                    if !self.take(&piece, offset, &mut out)? {
                        break 'reads;
                    }
                    cursor = header.next_offset();
                    position += piece.len;
                }
            }
            if empty || out.is_full() || scanned >= SCAN_LIMIT {
                break;
            }
        }
        let (log_start, high_watermark, last_stable) = marks;
        Ok(ReadResult {
            chunks: out.finish(),
            log_start,
            high_watermark,
            last_stable,
            aborted,
        })
    }

    /// The read with the index's candidates from `offset`: gaps up to each candidate,
    /// its batch read alone and taken as usual; up to where the index covers, then as
    /// far as a read without it would go.
    fn jump(
        &self,
        partition: &PartitionHandle,
        offset: Offset,
        max_bytes: u64,
        first_whole: bool,
        isolation: Isolation,
        found: Candidates,
    ) -> Result<ReadResult, PartitionError> {
        let mut out = Output::new(max_bytes, first_whole);
        let mut cursor = offset;
        let mut reads = 0;
        // Whether every candidate was taken: only then does the answer end with the
        // gap to where the index covers (else the next fetch starts at the first one
        // left).
        let mut all_taken = true;
        for candidate in found.offsets.into_iter().map(Offset) {
            if candidate < cursor {
                continue;
            }
            if candidate.0 >= found.covered {
                break;
            }
            all_taken = false;
            if reads >= JUMP_READS || out.is_full() {
                break;
            }
            if candidate > cursor {
                if !out.gap(cursor, Offset(candidate.0 - 1)) {
                    break;
                }
                self.stats.iter().for_each(|stats| stats.note_index_jump());
            }
            let read = partition.read(candidate, 1, true, isolation)?;
            reads += 1;
            let Some(chunk) = read.chunks.first() else {
                break;
            };
            let Some(piece) = Piece::at(chunk, 0)? else {
                break;
            };
            let header = piece.header;
            // The batch holding the candidate may begin before it: the gap ends there.
            out.trim_gap(header.base_offset);
            let aborted = isolation == Isolation::ReadCommitted
                && spool_log::is_aborted_batch(&read.aborted, &header);
            let taken = if aborted {
                self.skipped(&piece, &mut out)
            } else {
                self.take(&piece, offset, &mut out)?
            };
            if !taken {
                break;
            }
            cursor = header.next_offset();
            all_taken = true;
        }
        if all_taken && cursor.0 < found.covered && out.gap(cursor, Offset(found.covered - 1)) {
            // No candidate left before the end of what the index covers.
            self.stats.iter().for_each(|stats| stats.note_index_jump());
        }
        Ok(ReadResult {
            chunks: out.finish(),
            log_start: partition.log_start(),
            high_watermark: partition.log.offsets().high_watermark,
            last_stable: partition.log.stable_offset(),
            aborted: Vec::new(),
        })
    }

    /// Adds one source batch to the output as what it is for the view; `false` when
    /// the output has no room for it (it is left for the next fetch). `from` is the
    /// fetch offset: a rewritten batch keeps no record before it.
    fn take(
        &self,
        piece: &Piece<'_>,
        from: Offset,
        out: &mut Output,
    ) -> Result<bool, PartitionError> {
        let header = &piece.header;
        let count = u64::try_from(header.record_count).unwrap_or(0);
        if header.is_control() {
            // Transaction markers stay (read_committed clients need them); Spool's own
            // batches (holds, a view's own markers) are gaps.
            return Ok(if header.producer_id.0 >= 0 {
                out.keep(piece)
            } else {
                out.gap(header.base_offset, header.last_offset())
            });
        }
        let key = BatchKey {
            partition: self.source,
            base_offset: header.base_offset.0,
            crc: header.crc,
        };
        let known = self.index.get(&key);
        if let Some(taken) = known
            .as_ref()
            .and_then(|tags| self.by_verdict(self.filter.judge(tags), piece, out))
        {
            return Ok(taken);
        }
        let bytes = piece.bytes()?;
        self.stats.iter().for_each(|stats| stats.note_inflated());
        let inflated = BatchRecords::read(&bytes, INFLATE_LIMIT)
            .map_err(|error| unreadable(header, &error))?;
        let records = inflated
            .records()
            .map_err(|error| unreadable(header, &error))?;
        let headers: Vec<Vec<RecordHeader<'_>>> = records
            .iter()
            .map(|record| record.headers().unwrap_or_default())
            .collect();
        if known.is_none() {
            let mut summary = BatchSummary::default();
            for record in &headers {
                summary.add(record);
            }
            let verdict = self.filter.judge(&summary);
            self.index.insert(key, std::sync::Arc::new(summary));
            if let Some(taken) = self.by_verdict(verdict, piece, out) {
                return Ok(taken);
            }
        }
        let kept: Vec<_> = records
            .iter()
            .zip(&headers)
            .filter(|(_, headers)| self.filter.matches(headers))
            .map(|(record, _)| *record)
            .collect();
        let matched = u64::try_from(kept.len()).unwrap_or(0);
        if kept.len() == records.len() {
            return Ok(self.sent(piece, out));
        }
        // What a rewritten batch keeps is at or past the fetch offset, so that it
        // moves the client on even when it is all a response holds.
        let kept: Vec<_> = kept
            .into_iter()
            .filter(|record| header.base_offset.plus(record.offset_delta) >= from)
            .collect();
        let Some(last_kept) = kept
            .last()
            .map(|record| header.base_offset.plus(record.offset_delta))
        else {
            return Ok(self.skipped(piece, out));
        };
        let rewritten =
            filtered_batch(&bytes, &kept).map_err(|error| unreadable(header, &error))?;
        let fits = out.rewritten(rewritten);
        if fits && last_kept < header.last_offset() {
            // The rest of the batch's span goes with it, whatever the budget says: a
            // marker is small, and without it the client would come back to the
            // same batch.
            out.gap_anyway(last_kept.plus(1), header.last_offset());
        }
        Ok(self.counted(fits, Outcome::Rewritten, count, matched))
    }

    /// The batch as a summary's verdict says, when it decides (`None`: read the
    /// records).
    fn by_verdict(&self, verdict: Verdict, piece: &Piece<'_>, out: &mut Output) -> Option<bool> {
        match verdict {
            Verdict::All => Some(self.sent(piece, out)),
            Verdict::None => Some(self.skipped(piece, out)),
            Verdict::Some => None,
        }
    }

    /// The batch as stored: every record matched.
    fn sent(&self, piece: &Piece<'_>, out: &mut Output) -> bool {
        let count = u64::try_from(piece.header.record_count).unwrap_or(0);
        self.counted(out.keep(piece), Outcome::Sent, count, count)
    }

    /// The batch as part of a gap: no record matched.
    fn skipped(&self, piece: &Piece<'_>, out: &mut Output) -> bool {
        let header = &piece.header;
        let count = u64::try_from(header.record_count).unwrap_or(0);
        let taken = out.gap(header.base_offset, header.last_offset());
        self.counted(taken, Outcome::Skipped, count, 0)
    }

    /// `taken`, with the batch's records counted into the view's match ratio when it
    /// was.
    fn counted(&self, taken: bool, outcome: Outcome, records: u64, matched: u64) -> bool {
        if taken {
            for stats in self.stats {
                stats.note(outcome, records, matched);
            }
        }
        taken
    }
}

fn unreadable(header: &RecordBatchHeader, error: &dyn std::fmt::Display) -> PartitionError {
    PartitionError::Unreadable(format!(
        "the batch at offset {} cannot be read for a view: {error}",
        header.base_offset.0
    ))
}

/// One source batch inside a read chunk.
struct Piece<'a> {
    chunk: &'a ReadChunk,
    position: u64,
    len: u64,
    header: RecordBatchHeader,
}

impl<'a> Piece<'a> {
    /// The batch at `position` of `chunk`; `None` at its end.
    fn at(chunk: &'a ReadChunk, position: u64) -> Result<Option<Piece<'a>>, PartitionError> {
        if position >= chunk.len() {
            return Ok(None);
        }
        let mut head = [0_u8; BATCH_HEADER_LEN];
        read_exact(chunk, position, &mut head)?;
        let header = RecordBatchHeader::parse(&head).ok_or_else(|| {
            PartitionError::Unreadable(format!("no batch header at byte {position} of a read"))
        })?;
        let len = header.total_len() as u64;
        if position + len > chunk.len() {
            return Err(PartitionError::Unreadable(format!(
                "the batch at offset {} runs past its read",
                header.base_offset.0
            )));
        }
        Ok(Some(Piece {
            chunk,
            position,
            len,
            header,
        }))
    }

    /// The batch's bytes.
    fn bytes(&self) -> Result<Vec<u8>, PartitionError> {
        let mut bytes = vec![0_u8; usize::try_from(self.len).unwrap_or(0)];
        read_exact(self.chunk, self.position, &mut bytes)?;
        Ok(bytes)
    }

    /// The batch as a chunk of its own (a range of the same file, or of the same
    /// memory): no copy.
    fn as_chunk(&self) -> ReadChunk {
        match self.chunk {
            ReadChunk::File { file, position, .. } => ReadChunk::File {
                file: file.clone(),
                position: position + self.position,
                len: self.len,
            },
            ReadChunk::Memory(bytes) => {
                let start = usize::try_from(self.position).unwrap_or(usize::MAX);
                let end = usize::try_from(self.position + self.len).unwrap_or(usize::MAX);
                ReadChunk::Memory(bytes.slice(start.min(bytes.len())..end.min(bytes.len())))
            }
        }
    }
}

fn read_exact(chunk: &ReadChunk, at: u64, out: &mut [u8]) -> Result<(), PartitionError> {
    match chunk {
        ReadChunk::Memory(bytes) => {
            let start = usize::try_from(at).unwrap_or(usize::MAX);
            let source = bytes
                .get(start..start.saturating_add(out.len()))
                .ok_or_else(|| PartitionError::Unreadable("a read ended early".to_owned()))?;
            out.copy_from_slice(source);
            Ok(())
        }
        ReadChunk::File { file, position, .. } => file
            .read_exact_at(out, position + at)
            .map_err(|error| PartitionError::Unreadable(format!("reading a segment: {error}"))),
    }
}

/// The view's answer as it is built.
struct Output {
    chunks: Vec<ReadChunk>,
    len: u64,
    max_bytes: u64,
    first_whole: bool,
    /// The gap being extended: its first and last offsets.
    gap: Option<(Offset, Offset)>,
    /// What a skip marker takes.
    skip_len: u64,
}

impl Output {
    fn new(max_bytes: u64, first_whole: bool) -> Output {
        Output {
            chunks: Vec::new(),
            len: 0,
            max_bytes,
            first_whole,
            gap: None,
            skip_len: skip_batch(0, 1, Timestamp(0)).len() as u64,
        }
    }

    fn is_full(&self) -> bool {
        self.len >= self.max_bytes
    }

    /// Room for `len` more bytes: within the budget, or the first whole batch.
    fn room(&self, len: u64) -> bool {
        self.len + len <= self.max_bytes
            || (self.first_whole && self.chunks.is_empty() && self.gap.is_none())
    }

    fn keep(&mut self, piece: &Piece<'_>) -> bool {
        if !self.room(piece.len) {
            return false;
        }
        self.close_gap();
        self.len += piece.len;
        self.chunks.push(piece.as_chunk());
        true
    }

    fn rewritten(&mut self, batch: Vec<u8>) -> bool {
        let len = batch.len() as u64;
        if !self.room(len) {
            return false;
        }
        self.close_gap();
        self.len += len;
        self.chunks.push(ReadChunk::Memory(batch.into()));
        true
    }

    /// Opens a gap from `first` to `last` past the budget.
    fn gap_anyway(&mut self, first: Offset, last: Offset) {
        self.close_gap();
        self.len += self.skip_len;
        self.gap = Some((first, last));
    }

    /// Extends the open gap to `last`, or opens one from `first`.
    fn gap(&mut self, first: Offset, last: Offset) -> bool {
        match &mut self.gap {
            // A marker spans at most `i32::MAX` offsets (its last offset delta).
            Some((start, end)) if last.0 - start.0 < i64::from(i32::MAX) => {
                *end = last;
                true
            }
            _ => {
                if !self.room(self.skip_len) {
                    return false;
                }
                self.close_gap();
                self.len += self.skip_len;
                self.gap = Some((first, last));
                true
            }
        }
    }

    /// Ends the open gap before `offset` (a batch that begins there follows it); a
    /// gap that would end before it begins is dropped.
    fn trim_gap(&mut self, offset: Offset) {
        if let Some((first, last)) = &mut self.gap
            && *last >= offset
        {
            if offset > *first {
                *last = Offset(offset.0 - 1);
            } else {
                self.gap = None;
                self.len = self.len.saturating_sub(self.skip_len);
            }
        }
    }

    fn close_gap(&mut self) {
        if let Some((first, last)) = self.gap.take() {
            let span = i32::try_from(last.0 - first.0 + 1).unwrap_or(i32::MAX);
            let marker = skip_batch(first.0, span, Timestamp::now());
            self.chunks.push(ReadChunk::Memory(marker.into()));
        }
    }

    fn finish(mut self) -> Vec<ReadChunk> {
        self.close_gap();
        self.chunks
    }
}
