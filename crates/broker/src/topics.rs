//! The topics this broker serves: their records from the metadata store, and the log
//! settings derived from their configs.

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_log::LogError;
use spool_metadata::{ConfigChange, MetadataError, TopicRecord};
use spool_model::TopicName;
use uuid::Uuid;

use crate::errors::code;
use crate::partitions::{PartitionError, log_topic, on_blocking_pool};
use crate::shared::Shared;
use spool_views::View;

pub(crate) mod follow;
mod replicas;
mod settings;
mod startup;
mod table;

pub(crate) use self::follow::{catch_up_now, follow_metadata_store};
use self::replicas::{Holders, replication_factor};
pub(crate) use self::settings::{
    DelayPolicy, Recompression, check_config, config_entries, default_config_values, resolve,
};
pub(crate) use self::startup::{load_topics, move_name_keyed_logs};
pub(crate) use self::table::{AdminError, Topic, TopicTable, is_illegal_name};

/// What a topic creation asks for.
#[derive(Debug, Clone)]
pub(crate) struct NewTopic {
    pub(crate) name: String,
    /// -1 for `num.partitions`.
    pub(crate) partitions: i32,
    /// -1 for the default (1); above 1 only in a cluster, up to its live writers.
    pub(crate) replication_factor: i16,
    /// The brokers a client named for each partition (checked by the caller:
    /// [`check_assignment`]); empty when Spool places them.
    pub(crate) replica_assignment: Vec<Vec<i32>>,
    pub(crate) configs: BTreeMap<String, String>,
}

/// The topic configs only the mirror sets (a client setting them is refused).
const MIRROR_CONFIGS: [&str; 3] = [
    "mirror.link",
    "mirror.failed.over",
    "mirror.producer.id.floor",
];

/// Refuses a client's change of the mirror's configs from `before` to `after`.
fn refuse_mirror_configs(
    before: &BTreeMap<String, String>,
    after: &BTreeMap<String, String>,
) -> Result<(), AdminError> {
    if MIRROR_CONFIGS
        .iter()
        .any(|name| before.get(*name) != after.get(*name))
    {
        return Err(AdminError::new(
            code::INVALID_CONFIG,
            "mirror.link and mirror.failed.over are set by the mirror: spool mirror create, spool mirror failover",
        ));
    }
    Ok(())
}

/// Validates and (unless `validate_only`) creates a topic: the metadata store first,
/// then the partitions' logs. A crash between the two is repaired at the next start.
pub(crate) async fn create(
    shared: &Arc<Shared>,
    request: NewTopic,
    validate_only: bool,
) -> Result<Arc<Topic>, AdminError> {
    refuse_mirror_configs(&BTreeMap::new(), &request.configs)?;
    create_any(shared, request, validate_only).await
}

/// Creates a mirror topic (`mirror.link` among its configs).
pub(crate) async fn create_mirror(
    shared: &Arc<Shared>,
    request: NewTopic,
) -> Result<Arc<Topic>, AdminError> {
    create_any(shared, request, false).await
}

/// The brokers that may hold a replica: a cluster's live writers, or this broker.
fn holders(shared: &Shared) -> Holders {
    match shared.cluster() {
        Some(view) => Holders {
            nodes: view
                .live_brokers()
                .iter()
                .filter(|broker| !broker.reader)
                .map(|broker| broker.node_id)
                .collect(),
            clustered: true,
        },
        None => Holders {
            nodes: vec![shared.started_config().node_id],
            clustered: false,
        },
    }
}

/// Checks a client's replica assignment for new partitions (see
/// [`replicas::check_assignment`]) against the brokers that may hold replicas.
pub(crate) fn check_assignment(
    shared: &Shared,
    assignment: &[Vec<i32>],
    factor: Option<i16>,
) -> Result<(), AdminError> {
    replicas::check_assignment(&holders(shared), assignment, factor)
}

