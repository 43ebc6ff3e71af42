//! Mirror links (BMQ's Mirror; Confluent's Cluster Linking): topics of another
//! Kafka-compatible cluster copied here **at their own offsets**, so that consumers
//! and their committed offsets move between the clusters without translation.
//!
//! A link lives in the metadata store (`spool mirror create`). Every broker runs
//! [`run`]: each round it reads the links, asks each source for its topics, makes a
//! mirror topic (`mirror.link=NAME`: read-only, its log at its own offsets) for every
//! topic the link's regex matches, follows their partition counts and configs
//! ([`topics`]), and copies each mirror partition it leads ([`copy`]); it copies the
//! committed offsets of the groups the link names while they have no members here
//! ([`groups`]). `spool mirror failover` stops the copy of a topic and makes it
//! writable (`mirror.failed.over=true`).

mod copy;
mod groups;
mod source;
mod status;
pub(crate) mod topics;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use spool_metadata::MirrorLinkRecord;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use self::copy::CopyContext;
use self::source::Source;
pub(crate) use self::source::settings_of;
pub(crate) use self::status::{LinkState, LinkStatus, MirrorStatus, PartitionKey, merged};
use crate::shared::Shared;

/// How often the links are read and followed.
const ROUND: Duration = Duration::from_secs(1);
/// Every how many rounds the source's topic configs and group offsets are read.
const SLOW_ROUNDS: u64 = 5;
/// Every how many rounds a broker reports its state of each link.
const REPORT_ROUNDS: u64 = 2;
/// A report older than this is a broker that stopped: left out of `describe`.
pub(crate) const REPORT_STALE_MS: i64 = 10_000;

/// Follows the links until `stopped`.
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut links: HashMap<String, Link> = HashMap::new();
    let mut round = 0_u64;
    loop {
        follow_links(&shared, &mut links, round).await;
        round += 1;
        tokio::select! {
            () = tokio::time::sleep(ROUND) => {}
            _ = stopped.changed() => break,
        }
    }
    for link in links.values_mut() {
        link.stop_all();
    }
}

/// One link as this broker follows it.
struct Link {
    record: MirrorLinkRecord,
    source: Source,
    context: Arc<CopyContext>,
    /// The copies running here, by mirror partition.
    copies: HashMap<(Uuid, i32), Copying>,
    /// Failed-over partitions settled here, by partition and leader epoch.
    settled: HashSet<(Uuid, i32, i32)>,
}

/// A partition's copy task.
struct Copying {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Link {
    fn stop_all(&mut self) {
        for (_, copying) in self.copies.drain() {
            let _ = copying.stop.send(true);
        }
    }
}

async fn follow_links(shared: &Arc<Shared>, links: &mut HashMap<String, Link>, round: u64) {
    let records = match shared.metadata().mirror_links().await {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(%error, "reading the mirror links failed");
            return;
        }
    };
    let status = shared.mirror();
    // A link deleted, or changed where it reads from, stops (and starts again).
    links.retain(|name, link| {
        let kept = records.iter().any(|record| {
            record.name == *name
                && record.source == link.record.source
                && record.source_config == link.record.source_config
                && record.start == link.record.start
        });
        if !kept {
            link.stop_all();
            status.forget_link(name);
        }
        kept
    });
    for record in records {
        if !links.contains_key(&record.name) {
            let settings = match settings_of(&record) {
                Ok(settings) => settings,
                Err(error) => {
                    status.link_failed(&record.name, error);
                    continue;
                }
            };
            let context = Arc::new(CopyContext {
                shared: shared.clone(),
                link: record.name.clone(),
                settings: settings.clone(),
                start_at: if record.start == "latest" { -1 } else { -2 },
                status: status.clone(),
            });
            links.insert(
                record.name.clone(),
                Link {
                    record: record.clone(),
                    source: Source::new(settings),
                    context,
                    copies: HashMap::new(),
                    settled: HashSet::new(),
                },
            );
        }
        let Some(link) = links.get_mut(&record.name) else {
            continue;
        };
        link.record = record;
        follow(shared, link, round).await;
        if round.is_multiple_of(REPORT_ROUNDS) {
            report(shared, &link.record.name).await;
        }
    }
}

/// Puts what this broker does for `link` where the others read it (`describe` on
/// any broker shows the whole link).
async fn report(shared: &Arc<Shared>, link: &str) {
    let node_id = shared.current_config().node_id;
    let report = shared.mirror().report(link);
    let now = shared.clock().now_ms();
    if let Err(error) = shared
        .metadata()
        .put_mirror_status(link, node_id, &report, now)
        .await
    {
        tracing::debug!(link, %error, "reporting the mirror's state failed");
    }
}

/// One round of one link: its topics, then the copies of what this broker leads.
async fn follow(shared: &Arc<Shared>, link: &mut Link, round: u64) {
    let status = shared.mirror();
    let name = link.record.name.clone();
    settle_failed_over(shared, link).await;
    if link.record.paused {
        link.stop_all();
        status.link_state(&name, LinkState::Paused);
        return;
    }
    let slow = round.is_multiple_of(SLOW_ROUNDS);
    match topics::follow(shared, &link.record, &mut link.source, slow).await {
        Ok(()) => status.link_state(&name, LinkState::Running),
        Err(error) => status.link_failed(&name, error),
    }
    let wanted = topics::led_here(shared, &name);
    tracing::debug!(link = %name, partitions = wanted.len(), "mirror partitions led here");
    link.copies.retain(|key, copying| {
        let keep = wanted
            .iter()
            .any(|(topic, index)| (topic.record.id, *index) == *key)
            && !copying.task.is_finished();
        if !keep {
            let _ = copying.stop.send(true);
        }
        keep
    });
    for (topic, index) in wanted {
        let key = (topic.record.id, index);
        if link.copies.contains_key(&key) {
            continue;
        }
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(copy::run(link.context.clone(), topic, index, stopped));
        link.copies.insert(key, Copying { stop, task });
    }
    if slow
        && let Some(groups) = link.record.groups.clone()
        && let Err(error) = groups::copy(shared, &link.record, &groups, &mut link.source).await
    {
        status.link_failed(&name, format!("copying group offsets: {error}"));
    }
}

/// The link's failed-over topics: no producer id below their floors is handed out
/// here, and each partition this broker leads is settled once per leader epoch (the
/// broker that failed them over settled those it led; a leader elsewhere, or a later
/// one, does it here).
async fn settle_failed_over(shared: &Arc<Shared>, link: &mut Link) {
    for topic in shared.topics().all() {
        if topic.record.configs.get("mirror.link") != Some(&link.record.name) {
            continue;
        }
        let Some(floor) = topics::floor_of(&topic) else {
            continue;
        };
        if let Err(error) = shared.producer_ids().raise_floor(floor, false).await {
            tracing::warn!(%error, "raising the producer-id floor failed");
        }
        for index in 0..topic.record.partitions {
            let Some(epoch) = shared.partitions().led_epoch(&topic, index) else {
                continue;
            };
            let key = (topic.record.id, index, epoch);
            if !link.settled.contains(&key)
                && topics::settle_failed_over(shared, &topic, index).await
            {
                link.settled.insert(key);
            }
        }
    }
}
