//! Opening a partition's log, recovering it after a crash.
//!
//! Everything before the checkpoint's recovery point was fsynced, so it is trusted
//! as it is. Everything after it is scanned batch by batch, with full validation
//! (framing, CRC-32C, header fields, offsets increasing); the log is truncated at the
//! first batch that fails, later segments are deleted, and the indexes of what was
//! scanned are rebuilt. A missing, corrupt or impossible checkpoint (one pointing past
//! the end of the log) makes the scan start at the very beginning.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use spool_model::{Offset, Timestamp};

use crate::checkpoint::{self, Checkpoint, LogPosition, ProducerSnapshot};
use crate::cleaner;
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::file_cache::FileCache;
use crate::index::SegmentIndex;
use crate::leader_epochs::LeaderEpochs;
use crate::partition::{LogState, PartitionLog};
use crate::producers::ProducerStates;
use crate::scan::{self, HeaderCursor};
use crate::segment::{self, NewIndexEntries, Segment};
use crate::tail_cache::TailCache;

/// Where the recovery scan begins.
#[derive(Debug, Clone, Copy)]
struct ScanStart {
    segment: usize,
    position: u64,
    offset: Offset,
}

impl PartitionLog {
    /// Opens (creating if needed) the log in `dir` and recovers it.
    pub fn open(
        files: Arc<FileCache>,
        dir: impl Into<PathBuf>,
        config: LogConfig,
    ) -> Result<PartitionLog> {
        config.validate()?;
        let dir = dir.into();
        let store = files.store().clone();
        if !store.exists(&dir) {
            // A new directory's name lives in its parent: make each new level durable.
            let new_levels: Vec<PathBuf> = dir
                .ancestors()
                .take_while(|level| !level.as_os_str().is_empty() && !store.exists(level))
                .map(Path::to_path_buf)
                .collect();
            store
                .create_dir_all(&dir)
                .map_err(LogError::io("create directory", &dir))?;
            for level in &new_levels {
                let parent = level.parent().unwrap_or(Path::new(""));
                store
                    .sync_dir(parent)
                    .map_err(LogError::io("fsync directory", parent))?;
            }
        }
        let mut entries = store.list_dir(&dir).map_err(LogError::io("list", &dir))?;
        // A cleaning pass cut short: finish its committed swap, or drop its files.
        if cleaner::swap::left_unfinished(entries.iter().map(|e| e.name.as_str())) {
            cleaner::swap::recover(&files, &dir)?;
            entries = store.list_dir(&dir).map_err(LogError::io("list", &dir))?;
        }
        let cleaned_up_to = if cleaner::swap::was_cleaned(entries.iter().map(|e| e.name.as_str())) {
            cleaner::swap::read_cleaner_offset(&files, &dir)?
        } else {
            Offset::ZERO
        };
        let mut bases = Vec::new();
        for entry in entries {
            if checkpoint::is_leftover(&entry.name) {
                let path = dir.join(&entry.name);
                store
                    .remove_file(&path)
                    .map_err(LogError::io("delete", &path))?;
            } else if let Some(base) = segment::parse_segment_name(&entry.name) {
                bases.push(base);
            }
        }
        bases.sort();
        let stored = Checkpoint::read(&files, &dir)?;
        let checkpoint = stored.as_ref().map(|file| file.checkpoint);
        let snapshot = stored.and_then(|file| file.producers);
        let state = if bases.is_empty() {
            let base =
                checkpoint.map_or(Offset::ZERO, |c| c.recovery_point.offset.max(c.log_start));
            new_log(&files, &dir, base)?
        } else {
            let mut state = recover(&files, &dir, &config, &bases, checkpoint, cleaned_up_to)?;
            // An unchanged checkpoint (after a clean shutdown) need not be written
            // again, if its producer snapshot is of this very log end (below).
            state.last_checkpoint = checkpoint;
            state
        };
        let log = PartitionLog::from_parts(dir, files, config, state);
        let snapshot_at = log.rebuild_producers(snapshot)?;
        {
            // A snapshot taken elsewhere (or refused) must not stay on disk: a later
            // open could find a batch boundary at its position again and trust it.
            let mut state = log.lock();
            if snapshot_at != Some(state.end_position()) {
                state.last_checkpoint = None;
            }
        }
        log.write_checkpoint()?;
        log.load_leader_epochs()?;
        Ok(log)
    }

