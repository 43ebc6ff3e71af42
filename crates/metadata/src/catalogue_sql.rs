//! The SQL of the [`Catalogue`](crate::Catalogue), shared by both backends as
//! `sql.rs` is: an object's ranges are committed with one statement per few hundred
//! partitions (a multi-row `UPDATE … FROM (VALUES …)` that fences them, then a
//! multi-row `INSERT` of the accepted ranges), so a flush that touches a thousand
//! partitions costs a handful of round trips, not two thousand.
//!
//! `VALUES` columns are named `column1`, `column2`, … on both backends.

pub(crate) const INSERT_OBJECT: &str =
    "INSERT INTO objects (name, size, created_ms) VALUES ($1, $2, $3) RETURNING id";

/// Rows per multi-row statement: well under either backend's parameter limit.
pub(crate) const ROWS_PER_STATEMENT: usize = 256;

/// Parameters per row of [`fence_ranges`]: topic id, partition, leader epoch,
/// expected high watermark (what the range continues), new high watermark, producer
/// state.
pub(crate) const FENCE_COLUMNS: usize = 6;

/// Moves the high watermark of each listed partition still at the listed epoch and
/// high watermark; returns the partitions it moved.
pub(crate) fn fence_ranges(rows: usize) -> String {
    format!(
        "UPDATE partitions SET high_watermark = v.column5, \
         producer_state = COALESCE(v.column6, partitions.producer_state) \
         FROM (VALUES {}) AS v \
         WHERE partitions.topic_id = v.column1 AND partitions.partition = v.column2 \
         AND partitions.leader_epoch = v.column3 AND partitions.high_watermark = v.column4 \
         RETURNING topic_id, partition",
        placeholders(rows, FENCE_COLUMNS)
    )
}

/// Parameters per row of [`insert_ranges`].
pub(crate) const RANGE_COLUMNS: usize = 8;

pub(crate) fn insert_ranges(rows: usize) -> String {
    format!(
        "INSERT INTO batch_ranges (topic_id, partition, base_offset, last_offset, \
         max_timestamp, object_id, position, length) VALUES {}",
        placeholders(rows, RANGE_COLUMNS)
    )
}

/// `($1, $2), ($3, $4)` for `rows` rows of `columns` parameters.
pub(crate) fn placeholders(rows: usize, columns: usize) -> String {
    let mut text = String::with_capacity(rows * columns * 5);
    for row in 0..rows {
        if row > 0 {
            text.push_str(", ");
        }
        text.push('(');
        for column in 0..columns {
            if column > 0 {
                text.push_str(", ");
            }
            text.push('$');
            text.push_str(&(row * columns + column + 1).to_string());
        }
        text.push(')');
    }
    text
}

pub(crate) const PARTITION_ROW: &str = "SELECT leader_epoch, log_start_offset, high_watermark, \
     producer_state, cleaned_offset FROM partitions WHERE topic_id = $1 AND partition = $2";
pub(crate) const PARTITION_EPOCHS: &str = "SELECT epoch, start_offset FROM partition_epochs \
     WHERE topic_id = $1 AND partition = $2 ORDER BY epoch";
pub(crate) const BEGIN_EPOCH: &str = "INSERT INTO partition_epochs \
     (topic_id, partition, epoch, start_offset) VALUES ($1, $2, $3, $4) \
     ON CONFLICT (topic_id, partition, epoch) DO NOTHING";

const RANGE_FIELDS: &str = "SELECT r.base_offset, r.last_offset, r.max_timestamp, \
     o.name AS object, r.position, r.length \
     FROM batch_ranges r JOIN objects o ON o.id = r.object_id";

/// The range holding offset `$3` (the last starting at or below it) and those after
/// it: two index seeks, whatever the partition's length.
pub(crate) fn ranges_from() -> String {
    format!(
        "{RANGE_FIELDS} WHERE r.topic_id = $1 AND r.partition = $2 AND r.base_offset >= \
         COALESCE((SELECT MAX(base_offset) FROM batch_ranges \
         WHERE topic_id = $1 AND partition = $2 AND base_offset <= $3), $3) \
         AND r.last_offset >= $3 ORDER BY r.base_offset LIMIT $4"
    )
}

