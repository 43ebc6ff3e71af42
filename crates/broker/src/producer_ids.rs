//! Producer ids for idempotent producers (InitProducerId): taken from the metadata
//! store in blocks, so that an id is never handed out twice, also across restarts,
//! without a store write per producer.

use std::collections::HashMap;
use std::sync::Arc;

use spool_metadata::{MetadataError, MetadataStore};

/// Ids taken from the store at a time.
const BLOCK: i64 = 1000;

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
    /// The current epoch of each id handed out since the start.
    epochs: HashMap<i64, i16>,
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
        Ok((id, 0))
    }
}
