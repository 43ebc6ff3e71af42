//! The spill queue: acks=0 batches that could not go upstream wait here, on the local
//! disk (`databus.spill.dir`, at most `databus.spill.bytes`), and are sent when the
//! upstream answers again, also after Databus restarts. Files of entries
//! `[u32 length][u16 topic length][topic][i32 partition][batch]`, appended in order;
//! a file is deleted once every entry was acknowledged upstream. An entry cut short
//! by a crash (a torn tail) is dropped when read. Writes are not fsynced: a killed
//! process loses nothing the kernel has (acks=0 promised nothing more).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;

/// Bytes after which the file being written is closed and a new one begun.
const FILE_BYTES: u64 = 16 << 20;

/// One spilled batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spilled {
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) batch: Bytes,
}

/// The spill directory.
#[derive(Debug)]
pub(crate) struct Spill {
    dir: PathBuf,
    limit: u64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The file being appended to, its path and length.
    open: Option<(File, PathBuf, u64)>,
    /// The next file's number.
    next: u64,
    /// Bytes in every file.
    total: u64,
}

impl Spill {
    /// The spill directory `dir` (made if missing), with what earlier runs left.
    pub(crate) fn open(dir: &Path, limit: u64) -> std::io::Result<Spill> {
        std::fs::create_dir_all(dir)?;
        let files = files_in(dir)?;
        let next = files
            .last()
            .and_then(|path| number_of(path))
            .map_or(0, |n| n + 1);
        let mut total = 0;
        for path in &files {
            total += std::fs::metadata(path)?.len();
        }
        Ok(Spill {
            dir: dir.to_owned(),
            limit,
            state: Mutex::new(State {
                open: None,
                next,
                total,
            }),
        })
    }

    /// Appends one batch; `false` when the directory is full (the batch is dropped,
    /// as acks=0 allows) or cannot be written.
    pub(crate) fn push(&self, topic: &str, partition: i32, batch: &[u8]) -> bool {
        let mut entry = Vec::with_capacity(10 + topic.len() + batch.len());
        let (Ok(topic_len), Ok(length)) = (
            u16::try_from(topic.len()),
            u32::try_from(6 + topic.len() + batch.len()),
        ) else {
            return false;
        };
        entry.extend_from_slice(&length.to_be_bytes());
        entry.extend_from_slice(&topic_len.to_be_bytes());
        entry.extend_from_slice(topic.as_bytes());
        entry.extend_from_slice(&partition.to_be_bytes());
        entry.extend_from_slice(batch);
        let mut state = self.lock();
        if state.total + entry.len() as u64 > self.limit {
            return false;
        }
        if state
            .open
            .as_ref()
            .is_none_or(|(_, _, len)| *len >= FILE_BYTES)
        {
            let path = self.dir.join(format!("spill-{:020}.log", state.next));
            state.next += 1;
            match OpenOptions::new().create(true).append(true).open(&path) {
                Ok(file) => state.open = Some((file, path, 0)),
                Err(error) => {
                    tracing::warn!(%error, "cannot open a spill file");
                    return false;
                }
            }
        }
        let Some((file, _, len)) = state.open.as_mut() else {
            return false;
        };
        if let Err(error) = file.write_all(&entry) {
            tracing::warn!(%error, "cannot write the spill file");
            return false;
        }
        *len += entry.len() as u64;
        state.total += entry.len() as u64;
        true
    }

    /// Whether anything waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().total == 0
    }

    /// The oldest file's batches, the file closed first if it is being written;
    /// `None` when nothing waits.
    pub(crate) fn oldest(&self) -> Option<(PathBuf, Vec<Spilled>)> {
        let mut state = self.lock();
        let files = files_in(&self.dir).ok()?;
        let oldest = files.first()?.clone();
        if state
            .open
            .as_ref()
            .is_some_and(|(_, path, _)| *path == oldest)
        {
            state.open = None;
        }
        drop(state);
        let bytes = std::fs::read(&oldest).ok()?;
        Some((oldest, entries(&bytes)))
    }

    /// Deletes a file whose batches were all acknowledged upstream.
    pub(crate) fn done(&self, path: &Path) {
        let len = std::fs::metadata(path).map_or(0, |m| m.len());
        if let Err(error) = std::fs::remove_file(path) {
            tracing::warn!(%error, path = %path.display(), "cannot delete a sent spill file");
            return;
        }
        let mut state = self.lock();
        state.total = state.total.saturating_sub(len);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The spill files in `dir`, oldest first.
fn files_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| number_of(path).is_some())
        .collect();
    files.sort();
    Ok(files)
}

fn number_of(path: &Path) -> Option<u64> {
    path.file_name()?
        .to_str()?
        .strip_prefix("spill-")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

/// The whole entries of a file; a torn last one is left out.
fn entries(bytes: &[u8]) -> Vec<Spilled> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while let Some(length) = rest.get(..4) {
        let length = u32::from_be_bytes([length[0], length[1], length[2], length[3]]) as usize;
        let Some(entry) = rest.get(4..4 + length) else {
            break;
        };
        rest = rest.get(4 + length..).unwrap_or_default();
        let Some(topic_len) = entry
            .get(..2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        else {
            break;
        };
        let (Some(topic), Some(partition), Some(batch)) = (
            entry.get(2..2 + topic_len),
            entry.get(2 + topic_len..6 + topic_len),
            entry.get(6 + topic_len..),
        ) else {
            break;
        };
        out.push(Spilled {
            topic: String::from_utf8_lossy(topic).into_owned(),
            partition: i32::from_be_bytes([partition[0], partition[1], partition[2], partition[3]]),
            batch: Bytes::copy_from_slice(batch),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_batches_come_back_in_order_after_a_restart_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let spill = Spill::open(dir.path(), 1 << 20).unwrap_or_else(|e| panic!("{e}"));
        assert!(spill.is_empty());
        assert!(spill.push("orders", 2, b"first"));
        assert!(spill.push("audit", 0, b"second"));
        drop(spill);
        // A crash in the middle of a third entry.
        let file = files_in(dir.path()).unwrap_or_default()[0].clone();
        let mut torn = OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap_or_else(|e| panic!("{e}"));
        torn.write_all(&[0, 0, 0, 40, 0, 3])
            .unwrap_or_else(|e| panic!("{e}"));
        let spill = Spill::open(dir.path(), 1 << 20).unwrap_or_else(|e| panic!("{e}"));
        assert!(!spill.is_empty());
        let (path, batches) = spill.oldest().unwrap_or_else(|| panic!("a file"));
        assert_eq!(
            batches,
            vec![
                Spilled {
                    topic: "orders".into(),
                    partition: 2,
                    batch: Bytes::from_static(b"first")
                },
                Spilled {
                    topic: "audit".into(),
                    partition: 0,
                    batch: Bytes::from_static(b"second")
                },
            ]
        );
        spill.done(&path);
        assert!(spill.is_empty() && spill.oldest().is_none());
        let small = Spill::open(dir.path(), 20).unwrap_or_else(|e| panic!("{e}"));
        assert!(!small.push("t", 0, &[0; 32]), "past the limit: dropped");
    }
}
