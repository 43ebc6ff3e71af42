//! The SQL of [`Transactions`](crate::Transactions), shared by both backends as
//! `sql.rs` is.

use std::collections::{BTreeSet, HashMap};

use uuid::Uuid;

use crate::transactions::{TransactionRecord, TxnMarker, TxnState};

pub(crate) const TRANSACTION: &str = "SELECT transactional_id, producer_id, producer_epoch, \
     last_producer_epoch, state, timeout_ms, started_ms, updated_ms, version \
     FROM transactions WHERE transactional_id = $1";
pub(crate) const TRANSACTIONS: &str = "SELECT transactional_id, producer_id, producer_epoch, \
     last_producer_epoch, state, timeout_ms, started_ms, updated_ms, version \
     FROM transactions ORDER BY transactional_id";
pub(crate) const PARTITIONS_OF: &str = "SELECT transactional_id, topic_id, partition \
     FROM transaction_partitions WHERE transactional_id = $1";
pub(crate) const ALL_PARTITIONS: &str =
    "SELECT transactional_id, topic_id, partition FROM transaction_partitions";
pub(crate) const GROUPS_OF: &str =
    "SELECT transactional_id, group_id FROM transaction_groups WHERE transactional_id = $1";
pub(crate) const ALL_GROUPS: &str = "SELECT transactional_id, group_id FROM transaction_groups";
pub(crate) const INSERT: &str = "INSERT INTO transactions (transactional_id, producer_id, \
     producer_epoch, last_producer_epoch, state, timeout_ms, started_ms, updated_ms, version) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1)";
/// Moves the transaction from version `$9`.
pub(crate) const UPDATE: &str = "UPDATE transactions SET producer_id = $2, \
     producer_epoch = $3, last_producer_epoch = $4, state = $5, timeout_ms = $6, \
     started_ms = $7, updated_ms = $8, version = version + 1 \
     WHERE transactional_id = $1 AND version = $9";
pub(crate) const CLEAR_PARTITIONS: &str =
    "DELETE FROM transaction_partitions WHERE transactional_id = $1";
/// A partition of a topic deleted meanwhile is left out (an insert refused by the
/// foreign key would abort the whole store transaction on PostgreSQL).
pub(crate) const ADD_PARTITION: &str = "INSERT INTO transaction_partitions \
     (transactional_id, topic_id, partition) \
     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM topics WHERE id = $2)";
pub(crate) const CLEAR_GROUPS: &str = "DELETE FROM transaction_groups WHERE transactional_id = $1";
pub(crate) const ADD_GROUP: &str =
    "INSERT INTO transaction_groups (transactional_id, group_id) VALUES ($1, $2)";
/// A marker of a topic deleted meanwhile is not queued: there is nothing to write.
pub(crate) const QUEUE_MARKER: &str = "INSERT INTO transaction_markers (transactional_id, \
     topic_id, partition, producer_id, producer_epoch, is_commit) \
     SELECT $1, $2, $3, $4, $5, $6 WHERE EXISTS (SELECT 1 FROM topics WHERE id = $2) \
     ON CONFLICT (transactional_id, topic_id, partition) DO UPDATE SET \
     producer_id = excluded.producer_id, producer_epoch = excluded.producer_epoch, \
     is_commit = excluded.is_commit";
pub(crate) const PENDING_MARKERS: &str = "SELECT transactional_id, topic_id, partition, \
     producer_id, producer_epoch, is_commit FROM transaction_markers \
     ORDER BY transactional_id, topic_id, partition";
pub(crate) const CLEAR_MARKERS: &str =
    "DELETE FROM transaction_markers WHERE transactional_id = $1";
pub(crate) const MARKER_PENDING: &str = "SELECT COUNT(*) FROM transaction_markers \
     WHERE transactional_id = $1 AND topic_id = $2 AND partition = $3 \
     AND producer_id = $4 AND producer_epoch = $5 AND is_commit = $6";
/// Only the marker as queued: a newer one for the same partition stays.
pub(crate) const MARKER_WRITTEN: &str = "DELETE FROM transaction_markers \
     WHERE transactional_id = $1 AND topic_id = $2 AND partition = $3 \
     AND producer_id = $4 AND producer_epoch = $5 AND is_commit = $6";
