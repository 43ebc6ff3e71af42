//! Which keys (group ids, transactional ids) this broker coordinates when a cluster's
//! brokers share them out, and locks striped by key.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::{Mutex, MutexGuard};

/// Which groups (and transactional ids) this broker coordinates (the broker's
/// cluster membership says).
pub trait GroupOwnership: Send + Sync + std::fmt::Debug {
    fn owns(&self, group_id: &str) -> bool;
}

/// The ownership a coordinator follows.
pub type Ownership = Arc<dyn GroupOwnership>;

/// A coordinator's ownership: every key until one is set.
#[derive(Debug, Default)]
pub(crate) struct OwnershipSlot(RwLock<Option<Ownership>>);

impl OwnershipSlot {
    pub(crate) fn set(&self, owns: Ownership) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Some(owns);
    }

    pub(crate) fn owns(&self, key: &str) -> bool {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_none_or(|ownership| ownership.owns(key))
    }

    /// Whether keys are shared out among brokers.
    pub(crate) fn is_shared(&self) -> bool {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

/// Locks by key, striped: a few keys share one.
#[derive(Debug)]
pub(crate) struct StripedLocks(Vec<Mutex<()>>);

impl StripedLocks {
    pub(crate) fn new(stripes: usize) -> StripedLocks {
        StripedLocks((0..stripes.max(1)).map(|_| Mutex::new(())).collect())
    }

    pub(crate) async fn lock(&self, key: &impl Hash) -> MutexGuard<'_, ()> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        key.hash(&mut hasher);
        let stripes = self.0.len() as u64;
        let stripe = usize::try_from(hasher.finish() % stripes).unwrap_or(0);
        match self.0.get(stripe) {
            Some(lock) => lock.lock().await,
            None => unreachable!("the stripe is taken modulo the stripe count"),
        }
    }
}