    /// Loads the leader epoch history, dropping (durably) the epochs that recovery
    /// truncated away.
    fn load_leader_epochs(&self) -> Result<()> {
        let mut epochs = LeaderEpochs::load(&self.files, &self.dir)?;
        let mut state = self.lock();
        if epochs.truncate_to(state.log_end()) {
            tracing::info!(dir = %self.dir.display(), "leader epochs past the recovered log end dropped");
            epochs.store(&self.files, &self.dir)?;
        }
        self.note_leader_epoch(epochs.latest());
        state.leader_epochs = epochs;
        Ok(())
    }
}

impl PartitionLog {
    /// Rebuilds the idempotent producers' state: from the checkpoint's snapshot and
    /// the batch headers after it, or, without a usable snapshot, from the headers of
    /// the whole log. A snapshot is unusable when recovery cut the log below it (a
    /// crash lost unsynced writes it had seen).
    /// Returns where the snapshot that was used was taken.
    fn rebuild_producers(&self, snapshot: Option<ProducerSnapshot>) -> Result<Option<LogPosition>> {
        let (mut rebuilt, to_read, used_at) = {
            let state = self.lock();
            let usable = snapshot.and_then(|s| {
                let at = usable_snapshot_start(&self.files, &state.segments, s.at)?;
                Some((s.states, at, s.at))
            });
            let used_at = usable.as_ref().map(|(_, _, at)| *at);
            let usable = usable.map(|(states, start, _)| (states, start));
            let (states, (first, position)) = usable.unwrap_or_else(|| {
                if state.segments.iter().any(|s| s.size > 0) {
                    tracing::info!(dir = %self.dir.display(), "no usable producer snapshot; reading every batch header");
                }
                (ProducerStates::default(), (0, 0))
            });
            let mut to_read = Vec::new();
            for (at, segment) in state.segments.iter().enumerate().skip(first) {
                let from = if at == first { position } else { 0 };
                to_read.push((segment.log_file(&self.files)?, from, segment.size));
            }
            (states, to_read, used_at)
        };
        for (file, from, end) in to_read {
            let mut headers = HeaderCursor::new(file.as_ref());
            let mut position = from;
            while let Some(header) = headers
                .header_at(position, end)
                .map_err(LogError::io("read", &self.dir))?
            {
                let marker = if header.is_control() {
                    read_marker_at(file.as_ref(), position, &header)
                        .map_err(LogError::io("read", &self.dir))?
                } else {
                    None
                };
                rebuilt.apply(&header, marker);
                position += header.total_len() as u64;
            }
        }
        self.lock().producers = rebuilt;
        Ok(used_at)
    }
}

/// The transaction marker in the control batch at `position`. A control batch is a
/// few dozen bytes; one larger than a marker can be is no marker.
fn read_marker_at(
    file: &dyn spool_store::StoreFile,
    position: u64,
    header: &spool_model::RecordBatchHeader,
) -> std::io::Result<Option<spool_protocol::control::Marker>> {
    const MARKER_MAX_LEN: usize = 256;
    let len = header.total_len();
    if len > MARKER_MAX_LEN {
        return Ok(None);
    }
    let mut bytes = vec![0_u8; len];
    let read = file.read_up_to(&mut bytes, position)?;
    Ok(bytes
        .get(..read)
        .and_then(spool_protocol::control::read_marker))
}

