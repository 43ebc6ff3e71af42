//! Shared types of Spool, with no I/O: offsets and ids as newtypes, topic and partition
//! names, and a read-only view of a Kafka record-batch header.
//!
//! A partition offset, a byte position in a file and a producer sequence are different
//! things; keeping them apart in the type system stops the classic off-by-one mix-ups
//! between "offset" and "position".

mod batch_header;
mod ids;
mod names;

pub use batch_header::{
    BATCH_HEADER_LEN, CompressionCodec, RecordBatchHeader, TimestampType, batch_attributes,
    batch_field,
};
pub use ids::{Offset, PartitionId, ProducerEpoch, ProducerId, Sequence, Timestamp};
pub use names::{InvalidName, TopicName, TopicPartition};
