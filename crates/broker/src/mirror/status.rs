//! What the mirror shows of itself (`spool mirror describe`, the REST API, the
//! console, `/metrics`): each link's state and counts, and each partition copied
//! here with its lag. Kept in memory by the broker that does the work.

use std::collections::BTreeMap;
use std::sync::Mutex;

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