/// Where to start reading headers after a snapshot taken at `at`: its segment and
/// position, if the log still has a batch boundary there at the same offset.
fn usable_snapshot_start(
    files: &FileCache,
    segments: &[Segment],
    at: LogPosition,
) -> Option<(usize, u64)> {
    let index = segments.iter().position(|s| s.base == at.segment_base)?;
    let segment = segments.get(index)?;
    let offset_there = if at.position == segment.size {
        match segments.get(index + 1) {
            Some(next) => next.base,
            None => segment.next_offset,
        }
    } else {
        let file = segment.log_file(files).ok()?;
        scan::read_header(file.as_ref(), at.position, segment.size)
            .ok()??
            .base_offset
    };
    (at.position <= segment.size && offset_there == at.offset).then_some((index, at.position))
}

pub(crate) fn new_log(files: &FileCache, dir: &Path, base: Offset) -> Result<LogState> {
    let mut segment = Segment::new(dir, base, 0, base);
    segment.index = Some(SegmentIndex::default());
    for path in [
        &segment.paths.log,
        &segment.paths.index,
        &segment.paths.time_index,
    ] {
        files.create(path).map_err(LogError::io("create", path))?;
    }
    files
        .store()
        .sync_dir(dir)
        .map_err(LogError::io("fsync directory", dir))?;
    let end = LogPosition {
        offset: base,
        segment_base: base,
        position: 0,
    };
    Ok(state_with(vec![segment], base, end))
}

fn state_with(segments: Vec<Segment>, log_start: Offset, end: LogPosition) -> LogState {
    LogState {
        segments,
        log_start,
        high_watermark: end,
        durable: end,
        unsynced: Vec::new(),
        dir_dirty: false,
        tail: TailCache::default(),
        unflushed_records: 0,
        last_sync: Instant::now(),
        failed: false,
        poisoned: false,
        last_checkpoint: None,
        last_used: Instant::now(),
        producers: ProducerStates::default(),
        leader_epochs: LeaderEpochs::default(),
        upload: None,
    }
}

/// `cleaned_up_to`: below it the cleaner has removed records, so batches and segments
/// may leave gaps between their offsets there (and only there).
fn recover(
    files: &FileCache,
    dir: &Path,
    config: &LogConfig,
    bases: &[Offset],
    checkpoint: Option<Checkpoint>,
    cleaned_up_to: Offset,
) -> Result<LogState> {
    let mut segments = Vec::with_capacity(bases.len());
    for (at, base) in bases.iter().enumerate() {
        let paths = segment::SegmentPaths::new(dir, *base);
        let file = files
            .get(&paths.log)
            .map_err(LogError::io("open", &paths.log))?;
        let size = file.len().map_err(LogError::io("stat", &paths.log))?;
        let next = bases.get(at + 1).copied().unwrap_or(*base);
        segments.push(Segment::new(dir, *base, size, next));
    }
    // A recovery point in a segment the cleaner rewrote (a checkpoint older than the
    // swap) names a byte position that no longer starts a batch: scan the whole log,
    // which allows the cleaner's gaps.
    let trusted = checkpoint.filter(|c| c.recovery_point.segment_base >= cleaned_up_to);
    // A log at its own offsets (a mirror's) has gaps anywhere; the check that a batch
    // never starts before the one before it ended stays.
    let cleaned_up_to = if config.own_offsets {
        Offset(i64::MAX)
    } else {
        cleaned_up_to
    };
    let start = scan_start(&segments, trusted, dir);
    let interval = config.index_interval_bytes;
    let mut scanned_any = false;
    let mut truncate_at = None;
    let mut expected = start.offset;
    for at in start.segment..segments.len() {
        let Some(segment) = segments.get_mut(at) else {
            break;
        };
        let cleaned_gap = segment.base > expected && segment.base <= cleaned_up_to;
        if at > start.segment && segment.base != expected && !cleaned_gap {
            // Segments roll at the log end, so a segment must start where the one
            // before it ended; a gap means the earlier one lost its tail.
            tracing::warn!(
                segment = %segment.paths.log.display(),
                expected = %expected,
                "segment does not continue the log; dropping it and those after it"
            );
            let previous = at - 1;
            let end = segments.get(previous).map_or(0, |s| s.size);
            truncate_at = Some((previous, end));
            break;
        }
        let from = if at == start.segment {
            start.position
        } else {
            0
        };
        if cleaned_gap {
            expected = segment.base;
        }
        let (stopped_at, next) = scan_segment(
            files,
            segment,
            from,
            expected,
            interval,
            at == start.segment,
            cleaned_up_to,
        )?;
        scanned_any |= segment.size > from;
        expected = next;
        if let Some(position) = stopped_at {
            truncate_at = Some((at, position));
            break;
        }
    }
    if let Some((at, position)) = truncate_at {
        truncate(files, dir, &mut segments, at, position, interval)?;
        scanned_any = true;
    }
    if scanned_any {
        // What the scan kept becomes the new recovery point: make it durable first.
        for segment in segments.iter().skip(start.segment) {
            for path in [
                &segment.paths.log,
                &segment.paths.index,
                &segment.paths.time_index,
            ] {
                let file = files.get(path).map_err(LogError::io("open", path))?;
                file.sync().map_err(LogError::io("fsync", path))?;
            }
        }
        files
            .store()
            .sync_dir(dir)
            .map_err(LogError::io("fsync directory", dir))?;
    }
    let first_base = segments.first().map_or(Offset::ZERO, |s| s.base);
    let active = segments.last().ok_or_else(|| LogError::Failed {
        path: dir.to_path_buf(),
    })?;
    let end = LogPosition {
        offset: active.next_offset,
        segment_base: active.base,
        position: active.size,
    };
    let log_start = checkpoint
        .map_or(first_base, |c| c.log_start.max(first_base))
        .min(end.offset);
    Ok(state_with(segments, log_start, end))
}

