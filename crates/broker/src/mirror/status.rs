//! What the mirror shows of itself (`spool mirror describe`, the REST API, the
//! console, `/metrics`): each link's state and counts, and each partition copied
//! here with its lag. Kept in memory by the broker that does the work.

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Value, json};

/// A mirror partition, by link.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PartitionKey {
    pub(crate) link: String,
    pub(crate) topic: String,
    pub(crate) partition: i32,
}

/// A partition being copied here.
#[derive(Debug, Clone, Default)]
pub(crate) struct PartitionState {
    /// The source's high watermark at the last fetch.
    pub(crate) source_end: i64,
    /// The mirror's log end after it.
    pub(crate) mirror_end: i64,
    /// When (ms, broker clock) the copy last had everything the source had, or
    /// started.
    pub(crate) caught_up_ms: i64,
    pub(crate) copied_bytes: u64,
    /// The last failure, until a fetch succeeds again.
    pub(crate) error: Option<String>,
}

impl PartitionState {
    /// Records the source has and the mirror not yet.
    pub(crate) fn lag_records(&self) -> i64 {
        (self.source_end - self.mirror_end).max(0)
    }

    /// How long the mirror has been behind (0 when caught up), at `now_ms`.
    pub(crate) fn lag_ms(&self, now_ms: i64) -> i64 {
        if self.lag_records() == 0 {
            0
        } else {
            (now_ms - self.caught_up_ms).max(0)
        }
    }
}

/// A link's state here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum LinkState {
    #[default]
    Starting,
    Running,
    Paused,
    /// The source could not be read, or the link's settings are wrong.
    Failed,
}

impl LinkState {
    fn from_name(name: &str) -> LinkState {
        match name {
            "running" => LinkState::Running,
            "paused" => LinkState::Paused,
            "failed" => LinkState::Failed,
            _ => LinkState::Starting,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            LinkState::Starting => "starting",
            LinkState::Running => "running",
            LinkState::Paused => "paused",
            LinkState::Failed => "failed",
        }
    }
}

/// A link's state and counts here.
#[derive(Debug, Clone, Default)]
pub(crate) struct LinkStatus {
    pub(crate) state: LinkState,
    pub(crate) error: Option<String>,
    pub(crate) copied_bytes: u64,
    pub(crate) errors: u64,
    /// Group offsets copied (one per partition and change).
    pub(crate) offsets_copied: u64,
    /// Records the source removed (retention, DeleteRecords) before they were
    /// copied: gaps in the mirror.
    pub(crate) skipped_records: u64,
}

/// The mirror's state on this broker.
#[derive(Debug, Default)]
pub(crate) struct MirrorStatus {
    links: Mutex<BTreeMap<String, LinkStatus>>,
    partitions: Mutex<BTreeMap<PartitionKey, PartitionState>>,
}

