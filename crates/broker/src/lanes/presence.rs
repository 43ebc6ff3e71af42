//! Keeps the lane directory ([`super::directory`]) fresh. Each broker looks at the groups it coordinates every [`ROUND`]: a group
//! `G;lane=X` with members makes lane `X` live for `G`; the base members of a group
//! with a live lane are known by client id and host. In a cluster each broker also
//! writes what it found to the metadata store (when it changed) and reads every live
//! broker's, since a group's lane parts and its base part may have different
//! coordinators; a change is seen everywhere within about two rounds.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::directory::{Directory, Found};
use crate::shared::Shared;

/// How often the groups are looked at (and, in a cluster, the store read).
const ROUND: Duration = Duration::from_millis(250);

/// Keeps [`crate::lanes::Lanes`]'s directory fresh until `stopped`.
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut others: Vec<Found> = Vec::new();
    let mut written: Option<Found> = None;
    loop {
        let groups = shared.groups().member_clients();
        let elsewhere: HashSet<String> = (others.iter())
            .flat_map(Found::live_groups)
            .cloned()
            .collect();
        let mine = Found::of(&groups, &elsewhere);
        if let Some(view) = shared.cluster() {
            if written.as_ref() != Some(&mine) && write(&shared, view.node_id, &mine).await {
                written = Some(mine.clone());
            }
            if let Some(read) = read_others(&shared, view.node_id).await {
                others = read;
            }
        }
        shared
            .lanes()
            .set_directory(Directory::merge(others.iter().chain([&mine])));
        tokio::select! {
            () = tokio::time::sleep(ROUND) => {}
            _ = stopped.changed() => return,
        }
    }
}

/// Writes this broker's findings; whether they were written.
async fn write(shared: &Shared, node_id: i32, found: &Found) -> bool {
    let Ok(text) = serde_json::to_string(found) else {
        return false;
    };
    match shared.metadata().put_lane_presence(node_id, &text).await {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%error, "lane presence not written; again next round");
            false
        }
    }
}

/// The other live brokers' findings; `None` when the store could not be read.
async fn read_others(shared: &Shared, node_id: i32) -> Option<Vec<Found>> {
    let live: HashSet<i32> = shared
        .cluster()?
        .live_brokers()
        .iter()
        .map(|broker| broker.node_id)
        .collect();
    let rows = match shared.metadata().lane_presences().await {
        Ok(rows) => rows,
        Err(error) => {
            tracing::debug!(%error, "lane presence not read; again next round");
            return None;
        }
    };
    Some(
        rows.into_iter()
            .filter(|(broker, _)| *broker != node_id && live.contains(broker))
            .filter_map(|(_, text)| serde_json::from_str(&text).ok())
            .collect(),
    )
}
