//! [`ClusterView`]: this broker's view of the cluster (the live brokers, each
//! partition's leader and epoch, the controller, this broker's lease) and what it
//! answers from it. It knows nothing of the broker's other parts: the partition
//! router reads leadership from it, and the passes in `cluster.rs` and its siblings
//! keep it current.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use spool_metadata::{
    BrokerEndpoint, BrokerLease, BrokerRecord, Leadership, MetadataError, MetadataStore,
    PartitionKey,
};
use spool_model::Clock;
use uuid::Uuid;

use crate::config::{ClusterConfig, ReadConfig};
use crate::listener_endpoint::ListenerEndpoint;

/// A handover asked of a live leader, as the controller first saw it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Asked {
    pub(super) from: i32,
    pub(super) to: i32,
    pub(super) leader_epoch: i32,
    pub(super) since: std::time::Instant,
}

/// This broker's view of the cluster.
#[derive(Debug)]
pub(crate) struct ClusterView {
    pub(crate) node_id: i32,
    pub(crate) incarnation: Uuid,
    pub(crate) settings: ClusterConfig,
    /// The brokers whose lease was live at the last heartbeat, by node id.
    pub(super) brokers: RwLock<Vec<BrokerRecord>>,
    /// Each partition's leader and epoch as of the last assignments version read.
    pub(super) leaders: RwLock<HashMap<PartitionKey, Leadership>>,
    /// Another process registered this node id: this one serves nothing more.
    pub(super) replaced: AtomicBool,
    /// The controller's node id as last seen (-1: none).
    pub(super) controller: AtomicI32,
    /// Held through a controller round.
    pub(super) controller_round: tokio::sync::Mutex<()>,
    /// Held through a reading of the leaders, so that an older reading never
    /// replaces a newer one.
    pub(super) reloading: tokio::sync::Mutex<()>,
    /// When (by this broker's clock, ms) its lease was last renewed: once that is a
    /// lease ago, the others may have moved its partitions and groups, so it serves
    /// none of them until it renews again.
    pub(super) renewed_ms: std::sync::atomic::AtomicI64,
    /// As controller: the handovers asked of live leaders, with when this controller
    /// first saw each asked (see [`controller`]).
    pub(super) asked: std::sync::Mutex<HashMap<PartitionKey, Asked>>,
    /// The broker's clock: lease renewals and what they are compared with.
    pub(super) clock: Clock,
    /// `broker.roles=reader`: this broker leads nothing, coordinates nothing and
    /// does not take the controller lease.
    pub(crate) reader: bool,
}

impl ClusterView {
    /// Registers this broker (see the module docs) with what it advertises on each
    /// of its `listeners` (the first one's doubling as its address), and reads the
    /// cluster.
    pub(crate) async fn join(
        metadata: &Arc<dyn MetadataStore>,
        node_id: i32,
        instance: Uuid,
        listeners: &[ListenerEndpoint],
        settings: ClusterConfig,
        reads: &ReadConfig,
        clock: Clock,
    ) -> Result<ClusterView, MetadataError> {
        let endpoints: Vec<BrokerEndpoint> = listeners
            .iter()
            .map(|listener| BrokerEndpoint {
                listener: listener.name.clone(),
                host: listener.advertised.0.clone(),
                port: listener.advertised.1,
            })
            .collect();
        let (host, port) = endpoints
            .first()
            .map(|first| (first.host.clone(), first.port))
            .unwrap_or_default();
        let lease = BrokerLease {
            node_id,
            incarnation: Uuid::new_v4(),
            instance,
            host,
            port,
            rack: reads.rack.clone(),
            reader: reads.reader,
            listeners: endpoints,
        };
        let taken = register(metadata, &lease, &settings).await?;
        tracing::info!(
            node = node_id,
            incarnation = %lease.incarnation,
            partitions = taken.len(),
            rack = reads.rack.as_deref().unwrap_or("-"),
            reader = reads.reader,
            "joined the cluster"
        );
        let mut view = ClusterView::new(node_id, lease.incarnation, settings, clock);
        view.reader = reads.reader;
        view.refresh_brokers(metadata).await?;
        view.reload_leaders(metadata).await?;
        Ok(view)
    }

    /// The view of a process just registered, before it read the cluster.
    pub(super) fn new(
        node_id: i32,
        incarnation: Uuid,
        settings: ClusterConfig,
        clock: Clock,
    ) -> ClusterView {
        ClusterView {
            node_id,
            incarnation,
            settings,
            brokers: RwLock::new(Vec::new()),
            leaders: RwLock::new(HashMap::new()),
            replaced: AtomicBool::new(false),
            controller: AtomicI32::new(-1),
            controller_round: tokio::sync::Mutex::new(()),
            reloading: tokio::sync::Mutex::new(()),
            renewed_ms: std::sync::atomic::AtomicI64::new(clock.now_ms()),
            asked: std::sync::Mutex::new(HashMap::new()),
            clock,
            reader: false,
        }
    }