impl MirrorStatus {
    fn links(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, LinkStatus>> {
        self.links
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn partitions(&self) -> std::sync::MutexGuard<'_, BTreeMap<PartitionKey, PartitionState>> {
        self.partitions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A fetch of `key` went through: the source had `source_end`, the mirror has
    /// `mirror_end`, `bytes` were appended.
    pub(crate) fn copied(
        &self,
        key: &PartitionKey,
        source_end: i64,
        mirror_end: i64,
        bytes: u64,
        now_ms: i64,
    ) {
        {
            let mut partitions = self.partitions();
            let state = partitions
                .entry(key.clone())
                .or_insert_with(|| PartitionState {
                    caught_up_ms: now_ms,
                    ..PartitionState::default()
                });
            state.source_end = source_end;
            state.mirror_end = mirror_end;
            state.copied_bytes += bytes;
            state.error = None;
            if mirror_end >= source_end {
                state.caught_up_ms = now_ms;
            }
        }
        self.links()
            .entry(key.link.clone())
            .or_default()
            .copied_bytes += bytes;
    }

    /// Copying `key` failed.
    pub(crate) fn failed(&self, key: &PartitionKey, error: String) {
        self.partitions().entry(key.clone()).or_default().error = Some(error);
        self.links().entry(key.link.clone()).or_default().errors += 1;
    }

    /// The source removed `records` of `key` before they were copied.
    pub(crate) fn skipped(&self, key: &PartitionKey, records: u64) {
        self.links()
            .entry(key.link.clone())
            .or_default()
            .skipped_records += records;
    }

    /// `key` is no longer copied here.
    pub(crate) fn forget(&self, key: &PartitionKey) {
        self.partitions().remove(key);
    }

    pub(crate) fn link_state(&self, link: &str, state: LinkState) {
        let mut links = self.links();
        let status = links.entry(link.to_owned()).or_default();
        status.state = state;
        status.error = None;
    }

    pub(crate) fn link_failed(&self, link: &str, error: String) {
        tracing::warn!(link, %error, "mirror link failed");
        let mut links = self.links();
        let status = links.entry(link.to_owned()).or_default();
        status.state = LinkState::Failed;
        status.error = Some(error);
        status.errors += 1;
    }

    pub(crate) fn offsets_copied(&self, link: &str, count: u64) {
        self.links()
            .entry(link.to_owned())
            .or_default()
            .offsets_copied += count;
    }

    /// The link is gone: its state too.
    pub(crate) fn forget_link(&self, link: &str) {
        self.links().remove(link);
        self.partitions().retain(|key, _| key.link != link);
    }

    /// A link's state here, if this broker follows it.
    pub(crate) fn link(&self, link: &str) -> Option<LinkStatus> {
        self.links().get(link).cloned()
    }

    /// Every link's state here.
    pub(crate) fn all_links(&self) -> Vec<(String, LinkStatus)> {
        self.links()
            .iter()
            .map(|(name, status)| (name.clone(), status.clone()))
            .collect()
    }

    /// The partitions of `link` copied here (every link's when `None`).
    pub(crate) fn partitions_of(&self, link: Option<&str>) -> Vec<(PartitionKey, PartitionState)> {
        self.partitions()
            .iter()
            .filter(|(key, _)| link.is_none_or(|link| key.link == link))
            .map(|(key, state)| (key.clone(), state.clone()))
            .collect()
    }
}

impl MirrorStatus {
    /// What this broker reports of `link` to the others (through the metadata store).
    pub(crate) fn report(&self, link: &str) -> String {
        let status = self.link(link).unwrap_or_default();
        let partitions: Vec<Value> = self
            .partitions_of(Some(link))
            .into_iter()
            .map(|(key, state)| {
                json!({
                    "topic": key.topic,
                    "partition": key.partition,
                    "source_end": state.source_end,
                    "mirror_end": state.mirror_end,
                    "caught_up_ms": state.caught_up_ms,
                    "copied_bytes": state.copied_bytes,
                    "error": state.error,
                })
            })
            .collect();
        json!({
            "state": status.state.name(),
            "error": status.error,
            "copied_bytes": status.copied_bytes,
            "errors": status.errors,
            "offsets_copied": status.offsets_copied,
            "skipped_records": status.skipped_records,
            "partitions": partitions,
        })
        .to_string()
    }
}

/// The brokers' reports of `link` (node id, report) as one: counts summed, the
/// partitions of all, failed if one broker failed (its error, named), else running if
/// one runs.
pub(crate) fn merged(
    link: &str,
    reports: &[(i32, String)],
) -> (LinkStatus, Vec<(PartitionKey, PartitionState)>) {
    let mut status = LinkStatus::default();
    let mut partitions = Vec::new();
    for (node, report) in reports {
        let Ok(report) = serde_json::from_str::<Value>(report) else {
            continue;
        };
        let count = |name: &str| report[name].as_u64().unwrap_or(0);
        status.copied_bytes += count("copied_bytes");
        status.errors += count("errors");
        status.offsets_copied += count("offsets_copied");
        status.skipped_records += count("skipped_records");
        match LinkState::from_name(report["state"].as_str().unwrap_or_default()) {
            LinkState::Failed => {
                status.state = LinkState::Failed;
                let error = report["error"].as_str().unwrap_or("failed");
                status.error = Some(match status.error.take() {
                    Some(before) => format!("{before}; broker {node}: {error}"),
                    None => format!("broker {node}: {error}"),
                });
            }
            LinkState::Running if status.state != LinkState::Failed => {
                status.state = LinkState::Running;
            }
            LinkState::Paused if status.state == LinkState::Starting => {
                status.state = LinkState::Paused;
            }
            _ => {}
        }
        for partition in report["partitions"].as_array().into_iter().flatten() {
            let number = |name: &str| partition[name].as_i64().unwrap_or(0);
            partitions.push((
                PartitionKey {
                    link: link.to_owned(),
                    topic: partition["topic"].as_str().unwrap_or_default().to_owned(),
                    partition: i32::try_from(number("partition")).unwrap_or(-1),
                },
                PartitionState {
                    source_end: number("source_end"),
                    mirror_end: number("mirror_end"),
                    caught_up_ms: number("caught_up_ms"),
                    copied_bytes: partition["copied_bytes"].as_u64().unwrap_or(0),
                    error: partition["error"].as_str().map(str::to_owned),
                },
            ));
        }
    }
    partitions.sort_by(|a, b| a.0.cmp(&b.0));
    (status, partitions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_brokers_reports_merge_into_one_link() {
        let one = MirrorStatus::default();
        let key = |partition| PartitionKey {
            link: "eu".to_owned(),
            topic: "orders".to_owned(),
            partition,
        };
        one.link_state("eu", LinkState::Running);
        one.copied(&key(1), 50, 40, 1000, 7_000);
        let two = MirrorStatus::default();
        two.link_failed("eu", "the source refused".to_owned());
        two.copied(&key(0), 30, 30, 500, 8_000);
        two.skipped(&key(0), 7);
        let (status, partitions) = merged("eu", &[(1, one.report("eu")), (2, two.report("eu"))]);
        assert_eq!(status.state, LinkState::Failed);
        assert_eq!(
            status.error.as_deref(),
            Some("broker 2: the source refused")
        );
        assert_eq!((status.copied_bytes, status.errors), (1500, 1));
        assert_eq!(status.skipped_records, 7);
        assert_eq!(partitions.len(), 2);
        assert_eq!(partitions[0].0, key(0));
        assert_eq!(partitions[1].1.lag_records(), 10);
        assert_eq!(
            partitions[1].1.lag_ms(9_000),
            2_000,
            "behind since it started"
        );
        assert_eq!(partitions[0].1.lag_ms(9_000), 0);
    }
}
