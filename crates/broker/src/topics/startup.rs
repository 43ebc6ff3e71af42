//! Bringing the topics up at start: the metadata store says which topics exist; the
//! data directory is made to agree with it (logs of a topic created just before a
//! crash are created, logs that no topic owns — a delete cut short — are removed),
//! and the broker takes ownership of every partition under a new leader epoch.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use spool_log::LogManager;
use spool_metadata::{MetadataStore, TopicRecord};
use spool_store::Store;
use uuid::Uuid;

use super::{Topic, TopicTable, resolve};
use crate::broker_error::BrokerError;
use crate::config::BrokerConfig;
use crate::partitions::{log_topic, topic_id_of_log};

/// The data directory's topics, by their log-manager names.
const TOPICS_DIR: &str = "topics";

/// Renames the partition directories of a data directory written before topics were
/// keyed by id (`topics/<name>/`) to `topics/<id>/`. Runs before the logs are opened;
/// each rename is atomic, so a crash leaves a topic under one name or the other.
pub(crate) fn move_name_keyed_logs(
    store: &dyn Store,
    records: &[TopicRecord],
) -> Result<(), BrokerError> {
    let root = PathBuf::from(TOPICS_DIR);
    let io = |source| BrokerError::DataDir {
        path: root.clone(),
        source,
    };
    if !store.exists(&root) {
        return Ok(());
    }
    let mut moved = 0;
    for record in records {
        let old = root.join(record.name.as_str());
        let new = root.join(log_topic(record.id).as_str());
        if store.exists(&old) && !store.exists(&new) {
            store.rename(&old, &new).map_err(io)?;
            moved += 1;
        }
    }
    if moved > 0 {
        store.sync_dir(Path::new(TOPICS_DIR)).map_err(io)?;
        tracing::info!(
            topics = moved,
            "moved topic data to directories named by topic id"
        );
    }
    Ok(())
}

/// Builds the topic table from the store's records: resolves their settings, removes
/// logs that no topic owns, creates missing ones, and (embedded mode) raises every
/// partition's leader epoch: this broker takes ownership. In shared-storage mode every
/// local log goes: the data directory is a cache, tails are opened from the catalogue,
/// and leadership is the cluster's (`crate::cluster`).
pub(crate) async fn load_topics(
    metadata: &dyn MetadataStore,
    records: Vec<TopicRecord>,
    logs: &LogManager,
    settings: &BrokerConfig,
) -> Result<TopicTable, BrokerError> {
    let shared_storage = settings.storage.url.is_some();
    if shared_storage {
        for partition in logs.partitions() {
            logs.delete_partition(&partition)?;
        }
    } else {
        remove_unowned_logs(logs, &records)?;
    }
    // One transaction for every partition: a start with thousands of topics must not
    // wait for thousands of commits.
    let mut epochs = if shared_storage {
        std::collections::HashMap::new()
    } else {
        metadata.bump_all_leader_epochs().await?
    };
    let table = TopicTable::default();
    let topic_defaults = settings.topic_defaults();
    for record in records {
        let mut topic = resolve_or_defaults(record, &topic_defaults)?;
        topic.leader_epochs = epochs.remove(&topic.record.id).unwrap_or_default();
        logs.set_topic_config(&log_topic(topic.record.id), topic.log.clone())?;
        for index in 0..topic.record.partitions {
            let Some(partition) = topic.log_partition(index) else {
                continue;
            };
            if !shared_storage && logs.partition(&partition)?.is_none() {
                tracing::warn!(topic = %topic.record.name, partition = index, "partition missing from the data directory; creating it");
                logs.create_partition(&partition)?;
            }
        }
        table.insert(topic);
    }
    Ok(table)
}

/// A stored topic with its settings; a topic whose stored configs no longer resolve
/// (a config this version refuses) runs on the broker's defaults, loudly.
fn resolve_or_defaults(
    record: TopicRecord,
    topic_defaults: &BTreeMap<String, String>,
) -> Result<Topic, BrokerError> {
    match resolve(record.clone(), topic_defaults) {
        Ok(topic) => Ok(topic),
        Err(error) => {
            tracing::error!(topic = %record.name, %error, "stored topic config is invalid; using the broker's defaults");
            let bare = TopicRecord {
                configs: BTreeMap::new(),
                ..record.clone()
            };
            // Kafka's own defaults always resolve (a unit test proves it).
            let defaults = resolve(bare.clone(), topic_defaults)
                .or_else(|_| resolve(bare, &BTreeMap::new()))
                .map_err(|error| BrokerError::TopicConfig(error.0))?;
            Ok(Topic { record, ..defaults })
        }
    }
}

/// Deletes the logs of topics that do not exist (a delete cut short by a crash, or a
/// failed directory removal) and of partitions past a topic's count.
fn remove_unowned_logs(logs: &LogManager, records: &[TopicRecord]) -> Result<(), BrokerError> {
    let owners: HashMap<Uuid, i32> = records
        .iter()
        .map(|record| (record.id, record.partitions))
        .collect();
    for partition in logs.partitions() {
        let owned = topic_id_of_log(&partition.topic)
            .and_then(|id| owners.get(&id))
            .is_some_and(|count| partition.partition.0 < *count);
        if !owned {
            tracing::warn!(%partition, "removing partition data that no topic owns");
            logs.delete_partition(&partition)?;
        }
    }
    Ok(())
}
