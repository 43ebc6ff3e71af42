//! Copying consumer groups' committed offsets: for each source group the link's
//! regex matches, coordinated by this broker and with no member here, its offsets on
//! the link's mirror topics are committed here — capped at the mirror's high
//! watermark, so that a group moved here never starts past what was copied (a lagging
//! mirror makes it read a few records again, never skip any).

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_coordinator::{CommitOffset, CommitRequest};
use spool_metadata::MirrorLinkRecord;

use super::source::Source;
use super::topics::topic_regex;
use crate::shared::Shared;
use crate::topics::Topic;

/// Copies the offsets of `link`'s groups matching `pattern`.
pub(super) async fn copy(
    shared: &Arc<Shared>,
    link: &MirrorLinkRecord,
    pattern: &str,
    source: &mut Source,
) -> Result<(), String> {
    let regex = topic_regex(pattern)?;
    let groups = source.groups().await?;
    let mut copied = 0_u64;
    // One group's failure is its own: the others are copied all the same.
    let mut problems = Vec::new();
    for group in groups.iter().filter(|group| regex.is_match(group)) {
        if !shared.groups().owns(group)
            || shared
                .groups()
                .describe(group, shared.topics())
                .is_some_and(|found| !found.members.is_empty())
        {
            continue;
        }
        match copy_group(shared, link, group, source).await {
            Ok(count) => copied += count,
            Err(error) => problems.push(format!("{group}: {error}")),
        }
    }
    shared.mirror().offsets_copied(&link.name, copied);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Copies `group`'s offsets; answers how many changed.
async fn copy_group(
    shared: &Arc<Shared>,
    link: &MirrorLinkRecord,
    group: &str,
    source: &mut Source,
) -> Result<u64, String> {
    let committed = source.committed(group).await?;
    let offsets = to_commit(shared, &link.name, group, &committed).await;
    if offsets.is_empty() {
        return Ok(0);
    }
    let count = offsets.len() as u64;
    let request = CommitRequest {
        group_id: group.to_owned(),
        generation: -1,
        member_id: String::new(),
        group_instance_id: None,
        offsets,
        api_version: 9,
    };
    shared
        .groups()
        .commit(request)
        .await
        .map_err(|error| format!("committing the offsets: {error}"))?;
    Ok(count)
}

/// The offsets of `group` to commit here: those on `link`'s mirror topics (still
/// copied) that differ from what is committed here, capped at the mirror's high
/// watermark.
async fn to_commit(
    shared: &Shared,
    link: &str,
    group: &str,
    source: &BTreeMap<(String, i32), (i64, Option<String>)>,
) -> Vec<CommitOffset> {
    let here: BTreeMap<(String, i32), i64> = shared
        .groups()
        .committed(group, None)
        .into_iter()
        .map(|offset| ((offset.topic, offset.partition), offset.offset))
        .collect();
    let mut offsets = Vec::new();
    for ((name, partition), (offset, metadata)) in source {
        let Some(topic) = shared.topics().get(name) else {
            continue;
        };
        if topic.mirror.as_deref() != Some(link) || !topic.has_partition(*partition) {
            continue;
        }
        let Some(copied_to) = mirror_high_watermark(shared, &topic, *partition).await else {
            continue;
        };
        let offset = (*offset).min(copied_to);
        if here.get(&(name.clone(), *partition)) == Some(&offset) {
            continue;
        }
        offsets.push(CommitOffset {
            topic: name.clone(),
            topic_id: topic.record.id,
            partition: *partition,
            offset,
            leader_epoch: -1,
            metadata: metadata.clone(),
        });
    }
    offsets
}

/// The mirror partition's high watermark: the log's, or in shared-storage mode the
/// catalogue's (another broker may lead it).
async fn mirror_high_watermark(shared: &Shared, topic: &Topic, index: i32) -> Option<i64> {
    if shared.storage().is_some() {
        return Some(
            super::topics::catalogue_state(shared, topic, index)
                .await?
                .high_watermark,
        );
    }
    let handle = shared
        .partitions()
        .partition(topic.record.name.as_str(), index, -1)
        .ok()?;
    Some(handle.log.offsets().high_watermark.0)
}
