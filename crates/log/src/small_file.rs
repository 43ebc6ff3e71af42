//! Small files replaced whole and atomically — the checkpoint, the cleaner's offset
//! and its swap marker, the leader epoch history: a temp file is written and fsynced, renamed over the file, and
//! the directory fsynced, so a crash leaves the old file or the new one. Read whole,
//! with a cap, so that a damaged file never sizes a buffer beyond what it may hold.

use std::path::Path;

use spool_store::OpenMode;

use crate::error::{LogError, Result};
use crate::file_cache::FileCache;

/// What reading a small file found.
#[derive(Debug)]
pub(crate) enum Stored {
    Missing,
    /// Longer than the cap: not read.
    TooLarge(u64),
    Bytes(Vec<u8>),
}

/// Reads the file at `path` whole, if it exists and holds at most `max` bytes.
pub(crate) fn read(files: &FileCache, path: &Path, max: u64) -> Result<Stored> {
    let store = files.store();
    if !store.exists(path) {
        return Ok(Stored::Missing);
    }
    let file = store
        .open(path, OpenMode::Read)
        .map_err(LogError::io("open", path))?;
    // The length is the file's own: the buffer never exceeds the bytes present.
    let len = file.len().map_err(LogError::io("stat", path))?;
    if len > max {
        return Ok(Stored::TooLarge(len));
    }
    let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(0)];
    let read = file
        .read_up_to(&mut bytes, 0)
        .map_err(LogError::io("read", path))?;
    bytes.truncate(read);
    Ok(Stored::Bytes(bytes))
}

/// Replaces `dir/name` with `bytes` atomically, through `dir/tmp_name`.
pub(crate) fn replace(
    files: &FileCache,
    dir: &Path,
    tmp_name: &str,
    name: &str,
    bytes: &[u8],
) -> Result<()> {
    let store = files.store();
    let tmp = dir.join(tmp_name);
    let path = dir.join(name);
    let file = store
        .open(&tmp, OpenMode::Create)
        .map_err(LogError::io("create", &tmp))?;
    file.set_len(0).map_err(LogError::io("truncate", &tmp))?;
    file.write_at(bytes, 0)
        .map_err(LogError::io("write", &tmp))?;
    file.sync().map_err(LogError::io("fsync", &tmp))?;
    store
        .rename(&tmp, &path)
        .map_err(LogError::io("rename", &tmp))?;
    store
        .sync_dir(dir)
        .map_err(LogError::io("fsync directory", dir))
}

/// The version byte of checked files (`magic | version | body | crc32c`).
const CHECKED_VERSION: u8 = 1;

/// `magic | version | body | crc32c`, checked; the body.
pub(crate) fn checked_body<'a>(bytes: &'a [u8], magic: &[u8; 4]) -> Option<&'a [u8]> {
    let (content, crc) = bytes.split_last_chunk::<4>()?;
    if crc32c::crc32c(content) != u32::from_be_bytes(*crc) {
        return None;
    }
    let rest = content.strip_prefix(magic)?;
    let (version, body) = rest.split_first()?;
    (*version == CHECKED_VERSION).then_some(body)
}

/// `magic | version | body | crc32c`, replacing `dir/name` atomically.
pub(crate) fn write_checked(
    files: &FileCache,
    dir: &Path,
    tmp_name: &str,
    name: &str,
    magic: &[u8; 4],
    body: &[u8],
) -> Result<()> {
    let mut bytes = Vec::with_capacity(body.len() + 9);
    bytes.extend_from_slice(magic);
    bytes.push(CHECKED_VERSION);
    bytes.extend_from_slice(body);
    let crc = crc32c::crc32c(&bytes);
    bytes.extend_from_slice(&crc.to_be_bytes());
    replace(files, dir, tmp_name, name, &bytes)
}

/// The file's bytes (an empty list, which no check accepts, when it is too large to
/// be one Spool wrote); `None` if it does not exist.
pub(crate) fn read_small(files: &FileCache, path: &Path, max: u64) -> Result<Option<Vec<u8>>> {
    Ok(match read(files, path, max)? {
        Stored::Missing => None,
        Stored::TooLarge(_) => Some(Vec::new()),
        Stored::Bytes(bytes) => Some(bytes),
    })
}
