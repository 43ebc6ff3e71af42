//! A partition's committed records as the index reads them: through the partition
//! where this broker leads it (read_committed, up to its last stable offset), or, in
//! shared-storage mode for a partition another broker leads, from what the
//! catalogue has committed, straight from objects, with the last stable offset and
//! the aborted transactions of the catalogue's producer state.

use std::sync::Arc;

use spool_log::AbortedTxn;
use spool_metadata::PartitionKey;
use spool_model::Offset;
use spool_shared_storage::SharedStorage;

use crate::partitions::{PartitionError, PartitionHandle};
use crate::shared::Shared;
use crate::topics::Topic;

#[derive(Debug, Clone)]
pub(crate) enum Source {
    Led(PartitionHandle),
    Committed {
        storage: Arc<SharedStorage>,
        key: PartitionKey,
        log_start: i64,
        stable: i64,
        aborted: Arc<Vec<AbortedTxn>>,
    },
}

/// Why a partition cannot be read here.
#[derive(Debug)]
pub(crate) enum Unreadable {
    /// Embedded mode, or the catalogue does not know it: the partition's error.
    Partition(PartitionError),
    Other(String),
}

impl Source {
    /// Partition `index` of `topic` (no view: the caller names the source).
    pub(crate) async fn open(
        shared: &Arc<Shared>,
        topic: &Arc<Topic>,
        index: i32,
    ) -> Result<Source, Unreadable> {
        match shared.partitions().open(topic.clone(), index, -1).await {
            Ok(handle) => Ok(Source::Led(handle)),
            Err(PartitionError::NotLeader) if shared.storage().is_some() => {
                Source::committed(shared, topic.partition_key(index)).await
            }
            Err(error) => Err(Unreadable::Partition(error)),
        }
    }

    async fn committed(shared: &Arc<Shared>, key: PartitionKey) -> Result<Source, Unreadable> {
        let storage = shared
            .storage()
            .cloned()
            .ok_or(Unreadable::Partition(PartitionError::NotLeader))?;
        let state = shared
            .metadata()
            .partition_state(key)
            .await
            .map_err(|e| Unreadable::Other(format!("the catalogue: {e}")))?
            .ok_or(Unreadable::Partition(PartitionError::NotLeader))?;
        let high_watermark = Offset(state.high_watermark);
        let (stable, aborted) = state
            .producer_state
            .as_deref()
            .and_then(|encoded| spool_log::transactions_in(encoded, high_watermark))
            .unwrap_or((high_watermark, Vec::new()));
        Ok(Source::Committed {
            storage,
            key,
            log_start: state.log_start,
            stable: stable.0,
            aborted: Arc::new(aborted),
        })
    }

    /// The log start and the last stable offset: the committed records are between.
    pub(crate) fn bounds(&self) -> (i64, i64) {
        match self {
            Source::Led(handle) => (handle.log_start().0, handle.log.stable_offset().0),
            Source::Committed {
                log_start, stable, ..
            } => (*log_start, *stable),
        }
    }

    /// Whole batches from the one holding `offset` (the first whole, about
    /// `max_bytes` of them) below the last stable offset, with the aborted
    /// transactions among them. Blocking.
    pub(crate) fn read(
        &self,
        offset: i64,
        max_bytes: u64,
    ) -> Result<(Vec<u8>, Vec<AbortedTxn>), String> {
        match self {
            Source::Led(handle) => handle
                .read_committed_bytes(Offset(offset), max_bytes)
                .map(|(bytes, read)| (bytes, read.aborted))
                .map_err(|e| e.to_string()),
            Source::Committed {
                storage,
                key,
                stable,
                aborted,
                ..
            } => {
                let (reader, key, end) = (storage.reader.clone(), *key, Offset(*stable));
                if offset >= *stable {
                    return Ok((Vec::new(), Vec::new()));
                }
                let read = storage
                    .wait_for(async move {
                        reader.read(key, Offset(offset), end, max_bytes, true).await
                    })
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())?;
                Ok((read.batches.concat(), aborted.to_vec()))
            }
        }
    }
}
