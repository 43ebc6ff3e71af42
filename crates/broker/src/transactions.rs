//! What the transaction coordinator needs of the broker: new producer ids (the
//! allocator InitProducerId uses) and marker writes into the partitions this broker
//! leads.

use std::sync::Arc;
use std::time::Duration;

use spool_coordinator::{MarkerOutcome, MarkerWriter, ProducerIdSource};
use spool_log::LogError;
use spool_metadata::{MetadataError, TxnMarker};
use spool_model::Clock;
use spool_protocol::control::{Marker, marker_batch};

use crate::partitions::{PartitionError, Partitions, on_blocking_pool};
use crate::producer_ids::ProducerIds;

/// How long a marker may take to become durable before it is tried again later.
const MARKER_DURABLE_WAIT: Duration = Duration::from_secs(10);

#[async_trait::async_trait]
impl ProducerIdSource for ProducerIds {
    async fn new_producer_id(&self) -> Result<i64, MetadataError> {
        self.init(None).await.map(|(id, _)| id)
    }
}

/// Writes markers into the partitions this broker leads, through the partition
/// router (which knows nothing of the coordinators: no cycle).
#[derive(Debug)]
pub(crate) struct BrokerMarkers {
    partitions: Arc<Partitions>,
    /// What stamps the markers.
    clock: Clock,
}

impl BrokerMarkers {
    pub(crate) fn new(partitions: Arc<Partitions>, clock: Clock) -> BrokerMarkers {
        BrokerMarkers { partitions, clock }
    }
}

#[async_trait::async_trait]
impl MarkerWriter for BrokerMarkers {
    async fn write(&self, marker: &TxnMarker) -> MarkerOutcome {
        let Some(topic) = self.partitions.topics().by_id(marker.topic_id) else {
            // Not known here (yet): the leader writes it. (A deleted topic's queued
            // markers go with it from the store.)
            return MarkerOutcome::NotLeader;
        };
        let batch = marker_batch(
            marker.producer_id,
            marker.producer_epoch,
            Marker::from_commit(marker.commit),
            0,
            self.clock.timestamp(),
        );
        let index = marker.partition;
        let appended = match self.partitions.open(topic, index, -1).await {
            Ok(partition) => on_blocking_pool(move || {
                let info = partition.log.append(&[&batch])?;
                partition.appended(batch.len());
                Ok::<_, PartitionError>((partition, info))
            })
            .await
            .and_then(|appended| appended),
            Err(error) => Err(error),
        };
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
