//! The group coordinator: Kafka's classic consumer-group protocol (JoinGroup,
//! SyncGroup, Heartbeat, LeaveGroup) and committed offsets; and the transaction
//! coordinator ([`TransactionCoordinator`]).
//!
//! - [`group`]: one group's state machine (Empty → PreparingRebalance →
//!   CompletingRebalance → Stable), pure: time comes in as an argument, waiting
//!   members get their answer through a channel when the rebalance completes;
//! - [`consumer`]: groups of the consumer protocol (KIP-848), whose assignment the
//!   broker computes;
//! - [`GroupCoordinator`]: every group of this broker, the committed offsets (kept in
//!   the metadata store, cached in memory), and the timer that expires sessions,
//!   rebalance timeouts and old offsets.
//!
//! Group state lives only in memory: after a broker restart members rejoin (their
//! heartbeats get `UNKNOWN_MEMBER_ID`), and committed offsets are read back from the
//! metadata store. The semantics and timeouts are documented in `docs/groups.md`.

mod config;
pub mod consumer;
mod coordinator;
mod error;
pub mod group;
mod offsets;
mod ownership;
mod transactions;

pub use config::CoordinatorConfig;
pub use coordinator::{GroupClients, GroupCoordinator};
pub use error::{GroupError, TxnError};
pub use group::{
    GroupDescription, GroupState, JoinRequest, JoinResponse, JoinedMember, MemberDescription,
    SyncRequest, SyncResponse,
};
pub use offsets::{CommitOffset, CommitRequest, GroupListing, GroupType};
pub use ownership::{GroupOwnership, Ownership};
pub use transactions::check_back::{CheckAnswer, NoChecker, TxnChecker};
pub use transactions::{
    MarkerOutcome, MarkerWriter, ProducerIdSource, TransactionCoordinator, TxnConfig,
};