async fn create_any(
    shared: &Arc<Shared>,
    request: NewTopic,
    validate_only: bool,
) -> Result<Arc<Topic>, AdminError> {
    let name = TopicName::new(request.name.clone())
        .map_err(|e| AdminError::new(code::INVALID_TOPIC_EXCEPTION, e.to_string()))?;
    if name.as_str() == crate::consumer_offsets::NAME {
        return Err(AdminError::new(
            code::TOPIC_ALREADY_EXISTS,
            "__consumer_offsets is the committed offsets of every group, read-only",
        ));
    }
    // Under the admin lock, so that a change of the broker's defaults cannot miss
    // a topic being created.
    let _admin = shared.changes().lock().await;
    let settings = shared.current_config();
    if shared.topics().get(name.as_str()).is_some() {
        return Err(AdminError::new(
            code::TOPIC_ALREADY_EXISTS,
            format!("topic {name} already exists"),
        ));
    }
    let partitions = match request.partitions {
        -1 => settings.default_partitions,
        n if n > 0 => n,
        n => {
            return Err(AdminError::new(
                code::INVALID_PARTITIONS,
                format!("{n} partitions: use at least 1"),
            ));
        }
    };
    let replication_factor = match request.replica_assignment.first() {
        Some(replicas) => i16::try_from(replicas.len()).unwrap_or(i16::MAX),
        None => replication_factor(&holders(shared), request.replication_factor)?,
    };
    let record = TopicRecord {
        name: name.clone(),
        id: Uuid::new_v4(),
        partitions,
        replication_factor,
        replica_assignment: request.replica_assignment,
        configs: request.configs,
    };
    let mut topic = resolve(record, &settings.topic_defaults())
        .map_err(|e| AdminError::new(code::INVALID_CONFIG, e.0))?;
    if let Some(view) = &topic.view {
        topic.record.partitions = view_partitions(shared, view, request.partitions)?;
    }
    let partitions = topic.record.partitions;
    if validate_only {
        return Ok(Arc::new(topic));
    }
    match shared.metadata().create_topic(&topic.record).await {
        Ok(()) => {}
        Err(MetadataError::TopicExists(_)) => {
            return Err(AdminError::new(
                code::TOPIC_ALREADY_EXISTS,
                format!("topic {name} already exists"),
            ));
        }
        Err(error) => return Err(metadata_failure(&error)),
    }
    let created = {
        let shared = shared.clone();
        let topic = topic.clone();
        on_log_thread(move || create_logs(&shared, &topic, 0)).await
    };
    created?;
    tracing::info!(topic = %name, partitions, "created topic");
    shared.topics().insert(topic.clone());
    if let Some(cluster) = shared.cluster()
        && topic.view.is_none()
    {
        crate::cluster::assign_new(shared, cluster, &new_partitions(&topic, 0)).await;
    }
    shared
        .topics()
        .get(name.as_str())
        .ok_or_else(|| AdminError::new(code::UNKNOWN_SERVER_ERROR, "topic vanished"))
}

/// A new view's partition count: its source's (asking for another is refused). The
/// source must exist and not be a view itself.
fn view_partitions(shared: &Shared, view: &View, asked: i32) -> Result<i32, AdminError> {
    let source = shared.topics().get(&view.source).ok_or_else(|| {
        AdminError::new(
            code::INVALID_CONFIG,
            format!("view.source.topic={}: no such topic", view.source),
        )
    })?;
    if source.view.is_some() {
        return Err(AdminError::new(
            code::INVALID_CONFIG,
            format!(
                "view.source.topic={}: that is a view; give its source",
                view.source
            ),
        ));
    }
    let partitions = source.record.partitions;
    if asked != -1 && asked != partitions {
        return Err(AdminError::new(
            code::INVALID_PARTITIONS,
            format!(
                "a view has its source's partitions: {} has {partitions}, not {asked} (or give -1)",
                view.source
            ),
        ));
    }
    Ok(partitions)
}

