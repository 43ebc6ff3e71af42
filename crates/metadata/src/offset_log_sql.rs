//! The SQL of [`OffsetLog`](crate::OffsetLog), shared by both backends, and the steps
//! that give each committed offset its place in the log as it is stored.
//!
//! A partition's head (`offset_log_heads.next`) is advanced in the transaction that
//! stores the offsets, so its row lock orders the commits of one partition and a
//! reader that reads the head first, then the records below it, never misses a record
//! committed later at a lower offset.

use uuid::Uuid;

/// Takes `$2` offsets of partition `$1`'s log; returns the first.
pub(crate) const ADVANCE_HEAD: &str = "UPDATE offset_log_heads SET next = next + $2 \
     WHERE log_partition = $1 RETURNING next - $2";
pub(crate) const HEAD: &str = "SELECT next FROM offset_log_heads WHERE log_partition = $1";
pub(crate) const RECORDS: &str = "SELECT o.log_offset, o.group_id, t.name AS topic, \
     o.topic_id, o.partition, o.committed, o.leader_epoch, o.metadata, o.commit_ms \
     FROM group_offsets o JOIN topics t ON t.id = o.topic_id \
     WHERE o.log_partition = $1 AND o.log_offset >= $2 AND o.log_offset < $3 \
     ORDER BY o.log_offset LIMIT $4";
/// Offsets stored without a place in the log (by a transaction's commit, or before
/// the log existed).
pub(crate) const UNLOGGED: &str = "SELECT group_id, topic_id, partition FROM group_offsets \
     WHERE log_offset IS NULL ORDER BY group_id, topic_id, partition";
/// Only while the offset has no place: a broker logging the same rows at its start
/// meanwhile keeps the place it gave.
pub(crate) const PLACE: &str = "UPDATE group_offsets SET log_partition = $1, log_offset = $2 \
     WHERE group_id = $3 AND topic_id = $4 AND partition = $5 AND log_offset IS NULL";

#[derive(sqlx::FromRow)]
pub(crate) struct LoggedRow {
    pub(crate) log_offset: i64,
    #[sqlx(flatten)]
    pub(crate) offset: crate::sql::OffsetRow,
}

/// The offsets without a place, by the log partition each goes to.
pub(crate) fn by_log_partition(
    unlogged: Vec<(String, Uuid, i32)>,
) -> std::collections::BTreeMap<i32, Vec<(String, Uuid, i32)>> {
    let mut by_partition: std::collections::BTreeMap<i32, Vec<_>> = Default::default();
    for row in unlogged {
        by_partition
            .entry(crate::offsets_topic_partition(&row.0))
            .or_default()
            .push(row);
    }
    by_partition
}

/// Gives every stored offset without a place in the log one, inside transaction
/// `$tx`: partitions in ascending order (two transactions take heads in the same
/// order, so neither waits for the other in a cycle).
macro_rules! place_unlogged_offsets {
    ($tx:expr) => {{
        use $crate::offset_log_sql as log_sql;
        let unlogged: Vec<(String, uuid::Uuid, i32)> = sqlx::query_as(log_sql::UNLOGGED)
            .fetch_all(&mut *$tx)
            .await?;
        for (partition, rows) in log_sql::by_log_partition(unlogged) {
            let count = i64::try_from(rows.len()).unwrap_or(i64::MAX);
            let first: i64 = sqlx::query_scalar(log_sql::ADVANCE_HEAD)
                .bind(partition)
                .bind(count)
                .fetch_one(&mut *$tx)
                .await?;
            for (place, (group, topic_id, index)) in (first..).zip(rows) {
                sqlx::query(log_sql::PLACE)
                    .bind(partition)
                    .bind(place)
                    .bind(group)
                    .bind(topic_id)
                    .bind(index)
                    .execute(&mut *$tx)
                    .await?;
            }
        }
    }};
}

pub(crate) use place_unlogged_offsets;

/// Implements [`OffsetLog`](crate::OffsetLog) for a store with a `pool`, and
/// `place_unlogged`, run once as the store opens.
macro_rules! impl_offset_log {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::OffsetLog for $store {
            async fn offset_log_head(&self, partition: i32) -> $crate::Result<i64> {
                let head: Option<i64> = sqlx::query_scalar($crate::offset_log_sql::HEAD)
                    .bind(partition)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(head.unwrap_or(0))
            }

            async fn offset_log(
                &self,
                partition: i32,
                from: i64,
                below: i64,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::LoggedOffset>> {
                let rows: Vec<$crate::offset_log_sql::LoggedRow> =
                    sqlx::query_as($crate::offset_log_sql::RECORDS)
                        .bind(partition)
                        .bind(from)
                        .bind(below)
                        .bind(limit)
                        .fetch_all(&self.pool)
                        .await?;
                Ok(rows
                    .into_iter()
                    .map(|row| $crate::LoggedOffset {
                        log_offset: row.log_offset,
                        committed: row.offset.into(),
                    })
                    .collect())
            }
        }

        impl $store {
            /// Gives the offsets stored before the log existed their places.
            async fn place_unlogged(&self) -> $crate::Result<()> {
                let mut tx = self.pool.begin().await?;
                $crate::offset_log_sql::place_unlogged_offsets!(tx);
                tx.commit().await?;
                Ok(())
            }
        }
    };
}

pub(crate) use impl_offset_log;
