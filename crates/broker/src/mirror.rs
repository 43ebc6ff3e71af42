//! Mirror links (BMQ's Mirror; Confluent's Cluster Linking): topics of another
//! Kafka-compatible cluster copied here **at their own offsets**, so that consumers
//! and their committed offsets move between the clusters without translation.
//!
//! A link lives in the metadata store (`spool mirror create`). Every broker runs
//! [`run`], which follows each link in a task of its own: each round it asks the
//! source for its topics, makes a mirror topic (`mirror.link=NAME`: read-only, its
//! log at its own offsets) for every topic the link's regex matches, follows their
//! partition counts and configs ([`topics`]), and copies each mirror partition it
//! leads ([`copy`]); it copies the committed offsets of the groups the link names
//! while they have no members here ([`groups`]). `spool mirror failover` stops the
//! copy of a topic and makes it writable (`mirror.failed.over=true`) once each
//! partition's leader has settled it ([`settle`]).

mod copy;
mod failovers;
mod groups;
mod settle;
mod source;
mod status;
pub(crate) mod topics;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use spool_metadata::MirrorLinkRecord;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use uuid::Uuid;

use self::copy::CopyContext;
pub(crate) use self::failovers::Failovers;
pub(crate) use self::settle::awaits_settling;
use self::source::Source;
pub(crate) use self::source::settings_of;
pub(crate) use self::status::{LinkState, LinkStatus, MirrorStatus, PartitionKey, merged};
use crate::shared::Shared;

/// How often the links are read and followed.
const ROUND: Duration = Duration::from_secs(1);
/// How long a link's round may take (its source slow to answer): then it is a
/// failure, and the next round starts anew.
const ROUND_DEADLINE: Duration = Duration::from_secs(60);
/// Every how many rounds the source's topic configs and group offsets are read.
const SLOW_ROUNDS: u64 = 5;
/// Every how many rounds a broker reports its state of each link.
const REPORT_ROUNDS: u64 = 2;
/// How long a stopped link's task may take to end before it is aborted.
const STOP_WAIT: Duration = Duration::from_secs(5);
/// A report older than this is a broker that stopped: left out of `describe`.
pub(crate) const REPORT_STALE_MS: i64 = 10_000;

/// Follows the links until `stopped`: each in a task of its own (a slow or
/// unreachable source holds up only its link), and settles the failed-over
/// partitions led here.
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut links: HashMap<String, LinkTask> = HashMap::new();
    loop {
        follow_links(&shared, &mut links).await;
        settle::settle_led_here(&shared).await;
        tokio::select! {
            () = tokio::time::sleep(ROUND) => {}
            _ = stopped.changed() => break,
        }
    }
    for (_, task) in links.drain() {
        task.stop().await;
    }
}

/// A link's task, as the loop that starts and stops it knows it.
struct LinkTask {
    record: MirrorLinkRecord,
    /// The link's record as the store has it now (paused, topics, groups…).
    updates: watch::Sender<MirrorLinkRecord>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl LinkTask {
    fn start(shared: &Arc<Shared>, record: MirrorLinkRecord) -> LinkTask {
        let (updates, updated) = watch::channel(record.clone());
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(follow_link(shared.clone(), updated, stopped));
        LinkTask {
            record,
            updates,
            stop,
            task,
        }
    }

    /// Whether `record` reads from where this task does.
    fn reads_as(&self, record: &MirrorLinkRecord) -> bool {
        record.source == self.record.source
            && record.source_config == self.record.source_config
            && record.start == self.record.start
    }

    /// Stops the task and waits (a while) until it ended.
    async fn stop(self) {
        let _ = self.stop.send(true);
        let abort = self.task.abort_handle();
        if tokio::time::timeout(STOP_WAIT, self.task).await.is_err() {
            abort.abort();
        }
    }
}

/// Starts a task for each new link, stops those of links deleted (or changed where
/// they read from: started again), and hands the others their record.
async fn follow_links(shared: &Arc<Shared>, links: &mut HashMap<String, LinkTask>) {
    let records = match shared.metadata().mirror_links().await {
        Ok(records) => records,
        Err(error) => {
            tracing::warn!(%error, "reading the mirror links failed");
            return;
        }
    };
    let gone: Vec<String> = links
        .iter()
        .filter(|(name, task)| {
            !records
                .iter()
                .any(|record| record.name == **name && task.reads_as(record))
        })
        .map(|(name, _)| name.clone())
        .collect();
    for name in gone {
        if let Some(task) = links.remove(&name) {
            task.stop().await;
        }
        shared.mirror().forget_link(&name);
    }
    for record in records {
        match links.get(&record.name) {
            Some(task) => {
                task.updates.send_replace(record);
            }
            None => {
                links.insert(record.name.clone(), LinkTask::start(shared, record));
            }
        }
    }
}

/// One link as its task follows it.
struct Link {
    record: MirrorLinkRecord,
    source: Source,
    context: Arc<CopyContext>,
    /// The copies running here, by mirror partition.
    copies: HashMap<(Uuid, i32), Copying>,
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

/// A link's task: a round every second until `stopped`.
async fn follow_link(
    shared: Arc<Shared>,
    mut updates: watch::Receiver<MirrorLinkRecord>,
    mut stopped: watch::Receiver<bool>,
) {
    let record = updates.borrow_and_update().clone();
    let status = shared.mirror().clone();
    let name = record.name.clone();
    let mut link = match settings_of(&record) {
        Ok(settings) => Link {
            context: Arc::new(CopyContext {
                shared: shared.clone(),
                link: name.clone(),
                settings: settings.clone(),
                start_at: if record.start == "latest" { -1 } else { -2 },
                status: status.clone(),
            }),
            source: Source::new(settings),
            record,
            copies: HashMap::new(),
        },
        Err(error) => {
            // Its settings stay wrong until the link is made again.
            status.link_failed(&name, error);
            report(&shared, &name).await;
            let _ = stopped.changed().await;
            return;
        }
    };
    let mut round = 0_u64;
    loop {
        link.record = updates.borrow_and_update().clone();
        let work = tokio::time::timeout(ROUND_DEADLINE, follow(&shared, &mut link, round));
        tokio::select! {
            done = work => if done.is_err() {
                status.link_failed(&name, format!(
                    "a round took over {} s: the source answers too slowly",
                    ROUND_DEADLINE.as_secs()
                ));
            },
            _ = stopped.changed() => break,
        }
        if round.is_multiple_of(REPORT_ROUNDS) {
            report(&shared, &name).await;
        }
        round += 1;
        tokio::select! {
            () = tokio::time::sleep(ROUND) => {}
            _ = stopped.changed() => break,
        }
    }
    link.stop_all();
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
