//! The partition router: from a topic (by name or id) and an index to the partition
//! this broker serves, under the one leader epoch it leads it with. It owns the topic
//! table and the logs, and sees shared storage and the cluster; it knows nothing of
//! the coordinators or the wire, so the transaction coordinator's marker writer holds
//! it directly.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use spool_log::{LogManager, PartitionLog};
use spool_metadata::PartitionKey;
use spool_model::TopicPartition;
use spool_shared_storage::{SharedPartition, SharedStorage};

use super::{PartitionError, PartitionHandle, on_blocking_pool};
use crate::cluster::ClusterView;
use crate::topics::{Topic, TopicTable};

/// The topics, their partitions' logs, and who leads each partition.
#[derive(Debug)]
pub(crate) struct Partitions {
    node_id: i32,
    topics: TopicTable,
    logs: Arc<LogManager>,
    /// Shared-storage mode's objects and uploader; `None` in embedded mode.
    storage: Option<Arc<SharedStorage>>,
    /// The cluster this broker is a member of (shared-storage mode); `None` in
    /// embedded mode, where it leads every partition.
    cluster: Option<Arc<ClusterView>>,
    /// Shared-storage mode: why the last opening of a partition's tail failed, until
    /// one succeeds. A request's blocking work, which only finds open tails, answers
    /// with it (see [`Partitions::open_tails`]).
    failed_opens: Mutex<HashMap<TopicPartition, Arc<PartitionError>>>,
}

impl Partitions {
    pub(crate) fn new(
        node_id: i32,
        topics: TopicTable,
        logs: LogManager,
        storage: Option<Arc<SharedStorage>>,
        cluster: Option<Arc<ClusterView>>,
    ) -> Partitions {
        Partitions {
            node_id,
            topics,
            logs: Arc::new(logs),
            storage,
            cluster,
            failed_opens: Mutex::new(HashMap::new()),
        }
    }

    /// The topics this broker knows, by name and by id.
    pub(crate) fn topics(&self) -> &TopicTable {
        &self.topics
    }

    /// The partitions' logs (in shared-storage mode, their tails).
    pub(crate) fn logs(&self) -> &LogManager {
        &self.logs
    }

    /// Shared-storage mode's objects and uploader; `None` in embedded mode.
    pub(crate) fn storage(&self) -> Option<&Arc<SharedStorage>> {
        self.storage.as_ref()
    }

    /// The cluster this broker is a member of; `None` in embedded mode.
    pub(crate) fn cluster(&self) -> Option<&Arc<ClusterView>> {
        self.cluster.as_ref()
    }
}

impl Partitions {
    /// The partition's leader and leader epoch: this broker, at the epoch it took, in
    /// embedded mode; the cluster's in shared-storage mode (`None`: no leader yet).
    pub(crate) fn leadership(&self, topic: &Topic, index: i32) -> Option<(i32, i32)> {
        if topic.view.is_some() {
            return self.leadership(&*self.source_of(topic)?, index);
        }
        let Some(view) = &self.cluster else {
            return Some((self.node_id, topic.leader_epoch(index)));
        };
        let key = PartitionKey {
            topic_id: topic.record.id,
            partition: index,
        };
        view.leader_of(key)
            .map(|leadership| (leadership.leader, leadership.leader_epoch))
    }

    /// The topic whose records `topic` shows: its source if it is a view (`None` if
    /// that is gone), itself otherwise. A view's partitions are its source's: the
    /// routing below follows a view there.
    pub(crate) fn source_of(&self, topic: &Topic) -> Option<Arc<Topic>> {
        match &topic.view {
            Some(view) => self
                .topics
                .get(&view.source)
                .filter(|source| source.view.is_none()),
            None => self.topics.get(topic.record.name.as_str()),
        }
    }

    /// The epoch this broker leads the partition under, if it leads it.
    pub(crate) fn led_epoch(&self, topic: &Topic, index: i32) -> Option<i32> {
        if topic.view.is_some() {
            return self.led_epoch(&*self.source_of(topic)?, index);
        }
        match &self.cluster {
            None => Some(topic.leader_epoch(index)),
            Some(view) => view.led_epoch(PartitionKey {
                topic_id: topic.record.id,
                partition: index,
            }),
        }
    }

    /// The partition `index` of the topic named `topic`. Blocking: in embedded mode its
    /// log is opened (and recovered) on first use; in shared-storage mode its tail is
    /// only found, opened before by [`Partitions::open_tails`] or [`Partitions::open`].
    /// `current_leader_epoch` is the epoch the client knows, -1 for none: older is
    /// fenced, newer unknown.
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

