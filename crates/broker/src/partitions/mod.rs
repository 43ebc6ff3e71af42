//! The one seam between handlers and partitions: a handler names a partition (topic
//! name, index, and the leader epoch the client knows) and gets a [`PartitionHandle`]
//! or a [`PartitionError`] that maps to a Kafka error code here, in one place. Blocking
//! partition work goes to the blocking pool through [`on_blocking_pool`], which answers
//! a failed task one way for every handler.
//!
//! Behind the seam, a topic's partitions are the log manager's partitions keyed by the
//! topic's id (`topics/<id>/<index>/`), so a topic deleted and created again under the
//! same name never sees the old one's data.

use std::sync::Arc;

use spool_log::{Isolation, LogError, PartitionLog, ReadChunk, ReadResult};
use spool_metadata::{MetadataError, PartitionKey};
use spool_model::{Offset, Timestamp, TopicName, TopicPartition};
use spool_protocol::keyed::BatchRecords;
use spool_protocol::plain::PlainRecord;
use uuid::Uuid;

use crate::errors::{self, code};
use crate::topics::Topic;
use spool_shared_storage::{SharedPartition, StorageError};

mod router;
pub(crate) mod write;

pub(crate) use router::Partitions;

/// A partition this broker serves, ready for reads and appends.
#[derive(Debug, Clone)]
pub(crate) struct PartitionHandle {
    /// The partition's log; in shared-storage mode, its tail (see `shared`).
    pub(crate) log: Arc<PartitionLog>,
    /// The partition's current leader epoch (what appends are stamped with).
    pub(crate) leader_epoch: i32,
    /// In shared-storage mode: the partition in the catalogue and object storage,
    /// which hold everything before the tail.
    pub(crate) shared: Option<SharedPartition>,
}

/// Why a handler cannot have a partition.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PartitionError {
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// The client's leader epoch is older than the partition's.
    #[error("leader epoch {requested} is older than the current {current}")]
    FencedLeaderEpoch { requested: i32, current: i32 },
    /// The client's leader epoch is newer than any this broker knows.
    #[error("leader epoch {requested} is newer than the current {current}")]
    UnknownLeaderEpoch { requested: i32, current: i32 },
    #[error("{0}")]
    Storage(#[from] LogError),
    /// Shared-storage mode: another broker leads the partition.
    #[error("this broker is not the partition's leader")]
    NotLeader,
    /// Shared-storage mode: this broker leads the partition and has no tail open for
    /// it (none was opened before the blocking work): retriable, as a change of leader.
    #[error("the partition's tail is not open")]
    TailNotOpen,
    /// Shared-storage mode: opening the partition's tail failed, for this reason.
    #[error("cannot open the partition's tail: {0}")]
    OpenFailed(Arc<PartitionError>),
    /// Shared-storage mode: the catalogue could not be read or written.
    #[error("catalogue: {0}")]
    Catalogue(MetadataError),
    /// Shared-storage mode: an object could not be read.
    #[error("object storage: {0}")]
    ObjectRead(String),
    /// A batch a view has to read the records of cannot be read.
    #[error("{0}")]
    Unreadable(String),
    /// The blocking task doing the work failed (panicked, or was cancelled as the
    /// broker stopped): the work may or may not have happened.
    #[error("the storage task failed: {0}")]
    Interrupted(String),
}

impl From<StorageError> for PartitionError {
    fn from(error: StorageError) -> PartitionError {
        match error {
            StorageError::UnknownTopicOrPartition => PartitionError::UnknownTopicOrPartition,
            StorageError::NotLeader => PartitionError::NotLeader,
            StorageError::Log(error) => PartitionError::Storage(error),
            StorageError::Catalogue(error) => PartitionError::Catalogue(error),
            StorageError::ObjectRead(message) => PartitionError::ObjectRead(message),
            StorageError::Interrupted(message) => PartitionError::Interrupted(message),
        }
    }
}

