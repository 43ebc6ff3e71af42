//! Files in memory, with a model of what a crash keeps.
//!
//! Each file remembers its contents as of its last `sync`; each directory remembers its
//! names — of files and of subdirectories — as of its last `sync_dir`.
//! [`MemoryStore::crash`] throws away everything else, as a power cut would: a file
//! survives only if its name and the names of all its parent directories were synced.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::{CrashMode, DirEntry, OpenMode, Store, StoreFile};

/// An in-memory store; clones share the same files.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    namespace: Arc<Mutex<Namespace>>,
}

#[derive(Debug, Default)]
struct Namespace {
    /// Names as the running program sees them.
    live: BTreeMap<PathBuf, Arc<MemFile>>,
    /// Names as they would be found after a crash.
    durable: BTreeMap<PathBuf, Arc<MemFile>>,
    dirs: BTreeSet<PathBuf>,
    /// Directories as they would be found after a crash.
    durable_dirs: BTreeSet<PathBuf>,
    /// File-name changes not yet made durable by a `sync_dir`, in order. With
    /// `torn_names`, a crash keeps a prefix of them, as a file system that had written
    /// some of its journal would; each one (a rename too) whole or not at all.
    name_log: Vec<NameChange>,
    torn_names: bool,
}

/// One change of the names in a directory.
#[derive(Debug)]
enum NameChange {
    Created(PathBuf, Arc<MemFile>),
    Removed(PathBuf),
    Renamed { from: PathBuf, to: PathBuf },
}

impl NameChange {
    /// Whether the change is to a name in `dir` (a rename: either of its names).
    fn is_in(&self, dir: &Path) -> bool {
        match self {
            NameChange::Created(path, _) | NameChange::Removed(path) => parent(path) == dir,
            NameChange::Renamed { from, to } => parent(from) == dir || parent(to) == dir,
        }
    }

    fn apply(self, durable: &mut BTreeMap<PathBuf, Arc<MemFile>>) {
        match self {
            NameChange::Created(path, file) => {
                durable.insert(path, file);
            }
            NameChange::Removed(path) => {
                durable.remove(&path);
            }
            NameChange::Renamed { from, to } => {
                if let Some(file) = durable.remove(&from) {
                    durable.insert(to, file);
                }
            }
        }
    }
}

#[derive(Debug, Default)]
struct MemFile {
    contents: Mutex<Contents>,
}

#[derive(Debug, Default, Clone)]
struct Contents {
    data: Vec<u8>,
    synced: Vec<u8>,
}

