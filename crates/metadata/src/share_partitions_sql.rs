//! The SQL of [`SharePartitions`](crate::SharePartitions), shared by both backends.

/// Raises a share-partition's epoch to `$4` unless a later one claimed it; returns
/// its row if it did.
pub(crate) const CLAIM: &str = "UPDATE share_partitions SET state_epoch = $4 \
     WHERE group_id = $1 AND topic_id = $2 AND partition = $3 AND state_epoch <= $4 \
     RETURNING group_id, topic_id, partition, state_epoch, start_offset, state";
pub(crate) const EXISTS: &str = "SELECT state_epoch FROM share_partitions \
     WHERE group_id = $1 AND topic_id = $2 AND partition = $3";
/// Writes unless a later epoch wrote or claimed it: no row changed then.
pub(crate) const SAVE: &str = "INSERT INTO share_partitions \
     (group_id, topic_id, partition, state_epoch, start_offset, state) \
     VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (group_id, topic_id, partition) DO UPDATE SET \
     state_epoch = excluded.state_epoch, start_offset = excluded.start_offset, \
     state = excluded.state WHERE share_partitions.state_epoch <= excluded.state_epoch";
pub(crate) const OF_GROUP: &str = "SELECT group_id, topic_id, partition, state_epoch, \
     start_offset, state FROM share_partitions WHERE group_id = $1 \
     ORDER BY topic_id, partition";
pub(crate) const ALL: &str = "SELECT group_id, topic_id, partition, state_epoch, \
     start_offset, state FROM share_partitions ORDER BY group_id, topic_id, partition";
pub(crate) const DELETE_ONE: &str = "DELETE FROM share_partitions \
     WHERE group_id = $1 AND topic_id = $2 AND partition = $3";
pub(crate) const DELETE_GROUP: &str = "DELETE FROM share_partitions WHERE group_id = $1";
pub(crate) const QUEUE_LETTER: &str = "INSERT INTO share_dead_letters \
     (group_id, topic_id, partition, source_offset, dead_letter_topic, target_partition, batch) \
     VALUES ($1, $2, $3, $4, $5, $6, $7) \
     ON CONFLICT (group_id, topic_id, partition, source_offset) DO NOTHING";
pub(crate) const QUEUED_LETTERS: &str = "SELECT group_id, topic_id, partition, source_offset, \
     dead_letter_topic, target_partition, batch FROM share_dead_letters \
     ORDER BY dead_letter_topic, target_partition, group_id, topic_id, partition, source_offset \
     LIMIT $1";
pub(crate) const LETTER_WRITTEN: &str = "DELETE FROM share_dead_letters \
     WHERE group_id = $1 AND topic_id = $2 AND partition = $3 AND source_offset = $4";

/// A row of `share_partitions`.
#[derive(sqlx::FromRow)]
pub(crate) struct Row {
    group_id: String,
    topic_id: uuid::Uuid,
    partition: i32,
    state_epoch: i32,
    start_offset: i64,
    state: String,
}

impl From<Row> for crate::SharePartitionRecord {
    fn from(row: Row) -> crate::SharePartitionRecord {
        crate::SharePartitionRecord {
            group: row.group_id,
            topic_id: row.topic_id,
            partition: row.partition,
            state_epoch: row.state_epoch,
            start_offset: row.start_offset,
            state: row.state,
        }
    }
}

/// A row of `share_dead_letters`.
#[derive(sqlx::FromRow)]
pub(crate) struct LetterRow {
    group_id: String,
    topic_id: uuid::Uuid,
    partition: i32,
    source_offset: i64,
    dead_letter_topic: String,
    target_partition: i32,
    batch: Vec<u8>,
}

impl From<LetterRow> for crate::QueuedDeadLetter {
    fn from(row: LetterRow) -> crate::QueuedDeadLetter {
        crate::QueuedDeadLetter {
            group: row.group_id,
            topic_id: row.topic_id,
            partition: row.partition,
            offset: row.source_offset,
            dead_letter_topic: row.dead_letter_topic,
            target_partition: row.target_partition,
            batch: row.batch,
        }
    }
}

/// Binds a share-partition's state to [`SAVE`].
macro_rules! bind_save {
    ($record:expr) => {
        sqlx::query($crate::share_partitions_sql::SAVE)
            .bind(&$record.group)
            .bind($record.topic_id)
            .bind($record.partition)
            .bind($record.state_epoch)
            .bind($record.start_offset)
            .bind(&$record.state)
    };
}

pub(crate) use bind_save;

