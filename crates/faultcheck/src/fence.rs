//! One life of the simulated machine: a view of the store that stops working, for
//! every handle it gave out, the moment the machine dies. Without it, threads of a
//! crashed broker that are still running (a flush, a checkpoint on the way out) would
//! write into the store that the next broker opens.

use std::io;
use std::path::Path;
use std::sync::{Arc, RwLock};

use spool_store::{DirEntry, OpenMode, Store, StoreFile};

/// Switches a [`FencedStore`] and its files off. Every operation holds the fence's
/// read lock while it runs, so once [`Fence::cut`] returns none is half-way through:
/// an `open` cannot create its file in the store of the machine's next life.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fence(Arc<RwLock<bool>>);

impl Fence {
    pub(crate) fn cut(&self) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = true;
    }

    fn guard<T>(&self, operation: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
        let cut = self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if *cut {
            return Err(io::Error::other("the machine has crashed"));
        }
        operation()
    }
}

#[derive(Debug)]
pub(crate) struct FencedStore {
    inner: Arc<dyn Store>,
    fence: Fence,
}

impl FencedStore {
    pub(crate) fn new(inner: Arc<dyn Store>, fence: Fence) -> FencedStore {
        FencedStore { inner, fence }
    }
}

impl Store for FencedStore {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.fence.guard(|| self.inner.create_dir_all(dir))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        self.fence.guard(|| self.inner.list_dir(dir))
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StoreFile>> {
        let inner = self.fence.guard(|| self.inner.open(path, mode))?;
        Ok(Arc::new(FencedFile {
            inner,
            fence: self.fence.clone(),
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.fence
            .guard(|| Ok(self.inner.exists(path)))
            .unwrap_or(false)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.fence.guard(|| self.inner.remove_file(path))
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.fence.guard(|| self.inner.remove_dir_all(dir))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.fence.guard(|| self.inner.rename(from, to))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.fence.guard(|| self.inner.sync_dir(dir))
    }
}

#[derive(Debug)]
struct FencedFile {
    inner: Arc<dyn StoreFile>,
    fence: Fence,
}

impl StoreFile for FencedFile {
    fn len(&self) -> io::Result<u64> {
        self.fence.guard(|| self.inner.len())
    }

    fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        self.fence.guard(|| self.inner.read_at(buf, position))
    }

    fn write_at(&self, buf: &[u8], position: u64) -> io::Result<()> {
        self.fence.guard(|| self.inner.write_at(buf, position))
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.fence.guard(|| self.inner.set_len(len))
    }

    fn sync(&self) -> io::Result<()> {
        self.fence.guard(|| self.inner.sync())
    }
}
