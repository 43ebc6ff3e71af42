//! The topic table: every topic this broker serves with its settings resolved, by
//! name and by id, and the error an admin operation on topics answers with.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use spool_log::LogConfig;
use spool_metadata::TopicRecord;
use spool_model::TopicName;
use uuid::Uuid;

use super::settings::{DelayPolicy, InvalidConfig, Recompression, TimestampBounds, resolve};
use crate::errors::code;

/// A topic with its settings resolved.
#[derive(Debug, Clone)]
pub(crate) struct Topic {
    pub(crate) record: TopicRecord,
    pub(crate) log: LogConfig,
    pub(crate) max_message_bytes: usize,
    /// `compression.type` and the codec levels: `None` keeps the producer's codec.
    pub(crate) recompression: Option<Recompression>,
    /// `message.timestamp.before.max.ms` / `after.max.ms` for CreateTime topics.
    pub(crate) timestamps: TimestampBounds,
    /// `delivery.delay.enable`: records due later are held; `None` when off.
    pub(crate) delay: Option<DelayPolicy>,
    /// `confluent.value.schema.validation` / `confluent.key.schema.validation`:
    /// records must carry a schema id registered under the topic's subject.
    pub(crate) schema_validation: crate::schema_registry::SchemaValidation,
    /// `table.enable` and the table's settings: `None` when the topic is no table.
    pub(crate) table: Option<super::settings::TableSettings>,
    /// `index.fields`: what the topic's index holds; `None` when it has none.
    pub(crate) index: Option<std::sync::Arc<spool_index::IndexFields>>,
    /// `view.source.topic`: a read-only view of another topic; `None` for a topic
    /// with records of its own.
    pub(crate) view: Option<spool_views::View>,
    /// `mirror.link`, until `mirror.failed.over`: the mirror link whose source this
    /// topic copies (read-only here); `None` for a topic that takes writes.
    pub(crate) mirror: Option<String>,
    /// For a failed-over mirror topic, `mirror.producer.id.floor`: the producer ids
    /// below it were the source's. `None` for any other topic.
    pub(crate) failed_over_floor: Option<i64>,
    /// Every config of the topic with its value: explicit, the broker's default, or
    /// Kafka's.
    pub(crate) configs: BTreeMap<&'static str, String>,
    /// Each partition's leader epoch, by index, as this broker took ownership (a
    /// partition past the end is at epoch 0).
    pub(crate) leader_epochs: Vec<i32>,
}

impl Topic {
    /// Whether clients may write to it: it is no view, and no mirror being copied.
    pub(crate) fn takes_writes(&self) -> bool {
        self.view.is_none() && self.mirror.is_none()
    }

    /// Whether the topic has a partition `index`.
    pub(crate) fn has_partition(&self, index: i32) -> bool {
        (0..self.record.partitions).contains(&index)
    }

    /// The topic with its settings resolved again (after a change of its configs or
    /// of the broker's defaults), keeping its leader epochs.
    pub(crate) fn resolved_again(
        &self,
        record: TopicRecord,
        defaults: &BTreeMap<String, String>,
    ) -> Result<Topic, InvalidConfig> {
        let mut topic = resolve(record, defaults)?;
        topic.leader_epochs.clone_from(&self.leader_epochs);
        Ok(topic)
    }
}

/// Whether `name` is one Kafka refuses as a topic name (`INVALID_TOPIC_EXCEPTION`).
pub(crate) fn is_illegal_name(name: &str) -> bool {
    TopicName::new(name).is_err()
}

/// All topics, by name and by id, shared by the handlers. Both are lookups: Fetch
/// v13+, Metadata by id and following the store find topics by id.
#[derive(Debug, Default)]
pub(crate) struct TopicTable {
    tables: RwLock<Tables>,
    /// Bumped by every change (a topic created, replaced or deleted): consumer
    /// groups match their regular expressions again only then.
    version: std::sync::atomic::AtomicU64,
}

#[derive(Debug, Default)]
struct Tables {
    by_name: BTreeMap<String, Arc<Topic>>,
    by_id: std::collections::HashMap<Uuid, Arc<Topic>>,
}

impl TopicTable {
    pub(crate) fn get(&self, name: &str) -> Option<Arc<Topic>> {
        self.read().by_name.get(name).cloned()
    }

    /// The topic named `name`, or the error a client gets for a missing one.
    pub(crate) fn existing(&self, name: &str) -> Result<Arc<Topic>, AdminError> {
        self.get(name).ok_or_else(|| {
            AdminError::new(
                code::UNKNOWN_TOPIC_OR_PARTITION,
                format!("topic {name} does not exist"),
            )
        })
    }

    pub(crate) fn by_id(&self, id: Uuid) -> Option<Arc<Topic>> {
        self.read().by_id.get(&id).cloned()
    }

    pub(crate) fn all(&self) -> Vec<Arc<Topic>> {
        self.read().by_name.values().cloned().collect()
    }

    /// The topics `keep` says yes to (only those are cloned).
    pub(crate) fn matching(&self, keep: impl Fn(&Topic) -> bool) -> Vec<Arc<Topic>> {
        self.read()
            .by_name
            .values()
            .filter(|topic| keep(topic))
            .cloned()
            .collect()
    }

    pub(crate) fn insert(&self, topic: Topic) {
        let name = topic.record.name.as_str().to_owned();
        let topic = Arc::new(topic);
        let mut tables = self.write();
        self.version
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tables.by_id.insert(topic.record.id, topic.clone());
        if let Some(replaced) = tables.by_name.insert(name, topic.clone())
            && replaced.record.id != topic.record.id
        {
            tables.by_id.remove(&replaced.record.id);
        }
    }

    pub(crate) fn remove(&self, name: &str) -> Option<Arc<Topic>> {
        let mut tables = self.write();
        let removed = tables.by_name.remove(name)?;
        self.version
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tables.by_id.remove(&removed.record.id);
        Some(removed)
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tables> {
        self.tables
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tables> {
        self.tables
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The topics as consumer groups of the consumer protocol see them.
impl spool_coordinator::consumer::Topics for TopicTable {
    fn by_name(&self, name: &str) -> Option<spool_coordinator::consumer::TopicInfo> {
        let topic = self.get(name)?;
        Some(spool_coordinator::consumer::TopicInfo {
            id: topic.record.id,
            partitions: topic.record.partitions,
        })
    }

    fn names(&self) -> Vec<String> {
        self.read().by_name.keys().cloned().collect()
    }

    fn name_of(&self, id: uuid::Uuid) -> Option<String> {
        Some(self.by_id(id)?.record.name.as_str().to_owned())
    }

    fn version(&self) -> u64 {
        self.version.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// An admin operation (on topics or configs) that failed: the Kafka error code and a
/// message for the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AdminError {
    pub(crate) code: i16,
    pub(crate) message: String,
}

impl AdminError {
    pub(crate) fn new(code: i16, message: impl Into<String>) -> AdminError {
        AdminError {
            code,
            message: message.into(),
        }
    }
}
