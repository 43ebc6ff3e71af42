//! Delayed delivery (`delivery.delay.enable`): a record with a due time in the future
//! waits in its own partition as a hold batch, which consumers skip, and is appended
//! to the partition again when due. See `docs/delayed-delivery.md`.
//!
//! - [`split`]: the produce side, taking held records out of a batch;
//! - [`delivery`]: the leader's side, noting holds in the store's timer and
//!   appending records again when due, exactly once.

pub(crate) mod delivery;
pub(crate) mod split;
