//! A partition leader's part: what its partition committed past the table's
//! snapshot and the files waiting, into Parquet files put in the metadata store for
//! the topic's commit. Reads and decodes on the blocking pool, a few MiB at a time,
//! and yields between them: a backfill shares the broker with produce traffic.

use std::sync::Arc;

use spool_metadata::TableFileRecord;
use spool_model::Offset;
use spool_tables::{PartitionFile, Row, Table};

use super::rows;
use super::values::Values;
use crate::partitions::{PartitionHandle, on_blocking_pool};
use crate::shared::Shared;
use crate::topics::Topic;

/// Bytes of batches read at a time.
const READ_BYTES: u64 = 4 << 20;
/// The most bytes of batches one file takes: a partition further behind writes
/// several files in a round.
const FILE_INPUT_BYTES: usize = 256 << 20;

/// Where a partition's records go: the table, and for a `registry` table its
/// dead-letter table and the values' schemas.
pub(super) struct Target<'a> {
    pub(super) table: &'a Table,
    pub(super) dead_letters: Option<&'a Table>,
    pub(super) values: Option<&'a mut Values>,
}

/// Writes partition `index` of `topic` from `from` (where the table and the files
/// waiting end) up to its last stable offset, if this broker leads it.
pub(super) async fn partition(
    shared: &Arc<Shared>,
    mut target: Target<'_>,
    topic: &Arc<Topic>,
    index: i32,
    from: i64,
) -> Result<(), String> {
    if shared.partitions().led_epoch(topic, index).is_none() {
        return Ok(());
    }
    let handle = shared
        .partitions()
        .open(topic.clone(), index, -1)
        .await
        .map_err(|e| format!("partition {index}: {e}"))?;
    let id = topic.record.id;
    let mut from = from;
    // Up to where the partition is stable now: records appended meanwhile wait for
    // the next tick (a busy partition is not chased, and the commit comes in time).
    let stable = handle.log.stable_offset().0;
    loop {
        if from >= stable {
            return Ok(());
        }
        let table = target.table;
        let written = file(shared, &mut target, &handle, id, index, from, stable).await?;
        let next = written.next_offset;
        if next <= from {
            // Nothing could be read at `from` (left for the next round).
            if !written.location.is_empty() {
                let _ = spool_tables::delete_file(table, &written.location).await;
            }
            return Ok(());
        }
        let location = written.location.clone();
        let added = shared
            .metadata()
            .add_table_file(&written)
            .await
            .map_err(|e| e.to_string())?;
        if !added {
            // Another leader of the partition wrote from the same offset first.
            if !location.is_empty() {
                let _ = spool_tables::delete_file(table, &location).await;
            }
            if let Some(dead) = target.dead_letters
                && !written.dead_location.is_empty()
            {
                let _ = spool_tables::delete_file(dead, &written.dead_location).await;
            }
            return Ok(());
        }
        from = next;
    }
}

