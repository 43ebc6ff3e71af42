//! A commit: one Iceberg snapshot that adds written files and records the next
//! offset of every partition it covers (`spool.next-offsets`), made only on the
//! snapshot its caller read. Iceberg's own transaction would rebase a commit that lost
//! a race onto the winner's snapshot; here it fails whole instead, so that files are
//! never added twice: the next commit starts from the offsets of the snapshot that won.

use std::collections::{BTreeMap, HashMap};

use iceberg::spec::deserialize_data_file_from_json;
use iceberg::table::Table;
use iceberg::transaction::{ApplyTransactionAction, Transaction};
use iceberg::{
    Catalog, Error, ErrorKind, Namespace, NamespaceIdent, TableCommit, TableCreation, TableIdent,
};

use crate::catalog::TableCatalog;
use crate::error::TableError;

/// The snapshot summary property with the next offset of each partition, as JSON
/// (`{"0": 42, "1": 17}`).
const NEXT_OFFSETS: &str = "spool.next-offsets";
/// The snapshot summary property naming the source the offsets are of (the topic's
/// id: a topic made again under the same name starts over in the same table).
const SOURCE: &str = "spool.topic-id";

/// The next offset of each partition of `source`, as the table's current snapshot
/// records it (empty for a table never committed to, or last committed to from
/// another source).
pub fn committed_offsets(table: &Table, source: &str) -> Result<BTreeMap<i32, i64>, TableError> {
    let Some(snapshot) = table.metadata().current_snapshot() else {
        return Ok(BTreeMap::new());
    };
    let properties = &snapshot.summary().additional_properties;
    if properties.get(SOURCE).map(String::as_str) != Some(source) {
        return Ok(BTreeMap::new());
    }
    let Some(text) = properties.get(NEXT_OFFSETS) else {
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

/// What a commit adds: files (their `DataFile` JSON, from
/// [`WrittenFile`](crate::WrittenFile)) and the partitions' next offsets.
#[derive(Debug, Clone, Default)]
pub struct Commit {
    /// What the offsets are of (the topic's id).
    pub source: String,
    pub data_files: Vec<String>,
    /// The next offset of each partition the commit moves (the others keep theirs).
    pub next_offsets: BTreeMap<i32, i64>,
}

impl TableCatalog {
    /// Commits `commit` on `table` (as the caller read it): the table as committed,
    /// or [`TableError::Conflict`] when another commit came first.
    pub async fn commit(&self, table: &Table, commit: Commit) -> Result<Table, TableError> {
        let metadata = table.metadata();
        let schema = metadata.current_schema();
        let partition_type = metadata.default_partition_type();
        let spec_id = metadata.default_partition_spec_id();
        let data_files = commit
            .data_files
            .iter()
            .map(|json| deserialize_data_file_from_json(json, spec_id, partition_type, schema))
            .collect::<Result<Vec<_>, _>>()?;
        let mut offsets = committed_offsets(table, &commit.source)?;
        offsets.extend(commit.next_offsets);
        let recorded: BTreeMap<String, i64> = offsets
            .into_iter()
            .map(|(partition, offset)| (partition.to_string(), offset))
            .collect();
        let recorded =
            serde_json::to_string(&recorded).map_err(|e| TableError::Offsets(e.to_string()))?;
        let transaction = Transaction::new(table);
        let append = transaction
            .fast_append()
            .add_data_files(data_files)
            .set_snapshot_properties(HashMap::from([
                (NEXT_OFFSETS.to_owned(), recorded),
                (SOURCE.to_owned(), commit.source),
            ]));
        let transaction = append.apply(transaction)?;
        let on_snapshot = OnSnapshot {
            catalog: self.catalog.as_ref(),
            snapshot_id: metadata.current_snapshot_id(),
        };
        transaction
            .commit(&on_snapshot)
            .await
            .map_err(|error| match error.kind() {
                ErrorKind::CatalogCommitConflicts | ErrorKind::PreconditionFailed => {
                    TableError::Conflict(error.to_string())
                }
                _ => error.into(),
            })
    }
}

/// The catalogue as a commit made on one snapshot sees it: the table, when it is
/// read to be committed to, must still be at that snapshot — otherwise the commit
/// fails (not retried) where Iceberg's transaction would rebase it. (Iceberg's own
/// actions are closed to other crates, so the check sits in the catalogue.) The
/// commit's own requirement (the main branch at that snapshot) and the SQL
/// catalogue's compare-and-swap (a REST catalogue's requirement check) cover a
/// commit that comes in after the read.
#[derive(Debug)]
struct OnSnapshot<'a> {
    catalog: &'a dyn Catalog,
    snapshot_id: Option<i64>,
}

#[async_trait::async_trait]
impl Catalog for OnSnapshot<'_> {
    async fn load_table(&self, table: &TableIdent) -> iceberg::Result<Table> {
        let loaded = self.catalog.load_table(table).await?;
        let current = loaded.metadata().current_snapshot_id();
        if current != self.snapshot_id {
            return Err(Error::new(
                ErrorKind::PreconditionFailed,
                format!(
                    "the table moved on to snapshot {current:?} from {:?}",
                    self.snapshot_id
                ),
            ));
        }
        Ok(loaded)
    }

    async fn update_table(&self, commit: TableCommit) -> iceberg::Result<Table> {
        self.catalog.update_table(commit).await
    }

    async fn list_namespaces(
        &self,
        parent: Option<&NamespaceIdent>,
    ) -> iceberg::Result<Vec<NamespaceIdent>> {
        self.catalog.list_namespaces(parent).await
    }

    async fn create_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> iceberg::Result<Namespace> {
        self.catalog.create_namespace(namespace, properties).await
    }

    async fn get_namespace(&self, namespace: &NamespaceIdent) -> iceberg::Result<Namespace> {
        self.catalog.get_namespace(namespace).await
    }

    async fn namespace_exists(&self, namespace: &NamespaceIdent) -> iceberg::Result<bool> {
        self.catalog.namespace_exists(namespace).await
    }

    async fn update_namespace(
        &self,
        namespace: &NamespaceIdent,
        properties: HashMap<String, String>,
    ) -> iceberg::Result<()> {
        self.catalog.update_namespace(namespace, properties).await
    }

    async fn drop_namespace(&self, namespace: &NamespaceIdent) -> iceberg::Result<()> {
        self.catalog.drop_namespace(namespace).await
    }

    async fn list_tables(&self, namespace: &NamespaceIdent) -> iceberg::Result<Vec<TableIdent>> {
        self.catalog.list_tables(namespace).await
    }

    async fn create_table(
        &self,
        namespace: &NamespaceIdent,
        creation: TableCreation,
    ) -> iceberg::Result<Table> {
        self.catalog.create_table(namespace, creation).await
    }

    async fn drop_table(&self, table: &TableIdent) -> iceberg::Result<()> {
        self.catalog.drop_table(table).await
    }

    async fn purge_table(&self, table: &TableIdent) -> iceberg::Result<()> {
        self.catalog.purge_table(table).await
    }

    async fn table_exists(&self, table: &TableIdent) -> iceberg::Result<bool> {
        self.catalog.table_exists(table).await
    }

    async fn rename_table(&self, src: &TableIdent, dest: &TableIdent) -> iceberg::Result<()> {
        self.catalog.rename_table(src, dest).await
    }

    async fn register_table(
        &self,
        table: &TableIdent,
        metadata_location: String,
    ) -> iceberg::Result<Table> {
        self.catalog.register_table(table, metadata_location).await
    }
}
