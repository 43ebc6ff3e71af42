//! The SQL of [`DelayedRecords`](crate::DelayedRecords), shared by both backends as
//! `sql.rs` is.

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
pub(crate) const PENDING: &str = "SELECT COUNT(*), MIN(due_ms) FROM delayed_records \
     WHERE topic_id = $1 AND partition = $2";
/// By the `(topic_id, partition, due_ms)` index: one row read, however many wait.
pub(crate) const NEXT_DUE: &str = "SELECT due_ms FROM delayed_records \
     WHERE topic_id = $1 AND partition = $2 ORDER BY due_ms LIMIT 1";

/// Holds one statement names at most: a round's deliveries (hundreds) take a few
/// statements, not one each (per-row statements made the store the bottleneck of
/// delivery at some 10,000 records a second).
pub(crate) const CHUNK: usize = 200;

/// `$first, $first+1, …`: `count` parameters.
fn parameters(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|n| format!("${n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Notes `count` holds: parameters topic, partition, then (offset, due) pairs. A hold
/// of a topic deleted meanwhile is not noted (an insert refused by the foreign key
/// would abort the whole store transaction on PostgreSQL).
pub(crate) fn note_holds(count: usize) -> String {
    let rows = (0..count)
        .map(|i| format!("(${}, ${})", 3 + 2 * i, 4 + 2 * i))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "INSERT INTO delayed_records (topic_id, partition, hold_offset, due_ms) \
         SELECT $1, $2, v.column1, v.column2 FROM (VALUES {rows}) AS v \
         WHERE EXISTS (SELECT 1 FROM topics WHERE id = $1) \
         ON CONFLICT (topic_id, partition, hold_offset) DO NOTHING"
    )
}

/// Marks `count` holds as being delivered: topic, partition, log end, then offsets.
pub(crate) fn begin_delivery(count: usize) -> String {
    format!(
        "UPDATE delayed_records SET delivering_from = $3 \
         WHERE topic_id = $1 AND partition = $2 AND hold_offset IN ({})",
        parameters(4, count)
    )
}

/// Forgets `count` holds: topic, partition, then offsets.
pub(crate) fn delivered(count: usize) -> String {
    format!(
        "DELETE FROM delayed_records \
         WHERE topic_id = $1 AND partition = $2 AND hold_offset IN ({})",
        parameters(3, count)
    )
}

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
                for chunk in holds.chunks(sql::CHUNK) {
                    let statement = sql::note_holds(chunk.len());
                    let mut query = sqlx::query(&statement)
                        .bind(key.topic_id)
                        .bind(key.partition);
                    for (offset, due_ms) in chunk {
                        query = query.bind(offset).bind(due_ms);
                    }
                    query.execute(&mut *tx).await?;
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
                for chunk in hold_offsets.chunks($crate::delayed_sql::CHUNK) {
                    let statement = $crate::delayed_sql::begin_delivery(chunk.len());
                    let mut query = sqlx::query(&statement)
                        .bind(key.topic_id)
                        .bind(key.partition)
                        .bind(log_end);
                    for offset in chunk {
                        query = query.bind(offset);
                    }
                    query.execute(&mut *tx).await?;
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
                for chunk in hold_offsets.chunks($crate::delayed_sql::CHUNK) {
                    let statement = $crate::delayed_sql::delivered(chunk.len());
                    let mut query = sqlx::query(&statement)
                        .bind(key.topic_id)
                        .bind(key.partition);
                    for offset in chunk {
                        query = query.bind(offset);
                    }
                    query.execute(&mut *tx).await?;
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

            async fn next_hold_due(
                &self,
                key: $crate::PartitionKey,
            ) -> $crate::Result<Option<i64>> {
                Ok(sqlx::query_scalar($crate::delayed_sql::NEXT_DUE)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .fetch_optional(&self.pool)
                    .await?)
            }
        }
    };
}

pub(crate) use impl_delayed_records;
