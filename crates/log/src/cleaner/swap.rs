//! Putting cleaned segments in place so that a crash at any point leaves either the
//! old segments or the new ones, never a mix, and what the cleaner has done durable.
//!
//! 1. The cleaned segment of a group of old segments is written as
//!    `<base>.log.cleaned` (and `.index.cleaned`, `.timeindex.cleaned`), fsynced, and
//!    the directory fsynced.
//! 2. A fresh checkpoint, so that none on disk names a position in a segment about to
//!    be rewritten (written by the caller, `PartitionLog::clean`).
//! 3. The commit: a `cleaning` marker naming each group (its new base and the old
//!    segments it replaces) and how far the log will be clean is written atomically
//!    (temp file, fsync, rename, directory fsync).
//! 4. Each old segment's files are deleted and each `.cleaned` file renamed over its
//!    final name; the directory is fsynced; `cleaner-offset` records how far the log
//!    has been cleaned, atomically (recovery allows gaps between batches below it:
//!    compaction removes records, offsets never change); the marker is deleted.
//!
//! On open, a marker means the swap was committed: step 4 is finished (a `.cleaned`
//! file still there replaces its final name; old segments are deleted; the cleaner
//! offset is written) before the log is read. Without a marker, `.cleaned` files are
//! the remains of an unfinished cleaning and are deleted: the old segments were never
//! touched, and the cleaner offset never moved.
#![deny(clippy::indexing_slicing)]

use std::path::{Path, PathBuf};

use spool_model::Offset;

use crate::error::{LogError, Result};
use crate::file_cache::FileCache;
use crate::segment::SegmentPaths;
use crate::small_file::{checked_body, read_small, write_checked};

const CLEANER_OFFSET_FILE: &str = "cleaner-offset";
const CLEANER_OFFSET_TMP: &str = "cleaner-offset.tmp";
const MARKER_FILE: &str = "cleaning";
const MARKER_TMP: &str = "cleaning.tmp";
const CLEANED_SUFFIX: &str = ".cleaned";
const OFFSET_MAGIC: &[u8; 4] = b"SPCO";
const MARKER_MAGIC: &[u8; 4] = b"SPSW";
/// A marker larger than this is not one the cleaner wrote.
const MAX_MARKER_LEN: u64 = 16 << 20;

/// One group of old segments replaced by one cleaned segment at `base`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SwapGroup {
    pub(crate) base: Offset,
    /// The old segments' bases, `base` first.
    pub(crate) old_bases: Vec<Offset>,
}

/// The `.cleaned` names of the segment at `base`.
pub(crate) fn cleaned_paths(dir: &Path, base: Offset) -> SegmentPaths {
    let paths = SegmentPaths::new(dir, base);
    SegmentPaths {
        log: with_suffix(&paths.log),
        index: with_suffix(&paths.index),
        time_index: with_suffix(&paths.time_index),
    }
}

fn with_suffix(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(CLEANED_SUFFIX);
    PathBuf::from(name)
}

/// How far the log in `dir` has been cleaned (batches below it may have gaps between
/// them); zero if it never was, or the file is unreadable.
pub(crate) fn read_cleaner_offset(files: &FileCache, dir: &Path) -> Result<Offset> {
    let path = dir.join(CLEANER_OFFSET_FILE);
    let Some(bytes) = read_small(files, &path, 64)? else {
        return Ok(Offset::ZERO);
    };
    let parsed = checked_body(&bytes, OFFSET_MAGIC)
        .and_then(|body| Some(Offset(i64::from_be_bytes(body.get(..8)?.try_into().ok()?))));
    // Written atomically, so never torn: unreadable means a damaged disk. Reading the
    // log as if never cleaned would take the cleaner's gaps for corruption.
    parsed.ok_or(LogError::Failed { path })
}

