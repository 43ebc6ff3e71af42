//! The partition router: from a topic (by name or id) and an index to the partition
//! this broker serves, under the one leader epoch it leads it with. It owns the topic
//! table and the logs, and sees shared storage and the cluster; it knows nothing of
//! the coordinators or the wire, so the transaction coordinator's marker writer holds
//! it directly.

use std::sync::Arc;

use spool_log::LogManager;
use spool_metadata::PartitionKey;
use spool_shared_storage::SharedStorage;

use super::{PartitionError, PartitionHandle};
use crate::cluster::ClusterView;
use crate::topics::{Topic, TopicTable};

/// The topics, their partitions' logs, and who leads each partition.
#[derive(Debug)]
pub(crate) struct Partitions {
    node_id: i32,
    topics: TopicTable,
    logs: LogManager,
    /// Shared-storage mode's objects and uploader; `None` in embedded mode.
    storage: Option<Arc<SharedStorage>>,
    /// The cluster this broker is a member of (shared-storage mode); `None` in
    /// embedded mode, where it leads every partition.
    cluster: Option<Arc<ClusterView>>,
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
            logs,
            storage,
            cluster,
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

    /// [`Partitions::partition`] for a topic already looked up.
    pub(crate) fn partition_of(
        &self,
        topic: Arc<Topic>,
        index: i32,
        current_leader_epoch: i32,
    ) -> Result<PartitionHandle, PartitionError> {
        if topic.view.is_some() {
            let source = self
                .source_of(&topic)
                .ok_or(PartitionError::UnknownTopicOrPartition)?;
            return self.partition_of(source, index, current_leader_epoch);
        }
        let key = topic
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
        if let Some(storage) = &self.storage {
            let id = PartitionKey {
                topic_id: topic.record.id,
                partition: index,
            };
            let (log, shared) = storage.open_tail(&self.logs, &key, id, leader_epoch)?;
            return Ok(PartitionHandle {
                log,
                leader_epoch,
                shared: Some(shared),
            });
        }
        let log = self
            .logs
            .partition(&key)?
            .ok_or(PartitionError::UnknownTopicOrPartition)?;
        log.become_leader(leader_epoch)?;
        Ok(PartitionHandle {
            log,
            leader_epoch,
            shared: None,
        })
    }
}
