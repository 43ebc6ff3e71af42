//! The SQL of [`TableFiles`](crate::TableFiles), shared by both backends.

pub(crate) const ADD: &str = "INSERT INTO table_files (topic_id, partition, first_offset, \
     next_offset, location, data_file, record_count, size_bytes, dead_location, dead_data_file, \
     dead_record_count, written_ms) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
     ON CONFLICT (topic_id, partition, first_offset) DO NOTHING";
pub(crate) const OF_TOPIC: &str = "SELECT topic_id, partition, first_offset, next_offset, \
     location, data_file, record_count, size_bytes, dead_location, dead_data_file, \
     dead_record_count, written_ms FROM table_files \
     WHERE topic_id = $1 ORDER BY partition, first_offset";
pub(crate) const REMOVE: &str = "DELETE FROM table_files \
     WHERE topic_id = $1 AND partition = $2 AND first_offset = $3";
pub(crate) const PUT_STATUS: &str = "INSERT INTO table_status (topic_id, node_id, status, \
     updated_ms) VALUES ($1, $2, $3, $4) ON CONFLICT (topic_id, node_id) DO UPDATE SET \
     status = excluded.status, updated_ms = excluded.updated_ms";
pub(crate) const STATUSES: &str = "SELECT node_id, status, updated_ms FROM table_status \
     WHERE topic_id = $1 ORDER BY node_id";

/// A row of `table_files`.
#[derive(sqlx::FromRow)]
pub(crate) struct Row {
    topic_id: uuid::Uuid,
    partition: i32,
    first_offset: i64,
    next_offset: i64,
    location: String,
    data_file: String,
    record_count: i64,
    size_bytes: i64,
    dead_location: String,
    dead_data_file: String,
    dead_record_count: i64,
    written_ms: i64,
}

impl Row {
    pub(crate) fn record(self) -> crate::TableFileRecord {
        crate::TableFileRecord {
            topic_id: self.topic_id,
            partition: self.partition,
            first_offset: self.first_offset,
            next_offset: self.next_offset,
            location: self.location,
            data_file: self.data_file,
            record_count: self.record_count,
            size_bytes: self.size_bytes,
            dead_location: self.dead_location,
            dead_data_file: self.dead_data_file,
            dead_record_count: self.dead_record_count,
            written_ms: self.written_ms,
        }
    }
}

/// Implements [`TableFiles`](crate::TableFiles) for a store with a `pool`.
macro_rules! impl_table_files {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::TableFiles for $store {
            async fn add_table_file(
                &self,
                record: &$crate::TableFileRecord,
            ) -> $crate::Result<bool> {
                let done = sqlx::query($crate::table_files_sql::ADD)
                    .bind(record.topic_id)
                    .bind(record.partition)
                    .bind(record.first_offset)
                    .bind(record.next_offset)
                    .bind(&record.location)
                    .bind(&record.data_file)
                    .bind(record.record_count)
                    .bind(record.size_bytes)
                    .bind(&record.dead_location)
                    .bind(&record.dead_data_file)
                    .bind(record.dead_record_count)
                    .bind(record.written_ms)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn table_files(
                &self,
                topic_id: uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::TableFileRecord>> {
                use $crate::table_files_sql as sql;
                let rows: Vec<sql::Row> = sqlx::query_as(sql::OF_TOPIC)
                    .bind(topic_id)
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows.into_iter().map(sql::Row::record).collect())
            }

            async fn remove_table_file(
                &self,
                topic_id: uuid::Uuid,
                partition: i32,
                first_offset: i64,
            ) -> $crate::Result<bool> {
                let done = sqlx::query($crate::table_files_sql::REMOVE)
                    .bind(topic_id)
                    .bind(partition)
                    .bind(first_offset)
                    .execute(&self.pool)
                    .await?;
                Ok(done.rows_affected() > 0)
            }

            async fn put_table_status(
                &self,
                topic_id: uuid::Uuid,
                node_id: i32,
                status: &str,
                now_ms: i64,
            ) -> $crate::Result<()> {
                sqlx::query($crate::table_files_sql::PUT_STATUS)
                    .bind(topic_id)
                    .bind(node_id)
                    .bind(status)
                    .bind(now_ms)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn table_statuses(
                &self,
                topic_id: uuid::Uuid,
            ) -> $crate::Result<Vec<$crate::TableStatusRecord>> {
                let rows: Vec<(i32, String, i64)> =
                    sqlx::query_as($crate::table_files_sql::STATUSES)
                        .bind(topic_id)
                        .fetch_all(&self.pool)
                        .await?;
                Ok(rows
                    .into_iter()
                    .map(|(node_id, status, updated_ms)| $crate::TableStatusRecord {
                        node_id,
                        status,
                        updated_ms,
                    })
                    .collect())
            }
        }
    };
}

pub(crate) use impl_table_files;
