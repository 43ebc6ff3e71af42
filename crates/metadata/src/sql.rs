//! The one implementation of [`MetadataStore`](crate::MetadataStore), for both
//! backends: the SQL below is the dialect SQLite and PostgreSQL share (`$n`
//! parameters, `ON CONFLICT`, `RETURNING`, recursive CTEs), and
//! [`impl_metadata_store!`] expands the same method bodies over each backend's pool.
//! A macro rather than generic code because sqlx's generic executor bounds would
//! repeat on every method and hide the queries, which are what a reader wants to see.
//!
//! Every transaction that writes starts with a write where it can, so that SQLite
//! takes its write lock at once instead of failing to upgrade a read snapshot.

use uuid::Uuid;

pub(crate) const BUMP_TOPICS_VERSION: &str =
    "UPDATE catalog SET topics_version = topics_version + 1 WHERE id = 1";
pub(crate) const TOPICS_VERSION: &str = "SELECT topics_version FROM catalog WHERE id = 1";
pub(crate) const INIT_STORE_ID: &str =
    "UPDATE catalog SET store_id = $1 WHERE id = 1 AND store_id IS NULL";
pub(crate) const STORE_ID: &str = "SELECT store_id FROM catalog WHERE id = 1";

pub(crate) const INSERT_TOPIC: &str = "INSERT INTO topics (name, id, partitions, created_ms, \
     replication_factor, replica_assignment) VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (name) DO NOTHING";
pub(crate) const SET_REPLICA_ASSIGNMENT: &str =
    "UPDATE topics SET replica_assignment = $2 WHERE id = $1";
pub(crate) const DELETE_TOPIC: &str = "DELETE FROM topics WHERE id = $1";
/// Topics with their configs, in one statement (so one snapshot on both backends).
pub(crate) const TOPICS_WITH_CONFIGS: &str = "SELECT t.name, t.id, t.partitions, \
     t.replication_factor, t.replica_assignment, c.key, c.value FROM topics t LEFT JOIN topic_configs c ON c.topic_id = t.id \
     ORDER BY t.name, c.key";
pub(crate) const TOPIC_PARTITIONS: &str = "SELECT partitions FROM topics WHERE id = $1";
pub(crate) const GROW_TOPIC: &str =
    "UPDATE topics SET partitions = $2 WHERE id = $1 AND partitions < $2";
/// Partitions `$3..$2` of topic `$1`, at leader epoch 0 (those that exist stay).
pub(crate) const INSERT_PARTITIONS: &str = "WITH RECURSIVE seq(i) AS \
     (SELECT 0 UNION ALL SELECT i + 1 FROM seq WHERE i + 1 < $2) \
     INSERT INTO partitions (topic_id, partition, leader_epoch) \
     SELECT $1, i, 0 FROM seq WHERE i >= $3 \
     ON CONFLICT (topic_id, partition) DO NOTHING";
/// Every partition of every topic at leader epoch 0 (those that exist stay).
pub(crate) const INSERT_ALL_PARTITIONS: &str = "WITH RECURSIVE seq(i) AS \
     (SELECT 0 UNION ALL SELECT i + 1 FROM seq \
      WHERE i + 1 < (SELECT COALESCE(MAX(partitions), 0) FROM topics)) \
     INSERT INTO partitions (topic_id, partition, leader_epoch) \
     SELECT t.id, seq.i, 0 FROM topics t JOIN seq ON seq.i < t.partitions WHERE true \
     ON CONFLICT (topic_id, partition) DO NOTHING";
pub(crate) const BUMP_ALL_LEADER_EPOCHS: &str =
    "UPDATE partitions SET leader_epoch = leader_epoch + 1";
pub(crate) const ALL_LEADER_EPOCHS: &str =
    "SELECT topic_id, partition, leader_epoch FROM partitions ORDER BY topic_id, partition";
pub(crate) const BUMP_LEADER_EPOCHS: &str =
    "UPDATE partitions SET leader_epoch = leader_epoch + 1 WHERE topic_id = $1";
