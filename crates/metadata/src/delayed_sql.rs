//! The SQL of [`DelayedRecords`](crate::DelayedRecords), shared by both backends as
//! `sql.rs` is.

/// A hold of a topic deleted meanwhile is not noted (an insert refused by the foreign
/// key would abort the whole store transaction on PostgreSQL).
pub(crate) const NOTE_HOLD: &str = "INSERT INTO delayed_records \
     (topic_id, partition, hold_offset, due_ms) \
     SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM topics WHERE id = $1) \
     ON CONFLICT (topic_id, partition, hold_offset) DO NOTHING";
pub(crate) const NOTE_THROUGH: &str = "INSERT INTO delayed_noted (topic_id, partition, through) \
     SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM topics WHERE id = $1) \
     ON CONFLICT (topic_id, partition) DO UPDATE SET \
     through = CASE WHEN excluded.through > delayed_noted.through \
     THEN excluded.through ELSE delayed_noted.through END";
pub(crate) const NOTED_THROUGH: &str =
    "SELECT through FROM delayed_noted WHERE topic_id = $1 AND partition = $2";
pub(crate) const DUE: &str = "SELECT hold_offset, due_ms, delivering_from FROM delayed_records \
     WHERE topic_id = $1 AND partition = $2 AND due_ms <= $3 \
     ORDER BY due_ms, hold_offset LIMIT $4";
pub(crate) const BEGIN_DELIVERY: &str = "UPDATE delayed_records SET delivering_from = $4 \
     WHERE topic_id = $1 AND partition = $2 AND hold_offset = $3";
pub(crate) const DELIVERED: &str = "DELETE FROM delayed_records \
     WHERE topic_id = $1 AND partition = $2 AND hold_offset = $3";
pub(crate) const PENDING: &str = "SELECT COUNT(*), MIN(due_ms) FROM delayed_records \
     WHERE topic_id = $1 AND partition = $2";

/// Implements [`DelayedRecords`](crate::DelayedRecords) for a store with a `pool`.
macro_rules! impl_delayed_records {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::DelayedRecords for $store {
            async fn note_holds(
                &self,
                key: $crate::PartitionKey,
                holds: &[(i64, i64)],
                through: i64,
            ) -> $crate::Result<()> {
                use $crate::delayed_sql as sql;
                let mut tx = self.pool.begin().await?;
                for (offset, due_ms) in holds {
                    sqlx::query(sql::NOTE_HOLD)
                        .bind(key.topic_id)
                        .bind(key.partition)
                        .bind(offset)
                        .bind(due_ms)
                        .execute(&mut *tx)
                        .await?;
                }
                sqlx::query(sql::NOTE_THROUGH)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(through)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(())
            }

            async fn holds_noted_through(&self, key: $crate::PartitionKey) -> $crate::Result<i64> {
                let through: Option<i64> = sqlx::query_scalar($crate::delayed_sql::NOTED_THROUGH)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(through.unwrap_or(0))
            }

            async fn due_holds(
                &self,
                key: $crate::PartitionKey,
                now_ms: i64,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::DelayedRecord>> {
                let rows: Vec<(i64, i64, Option<i64>)> = sqlx::query_as($crate::delayed_sql::DUE)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(now_ms)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows
                    .into_iter()
                    .map(
                        |(hold_offset, due_ms, delivering_from)| $crate::DelayedRecord {
                            key,
                            hold_offset,
                            due_ms,
                            delivering_from,
                        },
                    )
                    .collect())
            }

            async fn begin_delivery(
                &self,
                key: $crate::PartitionKey,
                hold_offsets: &[i64],
                log_end: i64,
            ) -> $crate::Result<()> {
                let mut tx = self.pool.begin().await?;
                for offset in hold_offsets {
                    sqlx::query($crate::delayed_sql::BEGIN_DELIVERY)
                        .bind(key.topic_id)
                        .bind(key.partition)
                        .bind(offset)
                        .bind(log_end)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn holds_delivered(
                &self,
                key: $crate::PartitionKey,
                hold_offsets: &[i64],
            ) -> $crate::Result<()> {
                let mut tx = self.pool.begin().await?;
                for offset in hold_offsets {
                    sqlx::query($crate::delayed_sql::DELIVERED)
                        .bind(key.topic_id)
                        .bind(key.partition)
                        .bind(offset)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn pending_holds(
                &self,
                key: $crate::PartitionKey,
            ) -> $crate::Result<$crate::PendingHolds> {
                let (count, next_due_ms): (i64, Option<i64>) =
                    sqlx::query_as($crate::delayed_sql::PENDING)
                        .bind(key.topic_id)
                        .bind(key.partition)
                        .fetch_one(&self.pool)
                        .await?;
                Ok($crate::PendingHolds { count, next_due_ms })
            }
        }
    };
}

pub(crate) use impl_delayed_records;
