//! A share-partition held in memory by the partition's leader: taken on from the
//! store, changed under its lock, written back before a change is answered.

use std::sync::Arc;

use spool_metadata::{MetadataError, QueuedDeadLetter, SharePartitionRecord};
use spool_share::partition::StoredPartition;
use spool_share::session::ConnectionId;
use spool_share::settings::OffsetReset;
use spool_share::{Outcome, SharePartition, ShareSettings};

use super::{Held, SharePartitionId, ShareStats};
use crate::errors::code;
use crate::partitions::PartitionHandle;
use crate::shared::Shared;

/// The lock of a share-partition's slot, held while it is read or changed.
pub(crate) type HeldGuard = tokio::sync::OwnedMutexGuard<Option<Held>>;

/// Why a share-partition cannot be served here now.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ShareFailure {
    /// A later leader wrote the state: this broker no longer leads the partition.
    #[error("another leader took the share-partition on")]
    Fenced,
    #[error("the share-partition's state cannot be read or written: {0}")]
    Store(MetadataError),
}

impl ShareFailure {
    pub(crate) fn code(&self) -> i16 {
        match self {
            ShareFailure::Fenced => code::NOT_LEADER_OR_FOLLOWER,
            // Retriable: the fetch or acknowledgement may be sent again.
            ShareFailure::Store(_) => code::KAFKA_STORAGE_ERROR,
        }
    }
}

impl From<MetadataError> for ShareFailure {
    fn from(error: MetadataError) -> ShareFailure {
        match error {
            MetadataError::Fenced { .. } => ShareFailure::Fenced,
            other => ShareFailure::Store(other),
        }
    }
}

/// Locks the share-partition `id`, taking it on from the store first if this broker
/// does not hold it at the partition's current leader epoch.
pub(crate) async fn lock(
    shared: &Arc<Shared>,
    id: &SharePartitionId,
    handle: &PartitionHandle,
    settings: &ShareSettings,
) -> Result<HeldGuard, ShareFailure> {
    let slot = shared.share().slot(id);
    let mut guard = slot.lock_owned().await;
    if guard
        .as_ref()
        .is_some_and(|held| held.state_epoch == handle.leader_epoch)
    {
        return Ok(guard);
    }
    *guard = None;
    let epoch = handle.leader_epoch;
    let claimed = shared
        .metadata()
        .claim_share_partition(&id.group, id.topic_id, id.partition, epoch)
        .await?;
    let held = match claimed {
        Some(record) => {
            let partition = match StoredPartition::from_text(&record.state) {
                Ok(stored) => SharePartition::restore(&stored),
                Err(error) => {
                    tracing::error!(group = %id.group, topic = %id.topic_id, partition = id.partition, %error,
                        "the stored share-partition is unreadable; starting again at its start offset");
                    SharePartition::new(record.start_offset)
                }
            };
            Held {
                partition,
                state_epoch: epoch,
            }
        }
        None => {
            // The group's configs as the store has them now: a config set a moment
            // ago (`share.auto.offset.reset=earliest`, say) may not have reached this broker yet,
            // and the start is fixed once written.
            let configs = shared.metadata().group_configs().await?;
            let settings = configs.get(&id.group).map_or_else(
                || settings.clone(),
                |own| {
                    ShareSettings::of_group(&shared.current_config().share_groups, own)
                        .unwrap_or_else(|_| settings.clone())
                },
            );
            let start = match settings.auto_offset_reset {
                OffsetReset::Earliest => handle.log_start().0,
                OffsetReset::Latest => handle.log.offsets().high_watermark.0,
            };
            let held = Held {
                partition: SharePartition::new(start),
                state_epoch: epoch,
            };
            // Written at once: a group reading from the latest offset starts where it
            // started, whoever leads next.
            save(shared, id, &held, &[]).await?;
            tracing::info!(group = %id.group, topic = %id.topic_id, partition = id.partition, start,
                "share group started reading a partition");
            held
        }
    };
    *guard = Some(held);
    Ok(guard)
}

async fn save(
    shared: &Shared,
    id: &SharePartitionId,
    held: &Held,
    letters: &[QueuedDeadLetter],
) -> Result<(), MetadataError> {
    let record = SharePartitionRecord {
        group: id.group.clone(),
        topic_id: id.topic_id,
        partition: id.partition,
        state_epoch: held.state_epoch,
        start_offset: held.partition.start(),
        state: held.partition.stored().to_text(),
    };
    shared
        .metadata()
        .save_share_partition(&record, letters)
        .await
}

