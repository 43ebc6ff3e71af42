//! The read path of shared-storage mode for offsets below a partition's tail: a
//! bounded catalogue lookup (the ranges covering the bytes wanted, found by two index
//! seeks whatever the consumer's lag), ranged GETs of just those bytes, and a
//! size-bounded cache of what was fetched. A read also fetches, in the background,
//! the ranges that follow the ones it returns (read-ahead), so a consumer reading
//! sequentially finds its next fetch in the cache.
//!
//! The cache is in memory, keyed by object and byte range: objects are never
//! rewritten under the same name, so a cached range is never stale. A range being
//! fetched is fetched once: reads that want it meanwhile (other consumers of the same
//! data, a read catching up with its read-ahead) wait for that GET instead of making
//! their own, so many consumers of the same data cost one GET.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use object_store::ObjectStoreExt;
use spool_metadata::{MetadataStore, PartitionKey, StoredRange};
use spool_model::{Offset, Timestamp, TimestampType};
use spool_objects::ObjectStorage;
use spool_protocol::batch::BatchFrames;

use super::counts::StorageCounts;
use crate::StorageError;

/// Ranges looked up per read: enough for any fetch budget, bounded whatever the lag.
const RANGES_PER_LOOKUP: i64 = 64;

/// Reads committed batches from objects.
#[derive(Debug, Clone)]
pub struct ObjectReader {
    objects: ObjectStorage,
    catalogue: Arc<dyn MetadataStore>,
    counts: Arc<StorageCounts>,
    cache: Arc<RangeCache>,
    /// The GETs under way, by range: a read wanting a range being fetched waits for
    /// that GET's answer.
    in_flight: Arc<Mutex<HashMap<CacheKey, Arc<InFlight>>>>,
}

/// One GET's answer, once it has one (a failure as its message).
type InFlight = tokio::sync::OnceCell<Result<Bytes, String>>;

/// Whole batches read from objects, in offset order.
#[derive(Debug, Default)]
pub struct RemoteRead {
    pub batches: Vec<Bytes>,
}

impl ObjectReader {
    pub(super) fn new(
        objects: ObjectStorage,
        catalogue: Arc<dyn MetadataStore>,
        counts: Arc<StorageCounts>,
        cache_bytes: u64,
    ) -> ObjectReader {
        ObjectReader {
            objects,
            catalogue,
            counts,
            cache: Arc::new(RangeCache::new(cache_bytes)),
            in_flight: Arc::default(),
        }
    }

