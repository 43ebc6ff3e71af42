//! Mirror topics: one here for every source topic a link's regex matches (now and
//! later), with the source's partition count and the configs set on it (both
//! followed), marked `mirror.link=NAME` — read-only, its log at its own offsets — and
//! failover, which makes them writable.

use std::collections::BTreeMap;
use std::sync::Arc;

use regex::Regex;
use spool_metadata::{MirrorLinkRecord, PartitionKey, PartitionState};

use super::settle;
use super::source::Source;
use crate::errors::code;
use crate::partitions::PartitionHandle;
use crate::shared::Shared;
use crate::topics::{self, NewTopic, Topic};

/// The source topic configs a mirror topic follows: what decides which records it
/// keeps and how they read. (Compression is the source's batches' own; the copy never
/// recompresses.)
const FOLLOWED_CONFIGS: &[&str] = &[
    "cleanup.policy",
    "retention.ms",
    "retention.bytes",
    "max.message.bytes",
    "message.timestamp.type",
    "min.compaction.lag.ms",
    "max.compaction.lag.ms",
    "delete.retention.ms",
    "min.cleanable.dirty.ratio",
    "segment.bytes",
    "segment.ms",
];

/// A link's topic regex, matching whole names.
pub(crate) fn topic_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{pattern})$")).map_err(|error| format!("{pattern:?}: {error}"))
}

