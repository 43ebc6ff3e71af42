//! Table topics (issue 39): a topic's committed records as an Iceberg table of Parquet
//! files, so that DuckDB, Spark, Trino or pyiceberg query it without a connector.
//! This crate holds the building blocks — the table's columns and rows, the catalogue
//! (Iceberg's SQL catalogue in the metadata store's database), and a commit that
//! writes one Parquet file per partition and records, in the snapshot it makes, the
//! offsets it covers (where the next commit starts: exactly once across crashes and
//! leadership moves). The broker decides what to commit and when.

mod arrays;
mod catalog;
mod columns;
mod commit;
mod datum;
mod error;
mod file;
mod key_value;
mod objects;
mod registry;

pub use catalog::{
    CATALOG_NAME, RestCatalogue, TableCatalog, TableName, data_file_locations, delete_file,
};
pub use columns::ValueSchema;
pub use commit::{Commit, committed_offsets};
pub use datum::Datum;
pub use error::TableError;
pub use file::{PartitionFile, WrittenFile};
pub use iceberg::table::Table;
pub use key_value::{Header, Row, key_value_schema};
pub use objects::ObjectStorage;
pub use registry::{KAFKA_COLUMN, REASON_COLUMN, dead_letter_schema, registry_schema};