pub(crate) const LEADER_EPOCHS: &str =
    "SELECT leader_epoch FROM partitions WHERE topic_id = $1 ORDER BY partition";

pub(crate) const SET_TOPIC_CONFIG: &str = "INSERT INTO topic_configs (topic_id, key, value) \
     VALUES ($1, $2, $3) ON CONFLICT (topic_id, key) DO UPDATE SET value = excluded.value";
pub(crate) const DELETE_TOPIC_CONFIG: &str =
    "DELETE FROM topic_configs WHERE topic_id = $1 AND key = $2";

pub(crate) const BROKER_CONFIGS: &str = "SELECT scope, key, value FROM broker_configs";
pub(crate) const SET_BROKER_CONFIG: &str = "INSERT INTO broker_configs (scope, key, value) \
     VALUES ($1, $2, $3) ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value";
pub(crate) const DELETE_BROKER_CONFIG: &str =
    "DELETE FROM broker_configs WHERE scope = $1 AND key = $2";

pub(crate) const CLAIM_GROUP: &str = "INSERT INTO group_coordinators (group_id, epoch, node_id) \
     VALUES ($1, 1, $2) ON CONFLICT (group_id) \
     DO UPDATE SET epoch = group_coordinators.epoch + 1, node_id = excluded.node_id \
     RETURNING epoch";
pub(crate) const GROUP_CLAIMANT: &str =
    "SELECT node_id FROM group_coordinators WHERE group_id = $1";
/// Matches (and locks, until the transaction ends) the group's row only while `$2` is
/// its latest coordinator epoch: a claim made meanwhile waits for the transaction.
pub(crate) const FENCE_GROUP: &str =
    "UPDATE group_coordinators SET epoch = epoch WHERE group_id = $1 AND epoch = $2";
pub(crate) const COMMITTED_OFFSETS: &str = "SELECT o.group_id, t.name AS topic, o.topic_id, \
     o.partition, o.committed, o.leader_epoch, o.metadata, o.commit_ms \
     FROM group_offsets o JOIN topics t ON t.id = o.topic_id";
pub(crate) const GROUP_OFFSETS: &str = "SELECT o.group_id, t.name AS topic, o.topic_id, \
     o.partition, o.committed, o.leader_epoch, o.metadata, o.commit_ms \
     FROM group_offsets o JOIN topics t ON t.id = o.topic_id WHERE o.group_id = $1";
/// With its place in `__consumer_offsets` (`crate::offset_log_sql`).
pub(crate) const UPSERT_OFFSET: &str = "INSERT INTO group_offsets \
     (group_id, topic_id, partition, committed, leader_epoch, metadata, commit_ms, \
     log_partition, log_offset) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
     ON CONFLICT (group_id, topic_id, partition) DO UPDATE SET \
     committed = excluded.committed, leader_epoch = excluded.leader_epoch, \
     metadata = excluded.metadata, commit_ms = excluded.commit_ms, \
     log_partition = excluded.log_partition, log_offset = excluded.log_offset";
pub(crate) const DELETE_GROUP_OFFSETS: &str = "DELETE FROM group_offsets WHERE group_id = $1";
pub(crate) const DELETE_OFFSET: &str =
    "DELETE FROM group_offsets WHERE group_id = $1 AND topic_id = $2 AND partition = $3";

pub(crate) const ALLOCATE_PRODUCER_IDS: &str =
    "UPDATE producer_ids SET next = next + $1 WHERE id = 1 RETURNING next - $1 AS first";

