//! Cluster mode: in shared-storage mode, the brokers sharing a metadata store form one
//! cluster (a single broker is a cluster of one). Nothing else is needed to join.
//!
//! - **Membership**: a broker registers at start under its node id with a new
//!   incarnation (replacing a previous process of that node at once, and raising the
//!   epochs of the partitions the node led, which fences that process), then renews
//!   its lease every `cluster.heartbeat.ms`; one whose lease (`cluster.lease.ms`)
//!   lapsed is dead to the others. A broker that finds its node taken by another
//!   incarnation serves nothing more.
//! - **Control**: every broker tries, each heartbeat, to take or renew the controller
//!   lease; the one holding it assigns partitions (see [`controller`]).
//! - **Leadership**: each broker follows the store's assignments version and keeps
//!   every partition's leader and epoch. It serves only the partitions it leads
//!   (`NOT_LEADER_OR_FOLLOWER` for the others); Metadata lists the live brokers and
//!   each partition's leader. A partition's new leader takes over from the catalogue
//!   (its tail opens at the catalogue's high watermark): no data is copied.

pub(crate) mod controller;
mod handover;
mod membership;
mod placement;
mod view;

use std::sync::Arc;

use spool_metadata::PartitionKey;
use tokio::sync::watch;

use crate::shared::Shared;

pub(crate) use self::membership::run;
pub(crate) use self::view::ClusterView;
pub use self::view::coordinator_among;

/// The controller's round now, if this broker holds (or can take) the controller
/// lease, and the leaders read again: at start, and after this broker made partitions
/// (a cluster of one serves them at once; in a larger one, the controller's next
/// heartbeat assigns them).
pub(crate) async fn assign_now(shared: &Arc<Shared>, view: &ClusterView) {
    if let Err(error) = controller::tick(shared, view).await {
        tracing::warn!(%error, "the controller's round failed; the next heartbeat tries again");
    }
    if let Err(error) = view.reload_leaders(shared.metadata()).await {
        tracing::warn!(%error, "cannot read the partitions' leaders");
    }
}

/// Gives the partitions this broker just made their first leaders at once, each to
/// its preferred leader (the first broker a client's assignment named) when that one
/// may lead, else to the live writer (not draining) leading fewest as this broker
/// sees them (spread over racks, see [`placement`]), so that they are served as soon
/// as the request that made them is answered; the controller balances them later.
/// One the controller assigned meanwhile stays.
pub(crate) async fn assign_new(
    shared: &Arc<Shared>,
    view: &ClusterView,
    keys: &[(PartitionKey, Option<i32>)],
) {
    // As the store has them now, not as of the last heartbeat: a broker that just
    // joined gets its share from the start.
    let fresh = view.refresh_brokers(shared.metadata()).await;
    if let Err(error) = fresh.and(view.reload_leaders(shared.metadata()).await) {
        tracing::warn!(%error, "cannot read the brokers; the controller assigns the new partitions");
        return;
    }
    let live = view.live_brokers();
    let eligible: Vec<i32> = live
        .iter()
        .filter(|broker| broker.takes_work())
        .map(|broker| broker.node_id)
        .collect();
    let racks: placement::Racks = live
        .iter()
        .map(|broker| (broker.node_id, broker.rack.clone()))
        .collect();
    let leaderships: Vec<spool_metadata::Leadership> = view
        .leaders
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .values()
        .copied()
        .collect();
    // No broker may take them now (none eligible): the controller assigns them when
    // one can.
    let assignments = placement::first_leaders(keys, &leaderships, &eligible, &racks);
    if !assignments.is_empty()
        && let Err(error) = shared.metadata().assign_new_partitions(&assignments).await
    {
        tracing::warn!(%error, "cannot assign new partitions; the controller will");
    }
    if let Err(error) = view.reload_leaders(shared.metadata()).await {
        tracing::warn!(%error, "cannot read the partitions' leaders");
    }
}

/// Before answering a request that changed topics, broker configs or leaders: waits
/// until every other live broker has followed the store up to now, so that a client
/// told the change is done finds it done on whichever broker it asks next. Called
/// once per request, never under the admin lock (a broker follows under its own admin
/// lock: two brokers waiting for each other under theirs would both wait a lease).
/// Gives up after a lease: a broker that does not follow for that long is dead or
/// about to be, or cannot apply the change (it logs why).
pub(crate) async fn wait_for_followers(shared: &Shared) {
    let Some(view) = shared.cluster() else {
        return;
    };
    let metadata = shared.metadata();
    let wanted = match (
        metadata.topics_version().await,
        metadata.assignments_version().await,
    ) {
        (Ok(topics), Ok(assignments)) => (topics, assignments),
        (Err(error), _) | (_, Err(error)) => {
            tracing::warn!(%error, "cannot read the store's versions; not waiting for the other brokers");
            return;
        }
    };
    let started = std::time::Instant::now();
    loop {
        let behind: Vec<i32> = match metadata.brokers().await {
            Ok(brokers) => {
                // Lease expiries are the store's, by the system clock.
                let now = spool_model::Timestamp::now().0;
                brokers
                    .into_iter()
                    .filter(|b| b.node_id != view.node_id && b.lease_expires_ms > now)
                    .filter(|b| b.topics_seen < wanted.0 || b.assignments_seen < wanted.1)
                    .map(|b| b.node_id)
                    .collect()
            }
            Err(error) => {
                tracing::warn!(%error, "cannot read the brokers; not waiting for them");
                return;
            }
        };
        if behind.is_empty() {
            return;
        }
        if started.elapsed() > view.settings.lease {
            tracing::warn!(brokers = ?behind, "brokers did not follow a change within a lease");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Starts following the cluster: heartbeats (with the controller's work) and the
/// assignments version, until `stopped`.
pub(crate) fn start(shared: &Arc<Shared>, stopped: &watch::Receiver<bool>) {
    tokio::spawn(run(shared.clone(), stopped.clone()));
}
