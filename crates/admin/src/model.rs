//! The REST API's JSON shapes, the operations behind them ([`AdminApi`]), and its
//! one error type.

use std::collections::BTreeMap;

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

/// Whether the broker serves clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Readiness {
    pub ready: bool,
    /// What was checked, each with `"ok"` or why not.
    pub checks: BTreeMap<String, String>,
}

/// An answer the REST API refuses with: an HTTP status, Kafka's name of the error
/// (`UNKNOWN_TOPIC_OR_PARTITION`; `NONE` for errors Kafka has no name for) and a
/// message a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiError {
    #[serde(skip)]
    pub status: StatusCode,
    pub error: String,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, error: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            error: error.to_owned(),
            message: message.into(),
        }
    }

    /// A request the API cannot take as it is (400).
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "INVALID_REQUEST", message)
    }

    /// The broker is still starting (503).
    #[must_use]
    pub fn starting() -> ApiError {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "BROKER_NOT_AVAILABLE",
            "the broker is starting",
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self)).into_response()
    }
}

/// The REST API's operations, implemented by the broker.
#[async_trait::async_trait]
pub trait AdminApi: Send + Sync {
    async fn cluster(&self) -> Result<ClusterInfo, ApiError>;
    async fn topics(&self) -> Result<Vec<TopicSummary>, ApiError>;
    async fn topic(&self, name: &str) -> Result<TopicDetail, ApiError>;
    async fn create_topic(&self, request: NewTopic) -> Result<TopicDetail, ApiError>;
    async fn delete_topic(&self, name: &str) -> Result<(), ApiError>;
    async fn alter_topic_configs(
        &self,
        name: &str,
        changes: ConfigChanges,
    ) -> Result<Vec<ConfigEntry>, ApiError>;
    async fn messages(&self, query: MessageQuery) -> Result<MessagePage, ApiError>;
    async fn find_messages(&self, search: MessageSearch) -> Result<FoundMessages, ApiError>;
    async fn groups(&self) -> Result<Vec<GroupSummary>, ApiError>;
    async fn group(&self, id: &str) -> Result<GroupDetail, ApiError>;
    /// Deletes a group without members, with its committed offsets.
    async fn delete_group(&self, id: &str) -> Result<(), ApiError>;
    /// Moves a group's committed offsets (the group must have no members); answers
    /// the group as it is then.
    async fn reset_group_offsets(
        &self,
        id: &str,
        reset: OffsetReset,
    ) -> Result<GroupDetail, ApiError>;
    /// The transaction checkers, by prefix.
    async fn txn_checkers(&self) -> Result<Vec<TxnCheckerInfo>, ApiError>;
    /// Adds a transaction checker, replacing the one of its prefix.
    async fn put_txn_checker(&self, checker: NewTxnChecker) -> Result<TxnCheckerInfo, ApiError>;
    /// Removes the checker of `prefix` (404 if there is none).
    async fn remove_txn_checker(&self, prefix: &str) -> Result<(), ApiError>;
    /// The mirror links, by name.
    async fn mirrors(&self) -> Result<Vec<crate::MirrorInfo>, ApiError>;
    /// One mirror link (404 if there is none).
    async fn mirror(&self, name: &str) -> Result<crate::MirrorInfo, ApiError>;
    /// Adds a mirror link (409 if one has the name).
    async fn create_mirror(&self, mirror: crate::NewMirror) -> Result<crate::MirrorInfo, ApiError>;
    /// Removes a mirror link whose topics are all failed over or deleted.
    async fn delete_mirror(&self, name: &str) -> Result<(), ApiError>;
    /// Pauses (`true`) or resumes a link.
    async fn pause_mirror(&self, name: &str, paused: bool) -> Result<crate::MirrorInfo, ApiError>;
    /// Fails over a link's topics: no longer copied, writable.
    async fn failover_mirror(
        &self,
        name: &str,
        failover: crate::MirrorFailover,
    ) -> Result<Vec<crate::FailedOverTopic>, ApiError>;
    /// The schema registry's subjects with live versions, by name.
    async fn schema_subjects(&self) -> Result<Vec<crate::SubjectInfo>, ApiError>;
    /// A version of a subject (`latest` or a number; 404 if there is none).
    async fn schema_version(
        &self,
        subject: &str,
        version: &str,
    ) -> Result<crate::SchemaVersionInfo, ApiError>;
}

/// A transaction checker as `POST /api/txn-checkers` takes it: the HTTP endpoint asked
/// about open transactions of ids starting with `prefix` before they are aborted.
#[derive(Debug, Clone, Deserialize)]
pub struct NewTxnChecker {
    pub prefix: String,
    pub url: String,
    /// Sent with each check (`Authorization`, say).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How long a check waits for its answer (default 5000).
    #[serde(default)]
    pub timeout_ms: Option<i32>,
    /// PEM certificates an `https` endpoint may chain to besides the system's roots.
    #[serde(default)]
    pub ca_pem: Option<String>,
}