/// Records durably that the log in `dir` has been cleaned up to `offset`.
pub(crate) fn write_cleaner_offset(files: &FileCache, dir: &Path, offset: Offset) -> Result<()> {
    let mut body = Vec::with_capacity(8);
    body.extend_from_slice(&offset.0.to_be_bytes());
    write_checked(
        files,
        dir,
        CLEANER_OFFSET_TMP,
        CLEANER_OFFSET_FILE,
        OFFSET_MAGIC,
        &body,
    )
}

/// Commits a swap: after this, recovery finishes it whatever happens.
pub(crate) fn write_marker(
    files: &FileCache,
    dir: &Path,
    groups: &[SwapGroup],
    cleaned_up_to: Offset,
) -> Result<()> {
    let mut body = Vec::new();
    body.extend_from_slice(&cleaned_up_to.0.to_be_bytes());
    body.extend_from_slice(
        &u32::try_from(groups.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    for group in groups {
        body.extend_from_slice(&group.base.0.to_be_bytes());
        let count = u32::try_from(group.old_bases.len()).unwrap_or(u32::MAX);
        body.extend_from_slice(&count.to_be_bytes());
        for base in &group.old_bases {
            body.extend_from_slice(&base.0.to_be_bytes());
        }
    }
    write_checked(files, dir, MARKER_TMP, MARKER_FILE, MARKER_MAGIC, &body)
}

/// Step 4: the old segments' files go, the cleaned ones take their names, the cleaner
/// offset moves to `cleaned_up_to`, the marker goes. Idempotent, so that recovery can
/// run it again after a crash half-way.
pub(crate) fn finish(
    files: &FileCache,
    dir: &Path,
    groups: &[SwapGroup],
    cleaned_up_to: Offset,
) -> Result<()> {
    let store = files.store();
    for group in groups {
        for old in group.old_bases.iter().filter(|b| **b != group.base) {
            let paths = SegmentPaths::new(dir, *old);
            for path in [&paths.log, &paths.index, &paths.time_index] {
                files.forget(path);
                remove_if_present(files, path)?;
            }
        }
        let cleaned = cleaned_paths(dir, group.base);
        let last = SegmentPaths::new(dir, group.base);
        // The log file last: its `.cleaned` name is what recovery looks for.
        for (from, to) in [
            (&cleaned.index, &last.index),
            (&cleaned.time_index, &last.time_index),
            (&cleaned.log, &last.log),
        ] {
            if store.exists(from) {
                files.forget(from);
                files.forget(to);
                store
                    .rename(from, to)
                    .map_err(LogError::io("rename", from))?;
            }
        }
    }
    store
        .sync_dir(dir)
        .map_err(LogError::io("fsync directory", dir))?;
    // Gaps exist now: recovery must allow them, before the marker that says so goes.
    write_cleaner_offset(files, dir, cleaned_up_to)?;
    remove_if_present(files, &dir.join(MARKER_FILE))?;
    store
        .sync_dir(dir)
        .map_err(LogError::io("fsync directory", dir))
}

/// Whether a partition directory's `names` show a cleaning cut short — a marker, a
/// temp file, `.cleaned` files — for [`recover`] to deal with. (So that opening a
/// partition costs no more I/O than it did before compaction existed.)
pub(crate) fn left_unfinished<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    names.any(|name| {
        [MARKER_FILE, MARKER_TMP, CLEANER_OFFSET_TMP].contains(&name)
            || name.ends_with(CLEANED_SUFFIX)
    })
}

/// Whether a partition directory's `names` hold a cleaner offset to read.
pub(crate) fn was_cleaned<'a>(mut names: impl Iterator<Item = &'a str>) -> bool {
    names.any(|name| name == CLEANER_OFFSET_FILE)
}

