//! The cleaner's map from each key to the offset of its latest record, bounded in
//! memory (`log.cleaner.dedupe.buffer.size`), as Kafka's.
//!
//! Keys are not kept: a 128-bit keyed hash stands for each one (two SipHash values
//! under random keys drawn for each cleaning), so an entry costs a fixed amount
//! whatever the key's size, and two keys colliding — which would drop the older
//! key's latest record — is as likely as guessing a 128-bit secret.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

/// What one entry costs: a 16-byte hash, an 8-byte offset, and the table's overhead
/// (control bytes and free slots at its load factor).
pub(crate) const BYTES_PER_ENTRY: u64 = 32;

#[derive(Debug)]
pub struct OffsetMap {
    entries: HashMap<u128, i64, PassThrough>,
    capacity: usize,
    keys: (RandomState, RandomState),
}

impl OffsetMap {
    /// A map that holds at most what `budget_bytes` pays for.
    pub fn with_budget(budget_bytes: u64) -> OffsetMap {
        let capacity = usize::try_from(budget_bytes / BYTES_PER_ENTRY).unwrap_or(usize::MAX);
        OffsetMap {
            entries: HashMap::with_hasher(PassThrough),
            capacity,
            keys: (RandomState::new(), RandomState::new()),
        }
    }

    /// Whether `more` new keys would still fit.
    pub fn has_room_for(&self, more: usize) -> bool {
        self.entries.len().saturating_add(more) <= self.capacity
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Records `offset` as the latest of `key` (offsets come in increasing order).
    pub(crate) fn put(&mut self, key: &[u8], offset: i64) {
        let hash = self.hash(key);
        self.entries.insert(hash, offset);
    }

    /// The latest offset of `key`, if the map has seen it.
    pub fn latest(&self, key: &[u8]) -> Option<i64> {
        self.entries.get(&self.hash(key)).copied()
    }

    fn hash(&self, key: &[u8]) -> u128 {
        let high = self.keys.0.hash_one(key);
        let low = self.keys.1.hash_one(key);
        (u128::from(high) << 64) | u128::from(low)
    }
}

/// The map's keys are hashes already: the table uses their low bits as they are.
#[derive(Debug, Clone, Copy, Default)]
struct PassThrough;

impl BuildHasher for PassThrough {
    type Hasher = PassThroughHasher;
    fn build_hasher(&self) -> PassThroughHasher {
        PassThroughHasher(0)
    }
}

#[derive(Debug)]
struct PassThroughHasher(u64);

impl std::hash::Hasher for PassThroughHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u128(&mut self, value: u128) {
        self.0 = u64::try_from(value & u128::from(u64::MAX)).unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_offset_of_each_key_within_a_budget() {
        let mut map = OffsetMap::with_budget(BYTES_PER_ENTRY * 3);
        map.put(b"a", 1);
        map.put(b"b", 2);
        map.put(b"a", 3);
        assert_eq!(map.latest(b"a"), Some(3));
        assert_eq!(map.latest(b"b"), Some(2));
        assert_eq!(map.latest(b"c"), None);
        assert_eq!(map.len(), 2);
        assert!(map.has_room_for(1));
        assert!(!map.has_room_for(2));
    }
}
