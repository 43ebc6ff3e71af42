//! What every connection and background task of a broker shares: the settings, the
//! stores, the coordinators, the topic table and the services around them.

use std::net::SocketAddr;
use std::sync::Arc;

use spool_coordinator::{GroupCoordinator, TransactionCoordinator};
use spool_log::LogManager;
use spool_metadata::MetadataStore;
use spool_model::Clock;
use spool_shared_storage::SharedStorage;

use crate::cluster::ClusterView;
use crate::config::BrokerConfig;
use crate::dynamic_config::DynamicConfig;
use crate::metrics::BrokerMetrics;
use crate::producer_ids::ProducerIds;
use crate::topics::TopicTable;

/// What every connection shares.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The clock every time-driven part reads (`BrokerConfig::clock`).
    pub(crate) clock: Clock,
    /// The settings: static ones as started, dynamic ones as changed since.
    pub(crate) dynamic: DynamicConfig,
    /// Serializes changes of topics and configs, so that none is lost to another.
    pub(crate) admin: tokio::sync::Mutex<()>,
    /// Every listener (at least one): its name, where it is bound, what it
    /// advertises.
    pub(crate) listeners: Vec<ListenerEndpoint>,
    pub(crate) logs: LogManager,
    pub(crate) metadata: Arc<dyn MetadataStore>,
    pub(crate) topics: TopicTable,
    pub(crate) groups: Arc<GroupCoordinator>,
    pub(crate) transactions: Arc<TransactionCoordinator>,
    pub(crate) producer_ids: Arc<ProducerIds>,
    pub(crate) cluster_id: String,
    /// Shared-storage mode's objects and uploader; `None` in embedded mode.
    pub(crate) storage: Option<Arc<SharedStorage>>,
    /// The cluster this broker is a member of (shared-storage mode); `None` in
    /// embedded mode, where it leads every partition.
    pub(crate) cluster: Option<Arc<ClusterView>>,
    /// What `/metrics` counts; `None` with `metrics.enable=false`.
    pub(crate) metrics: Option<Arc<BrokerMetrics>>,
    /// Pending delayed records of the partitions this broker leads.
    pub(crate) delayed: crate::delayed::DelayedStats,
    /// The views' tag index and match counts.
    pub(crate) views: spool_views::Views,
    /// The ACLs and what decides with them.
    pub(crate) authorizer: spool_security::authorizer::Authorizer,
    /// Client quotas and what each entity has used.
    pub(crate) quotas: spool_security::quotas::Quotas,
    /// OAUTHBEARER's key set, when a listener offers the mechanism.
    pub(crate) token_verifier: Option<Arc<spool_security::oauth::TokenVerifier>>,
}

/// A listener as bound.
#[derive(Debug, Clone)]
pub(crate) struct ListenerEndpoint {
    pub(crate) name: String,
    pub(crate) local: SocketAddr,
    pub(crate) advertised: (String, i32),
}

impl Shared {
    /// What this broker advertises on the listener named `name` (the first
    /// listener's for a name it does not have).
    pub(crate) fn advertised_on(&self, name: &str) -> (String, i32) {
        self.listeners
            .iter()
            .find(|listener| listener.name == name)
            .map_or_else(|| self.advertised(), |listener| listener.advertised.clone())
    }

    /// The first listener's name (what the admin listener's answers use).
    pub(crate) fn first_listener(&self) -> String {
        self.listeners
            .first()
            .map(|listener| listener.name.clone())
            .unwrap_or_default()
    }

    /// What the first listener advertises.
    pub(crate) fn advertised(&self) -> (String, i32) {
        self.listeners
            .first()
            .map(|listener| listener.advertised.clone())
            .unwrap_or_default()
    }

    /// What the broker checks logins against.
    pub(crate) fn login_verifiers(&self) -> spool_security::sasl::Verifiers<'_> {
        spool_security::sasl::Verifiers {
            metadata: &self.metadata,
            tokens: self.token_verifier.as_deref(),
        }
    }

    /// The settings the broker started with (the static ones stay so).
    pub(crate) fn started_config(&self) -> &BrokerConfig {
        self.dynamic.started()
    }

    /// The settings in force now, dynamic changes included.
    pub(crate) fn current_config(&self) -> Arc<BrokerConfig> {
        self.dynamic.current()
    }
}
