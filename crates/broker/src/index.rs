//! Message indexes (`index.fields`, BMQ's Index; docs/index.md): find a topic's
//! records by key, header or JSON field without reading the topic.
//!
//! Each partition's index is a run of immutable chunks, each the index of an offset
//! range of committed records (`spool-index`'s format), kept where the partition's
//! data is: object storage in shared-storage mode, `DATA_DIR/index` in embedded mode
//! ([`store`]). The partition's leader builds them ([`build`]): every round it reads
//! what its partition committed past the last chunk (read_committed, as a consumer
//! would) into the tail, an index in memory, and writes the tail as a chunk once it
//! covers `index.chunk.bytes` of batches (64 MiB), when it stops leading the
//! partition, and when the broker stops. A crash loses only the tail, which the next
//! leader builds again from the last chunk. Chunks below the log start are deleted
//! (retention, DeleteRecords), and a deleted topic's with it; chunks built before a
//! field was indexed are built again in the background.
//!
//! A search ([`search`]) looks the value up in the chunks (bloom filter, then one
//! bucket's entries), in the tail, and reads what no chunk covers; it reads back
//! every record named and compares its field, so the answer is exact whatever the
//! index holds. Both read a value framed for the schema registry with its schema
//! ([`values`]: Avro, Protobuf, JSON Schema).

mod batches;
mod build;
pub(crate) mod search;
mod source;
mod state;
mod store;
mod values;
pub(crate) mod views;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

pub(crate) use self::state::Indexes;

use self::store::ChunkStore;
use crate::shared::Shared;

/// How often the indexed topics are looked at.
const ROUND: Duration = Duration::from_millis(500);

/// What the REST API shows of a topic's index: its chunks in storage, counted from
/// their names and summaries. `None` for a topic without `index.fields`.
pub(crate) async fn info(
    shared: &Shared,
    topic: &crate::topics::Topic,
) -> Option<spool_admin::IndexInfo> {
    let fields = topic.index.as_ref()?;
    let mut info = spool_admin::IndexInfo {
        fields: fields.to_string(),
        ..spool_admin::IndexInfo::default()
    };
    let store = shared.indexes().store()?;
    for index in 0..topic.record.partitions {
        let Ok(chunks) = store.list(topic.partition_key(index)).await else {
            continue;
        };
        for chunk in chunks {
            info.chunks += 1;
            info.bytes += chunk.size;
            if let Ok(summary) = store.summary(&chunk).await {
                info.covered_bytes += summary.data_bytes;
                info.records += summary.records;
            }
        }
    }
    Some(info)
}

/// Builds the indexes of the partitions led here until `stopped`, then writes their
/// tails as chunks.
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let store = match open_store(&shared) {
        Ok(store) => store,
        Err(error) => {
            tracing::error!(%error, "message indexes cannot be kept: none is built");
            return;
        }
    };
    shared
        .indexes()
        .started(store.clone(), tokio::runtime::Handle::current());
    let mut rounds = 0_u64;
    loop {
        tokio::select! {
            () = build::round(&shared, &store, rounds) => {}
            _ = stopped.changed() => break,
        }
        rounds += 1;
        tokio::select! {
            () = tokio::time::sleep(ROUND) => {}
            _ = stopped.changed() => break,
        }
    }
    build::release_all(&shared, &store).await;
}

/// The chunks' store: the object store's `index/` in shared-storage mode, files
/// under `DATA_DIR/index` in embedded mode.
fn open_store(shared: &Shared) -> Result<Arc<ChunkStore>, String> {
    match shared.storage() {
        Some(storage) => Ok(Arc::new(ChunkStore::new(storage.objects().clone()))),
        None => ChunkStore::local(&shared.current_config().data_dir).map(Arc::new),
    }
}