impl MemoryStore {
    #[must_use]
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn lock(&self) -> MutexGuard<'_, Namespace> {
        self.namespace
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Makes later crashes keep a random prefix of the file-name changes (creations,
    /// renames, removals) not yet synced, instead of none of them.
    pub fn tear_names_on_crash(&self, torn: bool) {
        self.lock().torn_names = torn;
    }

    /// Simulates a machine crash: only synced names and synced bytes remain, plus, by
    /// `mode`, part of the unsynced tail of each file. Handles opened before the crash
    /// are orphaned: they no longer reach any file of the store.
    pub fn crash(&self, mode: CrashMode, rng: &mut fastrand::Rng) {
        let mut namespace = self.lock();
        let log = std::mem::take(&mut namespace.name_log);
        if namespace.torn_names {
            let kept = rng.usize(0..=log.len());
            for change in log.into_iter().take(kept) {
                change.apply(&mut namespace.durable);
            }
        }
        let mut reborn: BTreeMap<*const MemFile, Arc<MemFile>> = BTreeMap::new();
        let durable = std::mem::take(&mut namespace.durable);
        let mut survivors = BTreeMap::new();
        for (path, file) in durable {
            let key = Arc::as_ptr(&file);
            let fresh = reborn
                .entry(key)
                .or_insert_with(|| {
                    let contents = file.lock().clone();
                    let kept = surviving_bytes(&contents, mode, rng);
                    Arc::new(MemFile {
                        contents: Mutex::new(Contents {
                            data: kept.clone(),
                            synced: kept,
                        }),
                    })
                })
                .clone();
            survivors.insert(path, fresh);
        }
        let dirs = namespace.durable_dirs.clone();
        let reachable = |path: &Path| {
            path.ancestors()
                .skip(1)
                .all(|dir| dir.as_os_str().is_empty() || dirs.contains(dir))
        };
        survivors.retain(|path, _| reachable(path));
        namespace.dirs = dirs.iter().filter(|dir| reachable(dir)).cloned().collect();
        namespace.durable_dirs = namespace.dirs.clone();
        namespace.live = survivors.clone();
        namespace.durable = survivors;
    }
}

fn surviving_bytes(contents: &Contents, mode: CrashMode, rng: &mut fastrand::Rng) -> Vec<u8> {
    let Contents { data, synced } = contents;
    let mut kept = synced.clone();
    let appended_only = data.len() > synced.len() && data.starts_with(synced);
    if !appended_only {
        return kept;
    }
    let unsynced = data.get(synced.len()..).unwrap_or_default();
    match mode {
        CrashMode::DropUnsynced => {}
        CrashMode::TearUnsynced => {
            let keep = rng.usize(0..=unsynced.len());
            kept.extend_from_slice(unsynced.get(..keep).unwrap_or_default());
        }
        CrashMode::GarbleUnsynced => {
            let keep = rng.usize(0..=unsynced.len());
            kept.extend(std::iter::repeat_with(|| rng.u8(..)).take(keep));
        }
    }
    kept
}

impl MemFile {
    fn lock(&self) -> MutexGuard<'_, Contents> {
        self.contents
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The files at or below `dir`, found by a range scan: paths order by component, so
/// a directory's descendants sit together.
fn under<'a>(
    files: &'a BTreeMap<PathBuf, Arc<MemFile>>,
    dir: &'a Path,
) -> impl Iterator<Item = (&'a PathBuf, &'a Arc<MemFile>)> {
    files
        .range(dir.to_path_buf()..)
        .take_while(move |(path, _)| path.starts_with(dir))
}

fn parent(path: &Path) -> &Path {
    path.parent().unwrap_or(Path::new(""))
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} does not exist", path.display()),
    )
}

impl Store for MemoryStore {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut namespace = self.lock();
        for ancestor in dir.ancestors() {
            if !ancestor.as_os_str().is_empty() {
                namespace.dirs.insert(ancestor.to_path_buf());
            }
        }
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<DirEntry>> {
        let namespace = self.lock();
        if !dir.as_os_str().is_empty() && !namespace.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        let name_of = |path: &Path| path.file_name().map(|n| n.to_string_lossy().into_owned());
        let mut entries: Vec<DirEntry> = under(&namespace.live, dir)
            .filter(|(path, _)| parent(path) == dir)
            .filter_map(|(path, _)| {
                Some(DirEntry {
                    name: name_of(path)?,
                    is_dir: false,
                })
            })
            .chain(
                namespace
                    .dirs
                    .range(dir.to_path_buf()..)
                    .take_while(|path| path.starts_with(dir))
                    .filter(|path| parent(path) == dir)
                    .filter_map(|path| {
                        Some(DirEntry {
                            name: name_of(path)?,
                            is_dir: true,
                        })
                    }),
            )
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }

