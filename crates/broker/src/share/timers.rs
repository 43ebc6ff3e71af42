//! What happens to share groups with time: acquisition locks and backoffs run out,
//! idle share sessions end (releasing what their members held), silent members leave
//! their groups. One task, every [`TICK`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::SharePartitionId;
use super::held::{self, settings_of};
use crate::shared::Shared;

/// How often the timers look: a lock runs out at most this late.
const TICK: Duration = Duration::from_millis(100);

pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut ticks = tokio::time::interval(TICK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stopped.changed() => return,
        }
        expire_locks(&shared).await;
        expire_sessions(&shared).await;
        let now = shared.clock().instant();
        let expired = shared.share().groups().expire(now, shared.topics());
        for (group, member) in expired {
            tracing::info!(group, member, "a silent share group member left its group");
        }
    }
}

/// Releases the records whose lock ran out, and wakes fetches for those whose
/// backoff ended.
async fn expire_locks(shared: &Arc<Shared>) {
    let now = shared.clock().instant();
    for (id, slot) in shared.share().all_slots() {
        let Ok(mut guard) = slot.try_lock_owned() else {
            continue;
        };
        let Some(held) = guard.as_mut() else {
            continue;
        };
        if held.partition.next_deadline().is_none_or(|due| due > now) {
            continue;
        }
        let settings = settings_of(shared, &id.group);
        let outcome = held.partition.expire_locks(now, &settings);
        if outcome.expired > 0 {
            log_expiry(&id, outcome.expired);
        }
        let _ = held::commit(shared, &id, &mut guard, outcome, &settings).await;
    }
}

fn log_expiry(id: &SharePartitionId, records: u64) {
    tracing::debug!(group = %id.group, topic = %id.topic_id, partition = id.partition, records,
        "acquisition locks ran out");
}

/// Ends the share sessions unused for their group's session timeout.
async fn expire_sessions(shared: &Arc<Shared>) {
    let now = shared.clock().instant();
    let expired = shared
        .share()
        .sessions()
        .expire(now, |group| settings_of(shared, group).session_timeout);
    for (group, member, partitions) in expired {
        tracing::info!(group, member, "an idle share session ended");
        held::release_member(shared, &group, &member, &partitions).await;
    }
}
