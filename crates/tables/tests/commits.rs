//! Commits to a table in a SQLite catalogue with files on the local disk: each commit
//! adds its rows once and records where every partition's next commit starts; the
//! table reads back (through Iceberg's own scan) with every column.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use arrow_array::{Array, Int64Array, RecordBatch};
use futures::TryStreamExt;
use std::collections::BTreeMap;

use iceberg::table::Table;
use spool_tables::{
    Commit, Header, PartitionFile, Row, TableCatalog, TableError, TableName, committed_offsets,
    key_value_schema,
};

/// The topic's id, as the broker names the source of a table's offsets.
const SOURCE: &str = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";

fn row(partition: i32, offset: i64) -> Row {
    Row {
        partition,
        offset,
        timestamp_ms: 1_700_000_000_000 + offset,
        key: Some(format!("k{offset}").into_bytes()),
        value: (offset % 5 != 0).then(|| format!("v{offset}").into_bytes()),
        headers: vec![Header {
            key: "n".to_owned(),
            value: Some(offset.to_string().into_bytes()),
        }],
    }
}

/// Writes `rows` of `partition` (in two pieces, as a broker writes what it reads)
/// into a file: its `DataFile` JSON.
async fn written(table: &Table, partition: i32, rows: &[Row]) -> Vec<String> {
    let mut file = PartitionFile::create(table, partition, rows[0].offset)
        .await
        .unwrap();
    let (head, tail) = rows.split_at(rows.len() / 2);
    file.write(head).await.unwrap();
    file.write(tail).await.unwrap();
    let files = file.close().await.unwrap();
    assert_eq!(files.len(), 1, "one file, however many writes");
    assert_eq!(files[0].record_count, rows.len() as u64);
    files.into_iter().map(|f| f.data_file).collect()
}

async fn rows_of(catalog: &TableCatalog, name: &TableName) -> Vec<RecordBatch> {
    let table = catalog.table(name).await.unwrap();
    table
        .scan()
        .build()
        .unwrap()
        .to_arrow()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn each_commit_adds_its_rows_once_and_records_where_the_next_starts() {
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("sqlite://{}/catalog.db?mode=rwc", dir.path().display());
    let warehouse = format!("file://{}/tables", dir.path().display());
    let catalog = TableCatalog::open(&uri, &warehouse, None).await.unwrap();
    let name = TableName {
        namespace: "spool".to_owned(),
        table: "orders".to_owned(),
    };
    let table = catalog
        .ensure_table(&name, key_value_schema().unwrap())
        .await
        .unwrap();
    assert!(committed_offsets(&table, SOURCE).unwrap().is_empty());

    let zero: Vec<Row> = (0..10).map(|o| row(0, o)).collect();
    let one: Vec<Row> = (0..4).map(|o| row(1, o)).collect();
    let mut data_files = written(&table, 0, &zero).await;
    data_files.extend(written(&table, 1, &one).await);
    let first = Commit {
        source: SOURCE.to_owned(),
        data_files,
        // Partition 1's offsets 4 and 5 were an aborted transaction and its marker.
        next_offsets: BTreeMap::from([(0, 10), (1, 6)]),
    };
    let committed = catalog.commit(&table, first).await.unwrap();
    assert_eq!(
        committed_offsets(&committed, SOURCE)
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        vec![(0, 10), (1, 6)]
    );
    // A commit made on the snapshot before the first (a committer that lost a race)
    // fails whole: its file is not added, no offset moves.
    let stale_rows: Vec<Row> = (10..12).map(|o| row(0, o)).collect();
    let stale = Commit {
        source: SOURCE.to_owned(),
        data_files: written(&table, 0, &stale_rows).await,
        next_offsets: BTreeMap::from([(0, 12)]),
    };
    let refused = catalog.commit(&table, stale).await.unwrap_err();
    assert!(matches!(refused, TableError::Conflict(_)), "{refused}");
    // A second commit covers only partition 0; partition 1's offset stays.
    let table = catalog.table(&name).await.unwrap();
    let next: Vec<Row> = (10..15).map(|o| row(0, o)).collect();
    let second = Commit {
        source: SOURCE.to_owned(),
        data_files: written(&table, 0, &next).await,
        next_offsets: BTreeMap::from([(0, 15)]),
    };
    catalog.commit(&table, second).await.unwrap();

    // A catalogue opened again (a restarted broker) finds where to go on.
    drop(catalog);
    let catalog = TableCatalog::open(&uri, &warehouse, None).await.unwrap();
    let table = catalog
        .ensure_table(&name, key_value_schema().unwrap())
        .await
        .unwrap();
    assert_eq!(
        committed_offsets(&table, SOURCE)
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>(),
        vec![(0, 15), (1, 6)]
    );
    assert!(
        committed_offsets(&table, "another-topic-id")
            .unwrap()
            .is_empty(),
        "a topic made again under the name starts over"
    );
    let locations = spool_tables::data_file_locations(&table).await.unwrap();
    assert_eq!(locations.len(), 3, "{locations:?}");
    let batches = rows_of(&catalog, &name).await;
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert_eq!(rows, 19, "15 of partition 0, 4 of partition 1, each once");
    let mut offsets: Vec<(i32, i64)> = Vec::new();
    for batch in &batches {
        let partitions = batch
            .column_by_name("partition")
            .unwrap()
            .as_any()
            .downcast_ref::<arrow_array::Int32Array>()
            .unwrap();
        let column = batch
            .column_by_name("offset")
            .unwrap()
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert!(batch.column_by_name("headers").is_some());
        assert!(
            batch.column_by_name("value").unwrap().null_count() > 0,
            "null values kept"
        );
        offsets.extend((0..batch.num_rows()).map(|i| (partitions.value(i), column.value(i))));
    }
    offsets.sort_unstable();
    let expected: Vec<(i32, i64)> = (0..15)
        .map(|o| (0, o))
        .chain((0..4).map(|o| (1, o)))
        .collect();
    assert_eq!(offsets, expected);
    // One Parquet file per partition per commit, and the refused commit's, written
    // but never added, until it is deleted.
    let parquet = |files: Vec<String>| {
        files
            .into_iter()
            .filter(|f| f.ends_with(".parquet"))
            .collect::<Vec<_>>()
    };
    let files = parquet(walk(dir.path().join("tables")));
    assert_eq!(files.len(), 4, "{files:?}");
    let stray = files
        .iter()
        .find(|f| !locations.iter().any(|l| l.ends_with(f.as_str())))
        .unwrap();
    spool_tables::delete_file(&table, &format!("file://{stray}"))
        .await
        .unwrap();
    assert_eq!(parquet(walk(dir.path().join("tables"))).len(), 3);
}

fn walk(dir: std::path::PathBuf) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(walk(path));
        } else {
            found.push(path.display().to_string());
        }
    }
    found
}

