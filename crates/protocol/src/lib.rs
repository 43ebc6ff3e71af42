//! Spool's protocol layer. It does no I/O: it works on byte slices.
//!
//! - [`batch`]: record-batch validation and in-place patching, shared by the produce
//!   path and the storage engine's recovery;
//! - [`compression`] and [`recompress`]: Kafka's record codecs, for topics that
//!   recompress and for the log cleaner (never on the default paths);
//! - [`control`]: transaction markers, the control batches brokers write;
//! - [`error_names`]: Kafka's names of its error codes;
//! - [`keyed`]: the records of a batch with their keys, for compacted topics;
//! - [`frame`]: the size-prefixed framing of requests;
//! - [`wire_guard`]: a structural pre-check of request bodies that keeps array counts
//!   read off the wire from sizing allocations (see its module docs for why).

pub mod batch;
pub mod compression;
pub mod consumer_protocol;
pub mod control;
pub mod error_names;
pub mod frame;
pub mod headers;
pub mod internal;
pub mod keyed;
pub mod legacy;
pub mod merge;
pub mod message_set;
pub mod plain;
pub mod recompress;
pub mod records;
pub mod request;
pub mod wire_guard;
