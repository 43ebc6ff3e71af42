//! Share groups (KIP-932): queues on Kafka topics. Many members of one share group
//! read the same partition; each record is acquired by one member at a time, for a
//! limited time, and acknowledged one by one (accepted, released for another try, or
//! rejected). What is decided here has no I/O and takes the time from its caller:
//!
//! - [`group`]: the members of share groups, their subscriptions and the `simple`
//!   assignment (every partition of a subscribed topic to at least one member; a
//!   partition may go to several), kept by the group's coordinator;
//! - [`session`]: the share sessions a partition leader keeps per (group, member):
//!   which partitions a member's ShareFetch covers, and its epochs;
//! - [`partition`]: one share-partition's records in flight at its leader (the start
//!   offset, states, delivery counts, acquisition locks, the redelivery backoff and
//!   the dead letters), and the form the metadata store keeps it in;
//! - [`settings`]: the settings of one group, from the broker's and the group's
//!   configs.
//!
//! The broker does the rest: the store, the log reads, the dead-letter writes. The
//! design, with the states and settings, is in `docs/share-groups.md`.

pub mod error;
pub mod group;
pub mod partition;
pub mod session;
pub mod settings;

pub use error::ShareError;
pub use group::{ShareGroups, ShareHeartbeat, ShareHeartbeatAnswer};
pub use partition::{
    AckBatch, AckType, AcquiredRange, DeadLetter, DeadLetterReason, Outcome, SharePartition,
};
pub use session::{SessionRequest, SessionStep, ShareSessions};
pub use settings::ShareSettings;
