//! Membership and control of a cluster of brokers sharing one metadata store (and one
//! object store): each broker holds a **lease** it renews; one broker holds the
//! **controller** lease and assigns partitions to live brokers; each move raises the
//! partition's leader epoch, which fences the old owner's commits.
//!
//! A broker process has an *incarnation* (a random id drawn at start) and an
//! *instance* (the id of its data directory, the same across its restarts).
//! Registering under a node id replaces an incarnation of the same instance at once (a
//! restart must not wait for its old lease to lapse), or one whose lease lapsed; a
//! live lease of another instance (another data directory or host claiming the node
//! id) is refused, as Kafka refuses a duplicate broker registration. Registering
//! raises the epoch of every partition the node led, so that the old incarnation,
//! were it still running, can commit nothing more; its next renewal finds another
//! incarnation and it knows it was replaced.

use uuid::Uuid;

use crate::{PartitionKey, Result};

/// A broker as it registers and renews.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerLease {
    pub node_id: i32,
    pub incarnation: Uuid,
    /// The broker's data directory's id: kept across restarts, so that a restart
    /// replaces its old incarnation at once while another process claiming the same
    /// node id is refused while the lease is live.
    pub instance: Uuid,
    /// The first listener's endpoint (what brokers registered before listeners were
    /// recorded give for all).
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    /// A reader broker (`broker.roles=reader`): it serves reads and Metadata only.
    pub reader: bool,
    /// Its endpoint on each of its listeners.
    pub listeners: Vec<BrokerEndpoint>,
}

/// Where a broker's listener is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEndpoint {
    /// The listener's name (`PLAINTEXT`, `SASL_SSL`, a custom name).
    pub listener: String,
    pub host: String,
    pub port: i32,
}

/// A broker's endpoints as the `brokers.listeners` column keeps them: a line per
/// listener, `NAME host port` (names and hosts hold no whitespace).
pub(crate) fn encode_endpoints(endpoints: &[BrokerEndpoint]) -> String {
    endpoints
        .iter()
        .map(|e| format!("{} {} {}\n", e.listener, e.host, e.port))
        .collect()
}

/// The endpoints of a `brokers.listeners` column; a line that does not parse is left
/// out.
pub(crate) fn decode_endpoints(text: &str) -> Vec<BrokerEndpoint> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (Some(listener), Some(host), Some(port), None) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                return None;
            };
            Some(BrokerEndpoint {
                listener: listener.to_owned(),
                host: host.to_owned(),
                port: port.parse().ok()?,
            })
        })
        .collect()
}

/// A broker as the store has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerRecord {
    pub node_id: i32,
    pub incarnation: Uuid,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
    /// The lease runs until then (ms since the epoch, by the store's clock).
    pub lease_expires_ms: i64,
    /// Asked to hand its partitions over (`spool cluster drain`, SIGTERM): the
    /// controller assigns it nothing and moves what it leads.
    pub draining: bool,
    /// The topics and assignments versions it has caught up with (see
    /// [`Cluster::note_followed`]).
    pub topics_seen: i64,
    pub assignments_seen: i64,
    /// Its endpoint on each of its listeners; empty for a broker registered before
    /// they were recorded.
    pub listeners: Vec<BrokerEndpoint>,
    /// A reader broker: it leads no partition and coordinates no group.
    pub reader: bool,
}

impl BrokerRecord {
    /// Whether the broker may be given partitions and groups: a writer, not draining.
    #[must_use]
    pub fn takes_work(&self) -> bool {
        !self.draining && !self.reader
    }

    /// The broker as a client on `listener` reaches it: `host` and `port` are its
    /// endpoint on that listener. `None` if it has no such listener (Kafka leaves such
    /// a broker out of Metadata); one registered before listeners were recorded is
    /// taken at its one endpoint.
    pub fn on_listener(mut self, listener: &str) -> Option<BrokerRecord> {
        if self.listeners.is_empty() {
            return Some(self);
        }
        let endpoint = self.listeners.iter().find(|e| e.listener == listener)?;
        self.host = endpoint.host.clone();
        self.port = endpoint.port;
        Some(self)
    }
}

/// Who holds the controller lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControllerLease {
    pub node_id: i32,
    /// The holding process (`None` from a store written before incarnations).
    pub incarnation: Option<Uuid>,
    /// Raised each time the lease changes hands: the controller's moves carry it and
    /// are refused once another controller took over.
    pub epoch: i64,
    pub lease_expires_ms: i64,
}

/// A partition's leader and leader epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leadership {
    pub key: PartitionKey,
    /// The node leading it; -1 for none yet.
    pub leader: i32,
    pub leader_epoch: i32,
    /// The node the leader is asked to hand the partition over to; -1 for none.
    pub handover_to: i32,
    /// When the partition got its leader (ms since the epoch; 0: never moved).
    pub leader_since_ms: i64,
}

/// A partition the controller moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PartitionMove {
    pub key: PartitionKey,
    /// The leader the move was planned from (-1 for none).
    pub from: i32,
    pub to: i32,
}