/// Deletes what an unfinished cleaning left (its `.cleaned` files), or finishes a
/// committed swap. Runs before the segments of `dir` are listed.
pub(crate) fn recover(files: &FileCache, dir: &Path) -> Result<()> {
    let store = files.store();
    for tmp in [MARKER_TMP, CLEANER_OFFSET_TMP] {
        remove_if_present(files, &dir.join(tmp))?;
    }
    if let Some((cleaned_up_to, groups)) = read_marker(files, dir)? {
        tracing::info!(dir = %dir.display(), groups = groups.len(), "finishing a committed segment swap of the log cleaner");
        finish(files, dir, &groups, cleaned_up_to)?;
    }
    let entries = store.list_dir(dir).map_err(LogError::io("list", dir))?;
    let mut removed = false;
    for entry in entries.iter().filter(|e| e.name.ends_with(CLEANED_SUFFIX)) {
        remove_if_present(files, &dir.join(&entry.name))?;
        removed = true;
    }
    if removed {
        store
            .sync_dir(dir)
            .map_err(LogError::io("fsync directory", dir))?;
    }
    Ok(())
}

fn read_marker(files: &FileCache, dir: &Path) -> Result<Option<(Offset, Vec<SwapGroup>)>> {
    let path = dir.join(MARKER_FILE);
    let Some(bytes) = read_small(files, &path, MAX_MARKER_LEN)? else {
        return Ok(None);
    };
    let groups = checked_body(&bytes, MARKER_MAGIC).and_then(decode_groups);
    if groups.is_none() {
        // Written atomically, so never torn: a damaged marker is a damaged disk.
        return Err(LogError::Failed { path: path.clone() });
    }
    Ok(groups)
}

fn decode_groups(body: &[u8]) -> Option<(Offset, Vec<SwapGroup>)> {
    let (cleaned_up_to, mut body) = body.split_first_chunk::<8>()?;
    let cleaned_up_to = Offset(i64::from_be_bytes(*cleaned_up_to));
    let u32_at = |body: &mut &[u8]| -> Option<u32> {
        let (head, rest) = body.split_first_chunk::<4>()?;
        *body = rest;
        Some(u32::from_be_bytes(*head))
    };
    let i64_at = |body: &mut &[u8]| -> Option<i64> {
        let (head, rest) = body.split_first_chunk::<8>()?;
        *body = rest;
        Some(i64::from_be_bytes(*head))
    };
    let count = u32_at(&mut body)?;
    let mut groups = Vec::new();
    for _ in 0..count {
        let base = Offset(i64_at(&mut body)?);
        let old = u32_at(&mut body)?;
        // Each old base takes 8 bytes: the count cannot outrun the bytes present.
        if usize::try_from(old).ok()?.saturating_mul(8) > body.len() {
            return None;
        }
        let old_bases = (0..old)
            .map(|_| i64_at(&mut body).map(Offset))
            .collect::<Option<Vec<_>>>()?;
        groups.push(SwapGroup { base, old_bases });
    }
    body.is_empty().then_some((cleaned_up_to, groups))
}

fn remove_if_present(files: &FileCache, path: &Path) -> Result<()> {
    match files.store().remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(LogError::Io {
            operation: "delete",
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_refuse_damage() {
        let groups = vec![
            SwapGroup {
                base: Offset(0),
                old_bases: vec![Offset(0), Offset(10), Offset(25)],
            },
            SwapGroup {
                base: Offset(40),
                old_bases: vec![Offset(40)],
            },
        ];
        let mut body = Vec::new();
        body.extend_from_slice(&77i64.to_be_bytes());
        body.extend_from_slice(&2u32.to_be_bytes());
        for group in &groups {
            body.extend_from_slice(&group.base.0.to_be_bytes());
            body.extend_from_slice(&u32::try_from(group.old_bases.len()).unwrap().to_be_bytes());
            for base in &group.old_bases {
                body.extend_from_slice(&base.0.to_be_bytes());
            }
        }
        assert_eq!(decode_groups(&body), Some((Offset(77), groups)));
        let mut lying = body.clone();
        lying[20..24].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(decode_groups(&lying), None, "a count beyond the bytes");
        assert_eq!(decode_groups(&body[..body.len() - 1]), None);
    }
}
