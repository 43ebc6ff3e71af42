//! What consumer-protocol groups (KIP-848) keep beyond their committed offsets: each
//! group's state (epochs, members, target assignment), so that a restarted or new
//! coordinator takes the group on where the last one left it; and each group's
//! settings (the GROUP configs of IncrementalAlterConfigs).
//!
//! The state is the coordinator's to shape: the store keeps it as one text (JSON),
//! written whole at each change and fenced by the group's coordinator epoch as
//! committed offsets are.

use std::collections::BTreeMap;

use crate::{ConfigChange, Result};

#[async_trait::async_trait]
pub trait GroupStates {
    /// Stores a group's state, replacing the one before; `Fenced` unless
    /// `coordinator_epoch` is the group's latest claim.
    async fn save_group_state(
        &self,
        group: &str,
        coordinator_epoch: i64,
        state: &str,
    ) -> Result<()>;
    /// Forgets a group's state; fenced as [`GroupStates::save_group_state`] is.
    async fn delete_group_state(&self, group: &str, coordinator_epoch: i64) -> Result<()>;
    /// One group's state, if it has one.
    async fn group_state(&self, group: &str) -> Result<Option<String>>;
    /// Every group's state, by group id.
    async fn group_states(&self) -> Result<Vec<(String, String)>>;
    /// Changes a group's configs, key by key; moves the topics version, so that
    /// every broker following the store reads them again.
    async fn alter_group_configs(&self, group: &str, changes: &[ConfigChange]) -> Result<()>;
    /// Every group's configs, by group id then key.
    async fn group_configs(&self) -> Result<BTreeMap<String, BTreeMap<String, String>>>;
}
