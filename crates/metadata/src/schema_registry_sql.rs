//! The SQL of [`SchemaRegistryStore`](crate::SchemaRegistryStore), shared by both
//! backends.

pub(crate) const PUT_SCHEMA: &str = "INSERT INTO registry_schemas \
     (schema_type, schema_text, refs, fingerprint) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (fingerprint) DO NOTHING";
pub(crate) const IMPORT_SCHEMA: &str = "INSERT INTO registry_schemas \
     (id, schema_type, schema_text, refs, fingerprint) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT DO NOTHING";
/// PostgreSQL's identity sequence does not see ids inserted with a value: moved past
/// them, never back (ids it handed out stay used). SQLite's AUTOINCREMENT does this by
/// itself.
pub(crate) const ADVANCE_IDS_POSTGRES: &str = "WITH sequence AS \
     (SELECT pg_get_serial_sequence('registry_schemas', 'id') AS name) \
     SELECT setval(name, GREATEST((SELECT MAX(id) FROM registry_schemas), nextval(name))) \
     FROM sequence";
pub(crate) const SCHEMA_ID: &str = "SELECT id FROM registry_schemas WHERE fingerprint = $1";
pub(crate) const SCHEMA: &str = "SELECT id, schema_type, schema_text, refs, fingerprint \
     FROM registry_schemas WHERE id = $1";
pub(crate) const PUT_VERSION: &str = "INSERT INTO registry_versions \
     (subject, version, schema_id, deleted) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (subject, version) DO NOTHING";
pub(crate) const VERSIONS_OF: &str = "SELECT subject, version, schema_id, deleted \
     FROM registry_versions WHERE subject = $1 ORDER BY version";
pub(crate) const ALL_VERSIONS: &str = "SELECT subject, version, schema_id, deleted \
     FROM registry_versions ORDER BY subject, version";
pub(crate) const VERSIONS_OF_SCHEMA: &str = "SELECT subject, version, schema_id, deleted \
     FROM registry_versions WHERE schema_id = $1 ORDER BY subject, version";
pub(crate) const SOFT_DELETE: &str = "UPDATE registry_versions SET deleted = TRUE \
     WHERE subject = $1 AND ($2 IS NULL OR version = $2) AND NOT deleted";
pub(crate) const REMOVE: &str = "DELETE FROM registry_versions \
     WHERE subject = $1 AND ($2 IS NULL OR version = $2) AND deleted";
pub(crate) const CONFIG: &str =
    "SELECT compatibility, mode FROM registry_configs WHERE subject = $1";
pub(crate) const PUT_CONFIG: &str = "INSERT INTO registry_configs (subject, compatibility, mode) \
     VALUES ($1, $2, $3) ON CONFLICT (subject) DO UPDATE SET \
     compatibility = excluded.compatibility, mode = excluded.mode";
pub(crate) const PUT_COMPATIBILITY: &str = "INSERT INTO registry_configs \
     (subject, compatibility, mode) VALUES ($1, $2, NULL) \
     ON CONFLICT (subject) DO UPDATE SET compatibility = excluded.compatibility";
pub(crate) const PUT_MODE: &str = "INSERT INTO registry_configs \
     (subject, compatibility, mode) VALUES ($1, NULL, $2) \
     ON CONFLICT (subject) DO UPDATE SET mode = excluded.mode";
/// A row with nothing set left is removed.
pub(crate) const PRUNE_CONFIG: &str = "DELETE FROM registry_configs \
     WHERE subject = $1 AND compatibility IS NULL AND mode IS NULL";
pub(crate) const REMOVE_CONFIG: &str = "DELETE FROM registry_configs WHERE subject = $1";

/// A row of `registry_versions`.
pub(crate) type VersionRow = (String, i32, i32, bool);

pub(crate) fn version(row: VersionRow) -> crate::SubjectVersionRecord {
    let (subject, version, schema_id, deleted) = row;
    crate::SubjectVersionRecord {
        subject,
        version,
        schema_id,
        deleted,
    }
}

