//! Where Spool's bytes live.
//!
//! The storage engine sees files only through [`Store`] and [`StoreFile`]: positional
//! reads and writes, `sync`, and a few directory operations, all on paths relative to
//! the store's root. That narrow surface lets tests swap the local directory
//! ([`LocalStore`]) for memory ([`MemoryStore`]) or for a store that crashes on demand
//! ([`FaultyStore`]: fail the Nth write, drop everything not synced, tear the last
//! write) and check what survives.
//!
//! Errors are `std::io::Error`: every implementation is a file system of some kind, and
//! the engine wraps them in its own error with the path that failed.

mod faulty;
mod local;
mod memory;

use std::io;
use std::path::Path;
use std::sync::Arc;

pub use faulty::{CrashMode, FaultyStore};
pub use local::LocalStore;
pub use memory::MemoryStore;

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Read only; the file must exist.
    Read,
    /// Read and write; the file must exist.
    ReadWrite,
    /// Read and write; create the file empty if it does not exist.
    Create,
}

/// A name in a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
}

/// A directory tree of files, addressed by paths relative to its root.
///
/// A new file's name, a rename and a removal are durable only once the parent
/// directory has been synced with [`Store::sync_dir`], as on a POSIX file system.
pub trait Store: Send + Sync + std::fmt::Debug + 'static {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// The entries of `dir`, sorted by name; `NotFound` if it does not exist.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>>;
    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StoreFile>>;
    fn exists(&self, path: &Path) -> bool;
    fn remove_file(&self, path: &Path) -> io::Result<()>;
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Atomically replaces `to` with `from`.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the names in `dir` (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
}

/// An open file with positional I/O, safe to share between threads.
pub trait StoreFile: Send + Sync + std::fmt::Debug {
    fn len(&self) -> io::Result<u64>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Reads up to `buf.len()` bytes at `position`; fewer only at the end of the file.
    fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize>;
    /// Writes all of `buf` at `position`, extending the file if needed.
    fn write_at(&self, buf: &[u8], position: u64) -> io::Result<()>;
    /// Truncates or extends the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes the file's contents durable (`fdatasync`).
    fn sync(&self) -> io::Result<()>;
    /// The OS file descriptor, when the file is a real one: the fetch path hands it to
    /// `sendfile` so that bytes go from the page cache to the socket without a copy.
    fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        None
    }

    /// Reads exactly `buf.len()` bytes at `position`, or fails with `UnexpectedEof`.
    fn read_exact_at(&self, buf: &mut [u8], position: u64) -> io::Result<()> {
        let mut filled = 0;
        while filled < buf.len() {
            let rest = buf.get_mut(filled..).unwrap_or_default();
            let at = position + filled as u64;
            match self.read_at(rest, at)? {
                0 => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
                n => filled += n,
            }
        }
        Ok(())
    }

    /// Reads as many bytes as are present at `position`, up to `buf.len()`.
    fn read_up_to(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            let rest = buf.get_mut(filled..).unwrap_or_default();
            match self.read_at(rest, position + filled as u64)? {
                0 => break,
                n => filled += n,
            }
        }
        Ok(filled)
    }
}