impl PartitionError {
    /// The Kafka error code a client gets.
    pub(crate) fn code(&self) -> i16 {
        match self {
            PartitionError::UnknownTopicOrPartition => code::UNKNOWN_TOPIC_OR_PARTITION,
            PartitionError::FencedLeaderEpoch { .. } => code::FENCED_LEADER_EPOCH,
            PartitionError::UnknownLeaderEpoch { .. } => code::UNKNOWN_LEADER_EPOCH,
            PartitionError::Storage(error) => errors::log_error_code(error),
            PartitionError::NotLeader | PartitionError::TailNotOpen => code::NOT_LEADER_OR_FOLLOWER,
            PartitionError::OpenFailed(why) => why.code(),
            PartitionError::Catalogue(MetadataError::UnknownTopic(_)) => {
                code::UNKNOWN_TOPIC_OR_PARTITION
            }
            // Retriable: the catalogue or the object store may answer the next time.
            PartitionError::Catalogue(_) | PartitionError::ObjectRead(_) => {
                code::KAFKA_STORAGE_ERROR
            }
            // Retriable: an idempotent producer sends the same sequences again, which
            // the log recognises if they were written. A fatal code would make
            // librdkafka bump its epoch and re-send its other batches in flight as new
            // ones: duplicates, found by `spool faultcheck`.
            PartitionError::Interrupted(_) => code::KAFKA_STORAGE_ERROR,
            PartitionError::Unreadable(_) => code::CORRUPT_MESSAGE,
        }
    }
}

impl PartitionError {
    /// Whether the client is to look for the partition's leader (and gets a hint).
    pub(crate) fn is_not_leader(&self) -> bool {
        match self {
            PartitionError::NotLeader | PartitionError::TailNotOpen => true,
            PartitionError::OpenFailed(why) => why.is_not_leader(),
            _ => false,
        }
    }
}

/// The log manager's name for a topic's partitions: the topic's id, as 32 hex digits
/// (a valid topic name, so the log layer needs no other key).
pub(crate) fn log_topic(id: Uuid) -> TopicName {
    TopicName::new(id.simple().to_string())
        .unwrap_or_else(|_| unreachable!("32 hex digits are a valid topic name"))
}

/// The topic id a log-manager topic name stands for, if it is one.
pub(crate) fn topic_id_of_log(topic: &TopicName) -> Option<Uuid> {
    let text = topic.as_str();
    (text.len() == 32)
        .then(|| Uuid::try_parse(text).ok())
        .flatten()
}

impl Topic {
    /// The metadata store's key of the topic's partition `index`.
    pub(crate) fn partition_key(&self, index: i32) -> PartitionKey {
        PartitionKey {
            topic_id: self.record.id,
            partition: index,
        }
    }

    /// The log-manager key of the topic's partition `index`, if it has one (a view
    /// has no log).
    pub(crate) fn log_partition(&self, index: i32) -> Option<TopicPartition> {
        if self.view.is_some() {
            return None;
        }
        (0..self.record.partitions)
            .contains(&index)
            .then(|| TopicPartition::new(log_topic(self.record.id), index))
    }

    /// The partition's leader epoch (0 for a partition this broker has not recorded
    /// one for).
    pub(crate) fn leader_epoch(&self, index: i32) -> i32 {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.leader_epochs.get(i).copied())
            .unwrap_or(0)
    }
}

/// Runs blocking partition work (reads, appends, file creation, fsync) on the blocking
/// pool. A task that fails (a panic, or cancellation as the broker stops) is
/// [`PartitionError::Interrupted`], whatever the handler.
pub(crate) async fn on_blocking_pool<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, PartitionError> {
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        tracing::error!(%error, "a storage task failed");
        PartitionError::Interrupted(error.to_string())
    })
}

/// The most bytes of a partition read to find one record ([`PartitionHandle::record_at`]).
pub(crate) const RECORD_READ_BYTES: u64 = 1 << 20;

/// The record at `offset` in `bytes`, whole batches from the one holding it.
pub(crate) fn record_in(bytes: &[u8], offset: i64) -> Option<PlainRecord> {
    let batch = BatchRecords::read(bytes, 64 << 20).ok()?;
    let records = batch.records().ok()?;
    let delta = offset - batch.header.base_offset.0;
    let record = records.iter().find(|r| r.offset_delta == delta)?;
    Some(PlainRecord {
        key: record.key.map(<[u8]>::to_vec),
        value: record.value.map(<[u8]>::to_vec),
        headers: record
            .headers()?
            .into_iter()
            .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
            .collect(),
    })
}

/// What bounds a read of a partition's committed records in objects: the leader's
/// marks, or those a broker that does not lead it read from the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CommittedBounds {
    pub(crate) log_start: Offset,
    pub(crate) high_watermark: Offset,
    pub(crate) last_stable: Offset,
}

/// A read from objects as a fetch asks it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ObjectRead {
    pub(crate) offset: Offset,
    pub(crate) max_bytes: u64,
    /// The first batch whole, past `max_bytes`.
    pub(crate) first_whole: bool,
    pub(crate) isolation: Isolation,
}