/// One file of the partition's records from `from` (or from the log start, when
/// retention removed those before) up to `stable`, at most [`FILE_INPUT_BYTES`] of
/// batches: its record for the metadata store (without a file when every record
/// read was left out).
async fn file(
    shared: &Arc<Shared>,
    target: &mut Target<'_>,
    handle: &PartitionHandle,
    topic_id: uuid::Uuid,
    index: i32,
    from: i64,
    stable: i64,
) -> Result<TableFileRecord, String> {
    let failed = |e: &dyn std::fmt::Display| format!("partition {index}: {e}");
    let log_start = handle.log_start().0;
    if from < log_start {
        tracing::warn!(
            partition = index,
            from,
            log_start,
            "records were removed from the log before the table took them: the table goes on from the log start"
        );
    }
    let start = from.max(log_start);
    let mut file = PartitionFile::create(target.table, index, start)
        .await
        .map_err(|e| failed(&e))?;
    let mut dead_file: Option<PartitionFile> = None;
    let mut at = start;
    let mut read = 0_usize;
    while at < stable && read < FILE_INPUT_BYTES {
        let reader = handle.clone();
        let (bytes, rows, next) = on_blocking_pool(move || {
            let (bytes, result) = reader.read_committed_bytes(Offset(at), READ_BYTES)?;
            let decoded = rows::decode(&bytes, &result.aborted, index, at, stable);
            Ok::<_, crate::partitions::PartitionError>((bytes.len(), decoded))
        })
        .await
        .and_then(|read| read)
        .map_err(|e| failed(&e))
        .and_then(|(bytes, decoded)| decoded.map(|(rows, next)| (bytes, rows, next)))?;
        match target.values.as_deref_mut() {
            None => file.write(&rows).await.map_err(|e| failed(&e))?,
            Some(values) => {
                let (letters, reasons) = write_decoded(&mut file, values, rows).await?;
                if let (Some(dead), false) = (target.dead_letters, letters.is_empty()) {
                    let dead_letters = match &mut dead_file {
                        Some(open) => open,
                        None => dead_file.insert(
                            PartitionFile::create(dead, index, start)
                                .await
                                .map_err(|e| failed(&e))?,
                        ),
                    };
                    dead_letters
                        .write_dead_letters(&letters, &reasons)
                        .await
                        .map_err(|e| failed(&e))?;
                }
            }
        }
        read += bytes;
        if next <= at {
            break;
        }
        at = next;
        tokio::task::yield_now().await;
    }
    let written = file.close().await.map_err(|e| failed(&e))?;
    let record_count: u64 = written.iter().map(|f| f.record_count).sum();
    let size_bytes: u64 = written.iter().map(|f| f.size_bytes).sum();
    // Past the target size the writer would roll; a file takes less input than that.
    let (location, data_file) = match written.as_slice() {
        [] => (String::new(), String::new()),
        [one] => (one.location.clone(), one.data_file.clone()),
        _ => return Err(failed(&"a file rolled over into several")),
    };
    let (dead_location, dead_data_file, dead_record_count) = match dead_file {
        None => (String::new(), String::new(), 0),
        Some(dead) => match dead.close().await.map_err(|e| failed(&e))?.as_slice() {
            [] => (String::new(), String::new(), 0),
            [one] => (
                one.location.clone(),
                one.data_file.clone(),
                i64::try_from(one.record_count).unwrap_or(i64::MAX),
            ),
            _ => return Err(failed(&"a dead-letter file rolled over into several")),
        },
    };
    if dead_record_count > 0 {
        tracing::warn!(
            partition = index,
            from,
            records = dead_record_count,
            "records did not decode under the subject's schema: they are in the dead-letter table"
        );
    }
    Ok(TableFileRecord {
        topic_id,
        partition: index,
        first_offset: from,
        next_offset: at,
        location,
        data_file,
        record_count: i64::try_from(record_count).unwrap_or(i64::MAX),
        size_bytes: i64::try_from(size_bytes).unwrap_or(i64::MAX),
        dead_location,
        dead_data_file,
        dead_record_count,
        written_ms: shared.clock().now_ms(),
    })
}

/// Writes the rows whose values decode and fit the table into `file`: the others,
/// with why not (the dead letters).
async fn write_decoded(
    file: &mut PartitionFile,
    values: &mut Values,
    rows: Vec<Row>,
) -> Result<(Vec<Row>, Vec<String>), String> {
    let decoded = values.decode(&rows).await;
    let mut good = Vec::with_capacity(rows.len());
    let mut data = Vec::with_capacity(rows.len());
    let mut letters = Vec::new();
    let mut reasons = Vec::new();
    for (row, datum) in rows.into_iter().zip(decoded) {
        match datum.and_then(|datum| file.check(&datum).map(|()| datum)) {
            Ok(datum) => {
                good.push(row);
                data.push(datum);
            }
            Err(reason) => {
                letters.push(row);
                reasons.push(reason);
            }
        }
    }
    file.write_decoded(&good, &data)
        .await
        .map_err(|e| e.to_string())?;
    Ok((letters, reasons))
}
