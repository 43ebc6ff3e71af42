//! The one seam between handlers and partitions: a handler names a partition (topic
//! name, index, and the leader epoch the client knows) and gets a [`PartitionHandle`]
//! or a [`PartitionError`] that maps to a Kafka error code here, in one place. Blocking
//! partition work goes to the blocking pool through [`on_blocking_pool`], which answers
//! a failed task one way for every handler.
//!
//! Behind the seam, a topic's partitions are the log manager's partitions keyed by the
//! topic's id (`topics/<id>/<index>/`), so a topic deleted and created again under the
//! same name never sees the old one's data.

use std::sync::Arc;

use spool_log::{LogError, PartitionLog};
use spool_model::{TopicName, TopicPartition};
use uuid::Uuid;

use crate::errors::{self, code};
use crate::server::Shared;
use crate::topics::Topic;

/// A partition this broker serves, ready for reads and appends.
#[derive(Debug, Clone)]
pub(crate) struct PartitionHandle {
    pub(crate) log: Arc<PartitionLog>,
    /// The partition's current leader epoch (what appends are stamped with).
    pub(crate) leader_epoch: i32,
}

/// Why a handler cannot have a partition.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PartitionError {
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// The client's leader epoch is older than the partition's.
    #[error("leader epoch {requested} is older than the current {current}")]
    FencedLeaderEpoch { requested: i32, current: i32 },
    /// The client's leader epoch is newer than any this broker knows.
    #[error("leader epoch {requested} is newer than the current {current}")]
    UnknownLeaderEpoch { requested: i32, current: i32 },
    #[error("{0}")]
    Storage(#[from] LogError),
    /// The blocking task doing the work failed (panicked, or was cancelled as the
    /// broker stopped): the work may or may not have happened.
    #[error("the storage task failed: {0}")]
    Interrupted(String),
}

impl PartitionError {
    /// The Kafka error code a client gets.
    pub(crate) fn code(&self) -> i16 {
        match self {
            PartitionError::UnknownTopicOrPartition => code::UNKNOWN_TOPIC_OR_PARTITION,
            PartitionError::FencedLeaderEpoch { .. } => code::FENCED_LEADER_EPOCH,
            PartitionError::UnknownLeaderEpoch { .. } => code::UNKNOWN_LEADER_EPOCH,
            PartitionError::Storage(error) => errors::log_error_code(error),
            // Retriable: an idempotent producer sends the same sequences again, which
            // the log recognises if they were written. A fatal code would make
            // librdkafka bump its epoch and re-send its other batches in flight as new
            // ones: duplicates, found by `spool faultcheck`.
            PartitionError::Interrupted(_) => code::KAFKA_STORAGE_ERROR,
        }
    }
}

/// The log manager's name for a topic's partitions: the topic's id, as 32 hex digits
/// (a valid topic name, so the log layer needs no other key).
pub(crate) fn log_topic(id: Uuid) -> TopicName {
    TopicName::new(id.simple().to_string())
        .unwrap_or_else(|_| unreachable!("32 hex digits are a valid topic name"))
}

/// The topic id a log-manager topic name stands for, if it is one.
pub(crate) fn topic_id_of_log(topic: &TopicName) -> Option<Uuid> {
    let text = topic.as_str();
    (text.len() == 32)
        .then(|| Uuid::try_parse(text).ok())
        .flatten()
}

impl Topic {
    /// The log-manager key of the topic's partition `index`, if it has one.
    pub(crate) fn log_partition(&self, index: i32) -> Option<TopicPartition> {
        (0..self.record.partitions)
            .contains(&index)
            .then(|| TopicPartition::new(log_topic(self.record.id), index))
    }

    /// The partition's leader epoch (0 for a partition this broker has not recorded
    /// one for).
    pub(crate) fn leader_epoch(&self, index: i32) -> i32 {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.leader_epochs.get(i).copied())
            .unwrap_or(0)
    }
}

impl Shared {
    /// The partition `index` of the topic named `topic`, opening (and recovering) its
    /// log on first use, so blocking. `current_leader_epoch` is the epoch the client
    /// knows, -1 for none: older is fenced, newer unknown.
    pub(crate) fn partition(
        &self,
        topic: &str,
        index: i32,
        current_leader_epoch: i32,
    ) -> Result<PartitionHandle, PartitionError> {
        let topic = self
            .topics
            .get(topic)
            .ok_or(PartitionError::UnknownTopicOrPartition)?;
        self.partition_of(topic, index, current_leader_epoch)
    }

    /// [`Shared::partition`] for a topic already looked up.
    pub(crate) fn partition_of(
        &self,
        topic: Arc<Topic>,
        index: i32,
        current_leader_epoch: i32,
    ) -> Result<PartitionHandle, PartitionError> {
        let key = topic
            .log_partition(index)
            .ok_or(PartitionError::UnknownTopicOrPartition)?;
        let leader_epoch = topic.leader_epoch(index);
        if current_leader_epoch >= 0 {
            if current_leader_epoch < leader_epoch {
                return Err(PartitionError::FencedLeaderEpoch {
                    requested: current_leader_epoch,
                    current: leader_epoch,
                });
            }
            if current_leader_epoch > leader_epoch {
                return Err(PartitionError::UnknownLeaderEpoch {
                    requested: current_leader_epoch,
                    current: leader_epoch,
                });
            }
        }
        let log = self
            .logs
            .partition(&key)?
            .ok_or(PartitionError::UnknownTopicOrPartition)?;
        log.become_leader(leader_epoch)?;
        Ok(PartitionHandle { log, leader_epoch })
    }
}

/// Runs blocking partition work (reads, appends, file creation, fsync) on the blocking
/// pool. A task that fails (a panic, or cancellation as the broker stops) is
/// [`PartitionError::Interrupted`], whatever the handler.
pub(crate) async fn on_blocking_pool<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, PartitionError> {
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        tracing::error!(%error, "a storage task failed");
        PartitionError::Interrupted(error.to_string())
    })
}

/// One topic of a request: its name and, per partition, its index and what the
/// request asks of it.
pub(crate) type Asked<N, R> = Vec<(N, Vec<(i32, R)>)>;

/// Runs `work` for every partition of a request, all in one task on the blocking
/// pool (one hand-off per request, not per partition). Answers keep the request's
/// order; if the task fails, every partition gets the interrupted task's code.
pub(crate) async fn per_partition<N, R, T>(
    shared: &Arc<Shared>,
    asked: Asked<N, R>,
    work: impl Fn(&Shared, &N, i32, R) -> Result<T, i16> + Send + 'static,
) -> Asked<N, Result<T, i16>>
where
    N: Clone + Send + 'static,
    R: Send + 'static,
    T: Send + 'static,
{
    let skeleton: Vec<(N, Vec<i32>)> = asked
        .iter()
        .map(|(name, partitions)| (name.clone(), partitions.iter().map(|(i, _)| *i).collect()))
        .collect();
    let shared = shared.clone();
    let done = on_blocking_pool(move || {
        asked
            .into_iter()
            .map(|(name, partitions)| {
                let answers = partitions
                    .into_iter()
                    .map(|(index, what)| (index, work(&shared, &name, index, what)))
                    .collect();
                (name, answers)
            })
            .collect()
    })
    .await;
    done.unwrap_or_else(|error| {
        skeleton
            .into_iter()
            .map(|(name, indexes)| {
                let failed = indexes
                    .into_iter()
                    .map(|i| (i, Err(error.code())))
                    .collect();
                (name, failed)
            })
            .collect()
    })
}
