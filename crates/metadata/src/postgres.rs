//! The shared backend: a PostgreSQL database that every broker of a cluster connects
//! to. The database must exist; its tables are created and migrated at start (sqlx
//! holds an advisory lock while migrating, so brokers starting together take turns).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use crate::Result;

/// Metadata in a PostgreSQL database.
#[derive(Debug, Clone)]
pub struct PostgresStore {
    pool: PgPool,
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:pass@host:port/db`) and
    /// migrates it.
    pub async fn connect(url: &str) -> Result<PostgresStore> {
        let options = PgConnectOptions::from_str(url)?;
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        sqlx::migrate!("./migrations/postgres").run(&pool).await?;
        let store = PostgresStore { pool };
        store.place_unlogged().await?;
        Ok(store)
    }
}

crate::sql::impl_metadata_store!(PostgresStore);
crate::offset_log_sql::impl_offset_log!(PostgresStore);
crate::catalogue_sql::impl_catalogue!(PostgresStore);
crate::cluster_sql::impl_cluster!(PostgresStore);
crate::transactions_sql::impl_transactions!(PostgresStore);
crate::delayed_sql::impl_delayed_records!(PostgresStore);
crate::credentials_sql::impl_scram_credentials!(PostgresStore);
crate::acls_sql::impl_acls!(PostgresStore);
crate::quotas_sql::impl_client_quotas!(PostgresStore);
crate::group_states_sql::impl_group_states!(PostgresStore);
crate::share_partitions_sql::impl_share_partitions!(PostgresStore);
crate::txn_checkers_sql::impl_txn_checkers!(PostgresStore);
crate::lane_presence_sql::impl_lane_presences!(PostgresStore);
crate::mirror_links_sql::impl_mirror_links!(PostgresStore);
crate::table_files_sql::impl_table_files!(PostgresStore);
crate::schema_registry_sql::impl_schema_registry!(
    PostgresStore,
    Some(crate::schema_registry_sql::ADVANCE_IDS_POSTGRES)
);
