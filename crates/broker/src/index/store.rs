//! Where index chunks live: objects under `index/<topic id>/<partition>/`, named by
//! the offsets they cover and a random part (`<first>-<next>-<nonce>.spix`, 20
//! digits each, 8 hex digits: a chunk built again is another object, so a summary
//! kept in memory is never that of other bytes), in the object
//! store of shared-storage mode or, in embedded mode, in files under
//! `DATA_DIR/index` (object_store's local store, fsynced: a chunk is written to a
//! temporary file, synced and renamed, so a crash leaves it whole or absent). The
//! summaries of the chunks looked up are kept in memory, up to a budget.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use spool_index::chunk::{ChunkSummary, EntryRange, FIRST_READ_BYTES};
use spool_metadata::PartitionKey;
use spool_objects::ObjectStorage;
use uuid::Uuid;

/// Bytes of chunk summaries kept in memory; past it the cache starts again empty.
const SUMMARY_CACHE_BYTES: usize = 256 << 20;
/// The directory of every index.
const ROOT: &str = "index";

/// A chunk as listed: its range, its name and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChunkRef {
    pub(crate) first: i64,
    pub(crate) next: i64,
    pub(crate) size: u64,
    pub(crate) name: String,
}

/// The chunks of every partition, and the summaries looked at.
#[derive(Debug)]
pub(crate) struct ChunkStore {
    objects: ObjectStorage,
    /// Embedded mode: the data directory the chunks are files under (a deleted
    /// topic's directories are removed with its files).
    local: Option<std::path::PathBuf>,
    summaries: Mutex<SummaryCache>,
}

#[derive(Debug, Default)]
struct SummaryCache {
    by_name: HashMap<String, Arc<ChunkSummary>>,
    bytes: usize,
}

impl ChunkStore {
    pub(crate) fn new(objects: ObjectStorage) -> ChunkStore {
        ChunkStore {
            objects,
            local: None,
            summaries: Mutex::default(),
        }
    }

    /// Embedded mode's store: files under `data_dir/index`.
    pub(crate) fn local(data_dir: &std::path::Path) -> Result<ChunkStore, String> {
        let dir = data_dir.join(ROOT);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let store = object_store::local::LocalFileSystem::new_with_prefix(data_dir)
            .map_err(|e| format!("{}: {e}", data_dir.display()))?
            .with_fsync(true);
        let mut chunks = ChunkStore::new(ObjectStorage::new(Arc::new(store), Path::default()));
        chunks.local = Some(data_dir.to_path_buf());
        Ok(chunks)
    }

    fn partition_dir(key: PartitionKey) -> String {
        format!("{ROOT}/{}/{}", key.topic_id.simple(), key.partition)
    }

    /// A new name for a chunk of `key` covering `[first, next)`.
    pub(crate) fn name(key: PartitionKey, first: i64, next: i64) -> String {
        format!(
            "{}/{first:020}-{next:020}-{:08x}.spix",
            Self::partition_dir(key),
            fastrand::u32(..)
        )
    }

    /// The partition's chunks, by first offset (names that are no chunk's left out).
    pub(crate) async fn list(&self, key: PartitionKey) -> Result<Vec<ChunkRef>, String> {
        let dir = Self::partition_dir(key);
        let prefix = self.objects.path(&dir);
        let listed: Vec<object_store::ObjectMeta> = self
            .objects
            .store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(|e| format!("listing {dir}: {e}"))?;
        let mut chunks: Vec<ChunkRef> = listed
            .into_iter()
            .filter_map(|meta| {
                let file = meta.location.filename()?;
                let mut parts = file.strip_suffix(".spix")?.split('-');
                let (first, next) = (parts.next()?, parts.next()?);
                Some(ChunkRef {
                    first: first.parse().ok()?,
                    next: next.parse().ok()?,
                    size: meta.size,
                    name: format!("{dir}/{file}"),
                })
            })
            .filter(|chunk| chunk.first < chunk.next)
            .collect();
        chunks.sort_by_key(|chunk| (chunk.first, chunk.next));
        Ok(chunks)
    }

    pub(crate) async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<u64, String> {
        let size = bytes.len() as u64;
        self.objects
            .store
            .put(&self.objects.path(name), PutPayload::from(bytes))
            .await
            .map_err(|e| format!("writing {name}: {e}"))?;
        Ok(size)
    }

