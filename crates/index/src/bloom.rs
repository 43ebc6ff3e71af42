//! A bloom filter over value hashes: a chunk keeps one per field, so that a lookup
//! of a value the chunk does not hold skips it without reading its entries. Ten bits
//! per distinct value and seven probes: about 1% false positives.

/// Bits per distinct value.
const BITS_PER_VALUE: usize = 10;
/// Probes per value (double hashing over the hash's two halves).
const PROBES: u64 = 7;

/// The filter's words (64 bits each); never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bloom {
    words: Vec<u64>,
}

impl Bloom {
    /// An empty filter sized for `distinct` values.
    #[must_use]
    pub fn with_capacity(distinct: usize) -> Bloom {
        let words = (distinct.saturating_mul(BITS_PER_VALUE))
            .div_ceil(64)
            .max(1);
        Bloom {
            words: vec![0; words],
        }
    }

    /// A filter read back from its words; `None` if there are none.
    #[must_use]
    pub fn from_words(words: Vec<u64>) -> Option<Bloom> {
        (!words.is_empty()).then_some(Bloom { words })
    }

    #[must_use]
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    pub fn insert(&mut self, hash: u64) {
        for bit in bits(self.words.len(), hash) {
            if let Some(word) = self.words.get_mut(bit / 64) {
                *word |= 1 << (bit % 64);
            }
        }
    }

    /// Whether `hash` may have been inserted (false: it was not).
    #[must_use]
    pub fn may_contain(&self, hash: u64) -> bool {
        bits(self.words.len(), hash).all(|bit| {
            self.words
                .get(bit / 64)
                .is_some_and(|word| word & (1 << (bit % 64)) != 0)
        })
    }
}

/// The bits of `hash` in a filter of `words` words.
fn bits(words: usize, hash: u64) -> impl Iterator<Item = usize> {
    let len = (words as u64).saturating_mul(64).max(1);
    let (low, high) = (hash & 0xffff_ffff, (hash >> 32) | 1);
    (0..PROBES).map(move |i| {
        let bit = low.wrapping_add(i.wrapping_mul(high)) % len;
        usize::try_from(bit).unwrap_or(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value_hash;

    #[test]
    fn inserted_values_are_found_and_few_others_are() {
        let mut bloom = Bloom::with_capacity(10_000);
        for i in 0..10_000 {
            bloom.insert(value_hash(format!("key-{i}").as_bytes()));
        }
        assert!((0..10_000).all(|i| bloom.may_contain(value_hash(format!("key-{i}").as_bytes()))));
        let false_positives = (0..10_000)
            .filter(|i| bloom.may_contain(value_hash(format!("other-{i}").as_bytes())))
            .count();
        assert!(
            false_positives < 300,
            "{false_positives} false positives in 10,000"
        );
    }
}