/// A transaction checker as the API shows it: header names only (their values may be
/// secrets).
#[derive(Debug, Clone, Serialize)]
pub struct TxnCheckerInfo {
    pub prefix: String,
    pub url: String,
    pub header_names: Vec<String>,
    pub timeout_ms: i32,
    /// Whether it trusts CA certificates of its own.
    pub own_ca: bool,
}

/// Where `POST /api/groups/{group}/offsets` moves a group's committed offsets, as
/// `spool group seek` does.
#[derive(Debug, Clone, Deserialize)]
pub struct OffsetReset {
    /// `earliest` (each partition's log start), `latest` (its high watermark), or an
    /// offset (kept within the two).
    pub to: String,
    /// Only this topic's partitions; by default every partition the group has an
    /// offset for.
    #[serde(default)]
    pub topic: Option<String>,
}

/// The cluster as this broker sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterInfo {
    pub cluster_id: String,
    /// The broker answering.
    pub node_id: i32,
    /// `embedded` (one broker, local disk) or `shared` (brokers over shared storage).
    pub mode: String,
    /// The controller's node id (-1: none, or embedded mode).
    pub controller: i32,
    pub brokers: Vec<BrokerInfo>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BrokerInfo {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    /// `broker.rack`, if set.
    pub rack: Option<String>,
    /// A reader (`broker.roles=reader`): it leads nothing and serves reads.
    pub reader: bool,
    /// Partitions it leads.
    pub partitions_led: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct TopicSummary {
    pub name: String,
    pub id: String,
    pub partitions: i32,
    /// Offsets between the log starts and the high watermarks, summed over the
    /// partitions this broker knows the offsets of: the records, plus the offsets
    /// that transaction markers hold and compaction emptied (not a record count).
    pub records: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TopicDetail {
    pub name: String,
    pub id: String,
    pub partitions: Vec<PartitionInfo>,
    pub configs: Vec<ConfigEntry>,
    /// Table topics (`table.enable=true`): the table and how far behind it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<TableInfo>,
    /// Topics with `index.fields`: the message index's chunks (docs/index.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<IndexInfo>,
}

/// A topic's message index as its chunks in storage show it (the leaders' tails in
/// memory are not counted).
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexInfo {
    /// `index.fields`.
    pub fields: String,
    pub chunks: u64,
    /// Bytes of the chunks.
    pub bytes: u64,
    /// Bytes of the batches the chunks cover.
    pub covered_bytes: u64,
    /// Records the chunks cover.
    pub records: u64,
}

/// A table topic's table, as its brokers report it (docs/tables.md).
#[derive(Debug, Clone, Default, Serialize)]
pub struct TableInfo {
    /// `NAMESPACE.TOPIC` in the catalogue.
    pub table: String,
    /// Records the partitions have that the table has not yet.
    pub lag_records: i64,
    /// How long the table has lacked records a partition has (ms).
    pub lag_ms: i64,
    pub files_written: u64,
    pub rows_written: u64,
    pub bytes_written: u64,
    pub commits: u64,
    pub errors: u64,
    /// The last failure a broker reported, with its node id.
    pub last_error: Option<String>,
    pub partitions: Vec<PartitionTableInfo>,
}

/// A partition of a table topic: where the table is, against its high watermark.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PartitionTableInfo {
    pub partition: i32,
    /// The offset the table's next file for the partition starts at.
    pub committed_offset: i64,
    pub high_watermark: i64,
    pub lag_records: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartitionInfo {
    pub partition: i32,
    /// -1 while it has no leader.
    pub leader: i32,
    pub leader_epoch: i32,
    /// Offsets are `null` when this broker does not lead the partition (shared
    /// storage: ask its leader).
    pub log_start: Option<i64>,
    pub high_watermark: Option<i64>,
    pub last_stable: Option<i64>,
    /// Topics with delayed delivery: records held, and when the next is due (epoch
    /// ms); absent on other topics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delayed: Option<DelayedInfo>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct DelayedInfo {
    pub pending: i64,
    pub next_due_ms: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConfigEntry {
    pub name: String,
    pub value: String,
    /// `topic` (set on the topic), `broker` (a broker default) or `default`.
    pub source: String,
}

/// `POST /api/topics`.
#[derive(Debug, Clone, Deserialize)]
pub struct NewTopic {
    pub name: String,
    /// The broker's `num.partitions` when absent.
    pub partitions: Option<i32>,
    #[serde(default)]
    pub configs: BTreeMap<String, String>,
}

/// `PATCH /api/topics/{name}/configs`: values to set, and names to return to their
/// defaults (`null` values).
#[derive(Debug, Clone, Deserialize)]
pub struct ConfigChanges(pub BTreeMap<String, Option<String>>);

/// How keys, values and header values are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// UTF-8 when the bytes are valid UTF-8, base64 otherwise.
    #[default]
    Auto,
    Base64,
}

/// Where to start reading a partition, and how much.
#[derive(Debug, Clone)]
pub struct MessageQuery {
    pub topic: String,
    pub partition: i32,
    pub start: MessageStart,
    pub limit: usize,
    pub encoding: Encoding,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageStart {
    Offset(i64),
    /// The first record at or after this time (epoch ms).
    Timestamp(i64),
    /// The last `limit` records.
    Newest,
}

#[derive(Debug, Clone, Serialize)]
pub struct MessagePage {
    pub messages: Vec<Message>,
    /// Where the next page starts.
    pub next_offset: i64,
    pub log_start: i64,
    pub high_watermark: i64,
}

/// A search of a topic's index (`GET /api/topics/{topic}/messages?key=…`,
/// docs/index.md): the committed records whose field has the value.
#[derive(Debug, Clone)]
pub struct MessageSearch {
    pub topic: String,
    /// `key`, `header:NAME` or `value:$.path`, as `index.fields` writes it.
    pub field: String,
    pub value: Vec<u8>,
    /// Only this partition; `None`: every partition.
    pub partition: Option<i32>,
    /// Records at or after this time (epoch ms).
    pub from: Option<i64>,
    /// Records at or before this time (epoch ms).
    pub to: Option<i64>,
    pub limit: usize,
    /// Newest first (by timestamp), else oldest first.
    pub newest_first: bool,
    pub encoding: Encoding,
}

/// What a search found, newest or oldest first, and what it read to find it.
#[derive(Debug, Clone, Serialize, Default)]
pub struct FoundMessages {
    pub messages: Vec<Message>,
    /// Index chunks whose entries were read (the others were skipped by their bloom
    /// filter or time range).
    pub chunks_read: u64,
    /// Batches read to check the records the index named.
    pub batches_read: u64,
    /// Bytes of batches read where no index chunk covered the records (the newest
    /// records, or chunks built before the field was indexed).
    pub scanned_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub partition: i32,
    pub offset: i64,
    /// Epoch ms.
    pub timestamp: i64,
    /// `CreateTime` or `LogAppendTime`.
    pub timestamp_type: String,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
}

/// Bytes as text: UTF-8, or base64 when asked for or when they are not UTF-8.
#[derive(Debug, Clone, Serialize)]
pub struct Bytes {
    pub encoding: String,
    pub data: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Header {
    pub key: String,
    pub value: Option<Bytes>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub group: String,
    /// `classic`, `consumer` (KIP-848's protocol) or `share` (KIP-932).
    pub group_type: String,
    pub state: String,
    pub protocol_type: String,
    pub members: usize,
    /// The sum of its partitions' lag (those whose high watermark is known here).
    pub lag: i64,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupDetail {
    pub group: String,
    /// `classic`, `consumer` (KIP-848's protocol) or `share` (KIP-932).
    pub group_type: String,
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<GroupMember>,
    pub offsets: Vec<GroupOffset>,
    /// A share group's partitions (its "offsets"); absent for other groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub share_partitions: Vec<SharePartitionDetail>,
}

/// One partition a share group reads: where it stands and what is in flight.
#[derive(Debug, Clone, Serialize)]
pub struct SharePartitionDetail {
    pub topic: String,
    pub partition: i32,
    /// Every record before it is done with (acknowledged or archived).
    pub start_offset: i64,
    /// Records delivered and not yet acknowledged: held by a consumer, or waiting
    /// to be delivered again.
    pub acquired: u64,
    pub available: u64,
    /// Done with above the start offset (the start moves past them once the records
    /// before them are done too).
    pub acknowledged: u64,
    pub archived: u64,
    /// Records up to the high watermark not yet acknowledged or archived; `null`
    /// when the high watermark is not known here.
    pub lag: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// The partitions assigned, by topic (a consumer group's assignment).
    pub assignment: BTreeMap<String, Vec<i32>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupOffset {
    pub topic: String,
    pub partition: i32,
    pub committed: i64,
    /// `null` when this broker does not know the partition's high watermark.
    pub high_watermark: Option<i64>,
    pub lag: Option<i64>,
    /// On a view: the records of the lag it is expected to show (the lag is in the
    /// source's offsets, most of which a filtering view skips). Absent elsewhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matching_lag: Option<i64>,
}
