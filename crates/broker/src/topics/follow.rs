//! Following the metadata store: topics created, deleted, grown or altered, broker
//! configs, ACLs and quotas changed, through another broker sharing the store reach this broker within
//! a poll interval. The store's topics version is read every poll interval; when it
//! moved, the topics and broker configs are read again and the table (and the logs)
//! made to agree, under the admin lock so that this broker's own changes are never
//! half-seen. Polling a version works the same on SQLite and PostgreSQL, and costs one
//! indexed read per interval. In a cluster, the broker then notes in the store the
//! version it followed: the broker that made a change answers once all have.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::{Topic, create_logs, forget, resolve};
use crate::partitions::on_blocking_pool;
use crate::shared::Shared;

/// How often the store's topics version is read: in a cluster, where the broker that
/// changed something waits for the others to follow, and otherwise (brokers sharing
/// only a metadata store, or none).
pub(crate) const CLUSTER_POLL_INTERVAL: Duration = Duration::from_millis(50);
const POLL_INTERVAL: Duration = Duration::from_millis(250);

/// Follows the store from `seen` (the version the table was loaded at) until `stop`.
pub(crate) async fn follow_metadata_store(
    shared: Arc<Shared>,
    mut seen: i64,
    mut stop: watch::Receiver<bool>,
) {
    let every = if shared.cluster().is_some() {
        CLUSTER_POLL_INTERVAL
    } else {
        POLL_INTERVAL
    };
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    // The version last noted in the store as followed (a failed note is tried again).
    let mut noted = None;
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            _ = ticks.tick() => {}
        }
        if noted != Some(seen) && note_followed(&shared, seen).await {
            noted = Some(seen);
        }
        let version = match shared.metadata().topics_version().await {
            Ok(version) => version,
            Err(error) => {
                if !failing {
                    tracing::warn!(%error, "cannot read the metadata store's topics version");
                }
                failing = true;
                continue;
            }
        };
        if failing {
            tracing::info!("the metadata store answers again");
            failing = false;
        }
        if version != seen {
            match catch_up(&shared).await {
                Ok(true) => {
                    seen = version;
                    if note_followed(&shared, seen).await {
                        noted = Some(seen);
                    }
                }
                // Tried again at the next poll.
                Ok(false) => {}
                Err(error) => tracing::warn!(%error, "cannot read the topics again"),
            }
        }
    }
}

/// Catches up with the store now rather than at the next poll: for a broker told by
/// the store that a topic it has not seen yet exists.
pub(crate) async fn catch_up_now(shared: &Arc<Shared>) {
    if let Err(error) = catch_up(shared).await {
        tracing::warn!(%error, "cannot read the topics again");
    }
}

/// In a cluster, notes in the store that this broker follows topics version `seen`;
/// false if that failed.
async fn note_followed(shared: &Shared, seen: i64) -> bool {
    let Some(view) = shared.cluster() else {
        return true;
    };
    let noted = shared
        .metadata()
        .note_followed(view.node_id, view.incarnation, seen, 0)
        .await;
    if let Err(error) = &noted {
        tracing::debug!(%error, "cannot note the topics version followed; trying again");
    }
    noted.is_ok()
}

/// Makes the topic table agree with the store's topics and the settings with its
/// broker configs; false if some topic could not be followed (yet).
async fn catch_up(shared: &Arc<Shared>) -> Result<bool, spool_metadata::MetadataError> {
    let mut followed = true;
    let _admin = shared.changes().lock().await;
    let records = shared.metadata().topics().await?;
    shared.authorizer().load(shared.metadata().acls().await?);
    shared.quotas().load(shared.metadata().quotas().await?);
    crate::group_configs::adopt(shared, shared.metadata().group_configs().await?);
    // New defaults reach every topic that does not set the config itself.
    let defaults_changed = shared
        .dynamic()
        .adopt(shared.metadata().broker_configs().await?);
    let live: HashSet<uuid::Uuid> = records.iter().map(|record| record.id).collect();
    for topic in shared.topics().all() {
        if !live.contains(&topic.record.id) {
            tracing::info!(topic = %topic.record.name, "topic deleted through another broker");
            forget(shared, &topic).await;
        }
    }
    let defaults = shared.current_config().topic_defaults();
    for record in records {
        let current = shared.topics().by_id(record.id);
        if !defaults_changed && current.as_ref().is_some_and(|topic| topic.record == record) {
            continue;
        }
        let name = record.name.clone();
        let resolved = match &current {
            Some(topic) => topic.resolved_again(record, &defaults),
            None => resolve(record, &defaults),
        };
        let topic = match resolved {
            Ok(topic) => topic,
            Err(error) => {
                // Not retried: the configs will not change by themselves.
                tracing::error!(topic = %name, %error, "a topic changed through another broker has configs this broker refuses");
                continue;
            }
        };
        let from = current.as_ref().map_or(0, |topic| topic.record.partitions);
        if let Err(error) = apply(shared, topic, from).await {
            tracing::warn!(topic = %name, %error, "cannot follow a topic change; trying again");
            followed = false;
        }
    }
    Ok(followed)
}

/// Creates the topic's logs from partition `from` on, applies its settings, and puts
/// it in the table.
async fn apply(shared: &Arc<Shared>, topic: Topic, from: i32) -> Result<(), String> {
    let created = {
        let (shared, topic) = (shared.clone(), topic.clone());
        on_blocking_pool(move || create_logs(&shared, &topic, from)).await
    };
    created
        .map_err(|error| error.to_string())?
        .map_err(|error| error.to_string())?;
    tracing::info!(topic = %topic.record.name, partitions = topic.record.partitions, "topic changed through another broker");
    shared.topics().insert(topic);
    Ok(())
}
