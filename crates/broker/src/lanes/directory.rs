//! Which groups have live members in which lanes, and which clients are the base
//! members of those groups: what one broker found in the groups it coordinates
//! ([`Found`], as it shares it with the others), and every broker's findings together
//! ([`Directory`], what a fetch asks). Kept fresh by [`super::presence`].

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};
use spool_coordinator::GroupClients;
use spool_views::lanes::split_group;

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
    /// with a live lane (found among `groups`, or `elsewhere`: by other brokers).
    pub(crate) fn of(groups: &[GroupClients], elsewhere: &HashSet<String>) -> Found {
        let mut found = Found::default();
        for group in groups {
            if let (base, Some(lane)) = split_group(&group.group_id) {
                *(found.lanes.entry(base.to_owned()).or_default())
                    .entry(lane.to_owned())
                    .or_default() += group.clients.len();
            }
        }
        for group in groups {
            let (base, None) = split_group(&group.group_id) else {
                continue;
            };
            if elsewhere.contains(base) || found.lanes.contains_key(base) {
                (found.clients.entry(base.to_owned()).or_default())
                    .extend(group.clients.iter().cloned());
            }
        }
        found
    }

    /// The groups these lanes are of.
    pub(crate) fn live_groups(&self) -> impl Iterator<Item = &String> {
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
    pub(crate) fn merge<'a>(all: impl IntoIterator<Item = &'a Found>) -> Directory {
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