#[tokio::test]
async fn tables_live_in_an_object_store_as_well() {
    use object_store::memory::InMemory;
    use object_store::{ObjectStore, ObjectStoreExt};
    use spool_tables::ObjectStorage;

    let dir = tempfile::tempdir().unwrap();
    let uri = format!("sqlite://{}/catalog.db?mode=rwc", dir.path().display());
    let store: std::sync::Arc<dyn ObjectStore> = std::sync::Arc::new(InMemory::new());
    let objects = ObjectStorage::new("s3://lake", store.clone());
    let catalog = TableCatalog::open(&uri, "s3://lake/spool-data/tables", Some(objects))
        .await
        .unwrap();
    let name = TableName {
        namespace: "spool".to_owned(),
        table: "events".to_owned(),
    };
    let table = catalog
        .ensure_table(&name, key_value_schema().unwrap())
        .await
        .unwrap();
    // Rows past one multipart part (5 MiB, values that do not compress): the file
    // is uploaded in parts.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut noise = |len: usize| -> Vec<u8> {
        (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed.to_le_bytes()[0]
            })
            .collect()
    };
    let big: Vec<Row> = (0..40)
        .map(|o| Row {
            value: Some(noise(256 * 1024)),
            ..row(0, o)
        })
        .collect();
    let commit = Commit {
        source: SOURCE.to_owned(),
        data_files: written(&table, 0, &big).await,
        next_offsets: BTreeMap::from([(0, 40)]),
    };
    let table = catalog.commit(&table, commit).await.unwrap();
    let rows: usize = rows_of(&catalog, &name)
        .await
        .iter()
        .map(RecordBatch::num_rows)
        .sum();
    assert_eq!(rows, 40);
    let locations = spool_tables::data_file_locations(&table).await.unwrap();
    let location = locations.iter().next().unwrap();
    assert!(
        location.starts_with("s3://lake/spool-data/tables/spool/events/data/"),
        "{location}"
    );
    let objects = |store: std::sync::Arc<dyn ObjectStore>| async move {
        store
            .list(None)
            .map_ok(|meta| meta.location.to_string())
            .try_collect::<Vec<_>>()
            .await
            .unwrap()
    };
    let before = objects(store.clone()).await;
    let parquet = before.iter().find(|o| o.ends_with(".parquet")).unwrap();
    let size = store
        .head(&object_store::path::Path::from(parquet.as_str()))
        .await
        .unwrap()
        .size;
    assert!(size > 8 << 20, "{size} bytes: more than one part");
    spool_tables::delete_file(&table, location).await.unwrap();
    let after = objects(store.clone()).await;
    assert!(!after.iter().any(|o| o.ends_with(".parquet")), "{after:?}");
}