/// The topic named `name`, creating it with defaults when auto-creation is enabled
/// and `allowed` by the request. `None` when it does not exist and was not created.
pub(crate) async fn get_or_auto_create(
    shared: &Arc<Shared>,
    name: &str,
    allowed: bool,
) -> Option<Arc<Topic>> {
    if let Some(topic) = shared.topics().get(name) {
        return Some(topic);
    }
    if !(allowed && shared.current_config().auto_create_topics) {
        return None;
    }
    let request = NewTopic {
        name: name.to_owned(),
        partitions: -1,
        replication_factor: -1,
        replica_assignment: Vec::new(),
        configs: BTreeMap::new(),
    };
    match create(shared, request, false).await {
        Ok(topic) => {
            crate::cluster::wait_for_followers(shared).await;
            Some(topic)
        }
        // Another request created it first, perhaps through another broker.
        Err(error) if error.code == code::TOPIC_ALREADY_EXISTS => {
            if shared.topics().get(name).is_none() {
                catch_up_now(shared).await;
            }
            shared.topics().get(name)
        }
        Err(error) => {
            tracing::warn!(topic = name, message = %error.message, "auto-creation failed");
            None
        }
    }
}

/// Deletes a topic: from the metadata store first (it is gone for clients from then
/// on, with every committed offset of it), then its partitions' logs. A crash between
/// the two leaves logs that no topic owns: they are removed at the next start.
///
/// Deleting a topic deletes its views first (so that no view outlives its source,
/// even across a crash between the two).
pub(crate) async fn delete(shared: &Arc<Shared>, name: &str) -> Result<Arc<Topic>, AdminError> {
    let _admin = shared.changes().lock().await;
    let topic = shared.topics().existing(name)?;
    let views = shared
        .topics()
        .matching(|other| other.view.as_ref().is_some_and(|view| view.source == name));
    for view in views.iter().chain([&topic]) {
        match shared.metadata().delete_topic(view.record.id).await {
            Ok(()) | Err(MetadataError::UnknownTopic(_)) => {}
            Err(error) => return Err(metadata_failure(&error)),
        }
        forget(shared, view).await;
        tracing::info!(topic = %view.record.name, id = %view.record.id, "deleted topic");
    }
    Ok(topic)
}

/// Drops a deleted topic from this broker: the table, its logs, the groups' cached
/// offsets of it.
pub(crate) async fn forget(shared: &Arc<Shared>, topic: &Arc<Topic>) {
    if shared
        .topics()
        .get(topic.record.name.as_str())
        .is_some_and(|current| current.record.id == topic.record.id)
    {
        shared.topics().remove(topic.record.name.as_str());
    }
    if let Some(metrics) = shared.metrics() {
        metrics.forget_topic(topic.record.id, topic.record.name.as_str());
    }
    shared.views().forget(topic.record.id);
    let deleting = {
        let (shared, topic) = (shared.clone(), topic.clone());
        on_blocking_pool(move || {
            for index in 0..topic.record.partitions {
                let Some(partition) = topic.log_partition(index) else {
                    continue;
                };
                match shared.logs().delete_partition(&partition) {
                    Ok(()) | Err(spool_log::LogError::UnknownPartition(_)) => {}
                    Err(error) => {
                        tracing::warn!(%partition, %error, "deleting partition data failed; it goes at the next start");
                    }
                }
            }
        })
        .await
    };
    if let Err(error) = deleting {
        tracing::warn!(topic = %topic.record.name, %error, "deleting topic data failed; it goes at the next start");
    }
    shared
        .groups()
        .forget_topic(topic.record.name.as_str())
        .await;
}