/// Implements [`SchemaRegistryStore`](crate::SchemaRegistryStore) for a store with a
/// `pool`.
macro_rules! impl_schema_registry {
    ($store:ty, $advance_ids:expr) => {
        #[async_trait::async_trait]
        impl $crate::SchemaRegistryStore for $store {
            async fn put_registry_schema(
                &self,
                record: &$crate::RegistrySchemaRecord,
            ) -> $crate::Result<i32> {
                use $crate::schema_registry_sql as sql;
                sqlx::query(sql::PUT_SCHEMA)
                    .bind(&record.schema_type)
                    .bind(&record.schema)
                    .bind(&record.references)
                    .bind(&record.fingerprint)
                    .execute(&self.pool)
                    .await?;
                let (id,): (i32,) = sqlx::query_as(sql::SCHEMA_ID)
                    .bind(&record.fingerprint)
                    .fetch_one(&self.pool)
                    .await?;
                Ok(id)
            }

            async fn import_registry_schema(
                &self,
                record: &$crate::RegistrySchemaRecord,
            ) -> $crate::Result<bool> {
                use $crate::schema_registry_sql as sql;
                let mut transaction = self.pool.begin().await?;
                sqlx::query(sql::IMPORT_SCHEMA)
                    .bind(record.id)
                    .bind(&record.schema_type)
                    .bind(&record.schema)
                    .bind(&record.references)
                    .bind(&record.fingerprint)
                    .execute(&mut *transaction)
                    .await?;
                let advance: Option<&str> = $advance_ids;
                if let Some(advance) = advance {
                    sqlx::query(advance).execute(&mut *transaction).await?;
                }
                let found: Option<(i32,)> = sqlx::query_as(sql::SCHEMA_ID)
                    .bind(&record.fingerprint)
                    .fetch_optional(&mut *transaction)
                    .await?;
                transaction.commit().await?;
                Ok(found.is_some_and(|(id,)| id == record.id))
            }

            async fn registry_schema_id(&self, fingerprint: &str) -> $crate::Result<Option<i32>> {
                let row: Option<(i32,)> = sqlx::query_as($crate::schema_registry_sql::SCHEMA_ID)
                    .bind(fingerprint)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(row.map(|(id,)| id))
            }

            async fn registry_schema(
                &self,
                id: i32,
            ) -> $crate::Result<Option<$crate::RegistrySchemaRecord>> {
                let row: Option<(i32, String, String, String, String)> =
                    sqlx::query_as($crate::schema_registry_sql::SCHEMA)
                        .bind(id)
                        .fetch_optional(&self.pool)
                        .await?;
                Ok(
                    row.map(|(id, schema_type, schema, references, fingerprint)| {
                        $crate::RegistrySchemaRecord {
                            id,
                            schema_type,
                            schema,
                            references,
                            fingerprint,
                        }
                    }),
                )
            }

            async fn put_subject_version(
                &self,
                record: &$crate::SubjectVersionRecord,
            ) -> $crate::Result<bool> {
                let done = sqlx::query($crate::schema_registry_sql::PUT_VERSION)
                    .bind(&record.subject)
                    .bind(record.version)
                    .bind(record.schema_id)
                    .bind(record.deleted)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn subject_versions(
                &self,
                subject: Option<&str>,
            ) -> $crate::Result<Vec<$crate::SubjectVersionRecord>> {
                use $crate::schema_registry_sql as sql;
                let rows: Vec<sql::VersionRow> = match subject {
                    Some(subject) => {
                        sqlx::query_as(sql::VERSIONS_OF)
                            .bind(subject)
                            .fetch_all(&self.pool)
                            .await?
                    }
                    None => {
                        sqlx::query_as(sql::ALL_VERSIONS)
                            .fetch_all(&self.pool)
                            .await?
                    }
                };
                Ok(rows.into_iter().map(sql::version).collect())
            }

            async fn versions_of_schema(
                &self,
                id: i32,
            ) -> $crate::Result<Vec<$crate::SubjectVersionRecord>> {
                use $crate::schema_registry_sql as sql;
                let rows: Vec<sql::VersionRow> = sqlx::query_as(sql::VERSIONS_OF_SCHEMA)
                    .bind(id)
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows.into_iter().map(sql::version).collect())
            }

            async fn soft_delete_versions(
                &self,
                subject: &str,
                version: Option<i32>,
            ) -> $crate::Result<u64> {
                let done = sqlx::query($crate::schema_registry_sql::SOFT_DELETE)
                    .bind(subject)
                    .bind(version)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected())
            }

            async fn remove_versions(
                &self,
                subject: &str,
                version: Option<i32>,
            ) -> $crate::Result<u64> {
                let done = sqlx::query($crate::schema_registry_sql::REMOVE)
                    .bind(subject)
                    .bind(version)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected())
            }

            async fn registry_config(
                &self,
                subject: &str,
            ) -> $crate::Result<$crate::RegistryConfigRecord> {
                let row: Option<(Option<String>, Option<String>)> =
                    sqlx::query_as($crate::schema_registry_sql::CONFIG)
                        .bind(subject)
                        .fetch_optional(&self.pool)
                        .await?;
                Ok(row
                    .map(|(compatibility, mode)| $crate::RegistryConfigRecord {
                        compatibility,
                        mode,
                    })
                    .unwrap_or_default())
            }

            async fn put_registry_setting(
                &self,
                subject: &str,
                setting: $crate::RegistrySetting,
                value: Option<&str>,
            ) -> $crate::Result<()> {
                use $crate::schema_registry_sql as sql;
                let statement = match setting {
                    $crate::RegistrySetting::Compatibility => sql::PUT_COMPATIBILITY,
                    $crate::RegistrySetting::Mode => sql::PUT_MODE,
                };
                sqlx::query(statement)
                    .bind(subject)
                    .bind(value)
                    .execute(&self.pool)
                    .await?;
                if value.is_none() {
                    sqlx::query(sql::PRUNE_CONFIG)
                        .bind(subject)
                        .execute(&self.pool)
                        .await?;
                }
                Ok(())
            }

            async fn put_registry_config(
                &self,
                subject: &str,
                config: &$crate::RegistryConfigRecord,
            ) -> $crate::Result<()> {
                use $crate::schema_registry_sql as sql;
                if config.compatibility.is_none() && config.mode.is_none() {
                    sqlx::query(sql::REMOVE_CONFIG)
                        .bind(subject)
                        .execute(&self.pool)
                        .await?;
                } else {
                    sqlx::query(sql::PUT_CONFIG)
                        .bind(subject)
                        .bind(&config.compatibility)
                        .bind(&config.mode)
                        .execute(&self.pool)
                        .await?;
                }
                Ok(())
            }
        }
    };
}

pub(crate) use impl_schema_registry;
