//! What the transaction coordinator needs of the broker: new producer ids (the
//! allocator InitProducerId uses) and marker writes into the partitions this broker
//! leads.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use spool_coordinator::{MarkerOutcome, MarkerWriter, ProducerIdSource};
use spool_log::LogError;
use spool_metadata::{MetadataError, TxnMarker};
use spool_model::Timestamp;
use spool_protocol::control::{Marker, marker_batch};

use crate::partitions::{PartitionError, on_blocking_pool};
use crate::producer_ids::ProducerIds;
use crate::shared::Shared;

/// How long a marker may take to become durable before it is tried again later.
const MARKER_DURABLE_WAIT: Duration = Duration::from_secs(10);

#[async_trait::async_trait]
impl ProducerIdSource for ProducerIds {
    async fn new_producer_id(&self) -> Result<i64, MetadataError> {
        self.init(None).await.map(|(id, _)| id)
    }
}

/// Writes markers into this broker's partitions. It holds the broker weakly: the
/// broker holds the coordinator that holds it.
#[derive(Debug, Default)]
pub(crate) struct BrokerMarkers {
    shared: OnceLock<Weak<Shared>>,
}

impl BrokerMarkers {
    pub(crate) fn attach(&self, shared: &Arc<Shared>) {
        let _ = self.shared.set(Arc::downgrade(shared));
    }
}

#[async_trait::async_trait]
impl MarkerWriter for BrokerMarkers {
    async fn write(&self, marker: &TxnMarker) -> MarkerOutcome {
        let Some(shared) = self.shared.get().and_then(Weak::upgrade) else {
            return MarkerOutcome::Failed;
        };
        let Some(topic) = shared.topics.by_id(marker.topic_id) else {
            // Not known here (yet): the leader writes it. (A deleted topic's queued
            // markers go with it from the store.)
            return MarkerOutcome::NotLeader;
        };
        let batch = marker_batch(
            marker.producer_id,
            marker.producer_epoch,
            Marker::from_commit(marker.commit),
            0,
            Timestamp::now(),
        );
        let index = marker.partition;
        let appended = on_blocking_pool(move || {
            let partition = shared.partition_of(topic, index, -1)?;
            let info = partition.log.append(&[&batch])?;
            partition.appended(batch.len());
            Ok::<_, PartitionError>((partition, info))
        })
        .await
        .and_then(|appended| appended);
        let (partition, info) = match appended {
            Ok(appended) => appended,
            Err(
                PartitionError::NotLeader | PartitionError::Storage(LogError::NotLeader { .. }),
            ) => {
                return MarkerOutcome::NotLeader;
            }
            Err(PartitionError::UnknownTopicOrPartition) => return MarkerOutcome::NotLeader,
            Err(PartitionError::Storage(LogError::Producer(refused))) => {
                // A marker older than the producer's epoch here: its transaction was
                // ended under a newer epoch already.
                tracing::warn!(transactional_id = %marker.transactional_id, %refused, "dropping a stale marker");
                return MarkerOutcome::Written;
            }
            Err(error) => {
                tracing::warn!(transactional_id = %marker.transactional_id, %error, "writing a marker failed; it is tried again");
                return MarkerOutcome::Failed;
            }
        };
        let durable = partition.log.wait_durable(info.next_offset());
        match tokio::time::timeout(MARKER_DURABLE_WAIT, durable).await {
            Ok(Ok(())) => MarkerOutcome::Written,
            Ok(Err(LogError::NotLeader { .. })) => MarkerOutcome::NotLeader,
            Ok(Err(error)) => {
                tracing::warn!(transactional_id = %marker.transactional_id, %error, "a marker did not become durable; it is written again");
                MarkerOutcome::Failed
            }
            Err(_) => {
                tracing::warn!(transactional_id = %marker.transactional_id, partition = marker.partition, "a marker did not become durable within {MARKER_DURABLE_WAIT:?}; it is written again");
                MarkerOutcome::Failed
            }
        }
    }
}