/// Whole batches of the partition `key` from objects, from the one holding the
/// offset up to the high watermark (read_committed: the last stable offset), with the
/// aborted transactions (`aborted_between(from, to)`) that have records in them.
/// Blocking. The leader reads below its tail this way, and every other broker the
/// whole partition, so both serve the same bytes at the same offsets.
pub(crate) fn read_from_objects(
    storage: &Arc<spool_shared_storage::SharedStorage>,
    key: PartitionKey,
    bounds: &CommittedBounds,
    wanted: ObjectRead,
    aborted_between: impl FnOnce(Offset, Offset) -> Vec<spool_log::AbortedTxn>,
) -> Result<ReadResult, PartitionError> {
    let CommittedBounds {
        log_start,
        high_watermark,
        last_stable,
    } = *bounds;
    let offset = wanted.offset;
    if offset < log_start {
        return Err(LogError::OffsetBelowLogStart {
            requested: offset,
            log_start,
        }
        .into());
    }
    let limit = match wanted.isolation {
        Isolation::ReadUncommitted => high_watermark,
        Isolation::ReadCommitted => last_stable,
    };
    // Taken before the read: retention may trim the index meanwhile.
    let mut aborted = match wanted.isolation {
        Isolation::ReadCommitted if offset < limit => aborted_between(offset, limit),
        _ => Vec::new(),
    };
    if offset >= limit {
        return Ok(ReadResult {
            chunks: Vec::new(),
            log_start,
            high_watermark,
            last_stable,
            aborted,
        });
    }
    let reader = storage.reader.clone();
    let (max_bytes, first_whole) = (wanted.max_bytes, wanted.first_whole);
    let read = storage.wait_for(async move {
        reader
            .read(key, offset, limit, max_bytes, first_whole)
            .await
    })??;
    // Only those with records in what was read.
    let end = read
        .batches
        .last()
        .and_then(|batch| spool_model::RecordBatchHeader::parse(batch))
        .map_or(offset, |header| header.next_offset());
    aborted.retain(|txn| txn.first_offset < end);
    Ok(ReadResult {
        chunks: read.batches.into_iter().map(ReadChunk::Memory).collect(),
        log_start,
        high_watermark,
        last_stable,
        aborted,
    })
}

impl PartitionHandle {
    /// The bytes of whole batches from the one holding `offset`, about `max_bytes` of
    /// them (the first whole): for the broker's own readers (the admin API, delayed
    /// delivery), which look into the records. Blocking.
    pub(crate) fn read_bytes(
        &self,
        offset: Offset,
        max_bytes: u64,
    ) -> Result<Vec<u8>, PartitionError> {
        let read = self.read(offset, max_bytes, true, Isolation::ReadUncommitted)?;
        self.bytes_of(&read)
    }

    /// As [`PartitionHandle::read_bytes`], read_committed: up to the last stable
    /// offset, with the aborted transactions whose records the bytes hold (for the
    /// table writer, which leaves them out). Blocking.
    pub(crate) fn read_committed_bytes(
        &self,
        offset: Offset,
        max_bytes: u64,
    ) -> Result<(Vec<u8>, ReadResult), PartitionError> {
        let mut read = self.read(offset, max_bytes, true, Isolation::ReadCommitted)?;
        let bytes = self.bytes_of(&read)?;
        read.chunks.clear();
        Ok((bytes, read))
    }

    /// The bytes of a read's chunks, in one buffer.
    fn bytes_of(&self, read: &ReadResult) -> Result<Vec<u8>, PartitionError> {
        let total = read.chunks.iter().map(ReadChunk::len).sum::<u64>();
        let mut bytes = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
        for chunk in &read.chunks {
            match chunk {
                ReadChunk::Memory(memory) => bytes.extend_from_slice(memory),
                ReadChunk::File {
                    file,
                    position,
                    len,
                } => {
                    let start = bytes.len();
                    bytes.resize(start + usize::try_from(*len).unwrap_or(0), 0);
                    let target = bytes.get_mut(start..).unwrap_or_default();
                    file.read_exact_at(target, *position).map_err(|source| {
                        PartitionError::Storage(LogError::Io {
                            operation: "read",
                            path: self.log.dir().to_path_buf(),
                            source,
                        })
                    })?;
                }
            }
        }
        Ok(bytes)
    }

