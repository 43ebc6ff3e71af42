//! Table topics (docs/tables.md; BMQ's Parquet, Redpanda's Iceberg topics): a
//! topic's committed records are also an Iceberg table of Parquet files, in the
//! catalogue that Iceberg's SQL catalogue keeps in the metadata store's database, so
//! that DuckDB, Spark, Trino or pyiceberg query it without a connector.
//!
//! Every broker runs [`run`]. Each `table.commit.interval.ms` (on the clock's ticks,
//! the same moments on every broker) the leader of each partition writes what its
//! partition committed since the table's last snapshot — read_committed, from the
//! log start for a topic made a table with data — into a Parquet file ([`write`]) and
//! puts the file in the metadata store; the leader of partition 0 then joins every
//! partition's files in one snapshot that records, per partition, the offset the next
//! file starts at ([`commit`]). A crash, a restart or a leadership move loses nothing
//! and repeats nothing: the next writer starts where the snapshot and the files
//! waiting end, and each partition has one file per first offset.

mod catalogue;
mod commit;
mod info;
mod rows;
mod status;
mod values;
mod write;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use spool_metadata::MetadataStore;
use spool_schema_registry::Registry;
use spool_tables::{
    TableCatalog, TableName, committed_offsets, dead_letter_schema, key_value_schema,
    registry_schema,
};
use tokio::sync::watch;
use uuid::Uuid;

pub(crate) use self::info::table_info;
pub(crate) use self::status::{TableStatus, TopicTable};
use crate::shared::Shared;
use crate::topics::Topic;

/// How often the table topics are looked at.
const ROUND: Duration = Duration::from_secs(1);
/// Every how many rounds a broker reports what it sees of each table.
const REPORT_ROUNDS: u64 = 2;

/// Writes and commits the tables of the topics that are tables until `stopped`.
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut catalogue = catalogue::Catalogue::default();
    let registry: Arc<Registry<dyn MetadataStore>> =
        Arc::new(Registry::new(shared.metadata().clone()));
    let mut ticks: HashMap<Uuid, Ticks> = HashMap::new();
    let mut rounds = 0_u64;
    loop {
        tokio::select! {
            () = round(&shared, &registry, &mut catalogue, &mut ticks) => {}
            _ = stopped.changed() => break,
        }
        if rounds.is_multiple_of(REPORT_ROUNDS) {
            report(&shared, ticks.keys()).await;
        }
        rounds += 1;
        tokio::select! {
            () = tokio::time::sleep(ROUND) => {}
            _ = stopped.changed() => break,
        }
    }
}

/// The last tick (a multiple of the commit interval, in ms) at which each partition
/// led here was written, and the topic committed.
#[derive(Debug, Default)]
struct Ticks {
    written: HashMap<i32, i64>,
    committed: i64,
}

/// One look at every table topic.
async fn round(
    shared: &Arc<Shared>,
    registry: &Arc<Registry<dyn MetadataStore>>,
    catalogue: &mut catalogue::Catalogue,
    ticks: &mut HashMap<Uuid, Ticks>,
) {
    let topics: Vec<Arc<Topic>> = shared
        .topics()
        .all()
        .into_iter()
        .filter(|topic| topic.table.is_some())
        .collect();
    ticks.retain(|id, _| topics.iter().any(|topic| topic.record.id == *id));
    shared
        .tables()
        .keep_only(&topics.iter().map(|t| t.record.id).collect::<Vec<_>>());
    if topics.is_empty() {
        return;
    }
    let catalog = match catalogue.get(shared).await {
        Ok(catalog) => catalog,
        Err(error) => {
            tracing::warn!(%error, "opening the tables' catalogue failed");
            for topic in &topics {
                shared.tables().failed(topic.record.id, &error);
            }
            return;
        }
    };
    for topic in topics {
        let id = topic.record.id;
        let at = ticks.entry(id).or_default();
        if let Err(error) = look_at(shared, registry, &catalog, &topic, at).await {
            tracing::warn!(topic = %topic.record.name, %error, "a table topic's round failed");
            shared.tables().failed(id, &error);
            catalogue.forget();
        }
    }
}

