//! Shared types of Spool, with no I/O: offsets and ids as newtypes, topic and partition
//! names, a read-only view of a Kafka record-batch header, and the clock.
//!
//! A partition offset, a byte position in a file and a producer sequence are different
//! things; keeping them apart in the type system stops the classic off-by-one mix-ups
//! between "offset" and "position".

mod batch_header;
mod clock;
mod ids;
mod names;

pub use batch_header::{
    BATCH_HEADER_LEN, CompressionCodec, RecordBatchHeader, TimestampType, batch_attributes,
    batch_field,
};
pub use clock::{Clock, ManualClock};
pub use ids::{Offset, PartitionId, ProducerEpoch, ProducerId, Sequence, Timestamp};
pub use names::{InvalidName, TopicName, TopicPartition};
