//! Dead letters (KIP-1191): records rejected, or delivered as often as the group's
//! limit allows, are written to the group's dead-letter topic.

use spool_share::{DeadLetter, ShareSettings};

use super::{SharePartitionId, ShareStats};
use crate::shared::Shared;

/// Writes `letters` of share-partition `id` to the group's dead-letter topic, if it
/// has one.
pub(crate) async fn write(
    shared: &Shared,
    id: &SharePartitionId,
    letters: &[DeadLetter],
    settings: &ShareSettings,
) {
    ShareStats::add(&shared.share().stats.dead_letters, letters.len() as u64);
    for letter in letters {
        tracing::info!(group = %id.group, topic = %id.topic_id, partition = id.partition,
            offset = letter.offset, delivery_count = letter.delivery_count,
            reason = letter.reason.message(), dead_letter_topic = ?settings.dead_letter_topic,
            "a share group archived a record it could not deliver");
    }
}
