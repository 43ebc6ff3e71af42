//! Producer ids for idempotent producers (InitProducerId): taken from the metadata
//! store in blocks, so that an id is never handed out twice, also across restarts,
//! without a store write per producer.

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_metadata::{MetadataError, MetadataStore};

/// Ids taken from the store at a time.
const BLOCK: i64 = 1000;

/// Ids whose epoch is remembered for a bump. Beyond it the oldest ids are forgotten:
/// such a producer asking again gets a new id, which KIP-360 allows.
const REMEMBERED_EPOCHS: usize = 100_000;

/// The producer-id allocator.
#[derive(Debug)]
pub(crate) struct ProducerIds {
    metadata: Arc<dyn MetadataStore>,
    state: tokio::sync::Mutex<Allocation>,
}

#[derive(Debug, Default)]
struct Allocation {
    next: i64,
    end: i64,
    /// The current epoch of the ids handed out most recently since the start; ids
    /// increase, so the first entry is the oldest.
    epochs: BTreeMap<i64, i16>,
}

impl ProducerIds {
    pub(crate) fn new(metadata: Arc<dyn MetadataStore>) -> ProducerIds {
        ProducerIds {
            metadata,
            state: tokio::sync::Mutex::new(Allocation::default()),
        }
    }

    /// An id and epoch for a producer. A producer that names the id and epoch it has
    /// (InitProducerId v3+, KIP-360) gets the next epoch of the same id, fencing its
    /// older incarnation; anyone else gets a new id at epoch 0.
    pub(crate) async fn init(
        &self,
        current: Option<(i64, i16)>,
    ) -> Result<(i64, i16), MetadataError> {
        let mut allocation = self.state.lock().await;
        if let Some((id, epoch)) = current
            && allocation.epochs.get(&id) == Some(&epoch)
            && epoch < i16::MAX
        {
            allocation.epochs.insert(id, epoch + 1);
            return Ok((id, epoch + 1));
        }
        if allocation.next == allocation.end {
            let first = self.metadata.allocate_producer_ids(BLOCK).await?;
            allocation.next = first;
            allocation.end = first + BLOCK;
        }
        let id = allocation.next;
        allocation.next += 1;
        allocation.epochs.insert(id, 0);
        if allocation.epochs.len() > REMEMBERED_EPOCHS {
            allocation.epochs.pop_first();
        }
        Ok((id, 0))
    }
}

impl ProducerIds {
    /// Hands out no id below `floor` from now on: ids below it are another cluster's
    /// (a failed-over mirror's source producers). The block in hand is dropped if it
    /// reaches below; with `move_store`, the store's next id is moved past it too (the
    /// failover does that once; the other brokers only drop their blocks).
    pub(crate) async fn raise_floor(
        &self,
        floor: i64,
        move_store: bool,
    ) -> Result<(), MetadataError> {
        let mut allocation = self.state.lock().await;
        if allocation.next < floor {
            allocation.next = allocation.end;
        }
        if move_store {
            let first = self.metadata.allocate_producer_ids(1).await?;
            if first < floor {
                self.metadata.allocate_producer_ids(floor - first).await?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use spool_metadata::SqliteStore;

    use super::*;

    #[tokio::test]
    async fn ids_are_new_epochs_bump_and_old_epochs_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("meta.db"))
            .await
            .unwrap();
        let ids = ProducerIds::new(Arc::new(store));
        let (first, epoch) = ids.init(None).await.unwrap();
        assert_eq!(epoch, 0);
        assert_eq!(ids.init(Some((first, 0))).await.unwrap(), (first, 1));
        let (stale, _) = ids.init(Some((first, 0))).await.unwrap();
        assert_ne!(stale, first, "a stale epoch gets a new id");
        let mut last = stale;
        for _ in 0..REMEMBERED_EPOCHS {
            last = ids.init(None).await.unwrap().0;
        }
        assert_eq!(ids.init(Some((last, 0))).await.unwrap(), (last, 1));
        let (forgotten, epoch) = ids.init(Some((first, 1))).await.unwrap();
        assert!(
            forgotten > last && epoch == 0,
            "the oldest id was forgotten"
        );
        assert!(ids.state.lock().await.epochs.len() <= REMEMBERED_EPOCHS);
    }

    #[tokio::test]
    async fn no_id_below_a_raised_floor_is_handed_out_by_any_broker() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn MetadataStore> = Arc::new(
            SqliteStore::open(&dir.path().join("meta.db"))
                .await
                .unwrap(),
        );
        // Two brokers of one store, each with a block in hand.
        let (one, two) = (ProducerIds::new(store.clone()), ProducerIds::new(store));
        let first = one.init(None).await.unwrap().0;
        two.init(None).await.unwrap();
        let floor = first + 5 * BLOCK + 7;
        one.raise_floor(floor, true).await.unwrap();
        two.raise_floor(floor, false).await.unwrap();
        for ids in [&one, &two] {
            for _ in 0..3 {
                assert!(ids.init(None).await.unwrap().0 >= floor);
            }
        }
    }
}
