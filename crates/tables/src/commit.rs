//! A commit: one Parquet file per partition with rows, and one Iceberg snapshot that
//! adds them and records the next offset of every partition it covers
//! (`spool.next-offsets`). A commit that loses a race with another (the catalogue's
//! compare-and-swap) fails whole; the next one starts from the offsets of the
//! snapshot that won.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use iceberg::arrow::schema_to_arrow_schema;
use iceberg::spec::DataFileFormat;
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use parquet::file::properties::WriterProperties;

use crate::catalog::{TableCatalog, TableName};
use crate::error::TableError;
use crate::key_value::{Row, to_batch};

/// The snapshot summary property with the next offset of each partition, as JSON
/// (`{"0": 42, "1": 17}`).
const NEXT_OFFSETS: &str = "spool.next-offsets";

/// A partition's rows for a commit, and the offset the partition's next commit
/// starts at (past the rows, and past what was read and left out: aborted records,
/// control batches).
#[derive(Debug, Clone)]
pub struct PartitionRows {
    pub partition: i32,
    pub rows: Vec<Row>,
    pub next_offset: i64,
}

/// The next offset of each partition, as the table's current snapshot records it
/// (empty for a table never committed to).
pub fn committed_offsets(table: &Table) -> Result<BTreeMap<i32, i64>, TableError> {
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(BTreeMap::new());
    };
    let Some(text) = snapshot.summary().additional_properties.get(NEXT_OFFSETS) else {
        return Ok(BTreeMap::new());
    };
    let by_name: BTreeMap<String, i64> =
        serde_json::from_str(text).map_err(|e| TableError::Offsets(e.to_string()))?;
    by_name
        .into_iter()
        .map(|(partition, offset)| {
            partition
                .parse()
                .map(|partition| (partition, offset))
                .map_err(|_| TableError::Offsets(format!("partition {partition}")))
        })
        .collect()
}

impl TableCatalog {
    /// Writes each partition's rows (one Parquet file each) and commits them in one
    /// snapshot with the partitions' next offsets: the table as committed.
    pub async fn commit(
        &self,
        name: &TableName,
        partitions: Vec<PartitionRows>,
    ) -> Result<Table, TableError> {
        let table = self.table(name).await?;
        let mut offsets = committed_offsets(&table)?;
        let schema = table.metadata().current_schema().clone();
        let arrow_schema = Arc::new(schema_to_arrow_schema(&schema)?);
        let locations = DefaultLocationGenerator::new(table.metadata())?;
        let mut data_files = Vec::new();
        for part in partitions {
            if let Some(first) = part.rows.first() {
                let names = DefaultFileNameGenerator::new(
                    format!("p{}-o{}", part.partition, first.offset),
                    None,
                    DataFileFormat::Parquet,
                );
                let parquet =
                    ParquetWriterBuilder::new(WriterProperties::default(), schema.clone());
                let rolling = RollingFileWriterBuilder::new_with_default_file_size(
                    parquet,
                    table.file_io().clone(),
                    locations.clone(),
                    names,
                );
                let mut writer = DataFileWriterBuilder::new(rolling).build(None).await?;
                writer.write(to_batch(&arrow_schema, &part.rows)?).await?;
                data_files.extend(writer.close().await?);
            }
            offsets.insert(part.partition, part.next_offset);
        }
        let recorded: BTreeMap<String, i64> = offsets
            .into_iter()
            .map(|(partition, offset)| (partition.to_string(), offset))
            .collect();
        let recorded =
            serde_json::to_string(&recorded).map_err(|e| TableError::Offsets(e.to_string()))?;
        let transaction = Transaction::new(&table);
        let append = transaction
            .fast_append()
            .add_data_files(data_files)
            .set_snapshot_properties(HashMap::from([(NEXT_OFFSETS.to_owned(), recorded)]));
        let transaction = append.apply(transaction)?;
        Ok(transaction.commit(&self.catalog).await?)
    }
}
