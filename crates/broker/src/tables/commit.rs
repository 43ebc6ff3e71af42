//! The topic's commit, on the leader of its partition 0: the files waiting that
//! continue each partition from the table's snapshot, joined in one snapshot that
//! records where each partition goes on. Files the table did not take (a writer that
//! lost a race, a commit that lost one) are removed.

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_metadata::TableFileRecord;
use spool_tables::{Commit, Table, TableCatalog, TableError, TableName, committed_offsets};

use crate::shared::Shared;
use crate::topics::Topic;

/// The files of one partition (in first-offset order) that continue it from
/// `committed`, and the offset where they end.
pub(super) fn chain<'a>(
    committed: i64,
    files: impl Iterator<Item = &'a TableFileRecord>,
) -> (Vec<&'a TableFileRecord>, i64) {
    let mut end = committed;
    let mut taken = Vec::new();
    for file in files {
        if file.first_offset == end {
            end = file.next_offset;
            taken.push(file);
        }
    }
    (taken, end)
}

/// Commits the files waiting for `topic`'s table, then forgets them.
pub(super) async fn commit(
    shared: &Arc<Shared>,
    catalog: &TableCatalog,
    name: &TableName,
    topic: &Arc<Topic>,
) -> Result<(), String> {
    let id = topic.record.id;
    let source = id.to_string();
    let table = catalog.table(name).await.map_err(|e| e.to_string())?;
    let committed = committed_offsets(&table, &source).map_err(|e| e.to_string())?;
    let waiting = shared
        .metadata()
        .table_files(id)
        .await
        .map_err(|e| e.to_string())?;
    let mut next = Commit {
        source,
        ..Commit::default()
    };
    let mut taken: Vec<&TableFileRecord> = Vec::new();
    let mut left: Vec<&TableFileRecord> = Vec::new();
    for index in 0..topic.record.partitions {
        let of_partition = || waiting.iter().filter(move |file| file.partition == index);
        let start = committed.get(&index).copied().unwrap_or(0);
        let (files, end) = chain(start, of_partition());
        left.extend(of_partition().filter(|file| file.first_offset < start));
        if end > start {
            next.next_offsets.insert(index, end);
            next.data_files.extend(
                files
                    .iter()
                    .filter(|file| !file.data_file.is_empty())
                    .map(|file| file.data_file.clone()),
            );
            taken.extend(files);
        }
    }
    if !left.is_empty() {
        remove_left_behind(shared, &table, &left).await?;
    }
    if taken.is_empty() {
        return Ok(());
    }
    if topic.table.as_ref().is_some_and(|t| t.from_registry)
        && !commit_dead_letters(
            catalog,
            &super::dead_letter_name(topic),
            &next.source,
            &taken,
        )
        .await?
    {
        return Ok(());
    }
    let moved = next.next_offsets.clone();
    match catalog.commit(&table, next).await {
        Ok(_) => {}
        Err(TableError::Conflict(why)) => {
            // Another committer (a leadership move) came first: the next round starts
            // from its snapshot.
            tracing::debug!(topic = %topic.record.name, why, "a table commit lost a race");
            return Ok(());
        }
        Err(error) => return Err(error.to_string()),
    }
    // What the table took counts as written: a file a leader wrote that no commit
    // takes (it lost a race) is deleted, and never counted.
    for file in &taken {
        shared.tables().wrote(
            id,
            file.record_count,
            file.size_bytes,
            !file.data_file.is_empty(),
        );
    }
    let rows: i64 = taken.iter().map(|file| file.record_count).sum();
    let files = taken
        .iter()
        .filter(|file| !file.data_file.is_empty())
        .count();
    tracing::debug!(topic = %topic.record.name, files, rows, "table commit");
    shared
        .tables()
        .committed(id, &committed_now(&committed, &moved), true);
    for file in taken {
        shared
            .metadata()
            .remove_table_file(id, file.partition, file.first_offset)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Commits the dead letters of `taken` (the files the table is about to take) to
/// the dead-letter table first, each span once: those a commit of the table lost
/// after theirs were committed are below the dead-letter table's offsets. Whether
/// the table's commit may go on (`false`: another commit came first).
async fn commit_dead_letters(
    catalog: &TableCatalog,
    name: &TableName,
    source: &str,
    taken: &[&TableFileRecord],
) -> Result<bool, String> {
    let dead = catalog.table(name).await.map_err(|e| e.to_string())?;
    let committed = committed_offsets(&dead, source).map_err(|e| e.to_string())?;
    let mut next = Commit {
        source: source.to_owned(),
        ..Commit::default()
    };
    for file in taken {
        let start = committed.get(&file.partition).copied().unwrap_or(0);
        if file.dead_data_file.is_empty() || file.first_offset < start {
            continue;
        }
        next.data_files.push(file.dead_data_file.clone());
        let end = next.next_offsets.entry(file.partition).or_insert(0);
        *end = (*end).max(file.next_offset);
    }
    if next.data_files.is_empty() {
        return Ok(true);
    }
    match catalog.commit(&dead, next).await {
        Ok(_) => Ok(true),
        Err(TableError::Conflict(_)) => Ok(false),
        Err(error) => Err(error.to_string()),
    }
}

/// The table's offsets after a commit that moved `moved`.
fn committed_now(before: &BTreeMap<i32, i64>, moved: &BTreeMap<i32, i64>) -> BTreeMap<i32, i64> {
    let mut now = before.clone();
    now.extend(moved);
    now
}

/// Forgets files waiting from before the table's offsets: those the table has (a
/// commit whose files were not yet forgotten when its broker stopped) stay; the
/// others (written by a leader that lost a race) are deleted.
async fn remove_left_behind(
    shared: &Arc<Shared>,
    table: &Table,
    left: &[&TableFileRecord],
) -> Result<(), String> {
    let kept = spool_tables::data_file_locations(table)
        .await
        .map_err(|e| e.to_string())?;
    for file in left {
        if !file.location.is_empty() && !kept.contains(&file.location) {
            let _ = spool_tables::delete_file(table, &file.location).await;
        }
        shared
            .metadata()
            .remove_table_file(file.topic_id, file.partition, file.first_offset)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(first_offset: i64, next_offset: i64) -> TableFileRecord {
        TableFileRecord {
            topic_id: uuid::Uuid::nil(),
            partition: 0,
            first_offset,
            next_offset,
            location: format!("p0-o{first_offset}.parquet"),
            data_file: "{}".to_owned(),
            record_count: next_offset - first_offset,
            size_bytes: 1,
            dead_location: String::new(),
            dead_data_file: String::new(),
            dead_record_count: 0,
            written_ms: 0,
        }
    }

    fn spans(taken: &[&TableFileRecord]) -> Vec<(i64, i64)> {
        taken
            .iter()
            .map(|f| (f.first_offset, f.next_offset))
            .collect()
    }

    #[test]
    fn a_chain_takes_only_the_files_that_continue_the_table_in_order() {
        // A file already in the table (its row not yet removed), the chain from 100,
        // and a file after a gap (never taken until the gap is filled).
        let files = [
            file(40, 100),
            file(100, 180),
            file(180, 200),
            file(250, 300),
        ];
        let (taken, end) = chain(100, files.iter());
        assert_eq!(spans(&taken), vec![(100, 180), (180, 200)]);
        assert_eq!(end, 200);
        // Nothing continues 90: the table stays where it is.
        let (taken, end) = chain(90, files.iter());
        assert!(taken.is_empty());
        assert_eq!(end, 90);
    }
}