    /// The partitions this broker leads and was asked to hand to another broker.
    pub(super) fn handovers_asked_of_me(&self) -> Vec<Leadership> {
        self.leaders
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .filter(|l| l.leader == self.node_id && l.handover_to >= 0 && l.handover_to != l.leader)
            .copied()
            .collect()
    }

    /// The partition's leader and epoch, if it has a leader.
    pub(crate) fn leader_of(&self, key: PartitionKey) -> Option<Leadership> {
        self.leaders
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&key)
            .copied()
            .filter(|leadership| leadership.leader >= 0)
    }

    /// Whether this broker may act as a member: not replaced by another process, and
    /// its lease renewed less than a lease ago (by its own clock).
    pub(crate) fn is_member(&self) -> bool {
        let renewed = self.renewed_ms.load(Ordering::Acquire);
        let lease = lease_ms(&self.settings);
        !self.is_replaced() && self.clock.now_ms().saturating_sub(renewed) < lease
    }

    /// Notes a renewal that began at `started_ms`.
    pub(super) fn note_renewed(&self, started_ms: i64) {
        self.renewed_ms.fetch_max(started_ms, Ordering::AcqRel);
    }

    /// The epoch this broker leads the partition under, if it does.
    pub(crate) fn led_epoch(&self, key: PartitionKey) -> Option<i32> {
        if !self.is_member() {
            return None;
        }
        self.leader_of(key)
            .filter(|leadership| leadership.leader == self.node_id)
            .map(|leadership| leadership.leader_epoch)
    }

    /// How many partitions this broker leads, as of the last assignments read.
    pub(crate) fn led_count(&self) -> usize {
        self.leaders
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .filter(|leadership| leadership.leader == self.node_id)
            .count()
    }

    /// The brokers alive at the last heartbeat.
    pub(crate) fn live_brokers(&self) -> Vec<BrokerRecord> {
        self.brokers
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The broker coordinating a group: of the live brokers not draining (all live
    /// ones if every one drains), the one whose hash with the group is highest
    /// (rendezvous hashing: when a broker comes or goes, only its groups move). Every
    /// broker computes the same answer from the same membership; while views differ
    /// (a heartbeat apart), two brokers may both take a group, and the coordinator
    /// epoch the store fences offset writes with keeps its offsets safe.
    pub(crate) fn coordinator_of(&self, group_id: &str) -> Option<BrokerRecord> {
        coordinator_among(group_id, &self.live_brokers()).cloned()
    }

    /// Reads the registered brokers and keeps those whose lease is live.
    pub(super) async fn refresh_brokers(
        &self,
        metadata: &Arc<dyn MetadataStore>,
    ) -> Result<(), MetadataError> {
        // The store computes lease expiries by the system clock (in its SQL).
        let now = spool_model::Timestamp::now().0;
        let live: Vec<BrokerRecord> = metadata
            .brokers()
            .await?
            .into_iter()
            .filter(|broker| broker.lease_expires_ms > now)
            .collect();
        *self
            .brokers
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = live;
        Ok(())
    }

    /// Reads every partition's leader and epoch again, then this node's registration:
    /// a process that finds another incarnation registered (whose registration raised
    /// the epochs just read) knows it was replaced before it could use them.
    pub(crate) async fn reload_leaders(
        &self,
        metadata: &Arc<dyn MetadataStore>,
    ) -> Result<(), MetadataError> {
        let _one_at_a_time = self.reloading.lock().await;
        let leaderships = metadata.leaderships().await?;
        let replaced =
            metadata.brokers().await?.iter().any(|broker| {
                broker.node_id == self.node_id && broker.incarnation != self.incarnation
            });
        if replaced {
            self.note_replaced();
        }
        let map = leaderships
            .into_iter()
            .map(|leadership| (leadership.key, leadership))
            .collect();
        *self
            .leaders
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = map;
        Ok(())
    }

    /// The controller's node id as last seen (-1: none).
    pub(crate) fn controller(&self) -> i32 {
        self.controller.load(Ordering::Acquire)
    }

    /// The controller as Metadata tells clients: the one last seen if it is live,
    /// else a live writer (the lowest node id; this broker if none is known), never
    /// -1. Clients send admin requests there, and any writer takes them; librdkafka
    /// asked to wait for an unknown controller may not ask again before its request
    /// times out (Kafka's KRaft brokers likewise name a live broker).
    pub(crate) fn controller_for_clients(&self) -> i32 {
        let noted = self.controller();
        let live = self.live_brokers();
        if noted >= 0 && live.iter().any(|broker| broker.node_id == noted) {
            return noted;
        }
        live.iter()
            .filter(|broker| !broker.reader)
            .map(|broker| broker.node_id)
            .min()
            .unwrap_or(self.node_id)
    }

    pub(crate) fn note_controller(&self, node_id: i32) {
        self.controller.store(node_id, Ordering::Release);
    }

    /// Whether another process took this node id.
    pub(crate) fn is_replaced(&self) -> bool {
        self.replaced.load(Ordering::Acquire)
    }

    /// Notes that another process took this node id.
    pub(crate) fn note_replaced(&self) {
        if !self.replaced.swap(true, Ordering::AcqRel) {
            tracing::error!(
                node = self.node_id,
                "another broker process registered this node id: this one serves nothing more"
            );
        }
    }

    /// The first part of a clean stop: marks this broker draining and waits (while it
    /// still serves) until it has handed every partition over, as a drain does, so
    /// that each is unavailable only for its handover. Gives up after a handover
    /// timeout and a lease, or at once when no other broker could take them.
    pub(crate) async fn hand_over_everything(&self, metadata: &Arc<dyn MetadataStore>) {
        if !self.is_member() {
            return;
        }
        if let Err(error) = metadata.set_draining(self.node_id, true).await {
            tracing::warn!(%error, "cannot drain before stopping; partitions move when it has stopped");
            return;
        }
        let started = std::time::Instant::now();
        let deadline = started + self.settings.handover_timeout + self.settings.lease;
        loop {
            let leads_some = self
                .leaders
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .values()
                .any(|leadership| leadership.leader == self.node_id);
            let others = self
                .live_brokers()
                .iter()
                .any(|broker| broker.node_id != self.node_id && broker.takes_work());
            if !leads_some || !others || std::time::Instant::now() > deadline {
                if !leads_some && others {
                    // Still up a moment, answering NOT_LEADER_OR_FOLLOWER and fresh
                    // metadata: clients move to the next leaders while they can ask
                    // this broker, rather than finding it gone (which librdkafka
                    // recovers from only at its next periodic metadata refresh).
                    tokio::time::sleep(DRAIN_LINGER).await;
                }
                tracing::info!(
                    handed_over_all = !leads_some,
                    millis = started.elapsed().as_millis(),
                    "drained before stopping"
                );
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Leaves the cluster at a clean stop: the lease ends at once, so the controller
    /// moves this broker's partitions without waiting for it to lapse.
    pub(crate) async fn leave(&self, metadata: &Arc<dyn MetadataStore>) {
        if let Err(error) = metadata
            .deregister_broker(self.node_id, self.incarnation)
            .await
        {
            tracing::warn!(%error, "could not leave the cluster; the lease will lapse instead");
        }
    }
}

impl spool_coordinator::GroupOwnership for ClusterView {
    fn owns(&self, group_id: &str) -> bool {
        self.is_member()
            && self
                .coordinator_of(group_id)
                .is_some_and(|broker| broker.node_id == self.node_id)
    }
}

/// The coordinator of a group among `live` brokers (see
/// [`ClusterView::coordinator_of`]); `spool cluster status` asks it too.
pub fn coordinator_among<'a>(group_id: &str, live: &'a [BrokerRecord]) -> Option<&'a BrokerRecord> {
    // Readers coordinate nothing, even when every writer drains.
    let writers = live.iter().filter(|b| !b.reader);
    let serving: Vec<&BrokerRecord> = writers.clone().filter(|b| !b.draining).collect();
    let candidates = if serving.is_empty() {
        writers.collect()
    } else {
        serving
    };
    candidates
        .into_iter()
        .max_by_key(|broker| (rendezvous(group_id, broker.node_id), -broker.node_id))
}

/// A group's score on a node: CRC-32C of both, stable across processes and builds
/// (every broker must agree on it).
pub(super) fn rendezvous(group_id: &str, node_id: i32) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(group_id.as_bytes()), &node_id.to_be_bytes())
}

