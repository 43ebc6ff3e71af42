//! The catalogue: Iceberg's SQL catalogue (its `iceberg_tables` and
//! `iceberg_namespace_properties` tables) in a SQLite or PostgreSQL database — the
//! metadata store's own, so that an engine given the same database finds the tables —
//! or, as an option, an Iceberg REST catalogue.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use iceberg::io::{LocalFsStorageFactory, StorageFactory};
use iceberg::spec::Schema;
use iceberg::table::Table;
use iceberg::{Catalog, CatalogBuilder, NamespaceIdent, TableCreation, TableIdent};
use iceberg_catalog_rest::{
    REST_CATALOG_PROP_URI, REST_CATALOG_PROP_WAREHOUSE, RestCatalogBuilder,
};
use iceberg_catalog_sql::{
    SQL_CATALOG_PROP_BIND_STYLE, SQL_CATALOG_PROP_URI, SQL_CATALOG_PROP_WAREHOUSE, SqlBindStyle,
    SqlCatalogBuilder,
};

use crate::error::TableError;
use crate::objects::{ObjectStorage, ObjectStorageFactory};

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
pub struct TableCatalog {
    pub(crate) catalog: Box<dyn Catalog>,
}

/// Not the catalogue's own `Debug`: a REST catalogue's shows its login.
impl std::fmt::Debug for TableCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCatalog").finish_non_exhaustive()
    }
}

/// How a REST catalogue is reached: its URL, the warehouse named to it, and the
/// client's login (a bearer `token`, or an OAuth2 `credential` as `id:secret`).
#[derive(Clone, Default)]
pub struct RestCatalogue {
    pub url: String,
    pub warehouse: String,
    pub token: Option<String>,
    pub credential: Option<String>,
}

/// The login left out.
impl std::fmt::Debug for RestCatalogue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestCatalogue")
            .field("url", &self.url)
            .field("warehouse", &self.warehouse)
            .finish_non_exhaustive()
    }
}

impl TableCatalog {
    /// Opens the catalogue in the database at `uri` (`sqlite://…` or `postgres://…`),
    /// with new tables' files under `warehouse`: on the local disk (`file:///…`) when
    /// `objects` is `None`, else in that object store (`s3://bucket/…`).
    pub async fn open(
        uri: &str,
        warehouse: &str,
        objects: Option<ObjectStorage>,
    ) -> Result<TableCatalog, TableError> {
        let bind_style = if uri.starts_with("postgres") {
            SqlBindStyle::DollarNumeric
        } else {
            SqlBindStyle::QMark
        };
        let catalog = SqlCatalogBuilder::default()
            .with_storage_factory(storage_factory(objects))
            .load(
                CATALOG_NAME,
                HashMap::from([
                    (SQL_CATALOG_PROP_URI.to_owned(), uri.to_owned()),
                    (SQL_CATALOG_PROP_WAREHOUSE.to_owned(), warehouse.to_owned()),
                    (
                        SQL_CATALOG_PROP_BIND_STYLE.to_owned(),
                        bind_style.to_string(),
                    ),
                    // The commits of one broker come one at a time.
                    ("pool.max-connections".to_owned(), "2".to_owned()),
                ]),
            )
            .await?;
        Ok(TableCatalog {
            catalog: Box::new(catalog),
        })
    }

    /// Opens the Iceberg REST catalogue `rest` (asked for its config, and logged in,
    /// at the first call), with the tables' files read and written through `objects`
    /// (or the local disk), as with the SQL catalogue: the locations the catalogue
    /// gives must be in that storage.
    pub async fn open_rest(
        rest: &RestCatalogue,
        objects: Option<ObjectStorage>,
    ) -> Result<TableCatalog, TableError> {
        let mut props = HashMap::from([
            (REST_CATALOG_PROP_URI.to_owned(), rest.url.clone()),
            (
                REST_CATALOG_PROP_WAREHOUSE.to_owned(),
                rest.warehouse.clone(),
            ),
        ]);
        if let Some(token) = &rest.token {
            props.insert("token".to_owned(), token.clone());
        }
        if let Some(credential) = &rest.credential {
            props.insert("credential".to_owned(), credential.clone());
        }
        let catalog = RestCatalogBuilder::default()
            .with_storage_factory(storage_factory(objects))
            .load(CATALOG_NAME, props)
            .await?;
        Ok(TableCatalog {
            catalog: Box::new(catalog),
        })
    }

    /// The table `name`, made with `schema` (and its namespace) if it is not there.
    /// Another broker making it at the same moment is no failure: its table is
    /// the one.
    pub async fn ensure_table(
        &self,
        name: &TableName,
        schema: Schema,
    ) -> Result<Table, TableError> {
        let ident = name.ident()?;
        let namespace = NamespaceIdent::new(name.namespace.clone());
        if !self.catalog.namespace_exists(&namespace).await?
            && let Err(error) = self
                .catalog
                .create_namespace(&namespace, HashMap::new())
                .await
            && !self.catalog.namespace_exists(&namespace).await?
        {
            return Err(error.into());
        }
        if self.catalog.table_exists(&ident).await? {
            return Ok(self.catalog.load_table(&ident).await?);
        }
        let creation = TableCreation::builder()
            .name(name.table.clone())
            .schema(schema)
            .build();
        match self.catalog.create_table(&namespace, creation).await {
            Ok(table) => Ok(table),
            Err(error) => {
                if self.catalog.table_exists(&ident).await? {
                    Ok(self.catalog.load_table(&ident).await?)
                } else {
                    Err(error.into())
                }
            }
        }
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

/// Where the tables' files are read and written: the object store, or the local disk.
fn storage_factory(objects: Option<ObjectStorage>) -> Arc<dyn StorageFactory> {
    match objects {
        Some(storage) => Arc::new(ObjectStorageFactory { storage }),
        None => Arc::new(LocalFsStorageFactory),
    }
}
