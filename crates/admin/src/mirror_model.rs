//! The mirror links' JSON shapes (`/api/mirrors`, `spool mirror`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A link as `POST /api/mirrors` takes it.
#[derive(Debug, Clone, Deserialize)]
pub struct NewMirror {
    pub name: String,
    /// The source's bootstrap brokers, `host:port` separated by commas.
    pub source: String,
    /// The source client's settings by librdkafka's names (security, TLS, SASL).
    #[serde(default)]
    pub source_config: BTreeMap<String, String>,
    /// The source topics to mirror: a regex matching whole names.
    pub topics: String,
    /// The consumer groups whose offsets are copied: a regex; none when absent.
    #[serde(default)]
    pub groups: Option<String>,
    /// `earliest` (default) or `latest`: where a new mirror topic starts.
    #[serde(default)]
    pub start: Option<String>,
}

/// What `POST /api/mirrors/{name}/failover` fails over.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct MirrorFailover {
    /// Only the link's topics this regex matches (every one when absent).
    #[serde(default)]
    pub topics: Option<String>,
}

/// A link as the API shows it: its settings (secret values hidden), its state and
/// counts on the broker that answers, and the partitions that broker copies.
#[derive(Debug, Clone, Serialize)]
pub struct MirrorInfo {
    pub name: String,
    pub source: String,
    pub source_config: BTreeMap<String, String>,
    pub topics: String,
    pub groups: Option<String>,
    pub start: String,
    pub paused: bool,
    /// `starting`, `running`, `paused` or `failed` (see `error`).
    pub state: String,
    pub error: Option<String>,
    pub failed_over: Vec<String>,
    /// The mirror topics here (read-only, or failed over).
    pub mirror_topics: Vec<String>,
    pub created_ms: i64,
    pub copied_bytes: u64,
    pub errors: u64,
    pub offsets_copied: u64,
    /// Records the source removed before they were copied (gaps here).
    pub skipped_records: u64,
    pub partitions: Vec<MirrorPartitionInfo>,
}

/// A partition copied by the broker that answers.
#[derive(Debug, Clone, Serialize)]
pub struct MirrorPartitionInfo {
    pub topic: String,
    pub partition: i32,
    /// The source's high watermark at the last fetch.
    pub source_end: i64,
    pub mirror_end: i64,
    pub lag_records: i64,
    /// How long the copy has been behind (0 when caught up).
    pub lag_ms: i64,
    pub copied_bytes: u64,
    pub error: Option<String>,
}

/// A topic failed over, with its partitions' log ends (-1: led by another broker).
#[derive(Debug, Clone, Serialize)]
pub struct FailedOverTopic {
    pub topic: String,
    pub log_ends: Vec<i64>,
}