/// How long a broker stopping cleanly stays up once it has handed everything over.
const DRAIN_LINGER: std::time::Duration = std::time::Duration::from_millis(500);

/// Registers `lease`. A node id held by another instance is waited for, for one
/// lease and two heartbeats: a holder that died (a machine replaced after a crash,
/// with an empty data directory) lets its lease lapse by then and this broker takes
/// over; a live holder keeps renewing and this broker is refused.
pub(super) async fn register(
    metadata: &Arc<dyn MetadataStore>,
    lease: &BrokerLease,
    settings: &ClusterConfig,
) -> Result<Vec<Leadership>, MetadataError> {
    let patience = settings.lease + settings.heartbeat * 2;
    let started = tokio::time::Instant::now();
    loop {
        match metadata.register_broker(lease, lease_ms(settings)).await {
            Err(MetadataError::NodeInUse {
                node_id,
                holder,
                expires_in_ms,
            }) if started.elapsed() < patience => {
                tracing::warn!(
                    node = node_id,
                    %holder,
                    expires_in_ms,
                    "the node id is held by another broker; waiting to see whether its lease lapses"
                );
                let lapses = Duration::from_millis(u64::try_from(expires_in_ms).unwrap_or(0));
                let left = patience.saturating_sub(started.elapsed());
                tokio::time::sleep(lapses.min(left) + Duration::from_millis(20)).await;
            }
            registered => return registered,
        }
    }
}