/// Implements [`SharePartitions`](crate::SharePartitions) for a store with a `pool`.
macro_rules! impl_share_partitions {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::SharePartitions for $store {
            async fn claim_share_partition(
                &self,
                group: &str,
                topic_id: uuid::Uuid,
                partition: i32,
                state_epoch: i32,
            ) -> $crate::Result<Option<$crate::SharePartitionRecord>> {
                use $crate::share_partitions_sql as sql;
                let claimed: Option<sql::Row> = sqlx::query_as(sql::CLAIM)
                    .bind(group)
                    .bind(topic_id)
                    .bind(partition)
                    .bind(state_epoch)
                    .fetch_optional(&self.pool)
                    .await?;
                if let Some(row) = claimed {
                    return Ok(Some(row.into()));
                }
                let stored: Option<i32> = sqlx::query_scalar(sql::EXISTS)
                    .bind(group)
                    .bind(topic_id)
                    .bind(partition)
                    .fetch_optional(&self.pool)
                    .await?;
                match stored {
                    None => Ok(None),
                    Some(_) => Err($crate::MetadataError::Fenced {
                        group: format!("{group} (share-partition {topic_id}/{partition})"),
                    }),
                }
            }

            async fn save_share_partition(
                &self,
                record: &$crate::SharePartitionRecord,
                letters: &[$crate::QueuedDeadLetter],
            ) -> $crate::Result<()> {
                use $crate::share_partitions_sql as sql;
                let fenced = || $crate::MetadataError::Fenced {
                    group: format!(
                        "{} (share-partition {}/{})",
                        record.group, record.topic_id, record.partition
                    ),
                };
                // The common case, one statement: no transaction to open.
                if letters.is_empty() {
                    let saved = sql::bind_save!(record).execute(&self.pool).await?;
                    return if saved.rows_affected() == 0 {
                        Err(fenced())
                    } else {
                        Ok(())
                    };
                }
                let mut tx = self.pool.begin().await?;
                let saved = sql::bind_save!(record).execute(&mut *tx).await?;
                if saved.rows_affected() == 0 {
                    return Err(fenced());
                }
                for letter in letters {
                    sqlx::query(sql::QUEUE_LETTER)
                        .bind(&letter.group)
                        .bind(letter.topic_id)
                        .bind(letter.partition)
                        .bind(letter.offset)
                        .bind(&letter.dead_letter_topic)
                        .bind(letter.target_partition)
                        .bind(&letter.batch)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn queued_dead_letters(
                &self,
                limit: u32,
            ) -> $crate::Result<Vec<$crate::QueuedDeadLetter>> {
                use $crate::share_partitions_sql as sql;
                let rows: Vec<sql::LetterRow> = sqlx::query_as(sql::QUEUED_LETTERS)
                    .bind(i64::from(limit))
                    .fetch_all(&self.pool)
                    .await?;
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn dead_letters_written(
                &self,
                letters: &[$crate::QueuedDeadLetter],
            ) -> $crate::Result<()> {
                if letters.is_empty() {
                    return Ok(());
                }
                let mut tx = self.pool.begin().await?;
                for letter in letters {
                    sqlx::query($crate::share_partitions_sql::LETTER_WRITTEN)
                        .bind(&letter.group)
                        .bind(letter.topic_id)
                        .bind(letter.partition)
                        .bind(letter.offset)
                        .execute(&mut *tx)
                        .await?;
                }
                tx.commit().await?;
                Ok(())
            }

            async fn share_partitions(
                &self,
                group: Option<&str>,
            ) -> $crate::Result<Vec<$crate::SharePartitionRecord>> {
                use $crate::share_partitions_sql as sql;
                let rows: Vec<sql::Row> = match group {
                    Some(group) => {
                        sqlx::query_as(sql::OF_GROUP)
                            .bind(group)
                            .fetch_all(&self.pool)
                            .await?
                    }
                    None => sqlx::query_as(sql::ALL).fetch_all(&self.pool).await?,
                };
                Ok(rows.into_iter().map(Into::into).collect())
            }

            async fn delete_share_partitions(
                &self,
                group: &str,
                partitions: Option<&[(uuid::Uuid, i32)]>,
            ) -> $crate::Result<()> {
                use $crate::share_partitions_sql as sql;
                let mut tx = self.pool.begin().await?;
                match partitions {
                    None => {
                        sqlx::query(sql::DELETE_GROUP)
                            .bind(group)
                            .execute(&mut *tx)
                            .await?;
                    }
                    Some(partitions) => {
                        for (topic_id, partition) in partitions {
                            sqlx::query(sql::DELETE_ONE)
                                .bind(group)
                                .bind(*topic_id)
                                .bind(*partition)
                                .execute(&mut *tx)
                                .await?;
                        }
                    }
                }
                tx.commit().await?;
                Ok(())
            }
        }
    };
}

pub(crate) use impl_share_partitions;