    /// [`Partitions::partition`] for a topic already looked up.
    pub(crate) fn partition_of(
        &self,
        topic: Arc<Topic>,
        index: i32,
        current_leader_epoch: i32,
    ) -> Result<PartitionHandle, PartitionError> {
        let led = self.leading(topic, index, current_leader_epoch)?;
        if let Some(storage) = &self.storage {
            return match storage.tail(&self.logs, &led.log_key, led.key, led.leader_epoch) {
                Some((log, shared)) => Ok(PartitionHandle {
                    log,
                    leader_epoch: led.leader_epoch,
                    shared: Some(shared),
                }),
                None => Err(self.not_open(&led.log_key)),
            };
        }
        let log = self
            .logs
            .partition(&led.log_key)?
            .ok_or(PartitionError::UnknownTopicOrPartition)?;
        log.become_leader(led.leader_epoch)?;
        Ok(PartitionHandle {
            log,
            leader_epoch: led.leader_epoch,
            shared: None,
        })
    }

    /// The partition, its tail opened first in shared-storage mode (async: the
    /// catalogue is read), its log opened on the blocking pool in embedded mode.
    pub(crate) async fn open(
        self: &Arc<Self>,
        topic: Arc<Topic>,
        index: i32,
        current_leader_epoch: i32,
    ) -> Result<PartitionHandle, PartitionError> {
        if let Some(storage) = &self.storage {
            let led = self.leading(topic, index, current_leader_epoch)?;
            let (log, shared) = self.open_tail(storage, &led).await?;
            return Ok(PartitionHandle {
                log,
                leader_epoch: led.leader_epoch,
                shared: Some(shared),
            });
        }
        let partitions = self.clone();
        on_blocking_pool(move || partitions.partition_of(topic, index, current_leader_epoch))
            .await?
    }

    /// Shared-storage mode: opens the tail of each partition this broker leads and
    /// has no tail for, one after the other (a tail already open costs a lookup), so
    /// that the blocking work after finds them. A failure is kept for that work to
    /// answer with. Embedded mode: nothing to do (`wanted` is not even iterated).
    pub(crate) async fn open_tails(&self, wanted: impl IntoIterator<Item = (Arc<Topic>, i32)>) {
        let Some(storage) = &self.storage else {
            return;
        };
        for (topic, index) in wanted {
            // Not led here, or no such partition: the blocking work says so itself.
            let Ok(led) = self.leading(topic, index, -1) else {
                continue;
            };
            if let Err(error) = self.open_tail(storage, &led).await {
                self.failed_opens
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .insert(led.log_key, Arc::new(error));
            }
        }
    }

    /// The partition's tail, opened if this broker has none; a success forgets the
    /// last failure.
    async fn open_tail(
        &self,
        storage: &Arc<SharedStorage>,
        led: &Led,
    ) -> Result<(Arc<PartitionLog>, SharedPartition), PartitionError> {
        if let Some(open) = storage.tail(&self.logs, &led.log_key, led.key, led.leader_epoch) {
            return Ok(open);
        }
        let opened = storage
            .open_tail(&self.logs, &led.log_key, led.key, led.leader_epoch)
            .await
            .inspect_err(|error| {
                tracing::debug!(partition = %led.log_key, %error, "cannot open a tail");
            })?;
        self.failed_opens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&led.log_key);
        Ok(opened)
    }

    /// Why the partition's tail is not open: the last failure to open it, or (none
    /// kept) that no one opened it, which the client retries as a change of leader.
    fn not_open(&self, log_key: &TopicPartition) -> PartitionError {
        let failed = self
            .failed_opens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(log_key)
            .cloned();
        match failed {
            Some(failure) => PartitionError::OpenFailed(failure),
            None => PartitionError::TailNotOpen,
        }
    }

    /// The partition of `topic` (its source's, for a view) that this broker leads,
    /// and the epoch it leads it under, checked against the client's
    /// `current_leader_epoch` (-1: none).
    fn leading(
        &self,
        topic: Arc<Topic>,
        index: i32,
        current_leader_epoch: i32,
    ) -> Result<Led, PartitionError> {
        if topic.view.is_some() {
            let source = self
                .source_of(&topic)
                .ok_or(PartitionError::UnknownTopicOrPartition)?;
            return self.leading(source, index, current_leader_epoch);
        }
        let log_key = topic
            .log_partition(index)
            .ok_or(PartitionError::UnknownTopicOrPartition)?;
        let leader_epoch = self
            .led_epoch(&topic, index)
            .ok_or(PartitionError::NotLeader)?;
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
        Ok(Led {
            log_key,
            key: topic.partition_key(index),
            leader_epoch,
        })
    }
}

/// A partition this broker leads: its log's key, its key in the catalogue, and the
/// epoch it leads it under.
struct Led {
    log_key: TopicPartition,
    key: PartitionKey,
    leader_epoch: i32,
}
