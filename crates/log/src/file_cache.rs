//! A bounded set of open file handles shared by every partition of a data directory,
//! so that 10,000 partitions with many segments each do not hold 30,000 descriptors.
//! The least recently used handle is closed when the limit is reached; a handle in use
//! elsewhere (an `Arc` held by a read in flight) stays open until that use ends.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use spool_store::{OpenMode, Store, StoreFile};

/// Open files of one store, at most `limit` of them cached.
#[derive(Debug)]
pub struct FileCache {
    store: Arc<dyn Store>,
    limit: usize,
    inner: Mutex<CacheInner>,
}

#[derive(Debug, Default)]
struct CacheInner {
    /// Each open file with the tick of its last use.
    files: HashMap<PathBuf, (Arc<dyn StoreFile>, u64)>,
    /// The same files by tick of last use, oldest first, for eviction in O(log n).
    by_use: BTreeMap<u64, PathBuf>,
    tick: u64,
}

impl FileCache {
    #[must_use]
    pub fn new(store: Arc<dyn Store>, limit: usize) -> FileCache {
        FileCache {
            store,
            limit: limit.max(4),
            inner: Mutex::new(CacheInner::default()),
        }
    }

    #[must_use]
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Handles currently held open by the cache.
    #[must_use]
    pub fn open_count(&self) -> usize {
        self.lock().files.len()
    }

    fn lock(&self) -> MutexGuard<'_, CacheInner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The open file at `path`, opening it read-write if it is not cached.
    pub(crate) fn get(&self, path: &Path) -> io::Result<Arc<dyn StoreFile>> {
        self.open(path, OpenMode::ReadWrite)
    }

    /// The file at `path`, created empty if it does not exist.
    pub(crate) fn create(&self, path: &Path) -> io::Result<Arc<dyn StoreFile>> {
        self.open(path, OpenMode::Create)
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StoreFile>> {
        let mut inner = self.lock();
        inner.tick += 1;
        let tick = inner.tick;
        let CacheInner { files, by_use, .. } = &mut *inner;
        if let Some((file, used)) = files.get_mut(path) {
            by_use.remove(used);
            by_use.insert(tick, path.to_path_buf());
            *used = tick;
            return Ok(file.clone());
        }
        let file = self.store.open(path, mode)?;
        if files.len() >= self.limit
            && let Some((_, oldest)) = by_use.pop_first()
        {
            files.remove(&oldest);
        }
        files.insert(path.to_path_buf(), (file.clone(), tick));
        by_use.insert(tick, path.to_path_buf());
        Ok(file)
    }

    /// Closes the cached handle of a file that is being deleted or replaced.
    pub(crate) fn forget(&self, path: &Path) {
        let mut inner = self.lock();
        if let Some((_, used)) = inner.files.remove(path) {
            inner.by_use.remove(&used);
        }
    }

    /// Closes every cached handle under `dir`.
    pub(crate) fn forget_dir(&self, dir: &Path) {
        let mut inner = self.lock();
        inner.files.retain(|path, _| !path.starts_with(dir));
        inner.by_use.retain(|_, path| !path.starts_with(dir));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool_store::MemoryStore;

    #[test]
    fn keeps_at_most_limit_handles_evicting_the_least_recent() {
        let store = Arc::new(MemoryStore::new());
        let cache = FileCache::new(store, 4);
        for i in 0..10 {
            cache.create(Path::new(&format!("f{i}"))).unwrap();
            assert!(cache.open_count() <= 4);
        }
        cache.get(Path::new("f6")).unwrap(); // f6 is now the most recent
        cache.create(Path::new("f10")).unwrap();
        let inner = cache.lock();
        assert!(inner.files.contains_key(Path::new("f6")));
        assert!(
            !inner.files.contains_key(Path::new("f7")),
            "least recently used went first"
        );
    }
}
