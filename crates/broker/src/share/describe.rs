//! Share groups as the admin APIs, the REST API and `spool group describe` show them:
//! the members (from the coordinator's memory) and, per share-partition, the start
//! offset, the records in flight by state, and the lag (records not yet acknowledged
//! or archived, up to the high watermark). A share-partition held here is read live;
//! one led elsewhere as its leader last stored it (acquired records then count as
//! available).

use std::collections::BTreeSet;
use std::sync::Arc;

use spool_metadata::{MetadataError, SharePartitionRecord};
use spool_share::SharePartition;
use spool_share::group::ShareMember;
use spool_share::partition::{InFlightCounts, StoredPartition};
use uuid::Uuid;

use super::SharePartitionId;
use crate::admin::bounds::partition_bounds;
use crate::partitions::on_blocking_pool;
use crate::shared::Shared;

/// One share group.
#[derive(Debug, Clone)]
pub(crate) struct ShareGroupView {
    pub(crate) group: String,
    /// `Stable` with members, else `Empty`.
    pub(crate) state: &'static str,
    pub(crate) epoch: i32,
    pub(crate) members: Vec<(String, ShareMember)>,
    pub(crate) partitions: Vec<SharePartitionView>,
}

/// One share-partition of a group.
#[derive(Debug, Clone)]
pub(crate) struct SharePartitionView {
    pub(crate) topic_id: Uuid,
    pub(crate) topic: String,
    pub(crate) partition: i32,
    pub(crate) start_offset: i64,
    pub(crate) state_epoch: i32,
    pub(crate) counts: InFlightCounts,
    /// Records from the start offset to the high watermark not yet acknowledged or
    /// archived; `None` when the high watermark is not known here.
    pub(crate) lag: Option<i64>,
}

/// The ids of the share groups this broker knows: with members here, or with stored
/// share-partitions.
pub(crate) async fn group_ids(shared: &Shared) -> Result<BTreeSet<String>, MetadataError> {
    let mut ids: BTreeSet<String> = shared.share().groups().group_ids().into_iter().collect();
    for record in shared.metadata().share_partitions(None).await? {
        ids.insert(record.group);
    }
    Ok(ids)
}

/// The group, if it has members here or stored share-partitions.
pub(crate) async fn describe(
    shared: &Arc<Shared>,
    group: &str,
) -> Result<Option<ShareGroupView>, MetadataError> {
    let (epoch, members) = shared.share().groups().group(group).map_or_else(
        || (0, Vec::new()),
        |g| {
            let members = g
                .members
                .iter()
                .map(|(id, m)| (id.clone(), m.clone()))
                .collect();
            (g.epoch, members)
        },
    );
    let stored = shared.metadata().share_partitions(Some(group)).await?;
    if members.is_empty() && stored.is_empty() {
        return Ok(None);
    }
    let mut partitions = Vec::with_capacity(stored.len());
    for record in stored {
        if let Some(view) = partition_view(shared, record).await {
            partitions.push(view);
        }
    }
    Ok(Some(ShareGroupView {
        group: group.to_owned(),
        state: if members.is_empty() {
            "Empty"
        } else {
            "Stable"
        },
        epoch,
        members,
        partitions,
    }))
}

async fn partition_view(
    shared: &Arc<Shared>,
    record: SharePartitionRecord,
) -> Option<SharePartitionView> {
    let topic = shared.topics().by_id(record.topic_id)?;
    let id = SharePartitionId {
        group: record.group.clone(),
        topic_id: record.topic_id,
        partition: record.partition,
    };
    let live = match shared.share().existing_slot(&id) {
        Some(slot) => slot
            .lock()
            .await
            .as_ref()
            .map(|held| (held.partition.start(), held.partition.counts())),
        None => None,
    };
    let (start_offset, counts) = live.unwrap_or_else(|| {
        let partition = StoredPartition::from_text(&record.state)
            .map(|stored| SharePartition::restore(&stored))
            .unwrap_or_else(|_| SharePartition::new(record.start_offset));
        (partition.start(), partition.counts())
    });
    let bounds = {
        let (shared, topic) = (shared.clone(), topic.clone());
        let index = record.partition;
        on_blocking_pool(move || partition_bounds(&shared, &topic, index))
            .await
            .ok()
            .flatten()
    };
    let lag = bounds.map(|b| {
        let done = i64::try_from(counts.acknowledged + counts.archived).unwrap_or(0);
        (b.high_watermark - start_offset - done).max(0)
    });
    Some(SharePartitionView {
        topic_id: record.topic_id,
        topic: topic.record.name.as_str().to_owned(),
        partition: record.partition,
        start_offset,
        state_epoch: record.state_epoch,
        counts,
        lag,
    })
}

/// Deletes a share group without members: its stored share-partitions, and what this
/// broker holds of them. `None` when `group` is no share group; else the code of the
/// outcome (`NON_EMPTY_GROUP` while it has members).
pub(crate) async fn delete(shared: &Shared, group: &str) -> Option<i16> {
    use crate::errors::code;
    if shared.share().has_members(group) {
        return Some(code::NON_EMPTY_GROUP);
    }
    let stored = match shared.metadata().share_partitions(Some(group)).await {
        Ok(stored) => stored,
        Err(_) => return Some(code::COORDINATOR_NOT_AVAILABLE),
    };
    if stored.is_empty() {
        return None;
    }
    if !shared.groups().owns(group) {
        return Some(code::NOT_COORDINATOR);
    }
    if shared
        .metadata()
        .delete_share_partitions(group, None)
        .await
        .is_err()
    {
        return Some(code::COORDINATOR_NOT_AVAILABLE);
    }
    shared.share().forget_group(group);
    tracing::info!(group, "share group deleted");
    Some(code::NONE)
}
