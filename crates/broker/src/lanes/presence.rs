//! Which groups have live members in which lanes, and which clients are the base
//! members of those groups: what tells a base consumer's fetch the lanes it does not
//! stand in for.
//!
//! Each broker looks at the groups it coordinates every [`ROUND`]: a group
//! `G;lane=X` with members makes lane `X` live for `G`; the base members of a group
//! with a live lane are known by client id and host. In a cluster each broker also
//! writes what it found to the metadata store (when it changed) and reads every live
//! broker's, since a group's lane parts and its base part may have different
//! coordinators; a change is seen everywhere within about two rounds.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spool_coordinator::GroupClients;
use spool_views::lanes::split_group;
use tokio::sync::watch;

use crate::shared::Shared;

/// How often the groups are looked at (and, in a cluster, the store read).
const ROUND: Duration = Duration::from_millis(250);

/// What one broker found in the groups it coordinates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Found {
    /// Members in each lane, by group.
    lanes: BTreeMap<String, BTreeMap<String, usize>>,
    /// The base members' clients (id, host) of the groups with a live lane.
    clients: BTreeMap<String, BTreeSet<(String, String)>>,
}

impl Found {
    /// What `groups` show: their lanes' members, and the clients of the base groups
    /// in `live` (groups some broker found a lane member of).
    fn of(groups: &[GroupClients], live: &HashSet<String>) -> Found {
        let mut found = Found::default();
        for group in groups {
            match split_group(&group.group_id) {
                (base, Some(lane)) => {
                    *found
                        .lanes
                        .entry(base.to_owned())
                        .or_default()
                        .entry(lane.to_owned())
                        .or_default() += group.clients.len();
                }
                (base, None) if live.contains(base) => {
                    found
                        .clients
                        .entry(base.to_owned())
                        .or_default()
                        .extend(group.clients.iter().cloned());
                }
                (_, None) => {}
            }
        }
        found
    }

    /// The groups these lanes are of.
    fn live_groups(&self) -> impl Iterator<Item = &String> {
        self.lanes.keys()
    }
}

/// Every broker's findings together: what a fetch asks.
#[derive(Debug, Default)]
pub(crate) struct Directory {
    /// Members in each lane, by group.
    lanes: HashMap<String, BTreeMap<String, usize>>,
    /// The groups (with live lanes) each client is a base member of, by host and
    /// client id (looked up without allocating, on every fetch).
    groups_of: HashMap<String, HashMap<String, Vec<String>>>,
    /// The base members' clients known of each group with live lanes.
    base_clients: HashMap<String, usize>,
}

impl Directory {
    fn merge<'a>(all: impl IntoIterator<Item = &'a Found>) -> Directory {
        let mut directory = Directory::default();
        for found in all {
            for (group, lanes) in &found.lanes {
                let known = directory.lanes.entry(group.clone()).or_default();
                for (lane, members) in lanes {
                    *known.entry(lane.clone()).or_default() += members;
                }
            }
            for (group, clients) in &found.clients {
                *directory.base_clients.entry(group.clone()).or_default() += clients.len();
                for (client_id, host) in clients {
                    let groups = (directory.groups_of.entry(host.clone()).or_default())
                        .entry(client_id.clone())
                        .or_default();
                    if !groups.contains(group) {
                        groups.push(group.clone());
                    }
                }
            }
        }
        directory
    }

    /// The lanes the base consumer `client_id` at `host` does not stand in for:
    /// those with live members in its group. When it is a base member of several
    /// groups with live lanes (one client id and host in each), only the lanes live
    /// in all of them: a record is kept from a base consumer only when its group is
    /// known to have that lane. `None`: none.
    pub(crate) fn lanes_standing_out(&self, client_id: &str, host: &str) -> Option<Vec<String>> {
        let groups = self.groups_of.get(host)?.get(client_id)?;
        let mut shared: Option<BTreeSet<&String>> = None;
        for group in groups {
            let lanes: BTreeSet<&String> = self
                .lanes
                .get(group)
                .into_iter()
                .flat_map(BTreeMap::keys)
                .collect();
            shared = Some(match shared {
                None => lanes,
                Some(before) => before.intersection(&lanes).copied().collect(),
            });
        }
        let lanes: Vec<String> = shared?.into_iter().cloned().collect();
        (!lanes.is_empty()).then_some(lanes)
    }

    /// The base members' clients known of each group with live lanes, sorted.
    pub(crate) fn base_clients(&self) -> Vec<(&str, usize)> {
        let mut all: Vec<_> = (self.base_clients.iter())
            .map(|(group, clients)| (group.as_str(), *clients))
            .collect();
        all.sort_unstable();
        all
    }

    /// Members in each lane, by group, sorted.
    pub(crate) fn lane_members(&self) -> Vec<(&str, &str, usize)> {
        let mut all: Vec<_> = self
            .lanes
            .iter()
            .flat_map(|(group, lanes)| {
                lanes
                    .iter()
                    .map(move |(lane, members)| (group.as_str(), lane.as_str(), *members))
            })
            .collect();
        all.sort_unstable();
        all
    }
}