    /// The record at `offset` (key, value and headers), if it can be read: for the
    /// broker's own readers (dead letters' copies, transaction checks). Blocking.
    pub(crate) fn record_at(&self, offset: i64) -> Option<PlainRecord> {
        record_in(
            &self.read_bytes(Offset(offset), RECORD_READ_BYTES).ok()?,
            offset,
        )
    }

    /// The partition's log start offset (in shared-storage mode, the catalogue's:
    /// the tail starts later).
    pub(crate) fn log_start(&self) -> Offset {
        self.shared
            .as_ref()
            .map_or_else(|| self.log.offsets().log_start, SharedPartition::log_start)
    }

    /// Whole batches from the one holding `offset`, within `max_bytes` (the first one
    /// whole when `first_whole`): from the log, or, in shared-storage mode below the
    /// tail, from objects. Blocking.
    pub(crate) fn read(
        &self,
        offset: Offset,
        max_bytes: u64,
        first_whole: bool,
        isolation: Isolation,
    ) -> Result<ReadResult, PartitionError> {
        // Below the tail, or below where a compacted partition is clean in objects
        // (the tail keeps what it appended as it was).
        if let Some(shared) = &self.shared
            && (offset < self.log.offsets().log_start || offset < shared.cleaned())
        {
            return self.read_objects(shared, offset, max_bytes, first_whole, isolation);
        }
        let read = self
            .log
            .read_isolated(offset, max_bytes, first_whole, isolation);
        match (read, &self.shared) {
            (Ok(mut result), _) => {
                result.log_start = self.log_start();
                Ok(result)
            }
            // The tail dropped the offset's segment meanwhile (it was committed).
            (Err(LogError::OffsetBelowLogStart { .. }), Some(shared)) => {
                self.read_objects(shared, offset, max_bytes, first_whole, isolation)
            }
            (Err(error), _) => Err(error.into()),
        }
    }

    /// A read below the tail, from objects, up to the tail's high watermark (or,
    /// read_committed, its last stable offset).
    fn read_objects(
        &self,
        shared: &SharedPartition,
        offset: Offset,
        max_bytes: u64,
        first_whole: bool,
        isolation: Isolation,
    ) -> Result<ReadResult, PartitionError> {
        let bounds = CommittedBounds {
            log_start: shared.log_start(),
            high_watermark: self.log.offsets().high_watermark,
            last_stable: self.log.stable_offset(),
        };
        let wanted = ObjectRead {
            offset,
            max_bytes,
            first_whole,
            isolation,
        };
        read_from_objects(&shared.storage, shared.key, &bounds, wanted, |from, to| {
            self.log.aborted_between(from, to)
        })
    }

    /// The first offset whose record timestamp is at or after `target`, with that
    /// timestamp. Blocking.
    pub(crate) fn offset_for_timestamp(
        &self,
        target: Timestamp,
    ) -> Result<Option<(Offset, Timestamp)>, PartitionError> {
        let Some(shared) = &self.shared else {
            return Ok(self.log.offset_for_timestamp(target)?);
        };
        let (reader, key, log_start) = (
            shared.storage.reader.clone(),
            shared.key,
            shared.log_start(),
        );
        shared
            .storage
            .wait_for(async move { reader.offset_for_timestamp(key, target, log_start).await })?
            .map_err(PartitionError::from)
    }

    /// The first record with the largest timestamp, with that timestamp. Blocking.
    pub(crate) fn max_timestamp_offset(
        &self,
    ) -> Result<Option<(Offset, Timestamp)>, PartitionError> {
        let Some(shared) = &self.shared else {
            return Ok(self.log.max_timestamp_offset()?);
        };
        let (reader, key, log_start) = (
            shared.storage.reader.clone(),
            shared.key,
            shared.log_start(),
        );
        shared
            .storage
            .wait_for(async move { reader.max_timestamp_offset(key, log_start).await })?
            .map_err(PartitionError::from)
    }

    /// Moves the log start forward to `offset` (DeleteRecords); returns the new one.
    /// Blocking.
    pub(crate) fn advance_log_start(&self, offset: Offset) -> Result<Offset, PartitionError> {
        match &self.shared {
            None => Ok(self.log.advance_log_start(offset)?),
            Some(shared) => Ok(shared.advance_log_start(&self.log, offset)?),
        }
    }

    /// Notes a successful append of `bytes` (shared-storage mode uploads it).
    pub(crate) fn appended(&self, bytes: usize) {
        if let Some(shared) = &self.shared {
            shared.appended(&self.log, bytes);
        }
    }
}