    fn open(&self, path: &Path, mode: OpenMode) -> io::Result<Arc<dyn StoreFile>> {
        let mut namespace = self.lock();
        let file = match (namespace.live.get(path), mode) {
            (Some(file), _) => file.clone(),
            (None, OpenMode::Create) => {
                if !parent(path).as_os_str().is_empty() && !namespace.dirs.contains(parent(path)) {
                    return Err(not_found(parent(path)));
                }
                let file = Arc::new(MemFile::default());
                namespace.live.insert(path.to_path_buf(), file.clone());
                namespace
                    .name_log
                    .push(NameChange::Created(path.to_path_buf(), file.clone()));
                file
            }
            (None, _) => return Err(not_found(path)),
        };
        Ok(Arc::new(MemHandle {
            file,
            read_only: mode == OpenMode::Read,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        let namespace = self.lock();
        namespace.live.contains_key(path) || namespace.dirs.contains(path)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        let mut namespace = self.lock();
        namespace.live.remove(path).ok_or_else(|| not_found(path))?;
        namespace
            .name_log
            .push(NameChange::Removed(path.to_path_buf()));
        Ok(())
    }

    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut namespace = self.lock();
        if !namespace.dirs.contains(dir) {
            return Err(not_found(dir));
        }
        // Gone for the running program at once; gone after a crash only once its
        // parent directory is synced (see `sync_dir`), as an unlink not yet in the
        // file system's journal is.
        namespace.live.retain(|path, _| !path.starts_with(dir));
        namespace.dirs.retain(|path| !path.starts_with(dir));
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut namespace = self.lock();
        let file = namespace.live.remove(from).ok_or_else(|| not_found(from))?;
        namespace.live.insert(to.to_path_buf(), file);
        namespace.name_log.push(NameChange::Renamed {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut namespace = self.lock();
        namespace.name_log.retain(|change| !change.is_in(dir));
        let stale: Vec<PathBuf> = under(&namespace.durable, dir)
            .filter(|(path, _)| parent(path) == dir)
            .map(|(path, _)| path.clone())
            .collect();
        for path in stale {
            namespace.durable.remove(&path);
        }
        let entries: Vec<_> = under(&namespace.live, dir)
            .filter(|(path, _)| parent(path) == dir)
            .map(|(path, file)| (path.clone(), file.clone()))
            .collect();
        namespace.durable.extend(entries);
        let stale_dirs: Vec<PathBuf> = namespace
            .durable_dirs
            .range(dir.to_path_buf()..)
            .take_while(|path| path.starts_with(dir))
            .filter(|path| parent(path) == dir && !namespace.dirs.contains(*path))
            .cloned()
            .collect();
        for gone in stale_dirs {
            namespace
                .durable_dirs
                .retain(|path| !path.starts_with(&gone));
            namespace.durable.retain(|path, _| !path.starts_with(&gone));
        }
        let children: Vec<PathBuf> = namespace
            .dirs
            .range(dir.to_path_buf()..)
            .take_while(|path| path.starts_with(dir))
            .filter(|path| parent(path) == dir)
            .cloned()
            .collect();
        namespace.durable_dirs.extend(children);
        Ok(())
    }
}

#[derive(Debug)]
struct MemHandle {
    file: Arc<MemFile>,
    read_only: bool,
}

impl StoreFile for MemHandle {
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.lock().data.len() as u64)
    }

    fn read_at(&self, buf: &mut [u8], position: u64) -> io::Result<usize> {
        let contents = self.file.lock();
        let start = usize::try_from(position).unwrap_or(usize::MAX);
        let available = contents.data.get(start..).unwrap_or_default();
        let n = available.len().min(buf.len());
        buf.get_mut(..n)
            .unwrap_or_default()
            .copy_from_slice(available.get(..n).unwrap_or_default());
        Ok(n)
    }

    fn write_at(&self, buf: &[u8], position: u64) -> io::Result<()> {
        if self.read_only {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "opened read-only",
            ));
        }
        let mut contents = self.file.lock();
        let start = usize::try_from(position).map_err(|_| io::ErrorKind::InvalidInput)?;
        let end = start + buf.len();
        if contents.data.len() < end {
            contents.data.resize(end, 0);
        }
        if let Some(target) = contents.data.get_mut(start..end) {
            target.copy_from_slice(buf);
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        self.file.lock().data.resize(len, 0);
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        let mut contents = self.file.lock();
        contents.synced = contents.data.clone();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(store: &MemoryStore, path: &str) -> Vec<u8> {
        let file = store.open(Path::new(path), OpenMode::Read).unwrap();
        let mut buf = vec![0; usize::try_from(file.len().unwrap()).unwrap()];
        file.read_exact_at(&mut buf, 0).unwrap();
        buf
    }

    #[test]
    fn a_crash_keeps_only_synced_bytes_and_names() {
        let store = MemoryStore::new();
        store.create_dir_all(Path::new("d")).unwrap();
        store.sync_dir(Path::new("")).unwrap();
        let file = store.open(Path::new("d/a"), OpenMode::Create).unwrap();
        file.write_at(b"durable", 0).unwrap();
        file.sync().unwrap();
        store.sync_dir(Path::new("d")).unwrap();
        file.write_at(b"-lost", 7).unwrap();
        let never_named = store.open(Path::new("d/b"), OpenMode::Create).unwrap();
        never_named.write_at(b"x", 0).unwrap();
        never_named.sync().unwrap();

        store.crash(CrashMode::DropUnsynced, &mut fastrand::Rng::with_seed(1));
        assert_eq!(read_all(&store, "d/a"), b"durable");
        assert!(
            !store.exists(Path::new("d/b")),
            "a name never synced must vanish"
        );
        // The old handle is orphaned and cannot touch the surviving file.
        file.write_at(b"zzz", 0).unwrap();
        assert_eq!(read_all(&store, "d/a"), b"durable");
    }

    #[test]
    fn an_unsynced_rename_is_undone_by_a_crash() {
        let store = MemoryStore::new();
        store.create_dir_all(Path::new("d")).unwrap();
        store.sync_dir(Path::new("")).unwrap();
        for (name, body) in [("d/cp", b"old"), ("d/cp.tmp", b"new")] {
            let file = store.open(Path::new(name), OpenMode::Create).unwrap();
            file.write_at(body, 0).unwrap();
            file.sync().unwrap();
        }
        store.sync_dir(Path::new("d")).unwrap();
        store
            .rename(Path::new("d/cp.tmp"), Path::new("d/cp"))
            .unwrap();
        assert_eq!(read_all(&store, "d/cp"), b"new");
        store.crash(CrashMode::DropUnsynced, &mut fastrand::Rng::with_seed(1));
        assert_eq!(read_all(&store, "d/cp"), b"old");
    }

    #[test]
    fn a_directory_whose_name_was_never_synced_vanishes_with_its_files() {
        let store = MemoryStore::new();
        store.create_dir_all(Path::new("a/b")).unwrap();
        store.sync_dir(Path::new("")).unwrap(); // "a" is durable, "a/b" is not
        let file = store.open(Path::new("a/b/f"), OpenMode::Create).unwrap();
        file.write_at(b"x", 0).unwrap();
        file.sync().unwrap();
        store.sync_dir(Path::new("a/b")).unwrap();
        store.crash(CrashMode::DropUnsynced, &mut fastrand::Rng::with_seed(1));
        assert!(store.exists(Path::new("a")));
        assert!(!store.exists(Path::new("a/b")));
        assert!(!store.exists(Path::new("a/b/f")));

        store.create_dir_all(Path::new("a/b")).unwrap();
        let file = store.open(Path::new("a/b/f"), OpenMode::Create).unwrap();
        file.sync().unwrap();
        store.sync_dir(Path::new("a/b")).unwrap();
        store.sync_dir(Path::new("a")).unwrap();
        store.crash(CrashMode::DropUnsynced, &mut fastrand::Rng::with_seed(1));
        assert!(
            store.exists(Path::new("a/b/f")),
            "synced all the way up, it stays"
        );
    }

    #[test]
    fn tearing_keeps_a_prefix_of_the_unsynced_tail() {
        for seed in 0..20 {
            let store = MemoryStore::new();
            let file = store.open(Path::new("f"), OpenMode::Create).unwrap();
            file.write_at(b"abc", 0).unwrap();
            file.sync().unwrap();
            store.sync_dir(Path::new("")).unwrap();
            file.write_at(b"defgh", 3).unwrap();
            store.crash(CrashMode::TearUnsynced, &mut fastrand::Rng::with_seed(seed));
            let kept = read_all(&store, "f");
            assert!(
                b"abcdefgh".starts_with(&kept) && kept.len() >= 3,
                "{kept:?}"
            );
        }
    }
}
