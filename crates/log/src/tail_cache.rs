//! The newest bytes of the active segment, kept in memory so that consumers reading at
//! the tail are served without touching the file.

use std::collections::VecDeque;

use bytes::Bytes;

/// Appended chunks of one segment, contiguous, oldest first, bounded in total size.
#[derive(Debug, Default)]
pub(crate) struct TailCache {
    /// Each chunk with the file position of its first byte.
    chunks: VecDeque<(u64, Bytes)>,
    bytes: u64,
}

impl TailCache {
    /// Adds the bytes just written at `position`, then drops the oldest chunks while
    /// more than `limit` bytes are held. A write that does not follow the previous one
    /// (a new segment) starts the cache over.
    pub(crate) fn push(&mut self, position: u64, data: Bytes, limit: u64) {
        if self.end() != Some(position) {
            self.clear();
        }
        self.bytes += data.len() as u64;
        self.chunks.push_back((position, data));
        while self.bytes > limit {
            match self.chunks.pop_front() {
                Some((_, dropped)) => self.bytes -= dropped.len() as u64,
                None => break,
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        self.chunks.clear();
        self.bytes = 0;
    }

    fn end(&self) -> Option<u64> {
        self.chunks
            .back()
            .map(|(position, data)| position + data.len() as u64)
    }

    /// The bytes of `start..end`, as slices of the cached chunks (no copy), if the
    /// whole range is cached.
    pub(crate) fn slice(&self, start: u64, end: u64) -> Option<Vec<Bytes>> {
        let first = self.chunks.front()?.0;
        if start < first || end > self.end()? || start > end {
            return None;
        }
        let mut pieces = Vec::new();
        for (position, data) in &self.chunks {
            let chunk_end = position + data.len() as u64;
            if chunk_end <= start || *position >= end {
                continue;
            }
            let from = usize::try_from(start.saturating_sub(*position)).ok()?;
            let to = usize::try_from(end.min(chunk_end) - position).ok()?;
            pieces.push(data.slice(from..to));
        }
        Some(pieces)
    }

    pub(crate) fn heap_bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_cached_ranges_and_forgets_old_ones() {
        let mut cache = TailCache::default();
        cache.push(100, Bytes::from_static(b"abcd"), 8);
        cache.push(104, Bytes::from_static(b"efgh"), 8);
        let joined = |pieces: Vec<Bytes>| pieces.concat();
        assert_eq!(joined(cache.slice(102, 106).unwrap()), b"cdef");
        cache.push(108, Bytes::from_static(b"ij"), 8);
        assert!(
            cache.slice(100, 104).is_none(),
            "oldest chunk dropped past the limit"
        );
        assert_eq!(joined(cache.slice(104, 110).unwrap()), b"efghij");
        assert!(cache.slice(104, 111).is_none(), "beyond the end");
        cache.push(0, Bytes::from_static(b"new"), 8);
        assert!(cache.slice(104, 106).is_none(), "a new segment starts over");
        assert_eq!(joined(cache.slice(0, 3).unwrap()), b"new");
    }
}
