//! Lanes (BMQ's swimlanes) for stock Kafka clients: test traffic in production
//! topics, kept apart by a record header (`spool.lane`) and by the client's
//! `client.id` (`app;lane=X`). See `docs/lanes.md`; the pure parts (a client's lane,
//! what a lane's consumers see) are `spool_views::lanes`.
//!
//! - a lane producer's records get the header where they lack it ([`stamp`]);
//! - a lane client's groups are its group's part in the lane ([`groups`]);
//! - a fetch shows a lane's consumer its lane, a base consumer the base lane and the
//!   lanes its group has no live member in ([`Lanes::filter_for`], read through
//!   `crate::view_reader`); which groups have live lanes, and which clients are their
//!   base members, is [`directory`], kept fresh by [`presence`].
//!
//! A base consumer is known by its `client.id` and host (a Fetch names no group): the
//! same pair as its group membership shows. With no lane in use, or fallback for
//! every lane its group has, a base consumer's fetch is a plain read.

mod directory;
pub(crate) mod groups;
pub(crate) mod presence;
pub(crate) mod stamp;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use spool_views::ViewStats;
use spool_views::lanes::{Excluded, LaneFilter};

use self::directory::Directory;
use crate::config::BrokerConfig;

/// The label of the base lane in `/metrics`.
pub(crate) const BASE_LANE: &str = "base";

/// What lanes need at run time, shared by every connection.
#[derive(Debug, Default)]
pub(crate) struct Lanes {
    /// Which groups have live members in which lanes, and their base members.
    directory: RwLock<Arc<Directory>>,
    /// What filtered fetches made of the batches, by topic and lane.
    reads: RwLock<HashMap<(String, String), Arc<ViewStats>>>,
    /// Batches of lane producers that got the lane's header, by topic and lane.
    stamped: RwLock<HashMap<(String, String), Arc<AtomicU64>>>,
}

/// A fetch's lane filter and the lane it counts under.
#[derive(Debug)]
pub(crate) struct LaneRead {
    pub(crate) filter: LaneFilter,
    /// The consumer's lane, or [`BASE_LANE`].
    pub(crate) lane: String,
}

impl Lanes {
    /// The lane `client_id` names, by `lane.client.id.pattern`.
    pub(crate) fn lane_of<'a>(config: &BrokerConfig, client_id: &'a str) -> Option<&'a str> {
        config.lanes.pattern.lane_of(client_id)
    }

    /// What a fetch of the client `client_id` at `host` may see; `None` for
    /// everything (a plain read).
    pub(crate) fn filter_for(
        &self,
        config: &BrokerConfig,
        client_id: &str,
        host: &str,
    ) -> Option<LaneRead> {
        if let Some(lane) = Self::lane_of(config, client_id) {
            return Some(LaneRead {
                filter: LaneFilter::only(lane),
                lane: lane.to_owned(),
            });
        }
        let filter = if config.lanes.fallback {
            let directory = self.directory();
            let excluded = directory.lanes_standing_out(client_id, host)?;
            LaneFilter::base_without(excluded.iter().map(String::as_str))
        } else {
            LaneFilter::Base(Excluded::Every)
        };
        (!filter.passes_everything()).then(|| LaneRead {
            filter,
            lane: BASE_LANE.to_owned(),
        })
    }

    /// Who is where, as last refreshed.
    pub(crate) fn directory(&self) -> Arc<Directory> {
        self.directory
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_directory(&self, directory: Directory) {
        *self
            .directory
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(directory);
    }

    /// The counts of filtered reads of `topic` in `lane`.
    pub(crate) fn read_stats(&self, topic: &str, lane: &str) -> Arc<ViewStats> {
        counter(&self.reads, topic, lane)
    }

    /// Notes a lane producer's batch of `topic` that got the header.
    pub(crate) fn note_stamped(&self, topic: &str, lane: &str) {
        counter(&self.stamped, topic, lane).fetch_add(1, Ordering::Relaxed);
    }

    /// Every (topic, lane)'s filtered reads.
    pub(crate) fn all_reads(&self) -> Vec<((String, String), Arc<ViewStats>)> {
        snapshot(&self.reads)
    }

    /// Every (topic, lane)'s stamped batches.
    pub(crate) fn all_stamped(&self) -> Vec<((String, String), u64)> {
        snapshot(&self.stamped)
            .into_iter()
            .map(|(key, count)| (key, count.load(Ordering::Relaxed)))
            .collect()
    }
}

/// The entry of (`topic`, `lane`), made on first use.
fn counter<T: Default>(
    map: &RwLock<HashMap<(String, String), Arc<T>>>,
    topic: &str,
    lane: &str,
) -> Arc<T> {
    let key = (topic.to_owned(), lane.to_owned());
    if let Some(found) = map.read().unwrap_or_else(PoisonError::into_inner).get(&key) {
        return found.clone();
    }
    map.write()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(key)
        .or_default()
        .clone()
}

fn snapshot<T>(map: &RwLock<HashMap<(String, String), Arc<T>>>) -> Vec<((String, String), Arc<T>)> {
    let mut all: Vec<_> = map
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}