pub(crate) fn range_for_timestamp() -> String {
    format!(
        "{RANGE_FIELDS} JOIN partitions p ON p.topic_id = r.topic_id AND p.partition = r.partition \
         WHERE r.topic_id = $1 AND r.partition = $2 AND r.max_timestamp >= $3 \
         AND r.last_offset >= p.log_start_offset ORDER BY r.base_offset LIMIT 1"
    )
}

pub(crate) fn range_with_max_timestamp() -> String {
    format!(
        "{RANGE_FIELDS} JOIN partitions p ON p.topic_id = r.topic_id AND p.partition = r.partition \
         WHERE r.topic_id = $1 AND r.partition = $2 AND r.last_offset >= p.log_start_offset \
         ORDER BY r.max_timestamp DESC, r.base_offset LIMIT 1"
    )
}

/// Moves the log start to `$3`, bounded by the high watermark, never back.
pub(crate) const ADVANCE_LOG_START: &str = "UPDATE partitions SET log_start_offset = CASE \
     WHEN $3 <= log_start_offset THEN log_start_offset \
     WHEN $3 >= high_watermark THEN high_watermark ELSE $3 END \
     WHERE topic_id = $1 AND partition = $2 RETURNING log_start_offset";
pub(crate) const FORGET_RANGES_BELOW: &str = "DELETE FROM batch_ranges \
     WHERE topic_id = $1 AND partition = $2 AND last_offset < $3";

/// Moves the cleaned offset up to `$4` (never back) while the partition is at epoch
/// `$3`.
pub(crate) const ADVANCE_CLEANED_OFFSET: &str = "UPDATE partitions SET cleaned_offset = CASE \
     WHEN $4 > cleaned_offset THEN $4 ELSE cleaned_offset END \
     WHERE topic_id = $1 AND partition = $2 AND leader_epoch = $3";

/// Matches (and locks) the partition's row only while it is at epoch `$3`.
pub(crate) const FENCE_PARTITION: &str = "UPDATE partitions SET leader_epoch = leader_epoch \
     WHERE topic_id = $1 AND partition = $2 AND leader_epoch = $3";

/// Parameters per row of [`delete_exact_ranges`]: base offset, last offset, position
/// and object name.
pub(crate) const EXACT_RANGE_COLUMNS: usize = 4;

/// Deletes `rows` of the partition's ranges, each matched by its offsets and its place
/// (object and position), so that a range another rewrite replaced meanwhile (with
/// the same base offset, say) is not taken for it.
pub(crate) fn delete_exact_ranges(rows: usize) -> String {
    let matches: Vec<String> = (0..rows)
        .map(|row| {
            let first = 3 + row * EXACT_RANGE_COLUMNS;
            format!(
                "(base_offset = ${} AND last_offset = ${} AND position = ${} \
                 AND object_id = (SELECT id FROM objects WHERE name = ${}))",
                first,
                first + 1,
                first + 2,
                first + 3
            )
        })
        .collect();
    format!(
        "DELETE FROM batch_ranges WHERE topic_id = $1 AND partition = $2 AND ({})",
        matches.join(" OR ")
    )
}

pub(crate) const NOTE_UNREFERENCED: &str = "UPDATE objects SET unreferenced_ms = $1 \
     WHERE unreferenced_ms IS NULL \
     AND NOT EXISTS (SELECT 1 FROM batch_ranges r WHERE r.object_id = objects.id)";
pub(crate) const UNREFERENCED: &str = "SELECT name FROM objects \
     WHERE unreferenced_ms < $1 ORDER BY unreferenced_ms LIMIT $2";

/// `DELETE FROM objects WHERE name IN ($1, …)` for `rows` names.
pub(crate) fn forget_objects(rows: usize) -> String {
    format!(
        "DELETE FROM objects WHERE name IN {}",
        placeholders(1, rows)
    )
}

/// `SELECT name FROM objects WHERE name IN ($1, …)` for `rows` names.
pub(crate) fn known_objects(rows: usize) -> String {
    format!(
        "SELECT name FROM objects WHERE name IN {}",
        placeholders(1, rows)
    )
}