/// Trusts the checkpoint if it names an existing segment and a position inside it.
fn scan_start(segments: &[Segment], checkpoint: Option<Checkpoint>, dir: &Path) -> ScanStart {
    let from_the_start = ScanStart {
        segment: 0,
        position: 0,
        offset: segments.first().map_or(Offset::ZERO, |s| s.base),
    };
    let Some(point) = checkpoint.map(|c| c.recovery_point) else {
        return from_the_start;
    };
    let found = segments.iter().position(|s| s.base == point.segment_base);
    match found.and_then(|at| Some((at, segments.get(at)?))) {
        Some((at, segment)) if point.position <= segment.size && point.offset >= segment.base => {
            ScanStart {
                segment: at,
                position: point.position,
                offset: point.offset,
            }
        }
        _ => {
            tracing::warn!(
                dir = %dir.display(),
                checkpoint = ?point,
                "checkpoint points past the end of the log; scanning the whole log"
            );
            from_the_start
        }
    }
}

/// Validates the batches of `segment` from `from` on, rebuilding its indexes. Returns
/// where the first invalid batch starts (if any) and the offset after the last valid one.
fn scan_segment(
    files: &FileCache,
    segment: &mut Segment,
    from: u64,
    expected: Offset,
    interval: u64,
    is_start: bool,
    cleaned_up_to: Offset,
) -> Result<(Option<u64>, Offset)> {
    if is_start && from > 0 {
        keep_index_prefix(files, segment, from, expected, interval)?;
    } else {
        segment.index = Some(SegmentIndex::default());
        segment.bytes_since_index = 0;
        segment.max_timestamp = None;
    }
    segment.next_offset = expected.max(segment.base);
    let file = segment.log_file(files)?;
    let mut entries = NewIndexEntries::default();
    let mut buffer = Vec::new();
    let mut position = from;
    let mut stopped_at = None;
    let file_len = segment.size;
    while position < file_len {
        let checked = scan::read_valid_batch(file.as_ref(), position, file_len, &mut buffer)
            .map_err(LogError::io("read", &segment.paths.log))?;
        // The cleaner leaves gaps below where it cleaned: a batch may start past the
        // end of the one before it there, never before it.
        let next = segment.next_offset;
        let problem = match checked {
            Ok(header)
                if header.base_offset != next
                    && !(header.base_offset > next && header.base_offset <= cleaned_up_to) =>
            {
                Some(format!(
                    "batch offset {} does not continue the log at {}",
                    header.base_offset, segment.next_offset
                ))
            }
            Ok(header) => {
                segment.note_batch(&header, position, interval, &mut entries);
                position += header.total_len() as u64;
                None
            }
            Err(error) => Some(error.to_string()),
        };
        if let Some(problem) = problem {
            tracing::warn!(
                segment = %segment.paths.log.display(),
                position,
                dropped_bytes = file_len - position,
                %problem,
                "truncating the log at an invalid batch"
            );
            stopped_at = Some(position);
            break;
        }
    }
    segment.size = position;
    if let Some(index) = segment.index.as_mut() {
        index.offsets.extend(entries.offsets);
        index.times.extend(entries.times);
    }
    let all = NewIndexEntries {
        offsets: segment
            .index
            .as_ref()
            .map(|i| i.offsets.clone())
            .unwrap_or_default(),
        times: segment
            .index
            .as_ref()
            .map(|i| i.times.clone())
            .unwrap_or_default(),
    };
    segment.write_index_files(files, &all, true)?;
    if stopped_at.is_none() {
        segment.seal_time_index(files, interval)?;
    }
    Ok((stopped_at, segment.next_offset))
}