/// Creates the logs of a topic's partitions from `from` on, those that do not exist.
pub(crate) fn create_logs(shared: &Shared, topic: &Topic, from: i32) -> Result<(), LogError> {
    shared
        .logs()
        .set_topic_config(&log_topic(topic.record.id), topic.log.clone())?;
    if shared.storage().is_some() {
        // Shared-storage mode: a partition's tail is opened on first use.
        return Ok(());
    }
    for index in from..topic.record.partitions {
        if let Some(partition) = topic.log_partition(index)
            && shared.logs().partition(&partition)?.is_none()
        {
            shared.logs().create_partition(&partition)?;
        }
    }
    Ok(())
}

/// The keys of a topic's partitions from index `from` on.
/// The topic's partitions from `from`, each with its preferred leader (the first
/// broker its assignment names, if a client named any).
fn new_partitions(topic: &Topic, from: i32) -> Vec<(spool_metadata::PartitionKey, Option<i32>)> {
    (from..topic.record.partitions)
        .map(|partition| {
            let key = spool_metadata::PartitionKey {
                topic_id: topic.record.id,
                partition,
            };
            let preferred = usize::try_from(partition)
                .ok()
                .and_then(|index| topic.record.replica_assignment.get(index))
                .and_then(|replicas| replicas.first().copied());
            (key, preferred)
        })
        .collect()
}

/// The error a client gets when the metadata store failed.
pub(crate) fn metadata_failure(error: &MetadataError) -> AdminError {
    let code = if error.is_retriable() {
        code::REQUEST_TIMED_OUT
    } else {
        code::UNKNOWN_SERVER_ERROR
    };
    AdminError::new(code, error.to_string())
}

/// Raises a topic's partition count to `count`, creating the new partitions.
pub(crate) async fn add_partitions(
    shared: &Arc<Shared>,
    name: &str,
    count: i32,
    assignment: Option<&[Vec<i32>]>,
    validate_only: bool,
) -> Result<(), AdminError> {
    if let Some(link) = shared.topics().get(name).and_then(|t| t.mirror.clone()) {
        return Err(AdminError::new(
            code::INVALID_PARTITIONS,
            format!("{name} is a mirror (link {link}): it follows its source's partitions"),
        ));
    }
    add_partitions_any(shared, name, count, assignment, validate_only).await
}

/// As [`add_partitions`], for the mirror too (it follows the source's count).
/// `assignment`: the brokers a client named for each new partition.
pub(crate) async fn add_partitions_any(
    shared: &Arc<Shared>,
    name: &str,
    count: i32,
    assignment: Option<&[Vec<i32>]>,
    validate_only: bool,
) -> Result<(), AdminError> {
    let _admin = shared.changes().lock().await;
    let topic = shared.topics().existing(name)?;
    let current = topic.record.partitions;
    if let Some(view) = &topic.view {
        return Err(AdminError::new(
            code::INVALID_PARTITIONS,
            format!(
                "{name} is a view: it has its source's partitions (add them to {})",
                view.source
            ),
        ));
    }
    if count <= current {
        return Err(AdminError::new(
            code::INVALID_PARTITIONS,
            format!(
                "topic {name} has {current} partitions; the new count must be larger, not {count}"
            ),
        ));
    }
    if let Some(assignment) = assignment {
        let added = usize::try_from(count - current).unwrap_or(0);
        if assignment.len() != added {
            return Err(AdminError::new(
                code::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "{added} partitions are added but {} assignments were given",
                    assignment.len()
                ),
            ));
        }
        check_assignment(shared, assignment, Some(topic.record.replication_factor))?;
    }
    if validate_only {
        return Ok(());
    }
    match shared
        .metadata()
        .add_partitions(topic.record.id, count)
        .await
    {
        Ok(()) => {}
        // Another broker sharing the store grew it first.
        Err(MetadataError::Conflict(message)) => {
            return Err(AdminError::new(code::INVALID_PARTITIONS, message));
        }
        Err(error) => return Err(metadata_failure(&error)),
    }
    let mut grown = (*topic).clone();
    grown.record.partitions = count;
    if let Some(assignment) = assignment {
        let mut all = grown.record.replica_assignment.clone();
        all.resize(usize::try_from(current).unwrap_or(0), Vec::new());
        all.extend(assignment.iter().cloned());
        shared
            .metadata()
            .set_replica_assignment(topic.record.id, &all)
            .await
            .map_err(|error| metadata_failure(&error))?;
        grown.record.replica_assignment = all;
    }
    let created = {
        let (shared, grown) = (shared.clone(), grown.clone());
        on_log_thread(move || create_logs(&shared, &grown, current)).await
    };
    created?;
    let added = new_partitions(&grown, current);
    shared.topics().insert(grown);
    if let Some(view) = shared.cluster() {
        crate::cluster::assign_new(shared, view, &added).await;
    }
    // Its views follow: they have its partitions.
    for view in shared
        .topics()
        .matching(|other| other.view.as_ref().is_some_and(|view| view.source == name))
    {
        match shared
            .metadata()
            .add_partitions(view.record.id, count)
            .await
        {
            Ok(()) | Err(MetadataError::Conflict(_)) => {}
            Err(error) => return Err(metadata_failure(&error)),
        }
        let mut grown = (*view).clone();
        grown.record.partitions = count;
        shared.topics().insert(grown);
    }
    tracing::info!(topic = name, from = current, to = count, "added partitions");
    Ok(())
}