/// Makes and follows the mirror topics of `link`; reads the source's configs when
/// `with_configs` (and for topics to be made).
pub(super) async fn follow(
    shared: &Arc<Shared>,
    link: &MirrorLinkRecord,
    source: &mut Source,
    with_configs: bool,
) -> Result<(), String> {
    let regex = topic_regex(&link.topics)?;
    let found = source.metadata().await?;
    let matching: Vec<(String, i32)> = found
        .topics
        .iter()
        .filter(|(name, _)| regex.is_match(name) && !link.failed_over.contains(*name))
        .map(|(name, topic)| {
            (
                name.clone(),
                i32::try_from(topic.leaders.len()).unwrap_or(0),
            )
        })
        .collect();
    let asked: Vec<String> = matching
        .iter()
        .filter(|(name, _)| with_configs || shared.topics().get(name).is_none())
        .map(|(name, _)| name.clone())
        .collect();
    let configs = if asked.is_empty() {
        BTreeMap::new()
    } else {
        source.topic_configs(&asked).await?
    };
    let mut problems = Vec::new();
    for (name, partitions) in matching {
        if let Err(problem) =
            follow_topic(shared, link, &name, partitions, configs.get(&name)).await
        {
            problems.push(problem);
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The followed configs among `configs`.
fn followed(configs: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    configs
        .iter()
        .filter(|(name, _)| FOLLOWED_CONFIGS.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

async fn follow_topic(
    shared: &Arc<Shared>,
    link: &MirrorLinkRecord,
    name: &str,
    partitions: i32,
    source_configs: Option<&BTreeMap<String, String>>,
) -> Result<(), String> {
    let Some(topic) = shared.topics().get(name) else {
        let mut configs = source_configs.map(followed).unwrap_or_default();
        configs.insert("mirror.link".to_owned(), link.name.clone());
        let request = NewTopic {
            name: name.to_owned(),
            partitions,
            replication_factor: -1,
            replica_assignment: Vec::new(),
            configs,
        };
        return match topics::create_mirror(shared, request).await {
            Ok(_) => {
                tracing::info!(link = %link.name, topic = name, partitions, "created a mirror topic");
                Ok(())
            }
            // Another broker of the cluster made it first.
            Err(error) if error.code == code::TOPIC_ALREADY_EXISTS => Ok(()),
            Err(error) => Err(format!(
                "creating the mirror topic {name}: {}",
                error.message
            )),
        };
    };
    if topic.record.configs.get("mirror.link") != Some(&link.name) {
        return Err(format!(
            "{name} exists here and is not a mirror of link {}: delete it or leave it out of the link's topics",
            link.name
        ));
    }
    if topic.mirror.is_none() {
        // Failed over: no longer followed.
        return Ok(());
    }
    if partitions > topic.record.partitions {
        topics::add_partitions_any(shared, name, partitions, None, false)
            .await
            .map_err(|error| format!("adding partitions to {name}: {}", error.message))?;
        tracing::info!(link = %link.name, topic = name, partitions, "the mirror topic grew with its source");
    }
    if let Some(source_configs) = source_configs {
        let wanted = followed(source_configs);
        if wanted != followed(&topic.record.configs) {
            topics::change_mirror_configs(shared, name, |configs| {
                let mut next = configs.clone();
                next.retain(|name, _| !FOLLOWED_CONFIGS.contains(&name.as_str()));
                next.extend(wanted);
                Ok(next)
            })
            .await
            .map_err(|error| format!("following the configs of {name}: {}", error.message))?;
        }
    }
    Ok(())
}

/// The partitions of `link`'s mirror topics (still copied) that this broker leads.
pub(super) fn led_here(shared: &Shared, link: &str) -> Vec<(Arc<Topic>, i32)> {
    shared
        .topics()
        .all()
        .into_iter()
        .filter(|topic| topic.mirror.as_deref() == Some(link))
        .flat_map(|topic| {
            (0..topic.record.partitions)
                .filter(|index| shared.partitions().led_epoch(&topic, *index).is_some())
                .map(|index| (topic.clone(), index))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Fails over `link`'s mirror topics that `only` matches (all when `None`): they are
/// no longer copied and take writes from here on, at the mirrored log end, once each
/// partition's leader has settled it ([`settle`]: the source's open transactions
/// aborted, its producer ids kept from this cluster's producers). The floor set here
/// (`mirror.producer.id.floor`) is what the brokers know now; each leader raises it
/// past what its partition holds. Those led here are settled before the answer: each
/// topic failed over with its partitions' log ends.
pub(crate) async fn failover(
    shared: &Arc<Shared>,
    link_name: &str,
    only: Option<&str>,
) -> Result<Vec<(String, Vec<i64>)>, FailoverError> {
    let store = |error: &dyn std::fmt::Display| FailoverError::Store(error.to_string());
    let mut link = shared
        .metadata()
        .mirror_links()
        .await
        .map_err(|e| store(&e))?
        .into_iter()
        .find(|link| link.name == link_name)
        .ok_or_else(|| FailoverError::NoLink(link_name.to_owned()))?;
    let only = only
        .map(topic_regex)
        .transpose()
        .map_err(FailoverError::Invalid)?;
    let chosen: Vec<Arc<Topic>> = shared
        .topics()
        .all()
        .into_iter()
        .filter(|topic| topic.mirror.as_deref() == Some(link_name))
        .filter(|topic| {
            only.as_ref()
                .is_none_or(|only| only.is_match(topic.record.name.as_str()))
        })
        .collect();
    // First the link, so that no broker makes or copies them again.
    for topic in &chosen {
        let name = topic.record.name.to_string();
        if !link.failed_over.contains(&name) {
            link.failed_over.push(name);
        }
    }
    shared
        .metadata()
        .put_mirror_link(&link)
        .await
        .map_err(|e| store(&e))?;
    let mut done = Vec::new();
    for topic in chosen {
        let name = topic.record.name.to_string();
        let mut floor = 0;
        for index in 0..topic.record.partitions {
            if let Some(max) = max_producer_id(shared, &topic, index).await {
                floor = floor.max(max + 1);
            }
        }
        shared
            .producer_ids()
            .raise_floor(floor, true)
            .await
            .map_err(|e| store(&e))?;
        topics::change_mirror_configs(shared, &name, |configs| {
            let mut next = configs.clone();
            next.insert("mirror.failed.over".to_owned(), "true".to_owned());
            next.insert("mirror.producer.id.floor".to_owned(), floor.to_string());
            Ok(next)
        })
        .await
        .map_err(|error| FailoverError::Store(error.message))?;
        let Some(topic) = shared.topics().get(&name) else {
            continue;
        };
        let mut ends = Vec::new();
        for index in 0..topic.record.partitions {
            let settled = match shared.partitions().led_epoch(&topic, index) {
                Some(epoch) => settle::settle(shared, &topic, index, epoch)
                    .await
                    .inspect_err(|error| {
                        tracing::warn!(topic = %name, partition = index, %error,
                            "settling a failed-over partition failed; retried within a second");
                    })
                    .ok(),
                None => None,
            };
            ends.push(match settled {
                Some(end) => end,
                None => log_end(shared, &topic, index).await,
            });
        }
        tracing::info!(link = link_name, topic = %name, floor, "failed over a mirror topic");
        done.push((name, ends));
    }
    Ok(done)
}

/// Why a failover was refused.
#[derive(Debug)]
pub(crate) enum FailoverError {
    NoLink(String),
    Invalid(String),
    Store(String),
}

/// The failed-over topic's producer-id floor, if `topic` is one.
pub(super) fn floor_of(topic: &Topic) -> Option<i64> {
    topic.failed_over_floor
}

/// The highest producer id a mirror partition knows: from its log where this broker
/// leads it, else (shared-storage mode) from the catalogue's producer state.
async fn max_producer_id(shared: &Arc<Shared>, topic: &Arc<Topic>, index: i32) -> Option<i64> {
    if let Some(handle) = led_here_handle(shared, topic, index).await {
        return handle.log.max_producer_id();
    }
    let state = catalogue_state(shared, topic, index).await?;
    spool_log::max_producer_id_in(state.producer_state.as_deref()?)
}

/// A partition's log end: the log's where this broker leads it, else the
/// catalogue's high watermark (-1 when neither is known).
async fn log_end(shared: &Arc<Shared>, topic: &Arc<Topic>, index: i32) -> i64 {
    if let Some(handle) = led_here_handle(shared, topic, index).await {
        return handle.log.offsets().log_end.0;
    }
    catalogue_state(shared, topic, index)
        .await
        .map_or(-1, |state| state.high_watermark)
}

/// The partition, if this broker leads it.
pub(super) async fn led_here_handle(
    shared: &Arc<Shared>,
    topic: &Arc<Topic>,
    index: i32,
) -> Option<PartitionHandle> {
    shared.partitions().led_epoch(topic, index)?;
    shared
        .partitions()
        .open(topic.clone(), index, -1)
        .await
        .ok()
}

/// The partition's row in the catalogue (shared-storage mode; any broker reads it).
pub(super) async fn catalogue_state(
    shared: &Shared,
    topic: &Topic,
    index: i32,
) -> Option<PartitionState> {
    let key = PartitionKey {
        topic_id: topic.record.id,
        partition: index,
    };
    shared.metadata().partition_state(key).await.ok()?
}
