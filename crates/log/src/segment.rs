//! One segment: a `.log` file of batches and its two sparse indexes.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use spool_model::{Offset, RecordBatchHeader, Timestamp};
use spool_store::StoreFile;

use crate::error::{LogError, Result};
use crate::file_cache::FileCache;
use crate::index::{self, OFFSET_ENTRY_LEN, OffsetEntry, SegmentIndex, TIME_ENTRY_LEN, TimeEntry};
use crate::scan;

/// File names of a segment, from its base offset.
#[derive(Debug, Clone)]
pub(crate) struct SegmentPaths {
    pub(crate) log: PathBuf,
    pub(crate) index: PathBuf,
    pub(crate) time_index: PathBuf,
}

impl SegmentPaths {
    pub(crate) fn new(dir: &Path, base: Offset) -> SegmentPaths {
        let stem = format!("{:020}", base.0);
        SegmentPaths {
            log: dir.join(format!("{stem}.log")),
            index: dir.join(format!("{stem}.index")),
            time_index: dir.join(format!("{stem}.timeindex")),
        }
    }
}

/// The base offset named by a segment file name, `<20 digits>.log`.
pub(crate) fn parse_segment_name(name: &str) -> Option<Offset> {
    let digits = name.strip_suffix(".log")?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(Offset)
}

/// Index entries produced by one append, to be written with one write per file.
#[derive(Debug, Default)]
pub(crate) struct NewIndexEntries {
    pub(crate) offsets: Vec<OffsetEntry>,
    pub(crate) times: Vec<TimeEntry>,
}

#[derive(Debug)]
pub(crate) struct Segment {
    pub(crate) base: Offset,
    pub(crate) paths: SegmentPaths,
    /// Bytes of whole batches in the file.
    pub(crate) size: u64,
    /// The offset after this segment's last batch.
    pub(crate) next_offset: Offset,
    /// The largest batch max-timestamp in the segment; `None` until known (a closed
    /// segment's comes from its time index, read on first need).
    pub(crate) max_timestamp: Option<Timestamp>,
    /// When this process created or opened the segment, for `segment.ms`.
    pub(crate) opened_at: Instant,
    /// Loaded on first use, dropped when the partition goes idle.
    pub(crate) index: Option<SegmentIndex>,
    /// Log bytes appended since the last offset-index entry.
    pub(crate) bytes_since_index: u64,
}

impl Segment {
    pub(crate) fn new(dir: &Path, base: Offset, size: u64, next_offset: Offset) -> Segment {
        Segment {
            base,
            paths: SegmentPaths::new(dir, base),
            size,
            next_offset,
            max_timestamp: None,
            opened_at: Instant::now(),
            index: None,
            bytes_since_index: 0,
        }
    }

    pub(crate) fn log_file(&self, files: &FileCache) -> Result<Arc<dyn StoreFile>> {
        files
            .get(&self.paths.log)
            .map_err(LogError::io("open", &self.paths.log))
    }

    /// The offset relative to the segment base, if it fits the index's 32 bits.
    pub(crate) fn relative(&self, offset: Offset) -> Option<u32> {
        u32::try_from(offset.distance_from(self.base)).ok()
    }

    /// The segment's indexes, loading them from their files on first use. A missing
    /// or damaged index is rebuilt from the segment's batches and rewritten.
    pub(crate) fn index(&mut self, files: &FileCache, interval: u64) -> Result<&SegmentIndex> {
        if self.index.is_none() {
            self.load_index(files, interval)?;
        }
        Ok(self.index.get_or_insert_with(SegmentIndex::default))
    }

