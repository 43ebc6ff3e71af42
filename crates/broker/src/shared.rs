//! What every connection and background task of a broker shares: the settings, the
//! stores, the coordinators, the topic table and the services around them.

use std::sync::Arc;

use spool_coordinator::{GroupCoordinator, TransactionCoordinator};
use spool_log::LogManager;
use spool_metadata::MetadataStore;
use spool_model::Clock;
use spool_shared_storage::SharedStorage;

use crate::cluster::ClusterView;
use crate::config::BrokerConfig;
use crate::dynamic_config::DynamicConfig;
use crate::listener_endpoint::ListenerEndpoint;
use crate::metrics::BrokerMetrics;
use crate::partitions::Partitions;
use crate::producer_ids::ProducerIds;
use crate::topics::TopicTable;

/// What a broker's [`Shared`] is made of, as the broker starts.
#[derive(Debug)]
pub(crate) struct SharedParts {
    /// The clock every time-driven part reads (`BrokerConfig::clock`).
    pub(crate) clock: Clock,
    /// The settings: static ones as started, dynamic ones as changed since.
    pub(crate) dynamic: DynamicConfig,
    /// Serializes changes of topics and configs, so that none is lost to another.
    pub(crate) admin: tokio::sync::Mutex<()>,
    /// Every listener (at least one): its name, where it is bound, what it
    /// advertises.
    pub(crate) listeners: Vec<ListenerEndpoint>,
    pub(crate) metadata: Arc<dyn MetadataStore>,
    /// The schema ids of each registry subject, for topics that validate them.
    pub(crate) schema_ids: crate::schema_registry::SchemaIds,
    /// The topics, their partitions' logs, shared storage and who leads what.
    pub(crate) partitions: Arc<Partitions>,
    pub(crate) groups: Arc<GroupCoordinator>,
    /// Share groups: members, sessions and the share-partitions led here.
    pub(crate) share: crate::share::ShareService,
    pub(crate) transactions: Arc<TransactionCoordinator>,
    /// The transaction checks made, by answer.
    pub(crate) txn_checks: Arc<crate::txn_check::CheckStats>,
    /// The mirror links' state and the partitions copied here.
    pub(crate) mirror: Arc<crate::mirror::MirrorStatus>,
    /// Failed-over mirror partitions: which are settled here.
    pub(crate) failovers: Arc<crate::mirror::Failovers>,
    /// The table topics whose partitions this broker leads.
    pub(crate) tables: crate::tables::TableStatus,
    /// The message indexes built here, and where every index's chunks are.
    pub(crate) indexes: crate::index::Indexes,
    pub(crate) producer_ids: Arc<ProducerIds>,
    pub(crate) cluster_id: String,
    /// What `/metrics` counts; `None` with `metrics.enable=false`.
    pub(crate) metrics: Option<Arc<BrokerMetrics>>,
    /// Pending delayed records of the partitions this broker leads.
    pub(crate) delayed: crate::delayed::DelayedStats,
    /// The views' tag index and match counts.
    pub(crate) views: spool_views::Views,
    /// Lanes: who is in which lane, and what lane reads and writes counted.
    pub(crate) lanes: crate::lanes::Lanes,
    /// The ACLs and what decides with them.
    pub(crate) authorizer: spool_security::authorizer::Authorizer,
    /// Client quotas and what each entity has used.
    pub(crate) quotas: spool_security::quotas::Quotas,
    /// OAUTHBEARER's key set, when a listener offers the mechanism.
    pub(crate) token_verifier: Option<Arc<spool_security::oauth::TokenVerifier>>,
    /// Shared-storage mode: the committed marks of the partitions consumers fetch
    /// here that another broker leads.
    pub(crate) replicas: Option<Arc<crate::replica_reads::ReplicaReads>>,
}

/// What every connection and background task shares, each part through its accessor.
#[derive(Debug)]
pub(crate) struct Shared {
    parts: SharedParts,
}

impl Shared {
    pub(crate) fn new(parts: SharedParts) -> Shared {
        Shared { parts }
    }

    /// The clock every time-driven part reads (`BrokerConfig::clock`).
    pub(crate) fn clock(&self) -> &Clock {
        &self.parts.clock
    }

    /// The settings: static ones as started, dynamic ones as changed since.
    pub(crate) fn dynamic(&self) -> &DynamicConfig {
        &self.parts.dynamic
    }

    /// Held while topics or configs change, so that no change is lost to another.
    pub(crate) fn changes(&self) -> &tokio::sync::Mutex<()> {
        &self.parts.admin
    }

    /// Every listener (at least one).
    pub(crate) fn listeners(&self) -> &[ListenerEndpoint] {
        &self.parts.listeners
    }

    pub(crate) fn metadata(&self) -> &Arc<dyn MetadataStore> {
        &self.parts.metadata
    }

    /// The schema ids of each registry subject, for topics that validate them.
    pub(crate) fn schema_ids(&self) -> &crate::schema_registry::SchemaIds {
        &self.parts.schema_ids
    }

    /// The partition router: topic and index to the partition this broker serves.
    pub(crate) fn partitions(&self) -> &Arc<Partitions> {
        &self.parts.partitions
    }

