//! `registry` tables: an Avro and a JSON Schema value's fields as typed columns,
//! a compatible schema change adding columns (nested ones too), values that do not
//! fit refused with a reason and kept in a dead-letter table.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use arrow_array::RecordBatch;
use futures::TryStreamExt;
use spool_tables::{
    Commit, Datum, PartitionFile, Row, TableCatalog, TableName, ValueSchema, dead_letter_schema,
    registry_schema,
};

const SOURCE: &str = "topic-id";

fn row(offset: i64) -> Row {
    Row {
        partition: 0,
        offset,
        timestamp_ms: 1_700_000_000_000 + offset,
        key: Some(format!("k{offset}").into_bytes()),
        value: None,
        headers: Vec::new(),
    }
}

async fn open() -> (tempfile::TempDir, TableCatalog) {
    let dir = tempfile::tempdir().unwrap();
    let uri = format!("sqlite://{}/catalog.db?mode=rwc", dir.path().display());
    let warehouse = format!("file://{}/tables", dir.path().display());
    let catalog = TableCatalog::open(&uri, &warehouse, None).await.unwrap();
    (dir, catalog)
}

async fn batches(catalog: &TableCatalog, name: &TableName) -> Vec<RecordBatch> {
    selected(catalog, name, None).await
}

/// The table's rows, of the columns `only` names (all when `None`).
async fn selected(
    catalog: &TableCatalog,
    name: &TableName,
    only: Option<&[&str]>,
) -> Vec<RecordBatch> {
    let table = catalog.table(name).await.unwrap();
    let scan = table.scan();
    let scan = match only {
        Some(columns) => scan.select(columns.iter().copied()),
        None => scan,
    };
    scan.build()
        .unwrap()
        .to_arrow()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap()
}

fn avro_value(schema: &apache_avro::Schema, json: serde_json::Value) -> Datum {
    let value = apache_avro::types::Value::from(json)
        .resolve(schema)
        .unwrap();
    Datum::from_avro(value)
}