    fn load_index(&mut self, files: &FileCache, interval: u64) -> Result<()> {
        let offsets = read_whole(files, &self.paths.index)?;
        let times = read_whole(files, &self.paths.time_index)?;
        let (Some(offsets), Some(times)) = (offsets, times) else {
            return self.rebuild_index(files, interval);
        };
        let loaded = SegmentIndex {
            offsets: index::decode_offset_index(&offsets, self.size),
            times: index::decode_time_index(&times),
        };
        let damaged = loaded.offsets.len() * OFFSET_ENTRY_LEN != offsets.len()
            || loaded.times.len() * TIME_ENTRY_LEN != times.len();
        if damaged {
            tracing::warn!(segment = %self.paths.log.display(), "index damaged; rebuilding it");
            return self.rebuild_index(files, interval);
        }
        if let Some(last) = loaded.last_time() {
            self.max_timestamp = Some(
                self.max_timestamp
                    .map_or(last.timestamp, |t| t.max(last.timestamp)),
            );
        }
        self.bytes_since_index =
            self.size - loaded.offsets.last().map_or(0, |e| u64::from(e.position));
        self.index = Some(loaded);
        Ok(())
    }

    /// Rebuilds both indexes by walking the batch headers of the whole segment, and
    /// rewrites the index files.
    pub(crate) fn rebuild_index(&mut self, files: &FileCache, interval: u64) -> Result<()> {
        let log = self.log_file(files)?;
        self.index = Some(SegmentIndex::default());
        self.bytes_since_index = 0;
        self.max_timestamp = None;
        let mut entries = NewIndexEntries::default();
        let mut position = 0;
        while let Some(header) = scan::read_header(log.as_ref(), position, self.size)
            .map_err(LogError::io("read", &self.paths.log))?
        {
            let len = header.total_len() as u64;
            if len == 0 || position + len > self.size {
                break;
            }
            self.note_batch(&header, position, interval, &mut entries);
            position += len;
        }
        self.write_index_files(files, &entries, true)?;
        if let Some(index) = self.index.as_mut() {
            index.offsets.extend(entries.offsets);
            index.times.extend(entries.times);
        }
        self.seal_time_index(files, interval)
    }

    /// Accounts for a batch appended at `position`: updates the max timestamp and adds
    /// sparse index entries when `interval` bytes have passed since the last one.
    pub(crate) fn note_batch(
        &mut self,
        header: &RecordBatchHeader,
        position: u64,
        interval: u64,
        entries: &mut NewIndexEntries,
    ) {
        let max_timestamp = self
            .max_timestamp
            .map_or(header.max_timestamp, |t| t.max(header.max_timestamp));
        self.max_timestamp = Some(max_timestamp);
        self.next_offset = header.next_offset();
        let relative = self.relative(header.base_offset);
        let position32 = u32::try_from(position).ok();
        if let (true, Some(relative_offset), Some(position)) =
            (self.bytes_since_index >= interval, relative, position32)
        {
            entries.offsets.push(OffsetEntry {
                relative_offset,
                position,
            });
            let last_time = entries
                .times
                .last()
                .or_else(|| self.index.as_ref().and_then(|i| i.times.last()))
                .map(|e| e.timestamp);
            if last_time.is_none_or(|t| max_timestamp > t) {
                entries.times.push(TimeEntry {
                    timestamp: max_timestamp,
                    relative_offset,
                });
            }
            self.bytes_since_index = 0;
        }
        self.bytes_since_index += header.total_len() as u64;
    }

    /// The time-index entry that records the segment's final max timestamp, written
    /// when the segment is closed, as Kafka does, so a closed segment's max timestamp
    /// is the last entry of its time index.
    pub(crate) fn final_time_entry(&self, last_batch_base: Offset) -> Option<TimeEntry> {
        let max = self.max_timestamp?;
        let last = self.index.as_ref().and_then(SegmentIndex::last_time);
        if last.is_some_and(|e| e.timestamp >= max) {
            return None;
        }
        Some(TimeEntry {
            timestamp: max,
            relative_offset: self.relative(last_batch_base)?,
        })
    }

    /// Records the segment's largest timestamp as a last time-index entry (if the
    /// index does not already end with it), as Kafka does when a segment is closed, so
    /// that a closed segment's max timestamp is the last entry of its time index.
    pub(crate) fn seal_time_index(&mut self, files: &FileCache, interval: u64) -> Result<()> {
        self.index(files, interval)?;
        let last_batch_base = self.last_batch_base(files, interval)?;
        if let Some(entry) = self.final_time_entry(last_batch_base) {
            let entries = NewIndexEntries {
                offsets: Vec::new(),
                times: vec![entry],
            };
            self.write_index_files(files, &entries, false)?;
            if let Some(index) = self.index.as_mut() {
                index.times.push(entry);
            }
        }
        Ok(())
    }