#[derive(sqlx::FromRow)]
pub(crate) struct TopicConfigRow {
    pub(crate) name: String,
    pub(crate) id: Uuid,
    pub(crate) partitions: i32,
    pub(crate) replication_factor: i32,
    pub(crate) replica_assignment: String,
    /// `None` for a topic without explicit configs.
    pub(crate) key: Option<String>,
    pub(crate) value: Option<String>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct EpochRow {
    pub(crate) topic_id: Uuid,
    pub(crate) partition: i32,
    pub(crate) leader_epoch: i32,
}

/// Epochs by topic, each topic's by partition index.
pub(crate) fn epochs_by_topic(rows: Vec<EpochRow>) -> std::collections::HashMap<Uuid, Vec<i32>> {
    let mut by_topic: std::collections::HashMap<Uuid, Vec<i32>> = std::collections::HashMap::new();
    for row in rows {
        let epochs = by_topic.entry(row.topic_id).or_default();
        // Rows come ordered by partition from 0, one per index.
        if usize::try_from(row.partition).ok() == Some(epochs.len()) {
            epochs.push(row.leader_epoch);
        }
    }
    by_topic
}

#[derive(sqlx::FromRow)]
pub(crate) struct BrokerConfigRow {
    pub(crate) scope: String,
    pub(crate) key: String,
    pub(crate) value: String,
}

#[derive(sqlx::FromRow)]
pub(crate) struct OffsetRow {
    pub(crate) group_id: String,
    pub(crate) topic: String,
    pub(crate) topic_id: Uuid,
    pub(crate) partition: i32,
    pub(crate) committed: i64,
    pub(crate) leader_epoch: i32,
    /// Bytes, not text: a client's metadata may hold NUL (confluent-kafka sends its C
    /// terminator), which PostgreSQL's text refuses.
    pub(crate) metadata: Option<Vec<u8>>,
    pub(crate) commit_ms: i64,
}

impl From<OffsetRow> for crate::CommittedOffset {
    fn from(row: OffsetRow) -> crate::CommittedOffset {
        crate::CommittedOffset {
            group: row.group_id,
            topic: row.topic,
            topic_id: row.topic_id,
            partition: row.partition,
            offset: row.committed,
            leader_epoch: row.leader_epoch,
            metadata: row.metadata.map(|bytes| match String::from_utf8(bytes) {
                Ok(text) => text,
                Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
            }),
            commit_ms: row.commit_ms,
        }
    }
}

/// Builds topic records from their rows (one per config, ordered by topic name).
pub(crate) fn topic_records(rows: Vec<TopicConfigRow>) -> crate::Result<Vec<crate::TopicRecord>> {
    let mut records: Vec<crate::TopicRecord> = Vec::new();
    for row in rows {
        if records.last().is_none_or(|last| last.id != row.id) {
            records.push(crate::TopicRecord {
                name: spool_model::TopicName::new(row.name)
                    .map_err(|e| crate::MetadataError::Fatal(format!("stored topic name: {e}")))?,
                id: row.id,
                partitions: row.partitions,
                replication_factor: i16::try_from(row.replication_factor).unwrap_or(1),
                replica_assignment: crate::decode_assignment(&row.replica_assignment),
                configs: std::collections::BTreeMap::new(),
            });
        }
        if let (Some(record), Some(key), Some(value)) = (records.last_mut(), row.key, row.value) {
            record.configs.insert(key, value);
        }
    }
    Ok(records)
}

/// Broker configs by scope from their rows.
pub(crate) fn broker_configs_by_scope(
    rows: Vec<BrokerConfigRow>,
) -> std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>> {
    let mut by_scope: std::collections::BTreeMap<_, std::collections::BTreeMap<_, _>> =
        std::collections::BTreeMap::new();
    for row in rows {
        by_scope
            .entry(row.scope)
            .or_default()
            .insert(row.key, row.value);
    }
    by_scope
}

/// Whether a database error is a foreign key violation (PostgreSQL's 23503, SQLite's
/// 787): in this schema, a row naming a topic that does not exist.
pub(crate) fn is_missing_topic(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(sqlx::error::DatabaseError::code)
        .is_some_and(|code| matches!(code.as_ref(), "23503" | "787"))
}

pub(crate) fn now_ms() -> i64 {
    spool_model::Timestamp::now().0
}

/// Applies config changes of one owner (a topic id or a broker scope) in transaction
/// `$tx`: a set is an upsert of its key, a delete removes its key.
macro_rules! apply_config_changes {
    ($tx:ident, $changes:expr, $owner:expr, $set:expr, $delete:expr) => {
        for change in $changes {
            match change {
                $crate::ConfigChange::Set { key, value } => {
                    sqlx::query($set)
                        .bind($owner)
                        .bind(key)
                        .bind(value)
                        .execute(&mut *$tx)
                        .await?;
                }
                $crate::ConfigChange::Delete { key } => {
                    sqlx::query($delete)
                        .bind($owner)
                        .bind(key)
                        .execute(&mut *$tx)
                        .await?;
                }
            }
        }
    };
}

pub(crate) use apply_config_changes;

/// Implements [`MetadataStore`](crate::MetadataStore) for a struct with a `pool` field
/// (a `sqlx::Pool` of either backend) with the queries of this module.
macro_rules! impl_metadata_store {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::MetadataStore for $store {
            async fn create_topic(&self, topic: &$crate::TopicRecord) -> $crate::Result<()> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                sqlx::query(sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                let inserted = sqlx::query(sql::INSERT_TOPIC)
                    .bind(topic.name.as_str())
                    .bind(topic.id)
                    .bind(topic.partitions)
                    .bind(sql::now_ms())
                    .bind(i32::from(topic.replication_factor))
                    .bind($crate::encode_assignment(&topic.replica_assignment))
                    .execute(&mut *tx)
                    .await?;
                if inserted.rows_affected() == 0 {
                    return Err($crate::MetadataError::TopicExists(topic.name.to_string()));
                }
                sqlx::query(sql::INSERT_PARTITIONS)
                    .bind(topic.id)
                    .bind(topic.partitions)
                    .bind(0_i32)
                    .execute(&mut *tx)
                    .await?;
                for (key, value) in &topic.configs {
                    sqlx::query(sql::SET_TOPIC_CONFIG)
                        .bind(topic.id)
                        .bind(key)
                        .bind(value)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn delete_topic(&self, id: uuid::Uuid) -> $crate::Result<()> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                sqlx::query(sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                let deleted = sqlx::query(sql::DELETE_TOPIC)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                if deleted.rows_affected() == 0 {
                    return Err($crate::MetadataError::UnknownTopic(id.to_string()));
                }
                tx.commit().await?;
                Ok(())
            }

            async fn topics(&self) -> $crate::Result<Vec<$crate::TopicRecord>> {
                use $crate::sql;
                let rows: Vec<sql::TopicConfigRow> = sqlx::query_as(sql::TOPICS_WITH_CONFIGS)
                    .fetch_all(&self.pool)
                    .await?;
                sql::topic_records(rows)
            }

            async fn store_id(&self) -> $crate::Result<uuid::Uuid> {
                use $crate::sql;
                sqlx::query(sql::INIT_STORE_ID)
                    .bind(uuid::Uuid::new_v4().to_string())
                    .execute(&self.pool)
                    .await?;
                let id: Option<String> = sqlx::query_scalar(sql::STORE_ID)
                    .fetch_one(&self.pool)
                    .await?;
                id.as_deref()
                    .and_then(|id| uuid::Uuid::try_parse(id).ok())
                    .ok_or_else(|| $crate::MetadataError::Fatal(format!("store id {id:?}")))
            }

            async fn topics_version(&self) -> $crate::Result<i64> {
                let version: i64 = sqlx::query_scalar($crate::sql::TOPICS_VERSION)
                    .fetch_one(&self.pool)
                    .await?;
                Ok(version)
            }

            async fn set_replica_assignment(
                &self,
                id: uuid::Uuid,
                assignment: &[Vec<i32>],
            ) -> $crate::Result<()> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                sqlx::query(sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                let updated = sqlx::query(sql::SET_REPLICA_ASSIGNMENT)
                    .bind(id)
                    .bind($crate::encode_assignment(assignment))
                    .execute(&mut *tx)
                    .await?;
                if updated.rows_affected() == 0 {
                    return Err($crate::MetadataError::UnknownTopic(id.to_string()));
                }
                tx.commit().await?;
                Ok(())
            }

            async fn add_partitions(&self, id: uuid::Uuid, partitions: i32) -> $crate::Result<()> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                sqlx::query(sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                let current: Option<i32> = sqlx::query_scalar(sql::TOPIC_PARTITIONS)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(current) = current else {
                    return Err($crate::MetadataError::UnknownTopic(id.to_string()));
                };
                if partitions <= current {
                    return Err($crate::MetadataError::Conflict(format!(
                        "topic {id} has {current} partitions already"
                    )));
                }
                sqlx::query(sql::GROW_TOPIC)
                    .bind(id)
                    .bind(partitions)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(sql::INSERT_PARTITIONS)
                    .bind(id)
                    .bind(partitions)
                    .bind(current)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn alter_topic_configs(
                &self,
                id: uuid::Uuid,
                changes: &[$crate::ConfigChange],
            ) -> $crate::Result<()> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                sqlx::query(sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                let exists: Option<i32> = sqlx::query_scalar(sql::TOPIC_PARTITIONS)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
                if exists.is_none() {
                    return Err($crate::MetadataError::UnknownTopic(id.to_string()));
                }
                $crate::sql::apply_config_changes!(
                    tx,
                    changes,
                    id,
                    sql::SET_TOPIC_CONFIG,
                    sql::DELETE_TOPIC_CONFIG
                );
                tx.commit().await?;
                Ok(())
            }

            async fn bump_leader_epochs(&self, id: uuid::Uuid) -> $crate::Result<Vec<i32>> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                let partitions: Option<i32> = sqlx::query_scalar(sql::TOPIC_PARTITIONS)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(partitions) = partitions else {
                    return Err($crate::MetadataError::UnknownTopic(id.to_string()));
                };
                // Partitions of a topic created before epochs were kept start at 0.
                sqlx::query(sql::INSERT_PARTITIONS)
                    .bind(id)
                    .bind(partitions)
                    .bind(0_i32)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(sql::BUMP_LEADER_EPOCHS)
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                let epochs: Vec<i32> = sqlx::query_scalar(sql::LEADER_EPOCHS)
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(epochs)
            }

            async fn bump_all_leader_epochs(
                &self,
            ) -> $crate::Result<std::collections::HashMap<uuid::Uuid, Vec<i32>>> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                sqlx::query(sql::INSERT_ALL_PARTITIONS)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(sql::BUMP_ALL_LEADER_EPOCHS)
                    .execute(&mut *tx)
                    .await?;
                let rows: Vec<sql::EpochRow> = sqlx::query_as(sql::ALL_LEADER_EPOCHS)
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(sql::epochs_by_topic(rows))
            }

            async fn broker_configs(
                &self,
            ) -> $crate::Result<
                std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
            > {
                let rows: Vec<$crate::sql::BrokerConfigRow> =
                    sqlx::query_as($crate::sql::BROKER_CONFIGS)
                        .fetch_all(&self.pool)
                        .await?;
                Ok($crate::sql::broker_configs_by_scope(rows))
            }

            async fn alter_broker_configs(
                &self,
                scope: &str,
                changes: &[$crate::ConfigChange],
            ) -> $crate::Result<()> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                // Brokers re-read the broker configs (topic defaults among them) with
                // the topics.
                sqlx::query(sql::BUMP_TOPICS_VERSION)
                    .execute(&mut *tx)
                    .await?;
                $crate::sql::apply_config_changes!(
                    tx,
                    changes,
                    scope,
                    sql::SET_BROKER_CONFIG,
                    sql::DELETE_BROKER_CONFIG
                );
                tx.commit().await?;
                Ok(())
            }

            async fn claim_group(&self, group: &str, node_id: i32) -> $crate::Result<i64> {
                let epoch: i64 = sqlx::query_scalar($crate::sql::CLAIM_GROUP)
                    .bind(group)
                    .bind(node_id)
                    .fetch_one(&self.pool)
                    .await?;
                Ok(epoch)
            }

            async fn group_claimant(&self, group: &str) -> $crate::Result<Option<i32>> {
                let node: Option<i32> = sqlx::query_scalar($crate::sql::GROUP_CLAIMANT)
                    .bind(group)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(node)
            }

            async fn group_offsets(
                &self,
                group: &str,
            ) -> $crate::Result<Vec<$crate::CommittedOffset>> {
                let rows: Vec<$crate::sql::OffsetRow> = sqlx::query_as($crate::sql::GROUP_OFFSETS)
                    .bind(group)
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows
                    .into_iter()
                    .map($crate::CommittedOffset::from)
                    .collect())
            }

            async fn committed_offsets(&self) -> $crate::Result<Vec<$crate::CommittedOffset>> {
                let rows: Vec<$crate::sql::OffsetRow> =
                    sqlx::query_as($crate::sql::COMMITTED_OFFSETS)
                        .fetch_all(&self.pool)
                        .await?;
                Ok(rows
                    .into_iter()
                    .map($crate::CommittedOffset::from)
                    .collect())
            }

            async fn commit_offsets(
                &self,
                group: &str,
                coordinator_epoch: i64,
                offsets: &[$crate::CommittedOffset],
            ) -> $crate::Result<()> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                let fenced = sqlx::query(sql::FENCE_GROUP)
                    .bind(group)
                    .bind(coordinator_epoch)
                    .execute(&mut *tx)
                    .await?;
                if fenced.rows_affected() == 0 {
                    return Err($crate::MetadataError::Fenced {
                        group: group.to_owned(),
                    });
                }
                let log_partition = $crate::offsets_topic_partition(group);
                let first: i64 = sqlx::query_scalar($crate::offset_log_sql::ADVANCE_HEAD)
                    .bind(log_partition)
                    .bind(i64::try_from(offsets.len()).unwrap_or(i64::MAX))
                    .fetch_one(&mut *tx)
                    .await?;
                for (place, offset) in (first..).zip(offsets) {
                    let upserted = sqlx::query(sql::UPSERT_OFFSET)
                        .bind(group)
                        .bind(offset.topic_id)
                        .bind(offset.partition)
                        .bind(offset.offset)
                        .bind(offset.leader_epoch)
                        .bind(offset.metadata.as_deref().map(str::as_bytes))
                        .bind(offset.commit_ms)
                        .bind(log_partition)
                        .bind(place)
                        .execute(&mut *tx)
                        .await;
                    match upserted {
                        Ok(_) => {}
                        Err(error) if sql::is_missing_topic(&error) => {
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

            async fn delete_offsets(
                &self,
                group: &str,
                coordinator_epoch: i64,
                partitions: Option<&[(uuid::Uuid, i32)]>,
            ) -> $crate::Result<()> {
                use $crate::sql;
                let mut tx = self.pool.begin().await?;
                let fenced = sqlx::query(sql::FENCE_GROUP)
                    .bind(group)
                    .bind(coordinator_epoch)
                    .execute(&mut *tx)
                    .await?;
                if fenced.rows_affected() == 0 {
                    return Err($crate::MetadataError::Fenced {
                        group: group.to_owned(),
                    });
                }
                match partitions {
                    None => {
                        sqlx::query(sql::DELETE_GROUP_OFFSETS)
                            .bind(group)
                            .execute(&mut *tx)
                            .await?;
                    }
                    Some(partitions) => {
                        for (topic_id, partition) in partitions {
                            sqlx::query(sql::DELETE_OFFSET)
                                .bind(group)
                                .bind(topic_id)
                                .bind(partition)
                                .execute(&mut *tx)
                                .await?;
                        }
                    }
                }
                tx.commit().await?;
                Ok(())
            }

            async fn allocate_producer_ids(&self, count: i64) -> $crate::Result<i64> {
                let first: i64 = sqlx::query_scalar($crate::sql::ALLOCATE_PRODUCER_IDS)
                    .bind(count)
                    .fetch_one(&self.pool)
                    .await?;
                Ok(first)
            }
        }
    };
}

pub(crate) use impl_metadata_store;
