//! The embedded backend: one SQLite file, WAL journal, `synchronous=FULL` so that a
//! change is on disk when the call returns.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use spool_model::TopicName;
use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use uuid::Uuid;

use crate::{CommittedOffset, MetadataError, MetadataStore, Result, TopicRecord};

/// Metadata in a SQLite database file.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating and migrating if needed) the database at `path`.
    pub async fn open(path: &Path) -> Result<SqliteStore> {
        let options = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(SqliteStore { pool })
    }
}

async fn insert_configs(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    topic: &TopicName,
    configs: &BTreeMap<String, String>,
) -> Result<()> {
    for (key, value) in configs {
        sqlx::query("INSERT INTO topic_configs (topic, key, value) VALUES (?, ?, ?)")
            .bind(topic.as_str())
            .bind(key)
            .bind(value)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

fn now_ms() -> i64 {
    spool_model::Timestamp::now().0
}

#[async_trait::async_trait]
impl MetadataStore for SqliteStore {
    async fn create_topic(&self, topic: &TopicRecord) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let inserted = sqlx::query("INSERT INTO topics (name, id, partitions, created_ms) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING")
            .bind(topic.name.as_str())
            .bind(topic.id.as_bytes().as_slice())
            .bind(topic.partitions)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?;
        if inserted.rows_affected() == 0 {
            return Err(MetadataError::TopicExists(topic.name.to_string()));
        }
        insert_configs(&mut tx, &topic.name, &topic.configs).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn delete_topic(&self, name: &TopicName) -> Result<()> {
        let deleted = sqlx::query("DELETE FROM topics WHERE name = ?")
            .bind(name.as_str())
            .execute(&self.pool)
            .await?;
        if deleted.rows_affected() == 0 {
            return Err(MetadataError::UnknownTopic(name.to_string()));
        }
        Ok(())
    }

    async fn set_partitions(&self, name: &TopicName, partitions: i32) -> Result<()> {
        let updated = sqlx::query("UPDATE topics SET partitions = ? WHERE name = ?")
            .bind(partitions)
            .bind(name.as_str())
            .execute(&self.pool)
            .await?;
        if updated.rows_affected() == 0 {
            return Err(MetadataError::UnknownTopic(name.to_string()));
        }
        Ok(())
    }

    async fn set_topic_configs(
        &self,
        name: &TopicName,
        configs: &BTreeMap<String, String>,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        let exists = sqlx::query("SELECT 1 FROM topics WHERE name = ?")
            .bind(name.as_str())
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Err(MetadataError::UnknownTopic(name.to_string()));
        }
        sqlx::query("DELETE FROM topic_configs WHERE topic = ?")
            .bind(name.as_str())
            .execute(&mut *tx)
            .await?;
        insert_configs(&mut tx, name, configs).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn topics(&self) -> Result<Vec<TopicRecord>> {
        let rows = sqlx::query("SELECT name, id, partitions FROM topics ORDER BY name")
            .fetch_all(&self.pool)
            .await?;
        let configs = sqlx::query("SELECT topic, key, value FROM topic_configs")
            .fetch_all(&self.pool)
            .await?;
        let mut by_topic: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for row in configs {
            by_topic
                .entry(row.try_get("topic")?)
                .or_default()
                .insert(row.try_get("key")?, row.try_get("value")?);
        }
        rows.into_iter()
            .map(|row| {
                let name: String = row.try_get("name")?;
                let id: Vec<u8> = row.try_get("id")?;
                let id = Uuid::from_slice(&id)
                    .map_err(|e| MetadataError::Corrupt(format!("topic {name} id: {e}")))?;
                Ok(TopicRecord {
                    name: TopicName::new(name.clone())
                        .map_err(|e| MetadataError::Corrupt(e.to_string()))?,
                    id,
                    partitions: row.try_get("partitions")?,
                    configs: by_topic.remove(&name).unwrap_or_default(),
                })
            })
            .collect()
    }

    async fn broker_configs(&self) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
        let rows = sqlx::query("SELECT scope, key, value FROM broker_configs")
            .fetch_all(&self.pool)
            .await?;
        let mut by_scope: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for row in rows {
            by_scope
                .entry(row.try_get("scope")?)
                .or_default()
                .insert(row.try_get("key")?, row.try_get("value")?);
        }
        Ok(by_scope)
    }

    async fn set_broker_configs(
        &self,
        scope: &str,
        configs: &BTreeMap<String, String>,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM broker_configs WHERE scope = ?")
            .bind(scope)
            .execute(&mut *tx)
            .await?;
        for (key, value) in configs {
            sqlx::query("INSERT INTO broker_configs (scope, key, value) VALUES (?, ?, ?)")
                .bind(scope)
                .bind(key)
                .bind(value)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn committed_offsets(&self) -> Result<Vec<CommittedOffset>> {
        let rows = sqlx::query(
            "SELECT group_id, topic, partition, committed, leader_epoch, metadata, commit_ms FROM group_offsets",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|row| {
                Ok(CommittedOffset {
                    group: row.try_get("group_id")?,
                    topic: row.try_get("topic")?,
                    partition: row.try_get("partition")?,
                    offset: row.try_get("committed")?,
                    leader_epoch: row.try_get("leader_epoch")?,
                    metadata: row.try_get("metadata")?,
                    commit_ms: row.try_get("commit_ms")?,
                })
            })
            .collect()
    }

    async fn commit_offsets(&self, offsets: &[CommittedOffset]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        for offset in offsets {
            sqlx::query(
                "INSERT INTO group_offsets (group_id, topic, partition, committed, leader_epoch, metadata, commit_ms) \
                 VALUES (?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (group_id, topic, partition) DO UPDATE SET \
                 committed = excluded.committed, leader_epoch = excluded.leader_epoch, \
                 metadata = excluded.metadata, commit_ms = excluded.commit_ms",
            )
            .bind(&offset.group)
            .bind(&offset.topic)
            .bind(offset.partition)
            .bind(offset.offset)
            .bind(offset.leader_epoch)
            .bind(&offset.metadata)
            .bind(offset.commit_ms)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn allocate_producer_ids(&self, count: i64) -> Result<i64> {
        let mut tx = self.pool.begin().await?;
        let row = sqlx::query("SELECT next FROM producer_ids WHERE id = 1")
            .fetch_one(&mut *tx)
            .await?;
        let first: i64 = row.try_get("next")?;
        sqlx::query("UPDATE producer_ids SET next = ? WHERE id = 1")
            .bind(first + count)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(first)
    }

    async fn delete_offsets(
        &self,
        group: &str,
        partitions: Option<&[(String, i32)]>,
    ) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        match partitions {
            None => {
                sqlx::query("DELETE FROM group_offsets WHERE group_id = ?")
                    .bind(group)
                    .execute(&mut *tx)
                    .await?;
            }
            Some(partitions) => {
                for (topic, partition) in partitions {
                    sqlx::query(
                        "DELETE FROM group_offsets WHERE group_id = ? AND topic = ? AND partition = ?",
                    )
                    .bind(group)
                    .bind(topic)
                    .bind(partition)
                    .execute(&mut *tx)
                    .await?;
                }
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, partitions: i32) -> TopicRecord {
        TopicRecord {
            name: TopicName::new(name).unwrap(),
            id: Uuid::new_v4(),
            partitions,
            configs: BTreeMap::from([("retention.ms".to_owned(), "1000".to_owned())]),
        }
    }

    #[tokio::test]
    async fn topics_survive_reopening_and_duplicates_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metadata.db");
        let orders = topic("orders", 3);
        {
            let store = SqliteStore::open(&path).await.unwrap();
            store.create_topic(&orders).await.unwrap();
            store.create_topic(&topic("payments", 1)).await.unwrap();
            assert!(matches!(
                store.create_topic(&orders).await,
                Err(MetadataError::TopicExists(_))
            ));
        }
        let store = SqliteStore::open(&path).await.unwrap();
        let topics = store.topics().await.unwrap();
        assert_eq!(topics.len(), 2);
        assert_eq!(topics[0], orders);
        store.set_partitions(&orders.name, 5).await.unwrap();
        assert_eq!(store.topics().await.unwrap()[0].partitions, 5);
        let configs = BTreeMap::from([("segment.bytes".to_owned(), "4096".to_owned())]);
        store
            .set_topic_configs(&orders.name, &configs)
            .await
            .unwrap();
        assert_eq!(store.topics().await.unwrap()[0].configs, configs);
        store.delete_topic(&orders.name).await.unwrap();
        assert!(matches!(
            store.delete_topic(&orders.name).await,
            Err(MetadataError::UnknownTopic(_))
        ));
        assert_eq!(store.topics().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn broker_configs_are_replaced_per_scope_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metadata.db");
        let cluster = BTreeMap::from([("log.retention.ms".to_owned(), "60000".to_owned())]);
        let node = BTreeMap::from([
            ("num.partitions".to_owned(), "3".to_owned()),
            ("log.retention.ms".to_owned(), "1000".to_owned()),
        ]);
        {
            let store = SqliteStore::open(&path).await.unwrap();
            assert!(store.broker_configs().await.unwrap().is_empty());
            store.set_broker_configs("", &cluster).await.unwrap();
            store.set_broker_configs("1", &node).await.unwrap();
        }
        let store = SqliteStore::open(&path).await.unwrap();
        let stored = store.broker_configs().await.unwrap();
        assert_eq!(stored.get(""), Some(&cluster));
        assert_eq!(stored.get("1"), Some(&node));
        store
            .set_broker_configs("1", &BTreeMap::new())
            .await
            .unwrap();
        let stored = store.broker_configs().await.unwrap();
        assert_eq!(stored.get("1"), None, "emptied");
        assert_eq!(stored.get(""), Some(&cluster), "other scopes untouched");
    }

    #[tokio::test]
    async fn committed_offsets_are_upserted_deleted_and_survive_reopening() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metadata.db");
        let offset = |group: &str, partition: i32, at: i64| CommittedOffset {
            group: group.to_owned(),
            topic: "orders".to_owned(),
            partition,
            offset: at,
            leader_epoch: -1,
            metadata: Some(format!("at {at}")),
            commit_ms: 1000 + at,
        };
        {
            let store = SqliteStore::open(&path).await.unwrap();
            store
                .commit_offsets(&[offset("a", 0, 5), offset("a", 1, 7), offset("b", 0, 1)])
                .await
                .unwrap();
            store.commit_offsets(&[offset("a", 0, 9)]).await.unwrap();
        }
        let store = SqliteStore::open(&path).await.unwrap();
        let mut stored = store.committed_offsets().await.unwrap();
        stored.sort_by(|x, y| (&x.group, x.partition).cmp(&(&y.group, y.partition)));
        assert_eq!(
            stored,
            vec![offset("a", 0, 9), offset("a", 1, 7), offset("b", 0, 1)]
        );
        store
            .delete_offsets("a", Some(&[("orders".to_owned(), 1)]))
            .await
            .unwrap();
        store.delete_offsets("b", None).await.unwrap();
        assert_eq!(
            store.committed_offsets().await.unwrap(),
            vec![offset("a", 0, 9)]
        );
    }

    #[tokio::test]
    async fn producer_ids_are_never_handed_out_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metadata.db");
        let first = {
            let store = SqliteStore::open(&path).await.unwrap();
            assert_eq!(store.allocate_producer_ids(1000).await.unwrap(), 0);
            store.allocate_producer_ids(1000).await.unwrap()
        };
        assert_eq!(first, 1000);
        let store = SqliteStore::open(&path).await.unwrap();
        assert_eq!(
            store.allocate_producer_ids(10).await.unwrap(),
            2000,
            "after a reopen too"
        );
    }
}
