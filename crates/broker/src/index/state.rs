//! What the broker holds of message indexes while it runs (kept apart from the
//! passes that use it, which name the broker's `Shared`, so that `Shared` can hold it
//! without an import circle): the chunks' store, the index of each partition led
//! here, the candidates kept for views, and the registry's schemas values are read
//! with.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use spool_index::IndexFields;
use spool_index::chunk::ChunkBuilder;
use spool_metadata::PartitionKey;

use super::store::{ChunkRef, ChunkStore};
use super::values::RegisteredValues;

/// The candidates a chunk names for a view's filter, by (chunk, field, values).
#[derive(Debug, Default)]
pub(crate) struct KeptCandidates {
    pub(super) by_chunk: HashMap<(String, String, u64), Arc<Vec<i64>>>,
    pub(super) offsets: usize,
}

/// The indexes this broker builds, and where every index's chunks are.
#[derive(Debug, Default)]
pub(crate) struct Indexes {
    store: OnceLock<Arc<ChunkStore>>,
    /// The runtime, for what blocking readers (views) ask of the store.
    runtime: OnceLock<tokio::runtime::Handle>,
    led: Mutex<HashMap<PartitionKey, Arc<Mutex<LedIndex>>>>,
    /// What chunks named for views' filters.
    kept: Mutex<KeptCandidates>,
    /// How builds and searches read values.
    values: OnceLock<Arc<RegisteredValues>>,
}

/// The index of a partition this broker leads: its chunks and its tail.
#[derive(Debug)]
pub(crate) struct LedIndex {
    /// The leader epoch it is built under.
    pub(super) epoch: i32,
    pub(super) fields: Arc<IndexFields>,
    /// By first offset, not overlapping.
    pub(super) chunks: Vec<ChunkRef>,
    /// Tails finished and being written as chunks.
    pub(super) sealed: Vec<ChunkBuilder>,
    /// What was read past the chunks.
    pub(super) tail: ChunkBuilder,
    /// A compacted partition: how far it was cleaned when last looked at.
    pub(super) cleaned: i64,
    /// Chunks the cleaner went over since they were built, to build again (their
    /// entries for records it removed go).
    pub(super) cleaned_over: Vec<String>,
}

/// What a search sees of a partition led here.
#[derive(Debug, Default)]
pub(crate) struct LedView {
    pub(crate) chunks: Vec<ChunkRef>,
    /// The offsets found in memory: `(first, next, offsets)` per tail.
    pub(crate) memory: Vec<(i64, i64, Vec<i64>)>,
}

impl Indexes {
    pub(crate) fn store(&self) -> Option<&Arc<ChunkStore>> {
        self.store.get()
    }

    /// Called once the indexing task has its store, with the runtime blocking
    /// readers hand their reads to.
    pub(super) fn started(&self, store: Arc<ChunkStore>, runtime: tokio::runtime::Handle) {
        let _ = self.store.set(store);
        let _ = self.runtime.set(runtime);
    }

    /// How builds and searches read records' values (made on first use, from a
    /// task on the runtime).
    pub(super) fn values(
        &self,
        metadata: &Arc<dyn spool_metadata::MetadataStore>,
    ) -> Arc<RegisteredValues> {
        self.values
            .get_or_init(|| {
                Arc::new(RegisteredValues::new(
                    metadata.clone(),
                    tokio::runtime::Handle::current(),
                ))
            })
            .clone()
    }

    pub(super) fn kept(&self) -> std::sync::MutexGuard<'_, KeptCandidates> {
        self.kept
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn runtime(&self) -> Option<tokio::runtime::Handle> {
        self.runtime.get().cloned()
    }

    pub(super) fn led_map(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<PartitionKey, Arc<Mutex<LedIndex>>>> {
        self.led
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(super) fn led(&self, key: PartitionKey) -> Option<Arc<Mutex<LedIndex>>> {
        self.led_map().get(&key).cloned()
    }

    /// The index of a partition led here as a search of the field `name` for the
    /// value hashed `hash` sees it; `None` when this broker builds no index of it or
    /// its tail does not index the field.
    pub(crate) fn led_view(&self, key: PartitionKey, name: &str, hash: u64) -> Option<LedView> {
        let led = self.led(key)?;
        let led = lock(&led);
        let mut memory = Vec::with_capacity(led.sealed.len() + 1);
        for tail in led.sealed.iter().chain(std::iter::once(&led.tail)) {
            memory.push((tail.first(), tail.next(), tail.lookup_named(name, hash)?));
        }
        Some(LedView {
            chunks: led.chunks.clone(),
            memory,
        })
    }
}

pub(super) fn lock(led: &Mutex<LedIndex>) -> std::sync::MutexGuard<'_, LedIndex> {
    led.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
