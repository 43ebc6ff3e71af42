//! The loops of a cluster member: every `cluster.heartbeat.ms` it renews its lease,
//! reads who is alive and does the controller's work if it holds (or can take) the
//! controller lease; every [`FOLLOW_INTERVAL`] it reads the assignments version and,
//! when it moved, every partition's leader and epoch (and notes in the store that it
//! followed it).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::view::lease_ms;
use super::{ClusterView, controller, handover};
use crate::shared::Shared;

/// How often the assignments version is read: a partition that moved is served by its
/// new leader (and refused by the old) within about this.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(50);

/// Runs the heartbeat and the follower until `stopped`.
pub(crate) async fn run(shared: Arc<Shared>, stopped: watch::Receiver<bool>) {
    let Some(view) = shared.cluster().cloned() else {
        return;
    };
    let heartbeat = tokio::spawn(heartbeats(shared.clone(), view.clone(), stopped.clone()));
    follow(shared, view, stopped).await;
    let _ = heartbeat.await;
}

async fn heartbeats(
    shared: Arc<Shared>,
    view: Arc<ClusterView>,
    mut stopped: watch::Receiver<bool>,
) {
    // A heartbeat at most a third of the lease, so that two may fail in a row.
    let every = view.settings.heartbeat.min(view.settings.lease / 3);
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            _ = ticks.tick() => {}
        }
        let outcome = heartbeat(&shared, &view).await;
        // Groups whose coordinator is another broker now (or all of them, while this
        // broker's lease is not renewed): their members find the coordinator again.
        shared.groups().release_unowned();
        match outcome {
            Ok(()) if failing => {
                tracing::info!("the metadata store answers heartbeats again");
                failing = false;
            }
            Ok(()) => {}
            Err(error) => {
                if !failing {
                    tracing::warn!(%error, "a heartbeat failed; the lease lapses if this goes on");
                }
                failing = true;
            }
        }
    }
}

/// One heartbeat: renew, read the live brokers, the controller's work.
async fn heartbeat(
    shared: &Arc<Shared>,
    view: &Arc<ClusterView>,
) -> Result<(), spool_metadata::MetadataError> {
    let started = view.clock.now_ms();
    let renewed = shared
        .metadata()
        .renew_lease(view.node_id, view.incarnation, lease_ms(&view.settings))
        .await?;
    if !renewed {
        view.note_replaced();
        return Ok(());
    }
    view.note_renewed(started);
    view.refresh_brokers(shared.metadata()).await?;
    if controller::tick(shared, view).await? {
        view.reload_leaders(shared.metadata()).await?;
    }
    // Handovers asked of this broker that a failure cut short are tried again.
    handover::start_asked(shared, view);
    Ok(())
}

/// Notes in the store that this broker follows assignments version `version` (a
/// broker that moved partitions waits for the others to follow); false if that failed.
async fn note_followed(shared: &Shared, view: &ClusterView, version: i64) -> bool {
    let noted = shared
        .metadata()
        .note_followed(view.node_id, view.incarnation, 0, version)
        .await;
    if let Err(error) = &noted {
        tracing::debug!(%error, "cannot note the assignments version followed; trying again");
    }
    noted.is_ok()
}

async fn follow(shared: Arc<Shared>, view: Arc<ClusterView>, mut stopped: watch::Receiver<bool>) {
    let mut ticks = tokio::time::interval(FOLLOW_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut seen = None;
    // The version last noted in the store as followed (a failed note is tried again).
    let mut noted = None;
    loop {
        tokio::select! {
            _ = stopped.changed() => return,
            _ = ticks.tick() => {}
        }
        if let Some(version) = seen.filter(|version| noted != Some(*version)) {
            noted = note_followed(&shared, &view, version)
                .await
                .then_some(version);
        }
        let Ok(version) = shared.metadata().assignments_version().await else {
            // The heartbeat reports a store that does not answer.
            continue;
        };
        if seen == Some(version) {
            continue;
        }
        match view.reload_leaders(shared.metadata()).await {
            Ok(()) => {
                seen = Some(version);
                handover::start_asked(&shared, &view);
                if note_followed(&shared, &view, version).await {
                    noted = Some(version);
                }
            }
            Err(error) => tracing::warn!(%error, "cannot read the partitions' leaders"),
        }
    }
}