    /// The base offset of the segment's last batch, walking from its last index entry.
    fn last_batch_base(&mut self, files: &FileCache, interval: u64) -> Result<Offset> {
        let start = self
            .index(files, interval)?
            .offsets
            .last()
            .map_or(0, |e| u64::from(e.position));
        let file = self.log_file(files)?;
        let mut cursor = scan::HeaderCursor::new(file.as_ref());
        let mut position = start;
        let mut last = self.base;
        while let Some(header) = cursor
            .header_at(position, self.size)
            .map_err(LogError::io("read", &self.paths.log))?
        {
            last = header.base_offset;
            position += header.total_len() as u64;
        }
        Ok(last)
    }

    /// Appends new entries to the index files (or rewrites them when `replace`).
    pub(crate) fn write_index_files(
        &self,
        files: &FileCache,
        entries: &NewIndexEntries,
        replace: bool,
    ) -> Result<()> {
        let existing = self.index.as_ref();
        let (offset_count, time_count) = match (replace, existing) {
            (false, Some(index)) => (index.offsets.len(), index.times.len()),
            _ => (0, 0),
        };
        let mut bytes = Vec::with_capacity(entries.offsets.len() * OFFSET_ENTRY_LEN);
        entries.offsets.iter().for_each(|e| e.encode(&mut bytes));
        write_entries(
            files,
            &self.paths.index,
            &bytes,
            (offset_count * OFFSET_ENTRY_LEN) as u64,
            replace,
        )?;
        bytes.clear();
        entries.times.iter().for_each(|e| e.encode(&mut bytes));
        write_entries(
            files,
            &self.paths.time_index,
            &bytes,
            (time_count * TIME_ENTRY_LEN) as u64,
            replace,
        )
    }

    /// The segment's max timestamp, reading its time index if not known yet.
    pub(crate) fn max_timestamp(
        &mut self,
        files: &FileCache,
        interval: u64,
    ) -> Result<Option<Timestamp>> {
        if self.max_timestamp.is_none() && self.size > 0 {
            self.index(files, interval)?;
        }
        if self.max_timestamp.is_none() && self.size > 0 {
            // Batches but no time entry: an index from before sealing; rebuild it.
            self.rebuild_index(files, interval)?;
        }
        Ok(self.max_timestamp)
    }
}

fn write_entries(
    files: &FileCache,
    path: &Path,
    bytes: &[u8],
    at: u64,
    replace: bool,
) -> Result<()> {
    if bytes.is_empty() && !replace {
        return Ok(());
    }
    let file = files.create(path).map_err(LogError::io("open", path))?;
    if replace || file.len().map_err(LogError::io("stat", path))? != at {
        file.set_len(at).map_err(LogError::io("truncate", path))?;
    }
    file.write_at(bytes, at)
        .map_err(LogError::io("write", path))
}

/// The whole content of a file, or `None` if it does not exist.
fn read_whole(files: &FileCache, path: &Path) -> Result<Option<Vec<u8>>> {
    if !files.store().exists(path) {
        return Ok(None);
    }
    let file = files.get(path).map_err(LogError::io("open", path))?;
    let len = file.len().map_err(LogError::io("stat", path))?;
    let mut bytes = vec![0; usize::try_from(len).unwrap_or(0)];
    let read = file
        .read_up_to(&mut bytes, 0)
        .map_err(LogError::io("read", path))?;
    bytes.truncate(read);
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_names_round_trip() {
        let paths = SegmentPaths::new(Path::new("t/0"), Offset(1234));
        assert_eq!(paths.log, Path::new("t/0/00000000000000001234.log"));
        assert_eq!(paths.index, Path::new("t/0/00000000000000001234.index"));
        assert_eq!(
            paths.time_index,
            Path::new("t/0/00000000000000001234.timeindex")
        );
        assert_eq!(
            parse_segment_name("00000000000000001234.log"),
            Some(Offset(1234))
        );
        assert_eq!(parse_segment_name("1234.log"), None);
        assert_eq!(parse_segment_name("00000000000000001234.index"), None);
    }
}