    pub(crate) async fn delete(&self, name: &str) -> Result<(), String> {
        self.forget_summary(name);
        match self.objects.store.delete(&self.objects.path(name)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(error) => Err(format!("deleting {name}: {error}")),
        }
    }

    pub(crate) fn forget_summary(&self, name: &str) {
        let mut cache = self.lock();
        if let Some(gone) = cache.by_name.remove(name) {
            cache.bytes = cache.bytes.saturating_sub(gone.memory_bytes());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SummaryCache> {
        self.summaries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The chunk's summary: from memory, or read (one or two ranged reads).
    pub(crate) async fn summary(&self, chunk: &ChunkRef) -> Result<Arc<ChunkSummary>, String> {
        if let Some(summary) = self.lock().by_name.get(&chunk.name) {
            return Ok(summary.clone());
        }
        let failed = |e: &dyn std::fmt::Display| format!("index chunk {}: {e}", chunk.name);
        let path = self.objects.path(&chunk.name);
        let mut bytes = self
            .objects
            .store
            .get_range(&path, 0..FIRST_READ_BYTES.min(chunk.size))
            .await
            .map_err(|e| failed(&e))?;
        let needed = ChunkSummary::summary_len(&bytes).map_err(|e| failed(&e))?;
        if needed > bytes.len() as u64 {
            if needed > chunk.size {
                return Err(failed(&"its summary is longer than the chunk"));
            }
            bytes = self
                .objects
                .store
                .get_range(&path, 0..needed)
                .await
                .map_err(|e| failed(&e))?;
        }
        let summary = Arc::new(ChunkSummary::parse(&bytes).map_err(|e| failed(&e))?);
        let mut cache = self.lock();
        if cache.bytes + summary.memory_bytes() > SUMMARY_CACHE_BYTES {
            *cache = SummaryCache::default();
        }
        cache.bytes += summary.memory_bytes();
        cache.by_name.insert(chunk.name.clone(), summary.clone());
        Ok(summary)
    }

    /// The offsets an entry range of the chunk names (one ranged read).
    pub(crate) async fn offsets(
        &self,
        chunk: &ChunkRef,
        range: EntryRange,
    ) -> Result<Vec<i64>, String> {
        if range.end > chunk.size {
            return Err(format!("index chunk {}: entries past its end", chunk.name));
        }
        let bytes = self
            .objects
            .store
            .get_range(&self.objects.path(&chunk.name), range.start..range.end)
            .await
            .map_err(|e| format!("index chunk {}: {e}", chunk.name))?;
        Ok(range.offsets(&bytes))
    }

    /// The topics that have index chunks, each with the newest chunk's time (ms).
    pub(crate) async fn topics(&self) -> Result<Vec<(Uuid, i64)>, String> {
        let root = self.objects.path(ROOT);
        let listed: Vec<object_store::ObjectMeta> = self
            .objects
            .store
            .list(Some(&root))
            .try_collect()
            .await
            .map_err(|e| format!("listing {ROOT}: {e}"))?;
        let mut topics: HashMap<Uuid, i64> = HashMap::new();
        for meta in listed {
            let Some(id) = meta
                .location
                .prefix_match(&root)
                .and_then(|mut parts| parts.next())
                .and_then(|part| Uuid::parse_str(part.as_ref()).ok())
            else {
                continue;
            };
            let time = meta.last_modified.timestamp_millis();
            let newest = topics.entry(id).or_insert(time);
            *newest = (*newest).max(time);
        }
        Ok(topics.into_iter().collect())
    }

    /// Deletes every chunk of the topic.
    pub(crate) async fn delete_topic(&self, id: Uuid) -> Result<(), String> {
        let dir = format!("{ROOT}/{}", id.simple());
        let prefix = self.objects.path(&dir);
        let listed: Vec<object_store::ObjectMeta> = self
            .objects
            .store
            .list(Some(&prefix))
            .try_collect()
            .await
            .map_err(|e| format!("listing {dir}: {e}"))?;
        for meta in listed {
            let name = meta.location.to_string();
            match self.objects.store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(error) => return Err(format!("deleting {name}: {error}")),
            }
        }
        if let Some(data_dir) = &self.local {
            let path = data_dir.join(&dir);
            match std::fs::remove_dir_all(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(format!("{}: {error}", path.display())),
            }
        }
        let mut cache = self.lock();
        cache
            .by_name
            .retain(|name, _| !name.starts_with(&format!("{dir}/")));
        cache.bytes = cache.by_name.values().map(|s| s.memory_bytes()).sum();
        Ok(())
    }
}
