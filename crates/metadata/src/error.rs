//! Why a metadata operation failed, classified so that callers can act on it without
//! knowing the backend: retry later, re-read and retry, or give up.

/// Why a metadata operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    #[error("topic {0} already exists")]
    TopicExists(String),
    #[error("topic {0} does not exist")]
    UnknownTopic(String),
    /// Another coordinator claimed the group since this one did.
    #[error("group {group}: this coordinator was fenced by a newer one")]
    Fenced { group: String },
    /// The store was unreachable, busy or timed out: the same call may succeed later.
    #[error("metadata store unavailable: {0}")]
    Retriable(String),
    /// A concurrent change won (a serialization failure or a duplicate key): read
    /// again and retry.
    #[error("metadata store conflict: {0}")]
    Conflict(String),
    /// A live broker of another instance (data directory) holds the node id.
    #[error(
        "node id {node_id} is held by a live broker at {holder} (its lease ends in {expires_in_ms} ms unless renewed): give this broker another node id, or stop that one first"
    )]
    NodeInUse {
        node_id: i32,
        holder: String,
        expires_in_ms: i64,
    },
    /// The store's cluster keeps its data in other object storage.
    #[error(
        "this metadata store belongs to a cluster whose object storage is {cluster}, not {asked}: give that storage URL, or another metadata store"
    )]
    OtherStorage { cluster: String, asked: String },
    /// Retrying will not help: a failed migration, a corrupt row, a schema mismatch.
    #[error("metadata store failed: {0}")]
    Fatal(String),
}

impl MetadataError {
    /// Whether the same call may succeed if made again.
    #[must_use]
    pub fn is_retriable(&self) -> bool {
        matches!(
            self,
            MetadataError::Retriable(_) | MetadataError::Conflict(_)
        )
    }
}

impl From<sqlx::Error> for MetadataError {
    fn from(error: sqlx::Error) -> MetadataError {
        let message = error.to_string();
        match &error {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::WorkerCrashed => MetadataError::Retriable(message),
            sqlx::Error::Database(database) => {
                let code = database.code().unwrap_or_default();
                let sqlite = database
                    .try_downcast_ref::<sqlx::sqlite::SqliteError>()
                    .is_some();
                let (conflict, unavailable) = if sqlite {
                    sqlite_kind(&code)
                } else {
                    postgres_kind(&code)
                };
                if conflict {
                    MetadataError::Conflict(message)
                } else if unavailable {
                    MetadataError::Retriable(message)
                } else {
                    MetadataError::Fatal(message)
                }
            }
            _ => MetadataError::Fatal(message),
        }
    }
}

impl From<sqlx::migrate::MigrateError> for MetadataError {
    fn from(error: sqlx::migrate::MigrateError) -> MetadataError {
        match error {
            sqlx::migrate::MigrateError::Execute(error) => MetadataError::from(error),
            other => MetadataError::Fatal(format!("migration: {other}")),
        }
    }
}

/// (conflict, unavailable) for a PostgreSQL SQLSTATE: a serialization failure, a
/// deadlock or a unique violation conflict; connection exceptions (class 08), too
/// many connections and a server shutting down or starting are unavailability.
fn postgres_kind(code: &str) -> (bool, bool) {
    let conflict = matches!(code, "40001" | "40P01" | "23505");
    let unavailable =
        code.starts_with("08") || matches!(code, "53300" | "57P01" | "57P02" | "57P03");
    (conflict, unavailable)
}

/// (conflict, unavailable) for a SQLite extended result code: a unique or primary key
/// constraint conflicts; the database busy or locked (primary codes 5 and 6) is
/// unavailability.
fn sqlite_kind(code: &str) -> (bool, bool) {
    let conflict = matches!(code, "2067" | "1555");
    let unavailable = code
        .parse::<u32>()
        .is_ok_and(|extended| matches!(extended & 0xff, 5 | 6));
    (conflict, unavailable)
}

/// The outcome of a metadata operation.
pub type Result<T> = std::result::Result<T, MetadataError>;
