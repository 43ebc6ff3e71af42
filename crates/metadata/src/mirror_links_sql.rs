//! The SQL of [`MirrorLinks`](crate::MirrorLinks), shared by both backends. The
//! source's settings and the failed-over topics are stored as JSON (a PEM value holds
//! line breaks).

pub(crate) const UPSERT: &str = "INSERT INTO mirror_links \
     (name, source, source_config, topics, groups_regex, start_at, paused, failed_over, created_ms) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
     ON CONFLICT (name) DO UPDATE SET source = excluded.source, \
     source_config = excluded.source_config, topics = excluded.topics, \
     groups_regex = excluded.groups_regex, start_at = excluded.start_at, \
     paused = excluded.paused, failed_over = excluded.failed_over";
pub(crate) const ALL: &str = "SELECT name, source, source_config, topics, groups_regex, \
     start_at, paused, failed_over, created_ms FROM mirror_links ORDER BY name";
pub(crate) const DELETE: &str = "DELETE FROM mirror_links WHERE name = $1";

/// A row of `mirror_links`.
#[derive(sqlx::FromRow)]
pub(crate) struct Row {
    name: String,
    source: String,
    source_config: String,
    topics: String,
    groups_regex: Option<String>,
    start_at: String,
    paused: bool,
    failed_over: String,
    created_ms: i64,
}

impl Row {
    pub(crate) fn record(self) -> crate::MirrorLinkRecord {
        crate::MirrorLinkRecord {
            name: self.name,
            source: self.source,
            source_config: serde_json::from_str(&self.source_config).unwrap_or_default(),
            topics: self.topics,
            groups: self.groups_regex,
            start: self.start_at,
            paused: self.paused,
            failed_over: serde_json::from_str(&self.failed_over).unwrap_or_default(),
            created_ms: self.created_ms,
        }
    }
}

/// Implements [`MirrorLinks`](crate::MirrorLinks) for a store with a `pool`.
macro_rules! impl_mirror_links {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::MirrorLinks for $store {
            async fn put_mirror_link(
                &self,
                record: &$crate::MirrorLinkRecord,
            ) -> $crate::Result<()> {
                use $crate::mirror_links_sql as sql;
                sqlx::query(sql::UPSERT)
                    .bind(&record.name)
                    .bind(&record.source)
                    .bind(serde_json::to_string(&record.source_config).unwrap_or_default())
                    .bind(&record.topics)
                    .bind(&record.groups)
                    .bind(&record.start)
                    .bind(record.paused)
                    .bind(serde_json::to_string(&record.failed_over).unwrap_or_default())
                    .bind(record.created_ms)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn mirror_links(&self) -> $crate::Result<Vec<$crate::MirrorLinkRecord>> {
                use $crate::mirror_links_sql as sql;
                let rows: Vec<sql::Row> = sqlx::query_as(sql::ALL).fetch_all(&self.pool).await?;
                Ok(rows.into_iter().map(sql::Row::record).collect())
            }

            async fn remove_mirror_link(&self, name: &str) -> $crate::Result<bool> {
                let deleted = sqlx::query($crate::mirror_links_sql::DELETE)
                    .bind(name)
                    .execute(&self.pool)
                    .await?;
                Ok(deleted.rows_affected() > 0)
            }
        }
    };
}

pub(crate) use impl_mirror_links;
