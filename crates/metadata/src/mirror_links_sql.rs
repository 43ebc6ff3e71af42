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
pub(crate) const DELETE_STATUS: &str = "DELETE FROM mirror_status WHERE link = $1";
pub(crate) const PUT_STATUS: &str = "INSERT INTO mirror_status (link, node_id, status, updated_ms) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (link, node_id) DO UPDATE SET \
     status = excluded.status, updated_ms = excluded.updated_ms";
pub(crate) const STATUSES: &str = "SELECT node_id, status, updated_ms FROM mirror_status \
     WHERE link = $1 ORDER BY node_id";

pub(crate) const PUT_FAILOVER: &str = "INSERT INTO mirror_failovers \
     (topic_id, partition, log_end, producer_id_floor, settled_ms) VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (topic_id, partition) DO NOTHING";
pub(crate) const FAILOVER: &str = "SELECT log_end, producer_id_floor, settled_ms \
     FROM mirror_failovers WHERE topic_id = $1 AND partition = $2";
pub(crate) const FAILOVER_FLOOR: &str = "SELECT MAX(producer_id_floor) FROM mirror_failovers";

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
                use $crate::mirror_links_sql as sql;
                let mut tx = self.pool.begin().await?;
                sqlx::query(sql::DELETE_STATUS)
                    .bind(name)
                    .execute(&mut *tx)
                    .await?;
                let deleted = sqlx::query(sql::DELETE)
                    .bind(name)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(deleted.rows_affected() > 0)
            }

            async fn put_mirror_status(
                &self,
                link: &str,
                node_id: i32,
                status: &str,
                now_ms: i64,
            ) -> $crate::Result<()> {
                sqlx::query($crate::mirror_links_sql::PUT_STATUS)
                    .bind(link)
                    .bind(node_id)
                    .bind(status)
                    .bind(now_ms)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn mirror_statuses(
                &self,
                link: &str,
            ) -> $crate::Result<Vec<$crate::MirrorStatusRecord>> {
                let rows: Vec<(i32, String, i64)> =
                    sqlx::query_as($crate::mirror_links_sql::STATUSES)
                        .bind(link)
                        .fetch_all(&self.pool)
                        .await?;
                Ok(rows
                    .into_iter()
                    .map(|(node_id, status, updated_ms)| $crate::MirrorStatusRecord {
                        node_id,
                        status,
                        updated_ms,
                    })
                    .collect())
            }

            async fn put_mirror_failover(
                &self,
                record: &$crate::MirrorFailoverRecord,
            ) -> $crate::Result<bool> {
                let done = sqlx::query($crate::mirror_links_sql::PUT_FAILOVER)
                    .bind(record.topic_id)
                    .bind(record.partition)
                    .bind(record.log_end)
                    .bind(record.producer_id_floor)
                    .bind(record.settled_ms)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn mirror_failover(
                &self,
                topic_id: uuid::Uuid,
                partition: i32,
            ) -> $crate::Result<Option<$crate::MirrorFailoverRecord>> {
                let row: Option<(i64, i64, i64)> =
                    sqlx::query_as($crate::mirror_links_sql::FAILOVER)
                        .bind(topic_id)
                        .bind(partition)
                        .fetch_optional(&self.pool)
                        .await?;
                Ok(row.map(|(log_end, producer_id_floor, settled_ms)| {
                    $crate::MirrorFailoverRecord {
                        topic_id,
                        partition,
                        log_end,
                        producer_id_floor,
                        settled_ms,
                    }
                }))
            }

            async fn mirror_failover_floor(&self) -> $crate::Result<Option<i64>> {
                let (floor,): (Option<i64>,) =
                    sqlx::query_as($crate::mirror_links_sql::FAILOVER_FLOOR)
                        .fetch_one(&self.pool)
                        .await?;
                Ok(floor)
            }
        }
    };
}

pub(crate) use impl_mirror_links;
