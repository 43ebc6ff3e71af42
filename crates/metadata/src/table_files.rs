//! Table topics (docs/tables.md): the Parquet files partition leaders wrote for a
//! topic's Iceberg table that the table has not yet taken, and what each broker
//! reports of the table partitions it leads. Kept in the store so that the topic's
//! committer, on whichever broker, joins every leader's files in one snapshot.

use uuid::Uuid;

use crate::Result;

/// A Parquet file written for a topic's table, waiting for its commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableFileRecord {
    pub topic_id: Uuid,
    pub partition: i32,
    /// The offsets it covers: from `first_offset` up to (not including) `next_offset`
    /// (records left out — aborted, control — included in the span).
    pub first_offset: i64,
    pub next_offset: i64,
    /// Where the file is (its URL).
    pub location: String,
    /// Iceberg's description of the file (JSON), opaque here.
    pub data_file: String,
    pub record_count: i64,
    pub size_bytes: i64,
    /// The span's records that did not decode (a `registry` table's), in a file of
    /// the dead-letter table: its location and description, empty when none.
    pub dead_location: String,
    pub dead_data_file: String,
    pub dead_record_count: i64,
    pub written_ms: i64,
}

/// What one broker reported of a table topic's partitions it leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableStatusRecord {
    pub node_id: i32,
    /// The broker's own encoding (JSON), opaque here.
    pub status: String,
    pub updated_ms: i64,
}

#[async_trait::async_trait]
pub trait TableFiles {
    /// Adds a written file; `false` (nothing added) when the partition already has
    /// one from `first_offset` (another leader's).
    async fn add_table_file(&self, record: &TableFileRecord) -> Result<bool>;
    /// The files of `topic_id` waiting, by partition and first offset.
    async fn table_files(&self, topic_id: Uuid) -> Result<Vec<TableFileRecord>>;
    /// Removes the file of `partition` from `first_offset` (taken by the table, or
    /// left behind by it); whether there was one.
    async fn remove_table_file(
        &self,
        topic_id: Uuid,
        partition: i32,
        first_offset: i64,
    ) -> Result<bool>;
    /// Replaces what broker `node_id` reports of the table of `topic_id`.
    async fn put_table_status(
        &self,
        topic_id: Uuid,
        node_id: i32,
        status: &str,
        now_ms: i64,
    ) -> Result<()>;
    /// What every broker reported of the table of `topic_id`, by node id.
    async fn table_statuses(&self, topic_id: Uuid) -> Result<Vec<TableStatusRecord>>;
}
