//! The real thing: a directory on the local file system.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{DirEntry, OpenMode, Store, StoreFile};

/// Files under a root directory of the local file system.
#[derive(Debug, Clone)]
pub struct LocalStore {
    root: PathBuf,
}

impl LocalStore {
    /// A store rooted at `root`, which is created if missing.
    pub fn open(root: impl Into<PathBuf>) -> io::Result<LocalStore> {
        let root = root.into();
        fs::create_dir_all(&root)?;
        Ok(LocalStore { root })
    }

    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn full(&self, path: &Path) -> PathBuf {
        self.root.join(path)
    }
}

impl Store for LocalStore {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::create_dir_all(self.full(dir))
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(self.full(dir))? {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            entries.push(DirEntry {
                name,
                is_dir: entry.file_type()?.is_dir(),
            });
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StoreFile>> {
        let mut options = OpenOptions::new();
        options.read(true);
        match mode {
            OpenMode::Read => {}
            OpenMode::ReadWrite => {
                options.write(true);
            }
            OpenMode::Create => {
                options.write(true).create(true);
            }
        }
        Ok(Arc::new(LocalFile {
            file: options.open(self.full(path))?,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.full(path).exists()
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        fs::remove_file(self.full(path))
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        fs::remove_dir_all(self.full(dir))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        fs::rename(self.full(from), self.full(to))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(self.full(dir))?.sync_all()
    }
}

#[derive(Debug)]
struct LocalFile {
    file: File,
}

impl StoreFile for LocalFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        FileExt::read_at(&self.file, buf, position)
    }

    fn write_at(&self, buf: &[u8], position: u64) -> io::Result<()> {
        self.file.write_all_at(buf, position)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.file.as_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positional_io_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::open(dir.path()).unwrap();
        store.create_dir_all(Path::new("a/b")).unwrap();
        let file = store.open(Path::new("a/b/f"), OpenMode::Create).unwrap();
        file.write_at(b"hello", 0).unwrap();
        file.write_at(b"world", 5).unwrap();
        file.sync().unwrap();
        let mut buf = [0u8; 10];
        file.read_exact_at(&mut buf, 0).unwrap();
        assert_eq!(&buf, b"helloworld");
        assert!(file.fd().is_some());
        store
            .rename(Path::new("a/b/f"), Path::new("a/b/g"))
            .unwrap();
        store.sync_dir(Path::new("a/b")).unwrap();
        let names: Vec<_> = store
            .list_dir(Path::new("a/b"))
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, vec!["g"]);
        assert!(store.open(Path::new("a/b/f"), OpenMode::Read).is_err());
    }
}