#[tokio::test]
async fn avro_fields_are_columns_and_a_compatible_change_adds_some() {
    let (_dir, catalog) = open().await;
    let v1 = apache_avro::Schema::parse_str(
        r#"{"type":"record","name":"Order","fields":[
            {"name":"id","type":"long"},
            {"name":"customer","type":["null","string"],"default":null},
            {"name":"tags","type":{"type":"array","items":"string"}},
            {"name":"address","type":{"type":"record","name":"Address","fields":[
                {"name":"city","type":"string"}]}},
            {"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}}]}"#,
    )
    .unwrap();
    let name = TableName {
        namespace: "spool".to_owned(),
        table: "orders".to_owned(),
    };
    let table = catalog
        .ensure_table(&name, registry_schema(ValueSchema::Avro(&v1)).unwrap())
        .await
        .unwrap();
    let first = avro_value(
        &v1,
        serde_json::json!({"id": 1, "customer": "ada", "tags": ["a", "b"],
            "address": {"city": "Oslo"}, "placed": 1_700_000_000_123_i64}),
    );
    let mut file = PartitionFile::create(&table, 0, 0).await.unwrap();
    file.check(&first).unwrap();
    file.write_decoded(&[row(0)], &[first]).await.unwrap();
    let data_files: Vec<String> = file
        .close()
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.data_file)
        .collect();
    let table = catalog
        .commit(
            &table,
            Commit {
                source: SOURCE.to_owned(),
                data_files,
                next_offsets: BTreeMap::from([(0, 1)]),
            },
        )
        .await
        .unwrap();

    // Version 2 adds a field at the top and one in the nested record.
    let v2 = apache_avro::Schema::parse_str(
        r#"{"type":"record","name":"Order","fields":[
            {"name":"id","type":"long"},
            {"name":"customer","type":["null","string"],"default":null},
            {"name":"tags","type":{"type":"array","items":"string"}},
            {"name":"address","type":{"type":"record","name":"Address","fields":[
                {"name":"city","type":"string"},
                {"name":"zip","type":["null","string"],"default":null}]}},
            {"name":"placed","type":{"type":"long","logicalType":"timestamp-millis"}},
            {"name":"amount","type":"double","default":0}]}"#,
    )
    .unwrap();
    let table = catalog
        .evolve(&table, &registry_schema(ValueSchema::Avro(&v2)).unwrap())
        .await
        .unwrap();
    let again = catalog
        .evolve(&table, &registry_schema(ValueSchema::Avro(&v2)).unwrap())
        .await
        .unwrap();
    assert_eq!(
        again.metadata().current_schema_id(),
        table.metadata().current_schema_id(),
        "nothing lacking: no new schema"
    );
    let second = avro_value(
        &v2,
        serde_json::json!({"id": 2, "customer": null, "tags": [],
            "address": {"city": "Lima", "zip": "15001"}, "placed": 5, "amount": 9.5}),
    );
    let mut file = PartitionFile::create(&table, 0, 1).await.unwrap();
    file.write_decoded(&[row(1)], &[second]).await.unwrap();
    let data_files = file
        .close()
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.data_file)
        .collect();
    catalog
        .commit(
            &table,
            Commit {
                source: SOURCE.to_owned(),
                data_files,
                next_offsets: BTreeMap::from([(0, 2)]),
            },
        )
        .await
        .unwrap();

    // The nested column added is in the table's schema; iceberg-rust's reader cannot
    // read it back from a file written before it was (engines do: the compat tests
    // read it with pyiceberg), so this scan leaves the struct out.
    let table = catalog.table(&name).await.unwrap();
    let schema = table.metadata().current_schema();
    assert!(schema.field_by_name("address.zip").is_some(), "{schema:?}");
    let batches = selected(
        &catalog,
        &name,
        Some(&["kafka", "id", "customer", "tags", "placed", "amount"]),
    )
    .await;
    let rows: Vec<serde_json::Value> = batches.iter().flat_map(arrow_json_rows).collect();
    assert_eq!(rows.len(), 2);
    let by_id = |id: i64| rows.iter().find(|r| r["id"] == id).unwrap().clone();
    let one = by_id(1);
    assert_eq!(one["customer"], "ada");
    assert_eq!(one["tags"], serde_json::json!(["a", "b"]));
    assert_eq!(one["placed"], 1_700_000_000_123_000_i64, "microseconds");
    assert!(
        one["amount"].is_null(),
        "written before the column was: {one}"
    );
    assert_eq!(one["kafka"]["offset"], 0);
    let two = by_id(2);
    assert_eq!(two["amount"], 9.5);
    assert!(two["customer"].is_null());
}