    /// Whole batches from the one holding `offset`, up to `max_bytes` (the first one
    /// whole even if larger when `first_whole`, as local reads do), none at or past
    /// `high_watermark` (a range committed but not yet visible here stays unseen).
    pub async fn read(
        &self,
        key: PartitionKey,
        offset: Offset,
        high_watermark: Offset,
        max_bytes: u64,
        first_whole: bool,
    ) -> Result<RemoteRead, StorageError> {
        let budget = i64::try_from(max_bytes).unwrap_or(i64::MAX);
        // Twice the budget: what is not needed now is read ahead.
        let ranges = self
            .catalogue
            .ranges_from(key, offset.0, budget.saturating_mul(2), RANGES_PER_LOOKUP)
            .await?;
        let mut read = RemoteRead::default();
        let mut used = 0;
        let mut total = 0_u64;
        'ranges: for range in &ranges {
            let bytes = self.range_bytes(range).await?;
            used += 1;
            for frame in BatchFrames::new(&bytes) {
                let (header, batch) = frame.map_err(|error| corrupt(range, &error))?;
                if header.next_offset() <= offset {
                    continue;
                }
                if header.base_offset >= high_watermark {
                    break 'ranges;
                }
                let len = batch.len() as u64;
                let first = read.batches.is_empty();
                if total + len > max_bytes && !(first && first_whole) {
                    break 'ranges;
                }
                total += len;
                read.batches.push(bytes.slice_ref(batch));
            }
            if total >= max_bytes {
                break;
            }
        }
        self.read_ahead(ranges.into_iter().skip(used).collect());
        Ok(read)
    }

    /// The first offset whose record timestamp is at or after `target`, with that
    /// timestamp (exact to the record for uncompressed CreateTime batches, else the
    /// batch's first offset, as local lookups are); `None` if every record is older.
    pub async fn offset_for_timestamp(
        &self,
        key: PartitionKey,
        target: Timestamp,
        log_start: Offset,
    ) -> Result<Option<(Offset, Timestamp)>, StorageError> {
        let Some(range) = self.catalogue.range_for_timestamp(key, target.0).await? else {
            return Ok(None);
        };
        self.first_at_or_after(&range, target, log_start).await
    }

    /// The first record with the largest timestamp, with that timestamp.
    pub async fn max_timestamp_offset(
        &self,
        key: PartitionKey,
        log_start: Offset,
    ) -> Result<Option<(Offset, Timestamp)>, StorageError> {
        let Some(range) = self.catalogue.range_with_max_timestamp(key).await? else {
            return Ok(None);
        };
        self.first_at_or_after(&range, Timestamp(range.max_timestamp), log_start)
            .await
    }

    async fn first_at_or_after(
        &self,
        range: &StoredRange,
        target: Timestamp,
        log_start: Offset,
    ) -> Result<Option<(Offset, Timestamp)>, StorageError> {
        let bytes = self.range_bytes(range).await?;
        for frame in BatchFrames::new(&bytes) {
            let (header, batch) = frame.map_err(|error| corrupt(range, &error))?;
            if header.max_timestamp < target || header.next_offset() <= log_start {
                continue;
            }
            let batch_level = (header.base_offset, header.max_timestamp);
            let exact = (header.timestamp_type() == TimestampType::CreateTime)
                .then(|| spool_protocol::records::record_stamps(batch))
                .flatten()
                .and_then(|stamps| {
                    stamps.iter().find_map(|stamp| {
                        let at = Timestamp(
                            header
                                .base_timestamp
                                .0
                                .saturating_add(stamp.timestamp_delta),
                        );
                        (at >= target).then(|| (header.base_offset.plus(stamp.offset_delta), at))
                    })
                });
            let (offset, timestamp) = exact.unwrap_or(batch_level);
            return Ok(Some((offset.max(log_start), timestamp)));
        }
        Ok(None)
    }

    /// A range's bytes, from the cache, the GET of it under way, or a ranged GET of
    /// its own (a miss), which fills the cache.
    pub async fn range_bytes(&self, range: &StoredRange) -> Result<Bytes, StorageError> {
        let key = CacheKey::of(range);
        if let Some(bytes) = self.cache.get(&key) {
            StorageCounts::add(&self.counts.cache_hits, 1);
            return Ok(bytes);
        }
        self.fetch_once(key, range, true).await
    }

    /// The range's bytes by the one GET of it under way, or a new one (into the
    /// cache before it is forgotten as under way, so a later read finds it there).
    /// `counted`: a read of a consumer, counted as a hit or a miss.
    async fn fetch_once(
        &self,
        key: CacheKey,
        range: &StoredRange,
        counted: bool,
    ) -> Result<Bytes, StorageError> {
        let in_flight = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(key.clone())
            .or_default()
            .clone();
        // Forgotten as under way once answered, or when this read is dropped first.
        let _forget = Forget {
            in_flight: &self.in_flight,
            key: &key,
            cell: &in_flight,
        };
        let mut fetched_here = false;
        let answer = in_flight
            .get_or_init(|| async {
                // A GET that ended since this read missed the cache filled it.
                if let Some(bytes) = self.cache.get(&key) {
                    return Ok(bytes);
                }
                fetched_here = true;
                let fetched = fetch(&self.objects, &self.counts, range).await;
                if let Ok(bytes) = &fetched {
                    self.cache.insert(key.clone(), bytes.clone());
                }
                fetched.map_err(|error| error.to_string())
            })
            .await
            .clone();
        if counted {
            let count = if fetched_here {
                &self.counts.cache_misses
            } else {
                &self.counts.cache_hits
            };
            StorageCounts::add(count, 1);
        }
        answer.map_err(StorageError::ObjectRead)
    }

    /// A range's bytes for a reader that goes through a whole log once (the cleaner):
    /// from the cache if there, else fetched without filling the cache.
    pub async fn range_bytes_passing(&self, range: &StoredRange) -> Result<Bytes, StorageError> {
        match self.cache.get(&CacheKey::of(range)) {
            Some(bytes) => {
                StorageCounts::add(&self.counts.cache_hits, 1);
                Ok(bytes)
            }
            None => fetch(&self.objects, &self.counts, range).await,
        }
    }

    /// Fetches `ranges` into the cache in the background.
    fn read_ahead(&self, ranges: Vec<StoredRange>) {
        let ranges: Vec<StoredRange> = ranges
            .into_iter()
            .filter(|range| !self.cache.contains(&CacheKey::of(range)))
            .collect();
        if ranges.is_empty() {
            return;
        }
        let reader = self.clone();
        tokio::spawn(async move {
            for range in ranges {
                match reader.fetch_once(CacheKey::of(&range), &range, false).await {
                    Ok(_) => {}
                    Err(error) => {
                        tracing::debug!(object = %range.object, %error, "read-ahead failed");
                        return;
                    }
                }
            }
        });
    }
}

