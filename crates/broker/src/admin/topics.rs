//! The REST API's brokers, topics, partitions and configs.

use std::collections::HashMap;
use std::sync::Arc;

use spool_admin::{
    ApiError, BrokerInfo, ClusterInfo, ConfigChanges, ConfigEntry, DelayedInfo, NewTopic,
    PartitionInfo, TopicDetail, TopicSummary,
};

use super::bounds::partition_bounds;
use super::kafka_error;
use crate::errors::code;
use crate::partitions::on_blocking_pool;
use crate::shared::Shared;
use crate::topics::{self, AdminError, Topic};

fn admin_error(error: AdminError) -> ApiError {
    kafka_error(error.code, error.message)
}

pub(super) fn cluster(shared: &Shared) -> ClusterInfo {
    let node_id = shared.started_config().node_id;
    let Some(view) = shared.cluster() else {
        let (host, port) = shared.advertised();
        let led = shared
            .topics()
            .all()
            .iter()
            .map(|topic| usize::try_from(topic.record.partitions).unwrap_or(0))
            .sum();
        return ClusterInfo {
            cluster_id: shared.cluster_id().to_owned(),
            node_id,
            mode: "embedded".to_owned(),
            // As Metadata says: the one broker is its own controller.
            controller: node_id,
            brokers: vec![BrokerInfo {
                node_id,
                host,
                port,
                rack: shared.started_config().reads.rack.clone(),
                reader: false,
                partitions_led: led,
            }],
        };
    };
    let mut led: HashMap<i32, usize> = HashMap::new();
    for topic in shared.topics().all() {
        for index in 0..topic.record.partitions {
            if let Some(leadership) = view.leader_of(topic.partition_key(index)) {
                *led.entry(leadership.leader).or_default() += 1;
            }
        }
    }
    let mut brokers: Vec<BrokerInfo> = view
        .live_brokers()
        .into_iter()
        .map(|broker| BrokerInfo {
            node_id: broker.node_id,
            partitions_led: led.get(&broker.node_id).copied().unwrap_or(0),
            host: broker.host,
            port: broker.port,
            rack: broker.rack,
            reader: broker.reader,
        })
        .collect();
    brokers.sort_by_key(|broker| broker.node_id);
    ClusterInfo {
        cluster_id: shared.cluster_id().to_owned(),
        node_id,
        mode: "shared".to_owned(),
        controller: view.controller(),
        brokers,
    }
}

/// Every topic, with the records of the partitions this broker has open (opening
/// the others would read their files: a topic page does that).
pub(super) async fn list(shared: &Arc<Shared>) -> Result<Vec<TopicSummary>, ApiError> {
    let shared = shared.clone();
    on_blocking_pool(move || {
        let opened: HashMap<_, _> = shared.logs().opened().into_iter().collect();
        shared
            .topics()
            .all()
            .iter()
            .map(|topic| {
                let records = (0..topic.record.partitions)
                    .filter(|index| shared.partitions().led_epoch(topic, *index).is_some())
                    .filter_map(|index| opened.get(&topic.log_partition(index)?))
                    .map(|log| {
                        let offsets = log.offsets();
                        (offsets.high_watermark.0 - offsets.log_start.0).max(0)
                    })
                    .sum();
                TopicSummary {
                    name: topic.record.name.as_str().to_owned(),
                    id: topic.record.id.to_string(),
                    partitions: topic.record.partitions,
                    records,
                }
            })
            .collect()
    })
    .await
    .map_err(|error| kafka_error(error.code(), error.to_string()))
}