/// The transaction's pending offsets become committed ones, without a place in
/// `__consumer_offsets` until `place_unlogged_offsets!` gives them one.
pub(crate) const COMMIT_OFFSETS: &str = "INSERT INTO group_offsets \
     (group_id, topic_id, partition, committed, leader_epoch, metadata, commit_ms) \
     SELECT group_id, topic_id, partition, committed, leader_epoch, metadata, commit_ms \
     FROM transaction_offsets WHERE transactional_id = $1 AND TRUE \
     ON CONFLICT (group_id, topic_id, partition) DO UPDATE SET \
     committed = excluded.committed, leader_epoch = excluded.leader_epoch, \
     metadata = excluded.metadata, commit_ms = excluded.commit_ms, \
     log_partition = NULL, log_offset = NULL";
pub(crate) const DROP_OFFSETS: &str = "DELETE FROM transaction_offsets WHERE transactional_id = $1";
/// Matches (and locks) the transaction only while it is ongoing with producer `$2`
/// at epoch `$3` and has group `$4`.
pub(crate) const GUARD_ONGOING: &str = "UPDATE transactions SET version = version \
     WHERE transactional_id = $1 AND producer_id = $2 AND producer_epoch = $3 \
     AND state = 'Ongoing' AND EXISTS (SELECT 1 FROM transaction_groups g \
       WHERE g.transactional_id = transactions.transactional_id AND g.group_id = $4)";
pub(crate) const UPSERT_TXN_OFFSET: &str = "INSERT INTO transaction_offsets \
     (transactional_id, group_id, topic_id, partition, committed, leader_epoch, metadata, \
     commit_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
     ON CONFLICT (transactional_id, group_id, topic_id, partition) DO UPDATE SET \
     committed = excluded.committed, leader_epoch = excluded.leader_epoch, \
     metadata = excluded.metadata, commit_ms = excluded.commit_ms";
pub(crate) const PENDING_TXN_OFFSETS: &str =
    "SELECT DISTINCT topic_id, partition FROM transaction_offsets WHERE group_id = $1";
pub(crate) const DELETE: &str =
    "DELETE FROM transactions WHERE transactional_id = $1 AND version = $2";

#[derive(sqlx::FromRow)]
pub(crate) struct TransactionRow {
    transactional_id: String,
    producer_id: i64,
    producer_epoch: i32,
    last_producer_epoch: i32,
    state: String,
    timeout_ms: i32,
    started_ms: i64,
    updated_ms: i64,
    version: i64,
}

#[derive(sqlx::FromRow)]
pub(crate) struct PartitionRow {
    transactional_id: String,
    topic_id: Uuid,
    partition: i32,
}

#[derive(sqlx::FromRow)]
pub(crate) struct GroupRow {
    transactional_id: String,
    group_id: String,
}

#[derive(sqlx::FromRow)]
pub(crate) struct MarkerRow {
    transactional_id: String,
    topic_id: Uuid,
    partition: i32,
    producer_id: i64,
    producer_epoch: i32,
    is_commit: bool,
}

impl From<MarkerRow> for TxnMarker {
    fn from(row: MarkerRow) -> TxnMarker {
        TxnMarker {
            transactional_id: row.transactional_id,
            topic_id: row.topic_id,
            partition: row.partition,
            producer_id: row.producer_id,
            producer_epoch: i16::try_from(row.producer_epoch).unwrap_or(-1),
            commit: row.is_commit,
        }
    }
}

/// The records of `rows`, with their partitions and groups.
pub(crate) fn records(
    rows: Vec<TransactionRow>,
    partitions: Vec<PartitionRow>,
    groups: Vec<GroupRow>,
) -> crate::Result<Vec<TransactionRecord>> {
    let mut partitions_of: HashMap<String, BTreeSet<(Uuid, i32)>> = HashMap::new();
    for row in partitions {
        partitions_of
            .entry(row.transactional_id)
            .or_default()
            .insert((row.topic_id, row.partition));
    }
    let mut groups_of: HashMap<String, BTreeSet<String>> = HashMap::new();
    for row in groups {
        groups_of
            .entry(row.transactional_id)
            .or_default()
            .insert(row.group_id);
    }
    rows.into_iter()
        .map(|row| {
            let state = TxnState::parse(&row.state).ok_or_else(|| {
                crate::MetadataError::Fatal(format!(
                    "transaction {} has an unknown state {:?}",
                    row.transactional_id, row.state
                ))
            })?;
            Ok(TransactionRecord {
                partitions: partitions_of
                    .remove(&row.transactional_id)
                    .unwrap_or_default(),
                groups: groups_of.remove(&row.transactional_id).unwrap_or_default(),
                producer_id: row.producer_id,
                producer_epoch: i16::try_from(row.producer_epoch).unwrap_or(-1),
                last_producer_epoch: i16::try_from(row.last_producer_epoch).unwrap_or(-1),
                state,
                timeout_ms: row.timeout_ms,
                started_ms: row.started_ms,
                updated_ms: row.updated_ms,
                version: row.version,
                transactional_id: row.transactional_id,
            })
        })
        .collect()
}