/// Membership, the controller lease and partition assignment. Leases are instants
/// by the brokers' clocks, which must agree within a small part of a lease (NTP).
#[async_trait::async_trait]
pub trait Cluster: Send + Sync {
    /// Registers `lease` with a lease of `lease_ms`, replacing another incarnation of
    /// its node that is of the same instance or whose lease lapsed (else
    /// [`MetadataError::NodeInUse`](crate::MetadataError::NodeInUse)), and raises the
    /// leader epoch of every partition the node leads; returns those partitions at
    /// their new epochs.
    async fn register_broker(&self, lease: &BrokerLease, lease_ms: i64) -> Result<Vec<Leadership>>;
    /// Binds the store to the object storage at `url` (bucket and prefix), the
    /// first time; after that, refuses another
    /// ([`MetadataError::OtherStorage`](crate::MetadataError::OtherStorage)): the
    /// catalogue describes objects in one place only.
    async fn bind_storage(&self, url: &str) -> Result<()>;
    /// The object storage the store is bound to; `None` for a store no broker in
    /// shared-storage mode has used (an embedded broker's).
    async fn bound_storage(&self) -> Result<Option<String>>;
    /// Renews the broker's lease for `lease_ms`; `false` if its node is held by another
    /// incarnation now (this one was replaced) or it is not registered.
    async fn renew_lease(&self, node_id: i32, incarnation: Uuid, lease_ms: i64) -> Result<bool>;
    /// Marks the broker draining (or not); `false` if the node is not registered.
    async fn set_draining(&self, node_id: i32, draining: bool) -> Result<bool>;
    /// Removes the broker (a clean stop, once its partitions moved): its lease ends
    /// at once. Only the given incarnation's row goes.
    async fn deregister_broker(&self, node_id: i32, incarnation: Uuid) -> Result<()>;
    /// Notes that this incarnation of `node_id` has caught up with the topics version
    /// `topics` and the assignments version `assignments` (0: not read): a broker
    /// that changed either waits for the live ones to follow. Versions only rise.
    async fn note_followed(
        &self,
        node_id: i32,
        incarnation: Uuid,
        topics: i64,
        assignments: i64,
    ) -> Result<()>;
    /// Every registered broker (a lease is judged by the caller's clock).
    async fn brokers(&self) -> Result<Vec<BrokerRecord>>;
    /// Takes or renews the controller lease for `lease_ms` if it is free, lapsed, or
    /// already this incarnation's; returns the lease as it stands after the attempt
    /// (held by another broker if the attempt failed).
    async fn claim_controller(
        &self,
        node_id: i32,
        incarnation: Uuid,
        lease_ms: i64,
    ) -> Result<Option<ControllerLease>>;
    /// Who holds the controller lease, without trying to take it (lapsed or not).
    async fn controller(&self) -> Result<Option<ControllerLease>>;
    /// Every partition's leader and epoch.
    async fn leaderships(&self) -> Result<Vec<Leadership>>;
    /// Raised by every change of leadership: brokers poll it.
    async fn assignments_version(&self) -> Result<i64>;
    /// The controller's moves, in one transaction fenced by its `controller_epoch`
    /// (and refused whole, `None`, once another controller took over): each partition
    /// still led by the move's `from` gets its new leader and a raised leader epoch (one
    /// that moved meanwhile stays; one never led keeps its epoch: there is no earlier
    /// leader to fence), and no handover is asked of it any more. Returns the new
    /// leaderships.
    async fn move_partitions(
        &self,
        controller_epoch: i64,
        moves: &[PartitionMove],
    ) -> Result<Option<Vec<Leadership>>>;
    /// Gives partitions never led (leader -1) their first leader, each the node paired
    /// with it, outside the controller's rounds: the broker that made them may, since
    /// there is no earlier leader to fence, and one the controller assigned meanwhile
    /// stays as it is. Returns the partitions assigned.
    async fn assign_new_partitions(
        &self,
        assignments: &[(PartitionKey, i32)],
    ) -> Result<Vec<Leadership>>;
    /// The controller asks live leaders to hand partitions over (fenced as
    /// [`Cluster::move_partitions`]): each partition still led by the move's `from`
    /// gets the move's `to` as its handover target. Returns the partitions asked.
    async fn request_handovers(
        &self,
        controller_epoch: i64,
        moves: &[PartitionMove],
    ) -> Result<Option<Vec<Leadership>>>;
    /// An operator asks the partition's leader to hand it to node `to` (`spool
    /// cluster move`); `None` if the partition is unknown or `to` leads it already.
    async fn request_move(&self, key: PartitionKey, to: i32) -> Result<Option<Leadership>>;
    /// The leader, having committed what it buffered, hands the partition to the
    /// node it was asked to, under a raised epoch: only if this incarnation of
    /// `node_id` is registered and leads the partition at `leader_epoch` and a
    /// handover was asked. Returns the new leadership (`None`: not handed over).
    async fn complete_handover(
        &self,
        node_id: i32,
        incarnation: Uuid,
        key: PartitionKey,
        leader_epoch: i32,
    ) -> Result<Option<Leadership>>;
}
