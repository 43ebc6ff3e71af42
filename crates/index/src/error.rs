//! Why an index field or a chunk was refused.

/// An `index.fields` that does not parse, or chunk bytes that are not a chunk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// A field of `index.fields` that is none of the forms; the text says which.
    #[error("index.fields: {0}")]
    BadField(String),
    /// Bytes that are not an index chunk of a version this build reads.
    #[error("not an index chunk: {0}")]
    BadChunk(&'static str),
    /// A record's value whose document cannot be told now (its schema could not be
    /// read): the record is read again later.
    #[error("a record's value cannot be read now: {0}")]
    Unread(String),
    /// A chunk whose checksum does not match its bytes.
    #[error("the index chunk is damaged (checksum mismatch)")]
    Damaged,
}