/// Forgets a GET as under way when dropped, unless another took its place.
struct Forget<'a> {
    in_flight: &'a Mutex<HashMap<CacheKey, Arc<InFlight>>>,
    key: &'a CacheKey,
    cell: &'a Arc<InFlight>,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        let mut under_way = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if under_way
            .get(self.key)
            .is_some_and(|entry| Arc::ptr_eq(entry, self.cell))
        {
            under_way.remove(self.key);
        }
    }
}

/// A ranged GET of one range.
async fn fetch(
    objects: &ObjectStorage,
    counts: &StorageCounts,
    range: &StoredRange,
) -> Result<Bytes, StorageError> {
    let start = u64::try_from(range.position).unwrap_or(0);
    let end = start + u64::try_from(range.length).unwrap_or(0);
    let started = std::time::Instant::now();
    let bytes = objects
        .store
        .get_range(&objects.path(&range.object), start..end)
        .await
        .map_err(|error| {
            tracing::warn!(object = %range.object, %error, "reading an object failed");
            StorageError::ObjectRead(error.to_string())
        })?;
    counts.get_took(started.elapsed());
    StorageCounts::add(&counts.gets, 1);
    StorageCounts::add(&counts.get_bytes, bytes.len() as u64);
    Ok(bytes)
}

fn corrupt(range: &StoredRange, error: &dyn std::fmt::Display) -> StorageError {
    tracing::error!(object = %range.object, position = range.position, %error, "an object's range holds no valid batches");
    StorageError::ObjectRead(format!("object {}: {error}", range.object))
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct CacheKey {
    object: String,
    position: i64,
}

impl CacheKey {
    fn of(range: &StoredRange) -> CacheKey {
        CacheKey {
            object: range.object.clone(),
            position: range.position,
        }
    }
}

/// Ranges read, least recently inserted evicted first, within a byte budget.
#[derive(Debug)]
struct RangeCache {
    limit: u64,
    entries: Mutex<CacheEntries>,
}

#[derive(Debug, Default)]
struct CacheEntries {
    bytes: u64,
    map: HashMap<CacheKey, Bytes>,
    order: VecDeque<CacheKey>,
}

impl RangeCache {
    fn new(limit: u64) -> RangeCache {
        RangeCache {
            limit,
            entries: Mutex::new(CacheEntries::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CacheEntries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn get(&self, key: &CacheKey) -> Option<Bytes> {
        self.lock().map.get(key).cloned()
    }

    fn contains(&self, key: &CacheKey) -> bool {
        self.lock().map.contains_key(key)
    }

    fn insert(&self, key: CacheKey, bytes: Bytes) {
        let len = bytes.len() as u64;
        if len > self.limit {
            return;
        }
        let mut entries = self.lock();
        if entries.map.contains_key(&key) {
            return;
        }
        while entries.bytes + len > self.limit {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            if let Some(evicted) = entries.map.remove(&oldest) {
                entries.bytes -= evicted.len() as u64;
            }
        }
        entries.bytes += len;
        entries.order.push_back(key.clone());
        entries.map.insert(key, bytes);
    }
}