/// The committed marks of the partitions listed in `VALUES` (topic id, partition),
/// with their producer states or (a NULL of the column's type) without.
pub(crate) fn committed_marks(rows: usize, producer_states: bool) -> String {
    let state = if producer_states {
        "p.producer_state"
    } else {
        "CASE WHEN 1 = 0 THEN p.producer_state END"
    };
    format!(
        "SELECT p.topic_id, p.partition, p.leader_epoch, p.log_start_offset, \
         p.high_watermark, p.cleaned_offset, {state} AS producer_state \
         FROM partitions p JOIN (VALUES {}) AS v \
         ON p.topic_id = v.column1 AND p.partition = v.column2",
        placeholders(rows, 2)
    )
}

/// A row of [`committed_marks`].
pub(crate) type MarksRow = (uuid::Uuid, i32, i32, i64, i64, i64, Option<Vec<u8>>);

pub(crate) fn marks(row: MarksRow) -> crate::CommittedMarks {
    let (topic_id, partition, leader_epoch, log_start, high_watermark, cleaned_offset, state) = row;
    crate::CommittedMarks {
        key: crate::PartitionKey {
            topic_id,
            partition,
        },
        leader_epoch,
        log_start,
        high_watermark,
        cleaned_offset,
        producer_state: state,
    }
}

#[derive(sqlx::FromRow)]
pub(crate) struct PartitionRow {
    pub(crate) leader_epoch: i32,
    pub(crate) log_start_offset: i64,
    pub(crate) high_watermark: i64,
    pub(crate) producer_state: Option<Vec<u8>>,
    pub(crate) cleaned_offset: i64,
}

#[derive(sqlx::FromRow)]
pub(crate) struct RangeRow {
    pub(crate) base_offset: i64,
    pub(crate) last_offset: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) object: String,
    pub(crate) position: i64,
    pub(crate) length: i64,
}

impl From<RangeRow> for crate::StoredRange {
    fn from(row: RangeRow) -> crate::StoredRange {
        crate::StoredRange {
            base_offset: row.base_offset,
            last_offset: row.last_offset,
            max_timestamp: row.max_timestamp,
            object: row.object,
            position: row.position,
            length: row.length,
        }
    }
}

/// The ranges that cover `max_bytes` (at least one).
pub(crate) fn enough_for(ranges: Vec<RangeRow>, max_bytes: i64) -> Vec<crate::StoredRange> {
    let mut total = 0_i64;
    let mut kept = Vec::with_capacity(ranges.len());
    for range in ranges {
        if !kept.is_empty() && total >= max_bytes {
            break;
        }
        total = total.saturating_add(range.length);
        kept.push(range.into());
    }
    kept
}

/// Inserts `$ranges` (of object `$object_id`) in transaction `$tx`, a few hundred
/// rows a statement.
macro_rules! insert_object_ranges {
    ($tx:ident, $ranges:expr, $object_id:expr) => {
        for chunk in $ranges.chunks($crate::catalogue_sql::ROWS_PER_STATEMENT) {
            let text = $crate::catalogue_sql::insert_ranges(chunk.len());
            let mut query = sqlx::query(&text);
            for range in chunk {
                query = query
                    .bind(range.key.topic_id)
                    .bind(range.key.partition)
                    .bind(range.base_offset)
                    .bind(range.last_offset)
                    .bind(range.max_timestamp)
                    .bind($object_id)
                    .bind(range.position)
                    .bind(range.length);
            }
            query.execute(&mut *$tx).await?;
        }
    };
}

pub(crate) use insert_object_ranges;