/// Finishes a change of a locked share-partition: counts it, writes its dead letters
/// and, if what the store keeps changed, the state with the letters another broker
/// is to write (a failed write drops the share-partition from memory, to be read
/// back), then wakes waiting fetches.
pub(crate) async fn commit(
    shared: &Arc<Shared>,
    id: &SharePartitionId,
    guard: &mut HeldGuard,
    outcome: Outcome,
    settings: &ShareSettings,
) -> Result<(), ShareFailure> {
    let stats = &shared.share().stats;
    ShareStats::add(&stats.accepted, outcome.accepted);
    ShareStats::add(&stats.released, outcome.released);
    ShareStats::add(&stats.rejected, outcome.rejected);
    ShareStats::add(&stats.lock_expiries, outcome.expired);
    let queued = if outcome.dead_letters.is_empty() {
        Vec::new()
    } else {
        crate::share::dead_letters::write(shared, id, &outcome.dead_letters, settings).await
    };
    if (outcome.changed || !queued.is_empty())
        && let Some(held) = guard.as_ref()
        && let Err(error) = save(shared, id, held, &queued).await
    {
        tracing::warn!(group = %id.group, topic = %id.topic_id, partition = id.partition, %error,
            "writing a share-partition failed; it will be read back from the store");
        **guard = None;
        return Err(error.into());
    }
    if outcome.made_available {
        shared.share().wake_fetches();
    }
    Ok(())
}

/// Releases what the members of the share sessions last used on `connection` held:
/// the connection closed, so their sessions end (as in Kafka, a consumer that goes
/// away leaves its records to the others at once, not after their locks).
pub(crate) async fn release_connection(shared: &Arc<Shared>, connection: ConnectionId) {
    let ended = shared.share().sessions().connection_closed(connection);
    for (group, member, partitions) in ended {
        tracing::info!(group, member, "a share session ended with its connection");
        release_member(shared, &group, &member, &partitions).await;
    }
}

/// Releases what `member` holds in `partitions` of `group` (its session closed, was
/// replaced or expired, or it forgot them), where they are held here.
pub(crate) async fn release_member(
    shared: &Arc<Shared>,
    group: &str,
    member: &str,
    partitions: &[(uuid::Uuid, i32)],
) {
    if partitions.is_empty() {
        return;
    }
    let settings = settings_of(shared, group);
    for (topic_id, partition) in partitions {
        let id = SharePartitionId {
            group: group.to_owned(),
            topic_id: *topic_id,
            partition: *partition,
        };
        let Some(slot) = shared.share().existing_slot(&id) else {
            continue;
        };
        let mut guard = slot.lock_owned().await;
        let Some(held) = guard.as_mut() else {
            continue;
        };
        let outcome = held
            .partition
            .release_member(member, shared.clock().instant(), &settings);
        if outcome.released > 0 {
            let _ = commit(shared, &id, &mut guard, outcome, &settings).await;
        }
    }
}

/// A group's share settings: the broker's, with the group's configs over them (those
/// were checked when set; should they no longer fit, the broker's stand).
pub(crate) fn settings_of(shared: &Shared, group_id: &str) -> ShareSettings {
    let config = shared.current_config();
    let configs = shared.groups().group_configs(group_id);
    ShareSettings::of_group(&config.share_groups, &configs)
        .unwrap_or_else(|_| ShareSettings::of_broker(&config.share_groups))
}

/// Drops what this broker holds of the share-partition `id` if nothing of it lives
/// only in memory (no record acquired, no backoff running): the next fetch reads it
/// back from the store. A member opening a share session calls it, so that a start
/// offset an admin moved (AlterShareGroupOffsets, on any broker) is seen.
pub(crate) async fn forget_if_idle(shared: &Shared, id: &SharePartitionId) {
    let Some(slot) = shared.share().existing_slot(id) else {
        return;
    };
    let mut guard = slot.lock().await;
    if guard
        .as_ref()
        .is_some_and(|held| held.partition.next_deadline().is_none())
    {
        *guard = None;
    }
}
