//! A store that fails on purpose: it wraps a [`MemoryStore`] and can fail writes from
//! the Nth one on, and crash (see [`CrashMode`]).

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::{DirEntry, MemoryStore, OpenMode, Store, StoreFile};

/// What a simulated crash keeps of the bytes written since a file's last sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Nothing: the page cache is lost whole.
    DropUnsynced,
    /// A random prefix of them: a write torn part-way.
    TearUnsynced,
    /// A random number of random bytes in their place: sectors that hold garbage.
    GarbleUnsynced,
}

/// An in-memory store with faults on demand. Clones share files and faults.
#[derive(Debug, Clone)]
pub struct FaultyStore {
    memory: MemoryStore,
    faults: Arc<Faults>,
}

#[derive(Debug)]
struct Faults {
    /// Writes and syncs still allowed before they start failing; `u64::MAX` = never fail.
    writes_left: AtomicU64,
    /// The next file write panics, as a bug in the middle of an append would.
    panic_next_write: std::sync::atomic::AtomicBool,
    rng: Mutex<fastrand::Rng>,
}

impl FaultyStore {
    #[must_use]
    pub fn new(seed: u64) -> FaultyStore {
        FaultyStore {
            memory: MemoryStore::new(),
            faults: Arc::new(Faults {
                writes_left: AtomicU64::new(u64::MAX),
                panic_next_write: std::sync::atomic::AtomicBool::new(false),
                rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            }),
        }
    }

    /// After `n` more successful writes or syncs, every write and sync fails with an
    /// I/O error until [`FaultyStore::heal`].
    pub fn fail_after(&self, n: u64) {
        self.faults.writes_left.store(n, Ordering::SeqCst);
    }

    /// Makes the next file write panic (once), to test what a panic mid-append leaves.
    pub fn panic_on_next_write(&self) {
        self.faults.panic_next_write.store(true, Ordering::SeqCst);
    }

    /// See [`MemoryStore::tear_names_on_crash`].
    pub fn tear_names_on_crash(&self, torn: bool) {
        self.memory.tear_names_on_crash(torn);
    }

    pub fn heal(&self) {
        self.faults.writes_left.store(u64::MAX, Ordering::SeqCst);
    }

    /// Crashes the simulated machine; see [`MemoryStore::crash`]. Heals the faults.
    pub fn crash(&self, mode: CrashMode) {
        let mut rng = self
            .faults
            .rng
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.memory.crash(mode, &mut rng);
        self.heal();
    }
}

impl Faults {
    fn check(&self) -> io::Result<()> {
        let allowed = self
            .writes_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| match left {
                u64::MAX => Some(u64::MAX),
                0 => None,
                n => Some(n - 1),
            })
            .is_ok();
        if allowed {
            Ok(())
        } else {
            Err(io::Error::other("injected write failure"))
        }
    }
}

impl Store for FaultyStore {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.memory.create_dir_all(dir)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        self.memory.list_dir(dir)
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StoreFile>> {
        let inner = self.memory.open(path, mode)?;
        Ok(Arc::new(FaultyFile {
            inner,
            faults: self.faults.clone(),
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.memory.exists(path)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.memory.remove_file(path)
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.memory.remove_dir_all(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.faults.check()?;
        self.memory.rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.faults.check()?;
        self.memory.sync_dir(dir)
    }
}

#[derive(Debug)]
struct FaultyFile {
    inner: Arc<dyn StoreFile>,
    faults: Arc<Faults>,
}

impl StoreFile for FaultyFile {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        self.inner.read_at(buf, position)
    }

    #[allow(clippy::panic)] // on purpose: see `FaultyStore::panic_on_next_write`
    fn write_at(&self, buf: &[u8], position: u64) -> io::Result<()> {
        if self.faults.panic_next_write.swap(false, Ordering::SeqCst) {
            panic!("injected panic in a write");
        }
        self.faults.check()?;
        self.inner.write_at(buf, position)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.faults.check()?;
        self.inner.set_len(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.faults.check()?;
        self.inner.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_fail_from_the_nth_on_until_healed() {
        let store = FaultyStore::new(7);
        let file = store.open(Path::new("f"), OpenMode::Create).unwrap();
        store.fail_after(2);
        assert!(file.write_at(b"a", 0).is_ok());
        assert!(file.write_at(b"b", 1).is_ok());
        assert!(file.write_at(b"c", 2).is_err());
        assert!(file.sync().is_err());
        store.heal();
        assert!(file.write_at(b"c", 2).is_ok());
    }

    #[test]
    fn torn_names_keep_a_prefix_of_the_unsynced_renames_and_removals() {
        let mut outcomes = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let store = FaultyStore::new(seed);
            store.tear_names_on_crash(true);
            for name in ["a", "b"] {
                let file = store.open(Path::new(name), OpenMode::Create).unwrap();
                file.write_at(name.as_bytes(), 0).unwrap();
                file.sync().unwrap();
            }
            store.sync_dir(Path::new("")).unwrap();
            store.remove_file(Path::new("a")).unwrap();
            store.rename(Path::new("b"), Path::new("c")).unwrap();
            store.crash(CrashMode::DropUnsynced);
            let names: Vec<String> = store
                .list_dir(Path::new(""))
                .unwrap()
                .into_iter()
                .map(|e| e.name)
                .collect();
            outcomes.insert(names.join(","));
        }
        // In order, each whole: nothing, then a's removal, then b's rename to c.
        let expected: std::collections::BTreeSet<String> =
            ["a,b", "b", "c"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(outcomes, expected);
    }
}