/// `cluster.lease.ms` in ms.
pub(super) fn lease_ms(settings: &ClusterConfig) -> i64 {
    i64::try_from(settings.lease.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool_coordinator::GroupOwnership;

    fn view_with(brokers: &[i32], clock: Clock) -> ClusterView {
        let view = ClusterView::new(1, Uuid::new_v4(), ClusterConfig::default(), clock);
        *view.brokers.write().unwrap() = brokers
            .iter()
            .map(|node_id| BrokerRecord {
                node_id: *node_id,
                incarnation: Uuid::new_v4(),
                host: "127.0.0.1".to_owned(),
                port: 9000 + node_id,
                rack: None,
                reader: false,
                lease_expires_ms: i64::MAX,
                draining: false,
                topics_seen: 0,
                assignments_seen: 0,
                listeners: Vec::new(),
            })
            .collect();
        view
    }

    #[test]
    fn groups_spread_and_only_the_changed_brokers_groups_move() {
        let three = view_with(&[1, 2, 3], Clock::System);
        let two = view_with(&[1, 2], Clock::System);
        let groups: Vec<String> = (0..300).map(|g| format!("g{g}")).collect();
        let mut counts = HashMap::new();
        for group in &groups {
            let before = three.coordinator_of(group).unwrap().node_id;
            *counts.entry(before).or_insert(0) += 1;
            let after = two.coordinator_of(group).unwrap().node_id;
            if before != 3 {
                assert_eq!(before, after, "{group} stays where it was");
            }
        }
        assert!(counts.values().all(|count| *count > 60), "{counts:?}");
    }

    #[test]
    fn clients_are_told_a_live_writer_as_controller_before_one_is_known() {
        let view = view_with(&[1, 2, 3], Clock::System);
        view.brokers.write().unwrap()[0].reader = true;
        assert_eq!(
            view.controller_for_clients(),
            2,
            "unknown: the lowest writer"
        );
        view.note_controller(3);
        assert_eq!(view.controller_for_clients(), 3);
        view.note_controller(9);
        assert_eq!(view.controller_for_clients(), 2, "not live: a writer");
    }

    #[test]
    fn readers_coordinate_no_group_even_when_every_writer_drains() {
        let view = view_with(&[1, 2, 3], Clock::System);
        for broker in view.brokers.write().unwrap().iter_mut() {
            broker.reader = broker.node_id == 3;
            broker.draining = broker.node_id == 1;
        }
        for group in (0..100).map(|g| format!("g{g}")) {
            assert_eq!(view.coordinator_of(&group).unwrap().node_id, 2, "{group}");
        }
        view.brokers.write().unwrap()[1].draining = true;
        for group in (0..100).map(|g| format!("g{g}")) {
            assert_ne!(view.coordinator_of(&group).unwrap().node_id, 3, "{group}");
        }
    }

    #[test]
    fn a_broker_whose_lease_lapsed_owns_nothing_until_it_renews() {
        let (clock, hand) = Clock::manual();
        let view = view_with(&[1], clock.clone());
        assert!(view.owns("any"));
        hand.advance(view.settings.lease - Duration::from_millis(1));
        assert!(view.owns("any"), "within its lease");
        hand.advance(Duration::from_millis(2));
        assert!(!view.owns("any"), "its lease lapsed");
        view.note_renewed(clock.now_ms());
        assert!(view.owns("any"));
        view.note_replaced();
        assert!(!view.owns("any"), "a replaced process owns nothing");
    }
}
