//! The catalogue: Iceberg's SQL catalogue (its `iceberg_tables` and
//! `iceberg_namespace_properties` tables) in a SQLite or PostgreSQL database — the
//! metadata store's own, so that an engine given the same database finds the tables.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use iceberg::io::LocalFsStorageFactory;
use iceberg::spec::Schema;
use futures::TryStreamExt;
use iceberg::table::Table;
use iceberg::{Catalog, CatalogBuilder, NamespaceIdent, TableCreation, TableIdent};
use iceberg_catalog_sql::{
    SQL_CATALOG_PROP_BIND_STYLE, SQL_CATALOG_PROP_URI, SQL_CATALOG_PROP_WAREHOUSE, SqlBindStyle,
    SqlCatalog, SqlCatalogBuilder,
};

use crate::error::TableError;

/// The catalogue's name in its tables (engines are pointed at it by this name).
pub const CATALOG_NAME: &str = "spool";

/// A table's namespace (`table.namespace`) and name (the topic's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableName {
    pub namespace: String,
    pub table: String,
}

impl TableName {
    fn ident(&self) -> Result<TableIdent, TableError> {
        Ok(TableIdent::from_strs([
            self.namespace.as_str(),
            self.table.as_str(),
        ])?)
    }
}

/// The catalogue, with tables' files under a warehouse location.
#[derive(Debug)]
pub struct TableCatalog {
    pub(crate) catalog: SqlCatalog,
}

impl TableCatalog {
    /// Opens the catalogue in the database at `uri` (`sqlite://…` or `postgres://…`),
    /// with new tables' files under `warehouse` (`file:///…`).
    pub async fn open(uri: &str, warehouse: &str) -> Result<TableCatalog, TableError> {
        let bind_style = if uri.starts_with("postgres") {
            SqlBindStyle::DollarNumeric
        } else {
            SqlBindStyle::QMark
        };
        let catalog = SqlCatalogBuilder::default()
            .with_storage_factory(Arc::new(LocalFsStorageFactory))
            .load(
                CATALOG_NAME,
                HashMap::from([
                    (SQL_CATALOG_PROP_URI.to_owned(), uri.to_owned()),
                    (SQL_CATALOG_PROP_WAREHOUSE.to_owned(), warehouse.to_owned()),
                    (
                        SQL_CATALOG_PROP_BIND_STYLE.to_owned(),
                        bind_style.to_string(),
                    ),
                ]),
            )
            .await?;
        Ok(TableCatalog { catalog })
    }

    /// The table `name`, made with `schema` (and its namespace) if it is not there.
    pub async fn ensure_table(
        &self,
        name: &TableName,
        schema: Schema,
    ) -> Result<Table, TableError> {
        let ident = name.ident()?;
        let namespace = NamespaceIdent::new(name.namespace.clone());
        if !self.catalog.namespace_exists(&namespace).await? {
            self.catalog
                .create_namespace(&namespace, HashMap::new())
                .await?;
        }
        if self.catalog.table_exists(&ident).await? {
            return Ok(self.catalog.load_table(&ident).await?);
        }
        let creation = TableCreation::builder()
            .name(name.table.clone())
            .schema(schema)
            .build();
        Ok(self.catalog.create_table(&namespace, creation).await?)
    }

    /// The table `name` as last committed.
    pub async fn table(&self, name: &TableName) -> Result<Table, TableError> {
        Ok(self.catalog.load_table(&name.ident()?).await?)
    }
}

/// Every data file of the table's current snapshot, by location.
pub async fn data_file_locations(table: &Table) -> Result<HashSet<String>, TableError> {
    let tasks = table.scan().build()?.plan_files().await?;
    Ok(tasks
        .map_ok(|task| task.data_file_path)
        .try_collect()
        .await?)
}

/// Removes a file written for the table but never committed.
pub async fn delete_file(table: &Table, location: &str) -> Result<(), TableError> {
    Ok(table.file_io().delete(location).await?)
}