/// Binds a marker's columns, in the order the marker statements name them.
macro_rules! bind_marker {
    ($query:expr, $marker:expr) => {
        $query
            .bind(&$marker.transactional_id)
            .bind($marker.topic_id)
            .bind($marker.partition)
            .bind($marker.producer_id)
            .bind(i32::from($marker.producer_epoch))
            .bind($marker.commit)
    };
}

pub(crate) use bind_marker;

/// Implements [`Transactions`](crate::Transactions) for a struct with a `pool` field.
macro_rules! impl_transactions {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::Transactions for $store {
            async fn transaction(
                &self,
                transactional_id: &str,
            ) -> $crate::Result<Option<$crate::TransactionRecord>> {
                use $crate::transactions_sql as sql;
                // One store transaction: one snapshot on SQLite. On PostgreSQL (read
                // committed) a change between the reads could mix two versions in what
                // DescribeTransactions shows; decisions are safe either way, being
                // compare-and-set on the version read first.
                let mut tx = self.pool.begin().await?;
                let rows: Vec<sql::TransactionRow> = sqlx::query_as(sql::TRANSACTION)
                    .bind(transactional_id)
                    .fetch_all(&mut *tx)
                    .await?;
                if rows.is_empty() {
                    return Ok(None);
                }
                let partitions: Vec<sql::PartitionRow> = sqlx::query_as(sql::PARTITIONS_OF)
                    .bind(transactional_id)
                    .fetch_all(&mut *tx)
                    .await?;
                let groups: Vec<sql::GroupRow> = sqlx::query_as(sql::GROUPS_OF)
                    .bind(transactional_id)
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(sql::records(rows, partitions, groups)?.pop())
            }

            async fn transactions(&self) -> $crate::Result<Vec<$crate::TransactionRecord>> {
                use $crate::transactions_sql as sql;
                let mut tx = self.pool.begin().await?;
                let rows: Vec<sql::TransactionRow> = sqlx::query_as(sql::TRANSACTIONS)
                    .fetch_all(&mut *tx)
                    .await?;
                let partitions: Vec<sql::PartitionRow> = sqlx::query_as(sql::ALL_PARTITIONS)
                    .fetch_all(&mut *tx)
                    .await?;
                let groups: Vec<sql::GroupRow> =
                    sqlx::query_as(sql::ALL_GROUPS).fetch_all(&mut *tx).await?;
                tx.commit().await?;
                sql::records(rows, partitions, groups)
            }

            async fn update_transaction(
                &self,
                update: &$crate::TxnUpdate,
            ) -> $crate::Result<$crate::TransactionRecord> {
                use $crate::transactions_sql as sql;
                let record = &update.record;
                let id = record.transactional_id.as_str();
                let mut tx = self.pool.begin().await?;
                let mut change = sqlx::query(if update.create {
                    sql::INSERT
                } else {
                    sql::UPDATE
                })
                .bind(id)
                .bind(record.producer_id)
                .bind(i32::from(record.producer_epoch))
                .bind(i32::from(record.last_producer_epoch))
                .bind(record.state.as_str())
                .bind(record.timeout_ms)
                .bind(record.started_ms)
                .bind(record.updated_ms);
                if !update.create {
                    change = change.bind(record.version);
                }
                let changed = match change.execute(&mut *tx).await {
                    Ok(changed) => changed,
                    Err(error) => return Err(error.into()),
                };
                if changed.rows_affected() == 0 {
                    return Err($crate::MetadataError::Conflict(format!(
                        "transaction {id} changed since version {}",
                        record.version
                    )));
                }
                sqlx::query(sql::CLEAR_PARTITIONS)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                for (topic_id, partition) in &record.partitions {
                    sqlx::query(sql::ADD_PARTITION)
                        .bind(id)
                        .bind(topic_id)
                        .bind(partition)
                        .execute(&mut *tx)
                        .await?;
                }
                sqlx::query(sql::CLEAR_GROUPS)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                for group in &record.groups {
                    sqlx::query(sql::ADD_GROUP)
                        .bind(id)
                        .bind(group)
                        .execute(&mut *tx)
                        .await?;
                }
                if update.clear_markers {
                    sqlx::query(sql::CLEAR_MARKERS)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                }
                for marker in &update.markers {
                    $crate::transactions_sql::bind_marker!(sqlx::query(sql::QUEUE_MARKER), marker)
                        .execute(&mut *tx)
                        .await?;
                }
                match update.offsets {
                    $crate::SettleOffsets::Keep => {}
                    $crate::SettleOffsets::Commit => {
                        sqlx::query(sql::COMMIT_OFFSETS)
                            .bind(id)
                            .execute(&mut *tx)
                            .await?;
                        $crate::offset_log_sql::place_unlogged_offsets!(tx);
                        sqlx::query(sql::DROP_OFFSETS)
                            .bind(id)
                            .execute(&mut *tx)
                            .await?;
                    }
                    $crate::SettleOffsets::Abort => {
                        sqlx::query(sql::DROP_OFFSETS)
                            .bind(id)
                            .execute(&mut *tx)
                            .await?;
                    }
                }
                tx.commit().await?;
                let mut stored = record.clone();
                stored.version = if update.create { 1 } else { record.version + 1 };
                Ok(stored)
            }

            async fn delete_transaction(
                &self,
                transactional_id: &str,
                version: i64,
            ) -> $crate::Result<bool> {
                let deleted = sqlx::query($crate::transactions_sql::DELETE)
                    .bind(transactional_id)
                    .bind(version)
                    .execute(&self.pool)
                    .await?;
                Ok(deleted.rows_affected() > 0)
            }

            async fn pending_markers(&self) -> $crate::Result<Vec<$crate::TxnMarker>> {
                use $crate::transactions_sql as sql;
                let rows: Vec<sql::MarkerRow> = sqlx::query_as(sql::PENDING_MARKERS)
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows.into_iter().map($crate::TxnMarker::from).collect())
            }

            async fn markers_written(&self, markers: &[$crate::TxnMarker]) -> $crate::Result<()> {
                if markers.is_empty() {
                    return Ok(());
                }
                let mut tx = self.pool.begin().await?;
                for marker in markers {
                    $crate::transactions_sql::bind_marker!(
                        sqlx::query($crate::transactions_sql::MARKER_WRITTEN),
                        marker
                    )
                    .execute(&mut *tx)
                    .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn marker_pending(&self, marker: &$crate::TxnMarker) -> $crate::Result<bool> {
                let count: i64 = $crate::transactions_sql::bind_marker!(
                    sqlx::query_scalar($crate::transactions_sql::MARKER_PENDING),
                    marker
                )
                .fetch_one(&self.pool)
                .await?;
                Ok(count > 0)
            }

            async fn add_txn_offsets(
                &self,
                transactional_id: &str,
                producer_id: i64,
                producer_epoch: i16,
                offsets: &[$crate::CommittedOffset],
            ) -> $crate::Result<()> {
                use $crate::transactions_sql as sql;
                let mut tx = self.pool.begin().await?;
                let mut guarded = std::collections::BTreeSet::new();
                for offset in offsets {
                    if guarded.insert(offset.group.as_str()) {
                        let matched = sqlx::query(sql::GUARD_ONGOING)
                            .bind(transactional_id)
                            .bind(producer_id)
                            .bind(i32::from(producer_epoch))
                            .bind(&offset.group)
                            .execute(&mut *tx)
                            .await?;
                        if matched.rows_affected() == 0 {
                            return Err($crate::MetadataError::Conflict(format!(
                                "transaction {transactional_id} is not ongoing with group {}",
                                offset.group
                            )));
                        }
                    }
                    let stored = sqlx::query(sql::UPSERT_TXN_OFFSET)
                        .bind(transactional_id)
                        .bind(&offset.group)
                        .bind(offset.topic_id)
                        .bind(offset.partition)
                        .bind(offset.offset)
                        .bind(offset.leader_epoch)
                        .bind(offset.metadata.as_deref().map(str::as_bytes))
                        .bind(offset.commit_ms)
                        .execute(&mut *tx)
                        .await;
                    match stored {
                        Ok(_) => {}
                        Err(error) if $crate::sql::is_missing_topic(&error) => {
                            return Err($crate::MetadataError::UnknownTopic(
                                offset.topic_id.to_string(),
                            ));
                        }
                        Err(error) => return Err(error.into()),
                    }
                }
                tx.commit().await?;
                Ok(())
            }

            async fn pending_txn_offsets(
                &self,
                group: &str,
            ) -> $crate::Result<Vec<(uuid::Uuid, i32)>> {
                let rows: Vec<(uuid::Uuid, i32)> =
                    sqlx::query_as($crate::transactions_sql::PENDING_TXN_OFFSETS)
                        .bind(group)
                        .fetch_all(&self.pool)
                        .await?;
                Ok(rows)
            }
        }
    };
}

pub(crate) use impl_transactions;