/// Writes the partitions of `topic` led here whose tick came, and commits the
/// table if this broker leads partition 0 and its tick came.
async fn look_at(
    shared: &Arc<Shared>,
    registry: &Arc<Registry<dyn MetadataStore>>,
    catalog: &TableCatalog,
    topic: &Arc<Topic>,
    ticks: &mut Ticks,
) -> Result<(), String> {
    let Some(settings) = &topic.table else {
        return Ok(());
    };
    let id = topic.record.id;
    let led: Vec<i32> = (0..topic.record.partitions)
        .filter(|index| shared.partitions().led_epoch(topic, *index).is_some())
        .collect();
    // A partition led again later is written at once.
    ticks.written.retain(|index, _| led.contains(index));
    shared.tables().leads(id, &led);
    if led.is_empty() {
        return Ok(());
    }
    let interval = i64::try_from(settings.commit_interval.as_millis()).unwrap_or(i64::MAX);
    let now = shared.clock().now_ms();
    let tick = now - now.rem_euclid(interval);
    for index in &led {
        if let Ok(handle) = shared.partitions().open(topic.clone(), *index, -1).await {
            shared
                .tables()
                .partition_ends(id, *index, handle.log.offsets().high_watermark.0, now);
        }
    }
    let due: Vec<i32> = led
        .iter()
        .copied()
        .filter(|index| {
            ticks
                .written
                .get(index)
                .is_none_or(|written| *written < tick)
        })
        .collect();
    // The catalogue and the store are read only on a tick with something to write.
    if !due.is_empty() {
        let Some(mut target) = targets(registry, catalog, topic).await? else {
            return Ok(());
        };
        let waiting = shared
            .metadata()
            .table_files(id)
            .await
            .map_err(|e| e.to_string())?;
        let committed =
            committed_offsets(&target.table, &id.to_string()).map_err(|e| e.to_string())?;
        shared.tables().committed(id, &committed, false);
        for index in due {
            let from = commit::chain(
                committed.get(&index).copied().unwrap_or(0),
                waiting.iter().filter(|file| file.partition == index),
            )
            .1;
            let into = write::Target {
                table: &target.table,
                dead_letters: target.dead_letters.as_ref(),
                values: target.values.as_mut(),
            };
            write::partition(shared, into, topic, index, from).await?;
            ticks.written.insert(index, tick);
        }
    }
    // The other leaders write on the same tick: their files are waited for a moment.
    let settle = (interval / 10).min(2_000);
    if led.contains(&0) && ticks.committed < tick && now >= tick + settle {
        commit::commit(shared, catalog, &table_name(topic), topic).await?;
        ticks.committed = tick;
    }
    Ok(())
}

/// A table topic's tables as a tick's writes need them.
struct Targets {
    table: spool_tables::Table,
    dead_letters: Option<spool_tables::Table>,
    values: Option<values::Values>,
}

/// The table of `topic` (made if it is not there; with the columns the subject's
/// latest schema adds, for a `registry` table, and its dead-letter table); `None`
/// while a `registry` table's subject has no schema.
async fn targets(
    registry: &Arc<Registry<dyn MetadataStore>>,
    catalog: &TableCatalog,
    topic: &Topic,
) -> Result<Option<Targets>, String> {
    let name = table_name(topic);
    if !topic.table.as_ref().is_some_and(|t| t.from_registry) {
        let schema = key_value_schema().map_err(|e| e.to_string())?;
        let table = catalog
            .ensure_table(&name, schema)
            .await
            .map_err(|e| e.to_string())?;
        return Ok(Some(Targets {
            table,
            dead_letters: None,
            values: None,
        }));
    }
    let Some(values) = values::Values::latest(registry, topic.record.name.as_str()).await? else {
        tracing::debug!(topic = %topic.record.name, "a registry table waits for its subject's first schema");
        return Ok(None);
    };
    let wanted =
        registry_schema(values.schema().ok_or("no value schema")?).map_err(|e| e.to_string())?;
    let table = catalog
        .ensure_table(&name, wanted.clone())
        .await
        .map_err(|e| e.to_string())?;
    let dead_letters = catalog
        .ensure_table(
            &dead_letter_name(topic),
            dead_letter_schema().map_err(|e| e.to_string())?,
        )
        .await
        .map_err(|e| e.to_string())?;
    let table = catalog
        .evolve(&table, &wanted)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(Targets {
        table,
        dead_letters: Some(dead_letters),
        values: Some(values),
    }))
}

/// The table of `topic` (a table topic).
fn table_name(topic: &Topic) -> TableName {
    TableName {
        namespace: topic
            .table
            .as_ref()
            .map_or_else(|| "spool".to_owned(), |settings| settings.namespace.clone()),
        table: topic.record.name.to_string(),
    }
}

/// The dead-letter table of `topic` (a `registry` table topic): `TOPIC_dead_letters`.
fn dead_letter_name(topic: &Topic) -> TableName {
    let mut name = table_name(topic);
    name.table.push_str("_dead_letters");
    name
}

/// Puts what this broker sees of each table topic where the others read it (the
/// REST API and `spool topic describe` on any broker show the whole table).
async fn report(shared: &Arc<Shared>, ids: impl Iterator<Item = &Uuid>) {
    let node_id = shared.current_config().node_id;
    let now = shared.clock().now_ms();
    for id in ids {
        let Some(table) = shared.tables().of(*id) else {
            continue;
        };
        let Ok(report) = serde_json::to_string(&table) else {
            continue;
        };
        if let Err(error) = shared
            .metadata()
            .put_table_status(*id, node_id, &report, now)
            .await
        {
            tracing::debug!(%error, "reporting a table's state failed");
        }
    }
}
