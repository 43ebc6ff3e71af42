//! Why a table could not be written or read.

/// A table operation's failure.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("iceberg: {0}")]
    Iceberg(#[from] iceberg::Error),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    #[error("the snapshot's offsets do not parse: {0}")]
    Offsets(String),
    /// A registry schema the table cannot take.
    #[error("{0}")]
    Schema(String),
    /// Another commit came first: nothing was committed.
    #[error("another commit came first: {0}")]
    Conflict(String),
}
