//! The embedded backend: one SQLite file, WAL journal, `synchronous=FULL` so that a
//! change is on disk when the call returns.

use std::path::Path;
use std::str::FromStr;

use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::Result;

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
        let store = SqliteStore { pool };
        store.place_unlogged().await?;
        Ok(store)
    }

    /// A database in memory, gone with the store: for a broker in a test that needs
    /// no metadata file. One connection, kept open for as long as the store lives
    /// (an in-memory database lives as long as its connection).
    pub async fn in_memory() -> Result<SqliteStore> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")?.foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/sqlite").run(&pool).await?;
        Ok(SqliteStore { pool })
    }
}

crate::sql::impl_metadata_store!(SqliteStore);
crate::offset_log_sql::impl_offset_log!(SqliteStore);
crate::catalogue_sql::impl_catalogue!(SqliteStore);
crate::cluster_sql::impl_cluster!(SqliteStore);
crate::transactions_sql::impl_transactions!(SqliteStore);
crate::delayed_sql::impl_delayed_records!(SqliteStore);
crate::credentials_sql::impl_scram_credentials!(SqliteStore);
crate::acls_sql::impl_acls!(SqliteStore);
crate::quotas_sql::impl_client_quotas!(SqliteStore);
crate::group_states_sql::impl_group_states!(SqliteStore);
crate::share_partitions_sql::impl_share_partitions!(SqliteStore);
crate::txn_checkers_sql::impl_txn_checkers!(SqliteStore);
crate::lane_presence_sql::impl_lane_presences!(SqliteStore);
crate::mirror_links_sql::impl_mirror_links!(SqliteStore);
crate::table_files_sql::impl_table_files!(SqliteStore);
crate::schema_registry_sql::impl_schema_registry!(SqliteStore, None);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MetadataStore;

    /// A database written by the version before topic ids (migrations 0001-0004)
    /// keeps its topics, configs and the offsets of existing topics; rows of topics
    /// deleted before are dropped.
    #[tokio::test]
    async fn a_database_from_before_topic_ids_is_migrated() {
        let dir = tempfile::tempdir().unwrap();
        let old_migrations = dir.path().join("old");
        std::fs::create_dir(&old_migrations).unwrap();
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite");
        for entry in std::fs::read_dir(&source).unwrap() {
            let entry = entry.unwrap();
            if entry.file_name().to_string_lossy().as_ref() < "0005" {
                std::fs::copy(entry.path(), old_migrations.join(entry.file_name())).unwrap();
            }
        }
        let path = dir.path().join("metadata.db");
        {
            let options = SqliteConnectOptions::from_str("sqlite://")
                .unwrap()
                .filename(&path)
                .create_if_missing(true);
            let pool = SqlitePool::connect_with(options).await.unwrap();
            sqlx::migrate::Migrator::new(old_migrations.as_path())
                .await
                .unwrap()
                .run(&pool)
                .await
                .unwrap();
            let id = uuid::Uuid::new_v4();
            for statement in [
                "INSERT INTO topics (name, id, partitions, created_ms) VALUES ('orders', $1, 2, 0)",
                "INSERT INTO topic_configs (topic, key, value) VALUES ('orders', 'retention.ms', '5')",
                "INSERT INTO group_offsets VALUES ('g', 'orders', 1, 42, -1, NULL, 7)",
                "INSERT INTO group_offsets VALUES ('g', 'deleted', 0, 9, -1, NULL, 7)",
            ] {
                sqlx::query(statement)
                    .bind(id)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            pool.close().await;
        }
        let store = SqliteStore::open(&path).await.unwrap();
        let topics = store.topics().await.unwrap();
        assert_eq!(topics.len(), 1);
        assert_eq!(topics[0].configs["retention.ms"], "5");
        let offsets = store.committed_offsets().await.unwrap();
        assert_eq!(offsets.len(), 1, "{offsets:?}");
        assert_eq!(
            (
                offsets[0].topic.as_str(),
                offsets[0].topic_id,
                offsets[0].offset
            ),
            ("orders", topics[0].id, 42)
        );
        assert_eq!(
            store.bump_leader_epochs(topics[0].id).await.unwrap(),
            vec![1, 1],
            "partition rows made at the first bump"
        );
    }
}