/// Implements [`Catalogue`](crate::Catalogue) for a struct with a `pool` field.
macro_rules! impl_catalogue {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::Catalogue for $store {
            async fn commit_object(
                &self,
                commit: &$crate::ObjectCommit,
            ) -> $crate::Result<Vec<bool>> {
                use $crate::catalogue_sql as sql;
                let mut tx = self.pool.begin().await?;
                let object_id: i64 = sqlx::query_scalar(sql::INSERT_OBJECT)
                    .bind(&commit.name)
                    .bind(commit.size)
                    .bind($crate::sql::now_ms())
                    .fetch_one(&mut *tx)
                    .await?;
                let mut accepted = std::collections::HashSet::new();
                for chunk in commit.ranges.chunks(sql::ROWS_PER_STATEMENT) {
                    let text = sql::fence_ranges(chunk.len());
                    let mut query = sqlx::query_as::<_, (uuid::Uuid, i32)>(&text);
                    for range in chunk {
                        query = query
                            .bind(range.key.topic_id)
                            .bind(range.key.partition)
                            .bind(range.leader_epoch)
                            .bind(range.from_offset)
                            .bind(range.last_offset + 1)
                            .bind(range.producer_state.as_deref());
                    }
                    for (topic_id, partition) in query.fetch_all(&mut *tx).await? {
                        accepted.insert($crate::PartitionKey {
                            topic_id,
                            partition,
                        });
                    }
                }
                let kept: Vec<&$crate::RangeCommit> = commit
                    .ranges
                    .iter()
                    .filter(|r| accepted.contains(&r.key))
                    .collect();
                sql::insert_object_ranges!(tx, kept, object_id);
                tx.commit().await?;
                Ok(commit
                    .ranges
                    .iter()
                    .map(|r| accepted.contains(&r.key))
                    .collect())
            }

            async fn partition_state(
                &self,
                key: $crate::PartitionKey,
            ) -> $crate::Result<Option<$crate::PartitionState>> {
                use $crate::catalogue_sql as sql;
                let mut tx = self.pool.begin().await?;
                let row: Option<sql::PartitionRow> = sqlx::query_as(sql::PARTITION_ROW)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = row else {
                    return Ok(None);
                };
                let epochs: Vec<(i32, i64)> = sqlx::query_as(sql::PARTITION_EPOCHS)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(Some($crate::PartitionState {
                    leader_epoch: row.leader_epoch,
                    log_start: row.log_start_offset,
                    high_watermark: row.high_watermark,
                    producer_state: row.producer_state,
                    cleaned_offset: row.cleaned_offset,
                    epochs,
                }))
            }

            async fn committed_marks(
                &self,
                keys: &[$crate::PartitionKey],
                producer_states: bool,
            ) -> $crate::Result<Vec<$crate::CommittedMarks>> {
                use $crate::catalogue_sql as sql;
                let mut found = Vec::with_capacity(keys.len());
                for chunk in keys.chunks(sql::ROWS_PER_STATEMENT) {
                    let text = sql::committed_marks(chunk.len(), producer_states);
                    let mut query = sqlx::query_as::<_, sql::MarksRow>(&text);
                    for key in chunk {
                        query = query.bind(key.topic_id).bind(key.partition);
                    }
                    found.extend(
                        query
                            .fetch_all(&self.pool)
                            .await?
                            .into_iter()
                            .map(sql::marks),
                    );
                }
                Ok(found)
            }

            async fn begin_epoch(
                &self,
                key: $crate::PartitionKey,
                epoch: i32,
                start_offset: i64,
            ) -> $crate::Result<()> {
                sqlx::query($crate::catalogue_sql::BEGIN_EPOCH)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(epoch)
                    .bind(start_offset)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn ranges_from(
                &self,
                key: $crate::PartitionKey,
                offset: i64,
                max_bytes: i64,
                limit: i64,
            ) -> $crate::Result<Vec<$crate::StoredRange>> {
                use $crate::catalogue_sql as sql;
                let rows: Vec<sql::RangeRow> = sqlx::query_as(&sql::ranges_from())
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(offset)
                    .bind(limit.max(1))
                    .fetch_all(&self.pool)
                    .await?;
                Ok(sql::enough_for(rows, max_bytes))
            }

            async fn range_for_timestamp(
                &self,
                key: $crate::PartitionKey,
                timestamp: i64,
            ) -> $crate::Result<Option<$crate::StoredRange>> {
                use $crate::catalogue_sql as sql;
                let row: Option<sql::RangeRow> = sqlx::query_as(&sql::range_for_timestamp())
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(timestamp)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(row.map(Into::into))
            }

            async fn range_with_max_timestamp(
                &self,
                key: $crate::PartitionKey,
            ) -> $crate::Result<Option<$crate::StoredRange>> {
                use $crate::catalogue_sql as sql;
                let row: Option<sql::RangeRow> = sqlx::query_as(&sql::range_with_max_timestamp())
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .fetch_optional(&self.pool)
                    .await?;
                Ok(row.map(Into::into))
            }

            async fn replace_ranges(
                &self,
                key: $crate::PartitionKey,
                leader_epoch: i32,
                replaced: &[$crate::StoredRange],
                object: &$crate::ObjectCommit,
            ) -> $crate::Result<bool> {
                use $crate::catalogue_sql as sql;
                let mut tx = self.pool.begin().await?;
                let fenced = sqlx::query(sql::FENCE_PARTITION)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(leader_epoch)
                    .execute(&mut *tx)
                    .await?;
                if fenced.rows_affected() == 0 {
                    return Ok(false);
                }
                let mut deleted = 0;
                for chunk in replaced.chunks(sql::ROWS_PER_STATEMENT) {
                    let text = sql::delete_exact_ranges(chunk.len());
                    let mut query = sqlx::query(&text).bind(key.topic_id).bind(key.partition);
                    for range in chunk {
                        query = query
                            .bind(range.base_offset)
                            .bind(range.last_offset)
                            .bind(range.position)
                            .bind(&range.object);
                    }
                    deleted += query.execute(&mut *tx).await?.rows_affected();
                }
                if deleted != replaced.len() as u64 {
                    return Ok(false);
                }
                let object_id: i64 = sqlx::query_scalar(sql::INSERT_OBJECT)
                    .bind(&object.name)
                    .bind(object.size)
                    .bind($crate::sql::now_ms())
                    .fetch_one(&mut *tx)
                    .await?;
                sql::insert_object_ranges!(tx, object.ranges, object_id);
                tx.commit().await?;
                Ok(true)
            }

            async fn advance_cleaned_offset(
                &self,
                key: $crate::PartitionKey,
                leader_epoch: i32,
                offset: i64,
            ) -> $crate::Result<bool> {
                let moved = sqlx::query($crate::catalogue_sql::ADVANCE_CLEANED_OFFSET)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(leader_epoch)
                    .bind(offset)
                    .execute(&self.pool)
                    .await?;
                Ok(moved.rows_affected() > 0)
            }

            async fn note_unreferenced_objects(&self, now_ms: i64) -> $crate::Result<u64> {
                let noted = sqlx::query($crate::catalogue_sql::NOTE_UNREFERENCED)
                    .bind(now_ms)
                    .execute(&self.pool)
                    .await?;
                Ok(noted.rows_affected())
            }

            async fn unreferenced_objects(
                &self,
                before_ms: i64,
                limit: i64,
            ) -> $crate::Result<Vec<String>> {
                Ok(sqlx::query_scalar($crate::catalogue_sql::UNREFERENCED)
                    .bind(before_ms)
                    .bind(limit)
                    .fetch_all(&self.pool)
                    .await?)
            }

            async fn forget_objects(&self, names: &[String]) -> $crate::Result<()> {
                use $crate::catalogue_sql as sql;
                for chunk in names.chunks(sql::ROWS_PER_STATEMENT) {
                    let text = sql::forget_objects(chunk.len());
                    let mut query = sqlx::query(&text);
                    for name in chunk {
                        query = query.bind(name);
                    }
                    query.execute(&self.pool).await?;
                }
                Ok(())
            }

            async fn known_objects(&self, names: &[String]) -> $crate::Result<Vec<String>> {
                use $crate::catalogue_sql as sql;
                let mut known = Vec::new();
                for chunk in names.chunks(sql::ROWS_PER_STATEMENT) {
                    let text = sql::known_objects(chunk.len());
                    let mut query = sqlx::query_scalar::<_, String>(&text);
                    for name in chunk {
                        query = query.bind(name);
                    }
                    known.extend(query.fetch_all(&self.pool).await?);
                }
                Ok(known)
            }

            async fn advance_log_start(
                &self,
                key: $crate::PartitionKey,
                offset: i64,
            ) -> $crate::Result<i64> {
                use $crate::catalogue_sql as sql;
                let mut tx = self.pool.begin().await?;
                let start: Option<i64> = sqlx::query_scalar(sql::ADVANCE_LOG_START)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(offset)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(start) = start else {
                    return Err($crate::MetadataError::UnknownTopic(
                        key.topic_id.to_string(),
                    ));
                };
                sqlx::query(sql::FORGET_RANGES_BELOW)
                    .bind(key.topic_id)
                    .bind(key.partition)
                    .bind(start)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok(start)
            }
        }
    };
}

pub(crate) use impl_catalogue;