/// Runs blocking storage work (file creation, fsync) off the async threads, mapping
/// its failure to the error a client gets.
async fn on_log_thread(
    work: impl FnOnce() -> Result<(), LogError> + Send + 'static,
) -> Result<(), AdminError> {
    on_blocking_pool(work)
        .await
        .and_then(|done| done.map_err(PartitionError::Storage))
        .map_err(|error| AdminError::new(error.code(), error.to_string()))
}

/// Replaces a topic's explicit configs with what `change` makes of them, after
/// validating the result; applies them to its partitions' logs at once.
pub(crate) async fn change_configs(
    shared: &Arc<Shared>,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AdminError>,
) -> Result<(), AdminError> {
    change_any_configs(shared, name, validate_only, |configs| {
        let changed = change(configs)?;
        refuse_mirror_configs(configs, &changed)?;
        Ok(changed)
    })
    .await
}

/// As [`change_configs`], for the mirror: it may set its own configs.
pub(crate) async fn change_mirror_configs(
    shared: &Arc<Shared>,
    name: &str,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AdminError>,
) -> Result<(), AdminError> {
    change_any_configs(shared, name, false, change).await
}

async fn change_any_configs(
    shared: &Arc<Shared>,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&BTreeMap<String, String>) -> Result<BTreeMap<String, String>, AdminError>,
) -> Result<(), AdminError> {
    let _admin = shared.changes().lock().await;
    let topic = shared.topics().existing(name)?;
    let mut record = topic.record.clone();
    record.configs = change(&topic.record.configs)?;
    let updated = topic
        .resolved_again(record, &shared.current_config().topic_defaults())
        .map_err(|e| AdminError::new(code::INVALID_CONFIG, e.0))?;
    let source = |topic: &Topic| topic.view.as_ref().map(|view| view.source.clone());
    if source(&topic) != source(&updated) {
        return Err(AdminError::new(
            code::INVALID_CONFIG,
            "view.source.topic is set at creation only: a topic cannot become a view, stop being one or change its source",
        ));
    }
    if validate_only {
        return Ok(());
    }
    let changes = ConfigChange::between(&topic.record.configs, &updated.record.configs);
    shared
        .metadata()
        .alter_topic_configs(topic.record.id, &changes)
        .await
        .map_err(|error| metadata_failure(&error))?;
    shared
        .logs()
        .set_topic_config(&log_topic(updated.record.id), updated.log.clone())
        .map_err(|error| AdminError::new(code::KAFKA_STORAGE_ERROR, error.to_string()))?;
    tracing::info!(topic = name, configs = ?updated.record.configs, "changed topic configs");
    shared.topics().insert(updated);
    Ok(())
}
