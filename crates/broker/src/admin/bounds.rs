//! Where the REST API finds a partition's offsets: the partition itself where this
//! broker leads it; in shared-storage mode, for a partition another broker leads,
//! the catalogue, which holds what is committed (with acks=all, everything
//! acknowledged; acks=1 appends not yet uploaded are only on the leader).

use std::sync::Arc;

use spool_metadata::PartitionState;

use crate::shared::Shared;
use crate::topics::Topic;

/// A partition's offsets as the REST API shows them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub(crate) log_start: i64,
    pub(crate) high_watermark: i64,
    /// Known where this broker leads the partition.
    pub(crate) last_stable: Option<i64>,
}

/// The partition's offsets; `None` when neither this broker nor the catalogue has
/// them. Blocking: in embedded mode a partition is opened on first use; in
/// shared-storage mode a tail open here answers, else the catalogue is read.
pub(crate) fn partition_bounds(shared: &Shared, topic: &Arc<Topic>, index: i32) -> Option<Bounds> {
    if let Ok(partition) = shared.partitions().partition_of(topic.clone(), index, -1) {
        return Some(Bounds {
            log_start: partition.log_start().0,
            high_watermark: partition.log.offsets().high_watermark.0,
            last_stable: Some(partition.log.stable_offset().0),
        });
    }
    let state = committed_state(shared, topic, index)?;
    Some(Bounds {
        log_start: state.log_start,
        high_watermark: state.high_watermark,
        last_stable: None,
    })
}

/// The catalogue's state of a partition (shared-storage mode). Blocking.
pub(super) fn committed_state(
    shared: &Shared,
    topic: &Topic,
    index: i32,
) -> Option<PartitionState> {
    let storage = shared.storage()?;
    let metadata = shared.metadata().clone();
    // A view's partitions are its source's.
    let key = shared.partitions().source_of(topic)?.partition_key(index);
    match storage.wait_for(async move { metadata.partition_state(key).await }) {
        Ok(Ok(state)) => state,
        Ok(Err(error)) => {
            tracing::debug!(%error, "cannot read a partition's state from the catalogue");
            None
        }
        Err(_) => None,
    }
}