/// For the segment holding the recovery point: keeps the index entries before it and
/// recomputes the max timestamp and index spacing from the last entry up to it.
fn keep_index_prefix(
    files: &FileCache,
    segment: &mut Segment,
    from: u64,
    offset: Offset,
    interval: u64,
) -> Result<()> {
    let full_size = segment.size;
    segment.size = from;
    let loaded = segment.index(files, interval).cloned();
    segment.size = full_size;
    let mut index = loaded?;
    index.offsets.retain(|e| u64::from(e.position) < from);
    let limit = segment.relative(offset).unwrap_or(u32::MAX);
    index.times.retain(|e| e.relative_offset < limit);
    let last_indexed = index.offsets.last().map_or(0, |e| u64::from(e.position));
    let mut max_timestamp: Option<Timestamp> = index.last_time().map(|e| e.timestamp);
    let file = segment.log_file(files)?;
    let mut cursor = HeaderCursor::new(file.as_ref());
    let mut position = last_indexed;
    while let Some(header) = cursor
        .header_at(position, from)
        .map_err(LogError::io("read", &segment.paths.log))?
    {
        max_timestamp =
            Some(max_timestamp.map_or(header.max_timestamp, |t| t.max(header.max_timestamp)));
        position += header.total_len() as u64;
    }
    segment.max_timestamp = max_timestamp;
    segment.bytes_since_index = from - last_indexed;
    segment.index = Some(index);
    Ok(())
}

/// Cuts the log at `position` of segment `at` and deletes every later segment.
fn truncate(
    files: &FileCache,
    dir: &Path,
    segments: &mut Vec<Segment>,
    at: usize,
    position: u64,
    interval: u64,
) -> Result<()> {
    for doomed in segments.drain(at + 1..) {
        tracing::warn!(segment = %doomed.paths.log.display(), "deleting a segment that follows a torn one");
        for path in [
            &doomed.paths.log,
            &doomed.paths.index,
            &doomed.paths.time_index,
        ] {
            files.forget(path);
            if files.store().exists(path) {
                files
                    .store()
                    .remove_file(path)
                    .map_err(LogError::io("delete", path))?;
            }
        }
    }
    if let Some(segment) = segments.get_mut(at) {
        let file = segment.log_file(files)?;
        file.set_len(position)
            .map_err(LogError::io("truncate", &segment.paths.log))?;
        segment.size = position;
        segment.seal_time_index(files, interval)?;
    }
    files
        .store()
        .sync_dir(dir)
        .map_err(LogError::io("fsync directory", dir))
}