/// Keeps [`crate::lanes::Lanes`]'s directory fresh until `stopped`.
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut others: Vec<Found> = Vec::new();
    let mut written: Option<Found> = None;
    loop {
        let groups = shared.groups().member_clients();
        let mut live: HashSet<String> = others
            .iter()
            .flat_map(Found::live_groups)
            .cloned()
            .collect();
        live.extend(Found::of(&groups, &HashSet::new()).lanes.into_keys());
        let mine = Found::of(&groups, &live);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn group(id: &str, clients: &[(&str, &str)]) -> GroupClients {
        GroupClients {
            group_id: id.to_owned(),
            clients: clients
                .iter()
                .map(|(c, h)| ((*c).to_owned(), (*h).to_owned()))
                .collect(),
        }
    }

    #[test]
    fn a_base_consumer_stands_out_of_the_lanes_its_group_has_members_in() {
        // Broker 1 coordinates the base groups, broker 2 their lane parts.
        let on_one = [
            group("billing", &[("billing-app", "/10.0.0.1")]),
            group("audit", &[("audit-app", "/10.0.0.1")]),
        ];
        let on_two = [
            group("billing;lane=ppe", &[("billing-app;lane=ppe", "/10.0.0.9")]),
            group(
                "billing;lane=boe",
                &[("x;lane=boe", "/10.0.0.9"), ("y;lane=boe", "/h")],
            ),
        ];
        let two = Found::of(&on_two, &HashSet::new());
        let live: HashSet<String> = two.live_groups().cloned().collect();
        let one = Found::of(&on_one, &live);
        assert!(one.clients.contains_key("billing") && !one.clients.contains_key("audit"));
        let directory = Directory::merge([&one, &two]);
        assert_eq!(
            directory.lanes_standing_out("billing-app", "/10.0.0.1"),
            Some(vec!["boe".to_owned(), "ppe".to_owned()])
        );
        assert_eq!(directory.lanes_standing_out("audit-app", "/10.0.0.1"), None);
        assert_eq!(
            directory.lanes_standing_out("billing-app", "/10.0.0.2"),
            None
        );
        assert_eq!(
            directory.lane_members(),
            vec![("billing", "boe", 2), ("billing", "ppe", 1)]
        );
        assert_eq!(directory.base_clients(), vec![("billing", 1)]);
    }

    #[test]
    fn a_client_in_several_groups_stands_out_only_of_lanes_all_of_them_have() {
        let groups = [
            group("a", &[("app", "/h")]),
            group("b", &[("app", "/h")]),
            group("a;lane=ppe", &[("t;lane=ppe", "/h")]),
            group("a;lane=boe", &[("t;lane=boe", "/h")]),
            group("b;lane=ppe", &[("t;lane=ppe", "/h")]),
        ];
        let live = ["a".to_owned(), "b".to_owned()].into_iter().collect();
        let directory = Directory::merge([&Found::of(&groups, &live)]);
        assert_eq!(
            directory.lanes_standing_out("app", "/h"),
            Some(vec!["ppe".to_owned()])
        );
    }
}