pub(super) async fn describe(shared: &Arc<Shared>, name: &str) -> Result<TopicDetail, ApiError> {
    let topic = shared.topics().existing(name).map_err(admin_error)?;
    let mut partitions = {
        let (shared, topic) = (shared.clone(), topic.clone());
        on_blocking_pool(move || partitions(&shared, &topic))
            .await
            .map_err(|error| kafka_error(error.code(), error.to_string()))?
    };
    if topic.delay.is_some() {
        for info in &mut partitions {
            let pending = shared
                .metadata()
                .pending_holds(topic.partition_key(info.partition))
                .await
                .map_err(|error| kafka_error(code::KAFKA_STORAGE_ERROR, error.to_string()))?;
            info.delayed = Some(DelayedInfo {
                pending: pending.count,
                next_due_ms: pending.next_due_ms,
            });
        }
    }
    Ok(TopicDetail {
        name: topic.record.name.as_str().to_owned(),
        id: topic.record.id.to_string(),
        partitions,
        configs: configs(shared, &topic),
        table: crate::tables::table_info(shared, &topic).await,
        index: crate::index::info(shared, &topic).await,
    })
}

/// Each partition's leader and offsets (see [`partition_bounds`]). Blocking.
fn partitions(shared: &Shared, topic: &Arc<Topic>) -> Vec<PartitionInfo> {
    (0..topic.record.partitions)
        .map(|index| {
            let (leader, leader_epoch) = match shared.cluster() {
                None => (shared.started_config().node_id, topic.leader_epoch(index)),
                Some(view) => view
                    .leader_of(topic.partition_key(index))
                    .map_or((-1, -1), |l| (l.leader, l.leader_epoch)),
            };
            let mut info = PartitionInfo {
                partition: index,
                leader,
                leader_epoch,
                log_start: None,
                high_watermark: None,
                last_stable: None,
                delayed: None,
            };
            if let Some(bounds) = partition_bounds(shared, topic, index) {
                info.log_start = Some(bounds.log_start);
                info.high_watermark = Some(bounds.high_watermark);
                info.last_stable = bounds.last_stable;
            }
            info
        })
        .collect()
}

/// Every config of the topic with its value and where the value comes from.
fn configs(shared: &Shared, topic: &Topic) -> Vec<ConfigEntry> {
    let broker_defaults = shared.current_config().topic_defaults();
    topics::config_entries(topic)
        .into_iter()
        .map(|(name, value, explicit)| {
            let source = if explicit {
                "topic"
            } else if broker_defaults.contains_key(name) {
                "broker"
            } else {
                "default"
            };
            ConfigEntry {
                name: name.to_owned(),
                value,
                source: source.to_owned(),
            }
        })
        .collect()
}

pub(super) async fn create(
    shared: &Arc<Shared>,
    request: NewTopic,
) -> Result<TopicDetail, ApiError> {
    let name = request.name.clone();
    let new_topic = topics::NewTopic {
        name: request.name,
        partitions: request.partitions.unwrap_or(-1),
        replication_factor: -1,
        replica_assignment: Vec::new(),
        configs: request.configs,
    };
    topics::create(shared, new_topic, false)
        .await
        .map_err(admin_error)?;
    crate::cluster::wait_for_followers(shared).await;
    describe(shared, &name).await
}

pub(super) async fn delete(shared: &Arc<Shared>, name: &str) -> Result<(), ApiError> {
    topics::delete(shared, name).await.map_err(admin_error)?;
    crate::cluster::wait_for_followers(shared).await;
    Ok(())
}

/// Sets the given configs and returns those without a value to their defaults.
pub(super) async fn alter_configs(
    shared: &Arc<Shared>,
    name: &str,
    changes: ConfigChanges,
) -> Result<Vec<ConfigEntry>, ApiError> {
    topics::change_configs(shared, name, false, |current: &_| {
        let mut configs = current.clone();
        for (key, value) in changes.0 {
            match value {
                // The whole set is validated as the topic is resolved again.
                Some(value) => {
                    configs.insert(key, value);
                }
                None => {
                    configs.remove(&key);
                }
            }
        }
        Ok(configs)
    })
    .await
    .map_err(admin_error)?;
    crate::cluster::wait_for_followers(shared).await;
    let topic = shared.topics().existing(name).map_err(admin_error)?;
    Ok(configs(shared, &topic))
}
