//! The storage engine's one error type. The protocol layer maps it to Kafka error codes.

use std::io;
use std::path::PathBuf;

use spool_model::Offset;
use spool_protocol::batch::BatchError;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{operation} {path}: {source}")]
    Io {
        operation: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("offset {requested} is below the log start offset {log_start}")]
    OffsetBelowLogStart {
        requested: Offset,
        log_start: Offset,
    },
    #[error("offset {requested} is beyond the high watermark {high_watermark}")]
    OffsetBeyondHighWatermark {
        requested: Offset,
        high_watermark: Offset,
    },
    #[error(
        "offset {requested} is beyond the last stable offset {last_stable}: a transaction is open below it"
    )]
    OffsetBeyondStableOffset {
        requested: Offset,
        last_stable: Offset,
    },
    /// A batch appended at its own offset starts before the log's end.
    #[error("a batch at offset {offset} does not continue the log at {log_end}")]
    OffsetBeforeLogEnd { offset: Offset, log_end: Offset },
    #[error("batch {index} of the append is malformed: {source}")]
    InvalidBatch {
        index: usize,
        #[source]
        source: BatchError,
    },
    #[error(
        "the log of {path} failed an earlier write or sync and refuses further writes; \
         reopen it to recover"
    )]
    Failed { path: PathBuf },
    /// Shared-storage mode: the catalogue refused this leader's commit, so another
    /// leader has the partition.
    #[error("{path}: this broker is no longer the partition's leader")]
    NotLeader { path: PathBuf },
    #[error("partition {0} does not exist")]
    UnknownPartition(String),
    #[error("partition {0} already exists")]
    PartitionExists(String),
    #[error(transparent)]
    Config(#[from] crate::ConfigError),
    #[error(transparent)]
    Producer(#[from] crate::ProducerError),
}

impl LogError {
    pub(crate) fn io(
        operation: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(io::Error) -> LogError {
        let path = path.into();
        move |source| LogError::Io {
            operation,
            path,
            source,
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, LogError>;
