//! The cleaner of compacted topics in shared-storage mode: every
//! `log.cleaner.backoff.ms` while `log.cleaner.enable` holds, each partition of a
//! compacted topic that this broker leads is cleaned or compacted
//! (`spool_shared_storage::cleaning` says how).

use std::sync::Arc;

use spool_log::CleanerSettings;
use spool_metadata::PartitionKey;
use spool_shared_storage::cleaning;
use tokio::sync::watch;

use crate::shared::Shared;

/// Runs the passes until the broker stops (not at all if the cleaner is off).
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let cleaner = shared.started_config().cleaner;
    if !cleaner.enabled {
        return;
    }
    loop {
        tokio::select! {
            () = tokio::time::sleep(cleaner.backoff) => {}
            _ = stopped.changed() => return,
        }
        pass(&shared, &cleaner.settings).await;
    }
}

/// One pass over every partition of every compacted topic; a partition that fails
/// (logged) waits for the next pass, the others go on.
pub(crate) async fn pass(shared: &Arc<Shared>, settings: &CleanerSettings) {
    let Some(storage) = shared.storage() else {
        return;
    };
    for topic in shared.topics().all() {
        if !topic.log.cleanup.compact {
            continue;
        }
        for partition in 0..topic.record.partitions {
            let key = PartitionKey {
                topic_id: topic.record.id,
                partition,
            };
            let Some(epoch) = shared.partitions().led_epoch(&topic, partition) else {
                continue;
            };
            let stats = match cleaning::clean_or_compact(
                storage,
                key,
                epoch,
                &topic.log.cleanup,
                settings,
                shared.clock().timestamp(),
            )
            .await
            {
                Ok(Some(stats)) => stats,
                Ok(None) => continue,
                Err(error) => {
                    tracing::warn!(topic = %topic.record.name, partition, %error, "cleaning a partition failed; trying again later");
                    continue;
                }
            };
            tracing::info!(
                topic = %topic.record.name,
                partition,
                ranges = stats.ranges_read,
                blocks = stats.blocks_written,
                removed = stats.records_removed,
                bytes_read = stats.bytes_read,
                bytes_written = stats.bytes_written,
                cleaned_up_to = stats.cleaned_up_to,
                "cleaned a partition in object storage"
            );
            if let Some(marks) = topic
                .log_partition(partition)
                .and_then(|log_key| storage.marks_of(&log_key))
            {
                marks
                    .cleaned
                    .fetch_max(stats.cleaned_up_to, std::sync::atomic::Ordering::AcqRel);
            }
        }
    }
}