/// A batch's rows as JSON objects (through the columns' own values).
fn arrow_json_rows(batch: &RecordBatch) -> Vec<serde_json::Value> {
    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
    fn cell(array: &dyn Array, index: usize) -> serde_json::Value {
        use arrow_schema::DataType;
        if array.is_null(index) {
            return serde_json::Value::Null;
        }
        match array.data_type() {
            DataType::Int32 => array.as_primitive::<Int32Type>().value(index).into(),
            DataType::Int64 => array.as_primitive::<Int64Type>().value(index).into(),
            DataType::Float64 => array.as_primitive::<Float64Type>().value(index).into(),
            DataType::Timestamp(..) => array
                .as_primitive::<TimestampMicrosecondType>()
                .value(index)
                .into(),
            DataType::Utf8 => array.as_string::<i32>().value(index).into(),
            DataType::LargeUtf8 => array.as_string::<i64>().value(index).into(),
            DataType::LargeBinary => {
                String::from_utf8_lossy(array.as_binary::<i64>().value(index)).into()
            }
            DataType::List(_) => {
                let items = array.as_list::<i32>().value(index);
                (0..items.len()).map(|i| cell(&items, i)).collect()
            }
            DataType::Struct(fields) => {
                let structs = array.as_struct();
                fields
                    .iter()
                    .zip(structs.columns())
                    .map(|(field, column)| (field.name().clone(), cell(column, index)))
                    .collect::<serde_json::Map<_, _>>()
                    .into()
            }
            other => panic!("no cell for {other}"),
        }
    }
    (0..batch.num_rows())
        .map(|index| {
            batch
                .schema()
                .fields()
                .iter()
                .zip(batch.columns())
                .map(|(field, column)| (field.name().clone(), cell(column, index)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        })
        .collect()
}

#[tokio::test]
async fn json_schema_properties_are_columns_and_misfits_are_dead_letters() {
    let (_dir, catalog) = open().await;
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "sku": {"type": "string"},
            "count": {"type": "integer"},
            "price": {"type": ["number", "null"]},
            "meta": {"$ref": "#/definitions/Meta"},
            "anything": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
        },
        "definitions": {"Meta": {"type": "object", "properties": {"source": {"type": "string"}}}}
    });
    let name = TableName {
        namespace: "spool".to_owned(),
        table: "stock".to_owned(),
    };
    let table = catalog
        .ensure_table(&name, registry_schema(ValueSchema::Json(&schema)).unwrap())
        .await
        .unwrap();
    let mut file = PartitionFile::create(&table, 0, 0).await.unwrap();
    let good = Datum::from_json(serde_json::json!({"sku": "a-1", "count": 3, "price": 2,
        "meta": {"source": "pos"}, "anything": 7, "extra": true}));
    let bad = Datum::from_json(serde_json::json!({"sku": "b-2", "count": "three"}));
    file.check(&good).unwrap();
    let reason = file.check(&bad).unwrap_err();
    assert!(reason.contains("count"), "{reason}");
    file.write_decoded(&[row(0)], &[good]).await.unwrap();
    let data_files = file
        .close()
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.data_file)
        .collect();
    catalog
        .commit(
            &table,
            Commit {
                source: SOURCE.to_owned(),
                data_files,
                next_offsets: BTreeMap::from([(0, 2)]),
            },
        )
        .await
        .unwrap();
    let rows: Vec<serde_json::Value> = batches(&catalog, &name)
        .await
        .iter()
        .flat_map(arrow_json_rows)
        .collect();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["sku"], "a-1");
    assert_eq!(rows[0]["count"], 3);
    assert_eq!(rows[0]["price"], 2.0);
    assert_eq!(rows[0]["meta"]["source"], "pos");
    assert_eq!(rows[0]["anything"], "7", "an alternative is text");

    // The dead letter, whole, with its reason.
    let dead_name = TableName {
        namespace: "spool".to_owned(),
        table: "stock_dead_letters".to_owned(),
    };
    let dead = catalog
        .ensure_table(&dead_name, dead_letter_schema().unwrap())
        .await
        .unwrap();
    let mut file = PartitionFile::create(&dead, 0, 1).await.unwrap();
    let letter = Row {
        value: Some(br#"{"sku":"b-2","count":"three"}"#.to_vec()),
        ..row(1)
    };
    file.write_dead_letters(&[letter], std::slice::from_ref(&reason))
        .await
        .unwrap();
    let data_files = file
        .close()
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.data_file)
        .collect();
    catalog
        .commit(
            &dead,
            Commit {
                source: SOURCE.to_owned(),
                data_files,
                next_offsets: BTreeMap::from([(0, 2)]),
            },
        )
        .await
        .unwrap();
    let letters: Vec<serde_json::Value> = batches(&catalog, &dead_name)
        .await
        .iter()
        .flat_map(arrow_json_rows)
        .collect();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0]["offset"], 1);
    assert_eq!(letters[0]["reason"], reason.as_str());
    assert_eq!(letters[0]["value"], r#"{"sku":"b-2","count":"three"}"#);
}
