//! Walking the batches of a segment file: header hops for reads, full validation for
//! recovery. A length read from disk never sizes an allocation beyond the bytes that
//! are actually in the file.

use std::io;

use spool_model::{BATCH_HEADER_LEN, RecordBatchHeader};
use spool_protocol::batch::{self, BatchError, BatchRules};
use spool_store::StoreFile;

/// The header of the batch at `position`, if a whole header lies before `end`.
pub(crate) fn read_header(
    file: &dyn StoreFile,
    position: u64,
    end: u64,
) -> io::Result<Option<RecordBatchHeader>> {
    if end.saturating_sub(position) < BATCH_HEADER_LEN as u64 {
        return Ok(None);
    }
    let mut header = [0u8; BATCH_HEADER_LEN];
    let read = file.read_up_to(&mut header, position)?;
    Ok(header.get(..read).and_then(RecordBatchHeader::parse))
}

/// Reads the batch at `position` into `buffer` and checks it fully (framing, CRC,
/// fields). The outer error is an I/O failure; the inner one says why the bytes are
/// not a valid batch (torn, garbage, corrupt).
pub(crate) fn read_valid_batch(
    file: &dyn StoreFile,
    position: u64,
    end: u64,
    buffer: &mut Vec<u8>,
) -> io::Result<Result<RecordBatchHeader, BatchError>> {
    let present = usize::try_from(end.saturating_sub(position)).unwrap_or(usize::MAX);
    let Some(header) = read_header(file, position, end)? else {
        return Ok(Err(BatchError::TruncatedHeader { present }));
    };
    let total = header.total_len();
    if total < BATCH_HEADER_LEN {
        return Ok(Err(BatchError::LengthTooSmall(header.batch_length)));
    }
    if total > present {
        return Ok(Err(BatchError::TruncatedBatch {
            declared: total,
            present,
        }));
    }
    buffer.clear();
    buffer.resize(total, 0);
    let read = file.read_up_to(buffer, position)?;
    let bytes = buffer.get(..read).unwrap_or_default();
    Ok(batch::validate_batch(bytes, BatchRules::Stored))
}

/// Reads batch headers front to back through a small read-ahead buffer, so that
/// walking many small batches costs one read per buffer, not one per batch.
#[derive(Debug)]
pub(crate) struct HeaderCursor<'a> {
    file: &'a dyn StoreFile,
    buffer: Vec<u8>,
    buffer_start: u64,
    /// Size of the last batch seen: after a big one, read just the next header
    /// rather than a read-ahead buffer that would mostly hold record bytes.
    last_len: usize,
}

const READ_AHEAD: usize = 16 * 1024;

impl<'a> HeaderCursor<'a> {
    pub(crate) fn new(file: &'a dyn StoreFile) -> HeaderCursor<'a> {
        HeaderCursor {
            file,
            buffer: Vec::new(),
            buffer_start: 0,
            last_len: 0,
        }
    }

    /// The header of the batch at `position`, if a whole batch lies before `end`.
    pub(crate) fn header_at(
        &mut self,
        position: u64,
        end: u64,
    ) -> io::Result<Option<RecordBatchHeader>> {
        if end.saturating_sub(position) < BATCH_HEADER_LEN as u64 {
            return Ok(None);
        }
        let cached = position
            .checked_sub(self.buffer_start)
            .and_then(|from| usize::try_from(from).ok())
            .and_then(|from| self.buffer.get(from..))
            .and_then(RecordBatchHeader::parse);
        let header = match cached {
            Some(header) => Some(header),
            None => {
                let chunk = if self.last_len > READ_AHEAD / 4 {
                    BATCH_HEADER_LEN
                } else {
                    READ_AHEAD
                };
                let want = usize::try_from(end - position).unwrap_or(chunk).min(chunk);
                self.buffer.resize(want, 0);
                let read = self.file.read_up_to(&mut self.buffer, position)?;
                self.buffer.truncate(read);
                self.buffer_start = position;
                RecordBatchHeader::parse(&self.buffer)
            }
        };
        let header = header.filter(|h| {
            h.total_len() >= BATCH_HEADER_LEN && position + h.total_len() as u64 <= end
        });
        self.last_len = header.map_or(0, |h| h.total_len());
        Ok(header)
    }
}