    pub(crate) fn groups(&self) -> &Arc<GroupCoordinator> {
        &self.parts.groups
    }

    pub(crate) fn share(&self) -> &crate::share::ShareService {
        &self.parts.share
    }

    pub(crate) fn transactions(&self) -> &Arc<TransactionCoordinator> {
        &self.parts.transactions
    }

    pub(crate) fn producer_ids(&self) -> &Arc<ProducerIds> {
        &self.parts.producer_ids
    }

    pub(crate) fn cluster_id(&self) -> &str {
        &self.parts.cluster_id
    }

    /// What `/metrics` counts; `None` with `metrics.enable=false`.
    pub(crate) fn metrics(&self) -> Option<&Arc<BrokerMetrics>> {
        self.parts.metrics.as_ref()
    }

    /// The transaction checks made, by answer.
    pub(crate) fn txn_checks(&self) -> &crate::txn_check::CheckStats {
        &self.parts.txn_checks
    }

    /// The mirror links' state and the partitions copied here.
    pub(crate) fn mirror(&self) -> &Arc<crate::mirror::MirrorStatus> {
        &self.parts.mirror
    }

    /// The table topics whose partitions this broker leads.
    pub(crate) fn tables(&self) -> &crate::tables::TableStatus {
        &self.parts.tables
    }

    /// The message indexes built here, and their chunks' store.
    pub(crate) fn indexes(&self) -> &crate::index::Indexes {
        &self.parts.indexes
    }

    /// Failed-over mirror partitions: which are settled here.
    pub(crate) fn failovers(&self) -> &crate::mirror::Failovers {
        &self.parts.failovers
    }

    /// Pending delayed records of the partitions this broker leads.
    pub(crate) fn delayed(&self) -> &crate::delayed::DelayedStats {
        &self.parts.delayed
    }

    /// Who is in which lane, and what lane reads and writes counted.
    pub(crate) fn lanes(&self) -> &crate::lanes::Lanes {
        &self.parts.lanes
    }

    /// The views' tag index and match counts.
    pub(crate) fn views(&self) -> &spool_views::Views {
        &self.parts.views
    }

    /// The ACLs and what decides with them.
    pub(crate) fn authorizer(&self) -> &spool_security::authorizer::Authorizer {
        &self.parts.authorizer
    }

    /// Client quotas and what each entity has used.
    pub(crate) fn quotas(&self) -> &spool_security::quotas::Quotas {
        &self.parts.quotas
    }

    /// OAUTHBEARER's key set, when a listener offers the mechanism.
    pub(crate) fn token_verifier(&self) -> Option<&Arc<spool_security::oauth::TokenVerifier>> {
        self.parts.token_verifier.as_ref()
    }

    /// The topics this broker knows, by name and by id.
    pub(crate) fn topics(&self) -> &TopicTable {
        self.parts.partitions.topics()
    }

    /// The partitions' logs (in shared-storage mode, their tails).
    pub(crate) fn logs(&self) -> &LogManager {
        self.parts.partitions.logs()
    }

    /// Shared-storage mode: what serves reads of partitions another broker leads.
    pub(crate) fn replicas(&self) -> Option<&Arc<crate::replica_reads::ReplicaReads>> {
        self.parts.replicas.as_ref()
    }

    /// Shared-storage mode's objects and uploader; `None` in embedded mode.
    pub(crate) fn storage(&self) -> Option<&Arc<SharedStorage>> {
        self.parts.partitions.storage()
    }

    /// The cluster this broker is a member of (shared-storage mode); `None` in
    /// embedded mode, where it leads every partition.
    pub(crate) fn cluster(&self) -> Option<&Arc<ClusterView>> {
        self.parts.partitions.cluster()
    }

    /// What this broker advertises on the listener named `name` (the first
    /// listener's for a name it does not have).
    pub(crate) fn advertised_on(&self, name: &str) -> (String, i32) {
        self.parts
            .listeners
            .iter()
            .find(|listener| listener.name == name)
            .map_or_else(|| self.advertised(), |listener| listener.advertised.clone())
    }

    /// The first listener's name (what the admin listener's answers use).
    pub(crate) fn first_listener(&self) -> String {
        self.parts
            .listeners
            .first()
            .map(|listener| listener.name.clone())
            .unwrap_or_default()
    }

    /// What the first listener advertises.
    pub(crate) fn advertised(&self) -> (String, i32) {
        self.parts
            .listeners
            .first()
            .map(|listener| listener.advertised.clone())
            .unwrap_or_default()
    }

    /// What the broker checks logins against.
    pub(crate) fn login_verifiers(&self) -> spool_security::sasl::Verifiers<'_> {
        spool_security::sasl::Verifiers {
            metadata: &self.parts.metadata,
            tokens: self.parts.token_verifier.as_deref(),
        }
    }

    /// The settings the broker started with (the static ones stay so).
    pub(crate) fn started_config(&self) -> &BrokerConfig {
        self.parts.dynamic.started()
    }

    /// The settings in force now, dynamic changes included.
    pub(crate) fn current_config(&self) -> Arc<BrokerConfig> {
        self.parts.dynamic.current()
    }
}
