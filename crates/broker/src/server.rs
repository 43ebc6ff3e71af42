//! The listener: accepts connections up to the limit, and shuts down on request,
//! waiting for connections to finish and the logs to be synced and checkpointed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use spool_log::{LogManager, ManagerConfig};
use spool_store::LocalStore;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinHandle;

use crate::admin::BrokerAdmin;
use crate::config::BrokerConfig;
use crate::connection;
use crate::data_dir_lock::DataDirLock;
use crate::dynamic_config::DynamicConfig;
use crate::http_listeners;
use crate::metrics::BrokerMetrics;
use crate::producer_ids::ProducerIds;
use crate::store_binding;
use crate::topics;
use prometheus_client::metrics::histogram::Histogram;
use spool_admin::AdminServer;
use spool_coordinator::{GroupCoordinator, TransactionCoordinator, TxnConfig};
use spool_metadata::{MetadataStore, MetadataUrl};
use spool_objects::ObjectStorage;
use spool_security::sasl::SaslMechanism;

use crate::broker_error::BrokerError;
use crate::builder::BrokerBuilder;
use crate::cluster::ClusterView;
use crate::listener_endpoint::ListenerEndpoint;
use crate::partitions::Partitions;
use crate::shared::{Shared, SharedParts};
use crate::transactions::BrokerMarkers;
use spool_shared_storage::SharedStorage;

/// A running broker.
#[derive(Debug)]
pub struct Broker {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    accept: JoinHandle<()>,
    /// The data directory's lock, when the broker owns one (see [`BrokerBuilder::log_store`]).
    data_dir_lock: Option<DataDirLock>,
    /// The HTTP admin listener (`admin.listen`), and the broker as it sees it.
    admin: Option<(AdminServer, Arc<BrokerAdmin>)>,
    /// The schema registry's listener (`schema.registry.listen`).
    registry: Option<crate::schema_registry::RegistryServer>,
}

impl Broker {
    /// What the broker's connections share: for tests of its handlers.
    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// How a broker is put together before it starts: `config`, and the stores a
    /// test or a tool gives it instead of those the settings name.
    pub fn builder(config: BrokerConfig) -> BrokerBuilder {
        BrokerBuilder::new(config)
    }

    /// Locks and opens the data directory (a second process on it is refused),
    /// binds the listeners and starts accepting.
    pub(crate) async fn start_locked(
        config: BrokerConfig,
        objects: Option<ObjectStorage>,
        metadata: Option<Arc<dyn MetadataStore>>,
    ) -> Result<Broker, BrokerError> {
        let lock = DataDirLock::acquire(&config.data_dir)?;
        let store = LocalStore::open(&config.data_dir).map_err(|source| BrokerError::DataDir {
            path: config.data_dir.clone(),
            source,
        })?;
        let mut broker = Broker::start_from(config, Arc::new(store), objects, metadata).await?;
        broker.data_dir_lock = Some(lock);
        Ok(broker)
    }

    /// Starts the admin listener first (it answers liveness, and "starting" to the
    /// rest, while the broker opens), then the broker.
    pub(crate) async fn start_from(
        config: BrokerConfig,
        store: Arc<dyn spool_store::Store>,
        objects: Option<ObjectStorage>,
        metadata: Option<Arc<dyn MetadataStore>>,
    ) -> Result<Broker, BrokerError> {
        let admin = http_listeners::start_admin(&config.admin).await?;
        // Boxed: opening awaits every part of a broker's start, a large future.
        let registry_config = config.schema_registry;
        let registry_security = match http_listeners::registry_security(&config) {
            Ok(security) => security,
            Err(error) => {
                if let Some(server) = admin {
                    server.shutdown().await;
                }
                return Err(error);
            }
        };
        match Box::pin(Broker::open(config, store, objects, metadata)).await {
            Ok(mut broker) => {
                if let Some(server) = admin {
                    let source = Arc::new(BrokerAdmin::new(broker.shared.clone()));
                    server.state().started(source.clone());
                    broker.admin = Some((server, source));
                }
                let registry = http_listeners::start_registry(
                    &registry_config,
                    registry_security,
                    &broker.shared,
                )
                .await;
                match registry {
                    Ok(registry) => broker.registry = registry,
                    Err(error) => {
                        broker.shutdown().await?;
                        return Err(error);
                    }
                }
                Ok(broker)
            }
            Err(error) => {
                if let Some(server) = admin {
                    server.shutdown().await;
                }
                Err(error)
            }
        }
    }

    async fn open(
        config: BrokerConfig,
        store: Arc<dyn spool_store::Store>,
        objects: Option<ObjectStorage>,
        metadata: Option<Arc<dyn MetadataStore>>,
    ) -> Result<Broker, BrokerError> {
        let objects = match (objects, &config.storage.url) {
            (_, None) => None,
            (Some(objects), Some(_)) => Some(objects),
            (None, Some(url)) => Some(url.open_with(&config.storage.s3)?),
        };
        std::fs::create_dir_all(&config.data_dir).map_err(|source| BrokerError::DataDir {
            path: config.data_dir.clone(),
            source,
        })?;
        let metrics = config.admin.metrics.then(|| {
            let sync_timer = Histogram::new(crate::metrics::SYNC_BUCKETS);
            Arc::new(BrokerMetrics::new(
                sync_timer,
                config.admin.partition_series_limit,
            ))
        });
        let manager_config = ManagerConfig {
            flush_threads: config.io_threads,
            retention_check_interval: config.retention_check_interval,
            // Shared-storage mode cleans compacted topics in object storage, not in
            // the tails (`shared_storage::cleaning`).
            cleaner: (config.cleaner.enabled && objects.is_none())
                .then_some(config.cleaner.settings),
            cleaner_backoff: config.cleaner.backoff,
            sync_timer: metrics.as_ref().map(|metrics| metrics.sync_timer.clone()),
            ..ManagerConfig::default()
        };
        let metadata_url = config
            .metadata_url
            .clone()
            .unwrap_or_else(|| MetadataUrl::in_data_dir(&config.data_dir));
        let metadata = match metadata {
            Some(metadata) => metadata,
            None => spool_metadata::open(&metadata_url).await?,
        };
        tracing::info!(metadata = %metadata_url.redacted(), "metadata store open");
        // Before anything is read or removed: a data directory of another store would
        // have all its topics taken for data that no topic owns.
        store_binding::check(&config.data_dir, metadata.store_id().await?, &metadata_url)?;
        // The catalogue describes the objects of one object store: a broker given
        // another (a mistyped bucket or prefix) is refused before it reads or writes.
        if let Some(url) = &config.storage.url {
            metadata.bind_storage(&url.to_string()).await?;
        }
        let dynamic = DynamicConfig::new(config.clone(), metadata.broker_configs().await?);
        // The version first: a change made while the topics load is seen again.
        let topics_version = metadata.topics_version().await?;
        let records = metadata.topics().await?;
        let logs = {
            let records = records.clone();
            tokio::task::spawn_blocking(move || {
                topics::move_name_keyed_logs(store.as_ref(), &records)?;
                Ok::<_, BrokerError>(LogManager::open(store, manager_config)?)
            })
            .await??
        };
        let setups = spool_security::listener_setups(config.listen, &config.security)
            .map_err(BrokerError::Security)?;
        let offers_oauth = setups.iter().any(|setup| {
            setup.policy.protocol.uses_sasl()
                && setup
                    .policy
                    .mechanisms
                    .contains(&SaslMechanism::OAuthBearer)
        });
        let token_verifier = if offers_oauth {
            let verifier = spool_security::oauth::TokenVerifier::load(&config.security.oauth)
                .await
                .map_err(BrokerError::Security)?;
            Some(Arc::new(verifier))
        } else {
            None
        };
        let mut listeners = Vec::with_capacity(setups.len());
        let mut endpoints = Vec::with_capacity(setups.len());
        for (index, setup) in setups.into_iter().enumerate() {
            let address = setup.listener.address;
            let bound = TcpListener::bind(address)
                .await
                .map_err(|source| BrokerError::Listen { address, source })?;
            let local = bound
                .local_addr()
                .map_err(|source| BrokerError::Listen { address, source })?;
            // `--advertise` stands for the first listener's, as before listeners.
            let advertised = match &setup.advertised {
                Some((host, port)) => (host.clone(), *port),
                None if index == 0 => advertised_address(config.advertise.as_deref(), local),
                None => advertised_address(None, local),
            };
            endpoints.push(ListenerEndpoint {
                name: setup.listener.name.clone(),
                local,
                advertised,
            });
            listeners.push((bound, setup));
        }
        let local_addr = endpoints
            .first()
            .map(|endpoint| endpoint.local)
            .unwrap_or(config.listen);
        let authorizer = spool_security::authorizer::Authorizer::new(
            config.security.authorizer(),
            metadata.acls().await?,
        );
        let quotas = spool_security::quotas::Quotas::new(config.clock.clone());
        quotas.load(metadata.quotas().await?);
        if let Some((user, password)) = &config.security.bootstrap_user {
            spool_security::seed_user(&metadata, user, password).await?;
        }
        // A password listener with no user to log in as refuses every client: say so
        // at start rather than leave it to the first client's "authentication failed".
        let password_listeners: Vec<&str> = listeners
            .iter()
            .filter(|(_, setup)| {
                setup.policy.protocol.uses_sasl()
                    && setup
                        .policy
                        .mechanisms
                        .iter()
                        .any(|m| !matches!(m, SaslMechanism::OAuthBearer))
            })
            .map(|(_, setup)| setup.listener.name.as_str())
            .collect();
        if !password_listeners.is_empty() && metadata.credential_list().await?.is_empty() {
            tracing::warn!(
                listeners = ?password_listeners,
                "SASL listeners take PLAIN or SCRAM logins, but no user has credentials: every such login fails until one is added (`spool user add`, or --bootstrap-user USER:PASSWORD)"
            );
        }
        // In shared-storage mode, this broker joins the cluster of the brokers
        // sharing the metadata store.
        let shared_storage = objects.is_some();
        if config.reads.reader && !shared_storage {
            return Err(BrokerError::ReaderWithoutSharedStorage);
        }
        let cluster = if shared_storage {
            let instance = crate::instance_id::of(&config.data_dir)?;
            let view = ClusterView::join(
                &metadata,
                config.node_id,
                instance,
                &endpoints,
                config.cluster,
                &config.reads,
                config.clock.clone(),
            )
            .await?;
            Some(Arc::new(view))
        } else {
            None
        };
        let topics =
            topics::load_topics(metadata.as_ref(), records, &logs, &dynamic.current()).await?;
        let group_config = spool_coordinator::CoordinatorConfig {
            node_id: config.node_id,
            clock: config.clock.clone(),
            ..config.groups.clone()
        };
        let groups = Arc::new(GroupCoordinator::open(metadata.clone(), group_config).await?);
        let producer_ids = Arc::new(ProducerIds::new(metadata.clone()));
        let storage = objects.map(|objects| {
            tracing::info!(objects = %objects.prefix, "partition data in object storage");
            SharedStorage::start(objects, metadata.clone(), &config.storage)
        });
        let storage_for_replicas = storage.clone();
        let partitions = Arc::new(Partitions::new(
            config.node_id,
            topics,
            logs,
            storage,
            cluster,
        ));
        let markers = Arc::new(BrokerMarkers::new(partitions.clone(), config.clock.clone()));
        let txn_config = TxnConfig {
            // In a cluster, markers of partitions this broker leads come from other
            // coordinators too: look for them as often as assignments are followed.
            marker_interval: if shared_storage {
                crate::topics::follow::CLUSTER_POLL_INTERVAL
            } else {
                config.transactions.marker_interval
            },
            clock: config.clock.clone(),
            ..config.transactions.clone()
        };
        let txn_checks = Arc::new(crate::txn_check::CheckStats::default());
        let checker = crate::txn_check::HttpChecker::new(
            metadata.clone(),
            partitions.clone(),
            txn_checks.clone(),
        );
        let transactions = Arc::new(
            TransactionCoordinator::new(
                txn_config,
                metadata.clone(),
                producer_ids.clone(),
                markers.clone(),
                groups.clone(),
            )
            .with_checker(Arc::new(checker)),
        );
        let shared = Arc::new(Shared::new(SharedParts {
            clock: config.clock.clone(),
            dynamic,
            admin: tokio::sync::Mutex::new(()),
            listeners: endpoints,
            metadata: metadata.clone(),
            schema_ids: crate::schema_registry::SchemaIds::new(metadata.clone()),
            partitions,
            groups: groups.clone(),
            share: crate::share::ShareService::new(config.share_groups.max_share_sessions),
            transactions: transactions.clone(),
            txn_checks,
            mirror: Arc::default(),
            failovers: Arc::default(),
            tables: crate::tables::TableStatus::default(),
            indexes: crate::index::Indexes::default(),
            producer_ids,
            cluster_id: "spool-cluster".to_owned(),
            metrics,
            delayed: crate::delayed::DelayedStats::default(),
            views: spool_views::Views::default(),
            lanes: crate::lanes::Lanes::default(),
            authorizer,
            quotas,
            token_verifier,
            replicas: storage_for_replicas
                .map(|storage| Arc::new(crate::replica_reads::ReplicaReads::new(storage))),
        }));
        crate::group_configs::adopt(&shared, metadata.group_configs().await?);
        if let Some(view) = shared.cluster() {
            // Each group and each transactional id has one coordinator among the
            // brokers.
            shared.groups().set_ownership(view.clone());
            shared.transactions().set_ownership(view.clone());
            // A broker that holds (or can take) the controller lease assigns what has
            // no leader before it serves: a cluster of one leads everything at once.
            crate::cluster::assign_now(&shared, view).await;
        }
        let (stop, stopped) = watch::channel(false);
        tokio::spawn(groups.run(stopped.clone()));
        tokio::spawn(transactions.run(stopped.clone()));
        tokio::spawn(crate::share::timers::run(shared.clone(), stopped.clone()));
        if shared.cluster().is_some() {
            tokio::spawn(crate::share::dead_letters::run(
                shared.clone(),
                stopped.clone(),
            ));
        }
        tokio::spawn(crate::delayed::delivery::run(
            shared.clone(),
            stopped.clone(),
        ));
        tokio::spawn(crate::mirror::run(shared.clone(), stopped.clone()));
        tokio::spawn(crate::tables::run(shared.clone(), stopped.clone()));
        tokio::spawn(crate::index::run(shared.clone(), stopped.clone()));
        tokio::spawn(crate::lanes::presence::run(shared.clone(), stopped.clone()));
        tokio::spawn(topics::follow_metadata_store(
            shared.clone(),
            topics_version,
            stopped.clone(),
        ));
        if let Some(replicas) = shared.replicas() {
            tokio::spawn(replicas.clone().run(stopped.clone()));
        }
        if shared.storage().is_some() {
            tokio::spawn(crate::maintenance::run(shared.clone(), stopped.clone()));
            tokio::spawn(crate::cleaner::run(shared.clone(), stopped.clone()));
        }
        crate::cluster::start(&shared, &stopped);
        if let Some(verifier) = shared.token_verifier() {
            tokio::spawn(spool_security::oauth::keep_fresh(
                verifier.clone(),
                stopped.clone(),
            ));
        }
        let mut watched_tls = Vec::new();
        let mut loops = Vec::with_capacity(listeners.len());
        for (bound, setup) in listeners {
            if let Some(tls) = &setup.tls
                && !watched_tls.iter().any(|watched| Arc::ptr_eq(watched, tls))
            {
                watched_tls.push(tls.clone());
                tokio::spawn(spool_security::tls::watch_files(
                    tls.clone(),
                    stopped.clone(),
                ));
            }
            loops.push(tokio::spawn(accept_loop(
                bound,
                setup,
                shared.clone(),
                stopped.clone(),
            )));
        }
        let accept = tokio::spawn(async move {
            for accepting in loops {
                let _ = accepting.await;
            }
        });
        Ok(Broker {
            local_addr,
            shared,
            stop,
            accept,
            data_dir_lock: None,
            admin: None,
            registry: None,
        })
    }

    /// How far a consumer group is behind, per partition it has committed.
    #[must_use]
    pub fn group_lag(&self, group: &str) -> Vec<crate::PartitionLag> {
        crate::lag::group_lag(&self.shared, group)
    }

    /// Shared-storage mode's counts (objects written and read, commits, latencies);
    /// `None` in embedded mode.
    #[must_use]
    pub fn storage_stats(&self) -> Option<crate::StorageStats> {
        self.shared.storage().map(|storage| storage.stats())
    }

    /// The address the listener is bound to (useful with port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Every listener: its name and the address it is bound to, in the order given.
    #[must_use]
    pub fn listeners(&self) -> Vec<(String, SocketAddr)> {
        self.shared
            .listeners()
            .iter()
            .map(|listener| (listener.name.clone(), listener.local))
            .collect()
    }

    /// The address the listener named `name` is bound to.
    #[must_use]
    pub fn listener_addr(&self, name: &str) -> Option<SocketAddr> {
        self.shared
            .listeners()
            .iter()
            .find(|listener| listener.name.eq_ignore_ascii_case(name))
            .map(|listener| listener.local)
    }

    /// The address the schema registry's listener is bound to; `None` when it runs
    /// none.
    #[must_use]
    pub fn schema_registry_addr(&self) -> Option<SocketAddr> {
        self.registry.as_ref().map(|server| server.local_addr())
    }

    /// The address the admin listener is bound to; `None` when it runs none.
    #[must_use]
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin.as_ref().map(|(server, _)| server.local_addr())
    }

    /// Stops accepting, lets connections finish (up to a few seconds), then syncs and
    /// checkpoints every partition. A cluster member first hands its partitions over
    /// while it still serves.
    pub async fn shutdown(mut self) -> Result<(), BrokerError> {
        let started = std::time::Instant::now();
        if let Some(registry) = self.registry.take() {
            registry.shutdown().await;
        }
        let admin = self.admin.take();
        if let Some((_, source)) = &admin {
            source.stopping();
        }
        if let Some(view) = self.shared.cluster() {
            view.hand_over_everything(self.shared.metadata()).await;
            // It follows the store no more from here: no broker waits for it to.
            let stopping = self
                .shared
                .metadata()
                .note_followed(view.node_id, view.incarnation, i64::MAX, i64::MAX)
                .await;
            if let Err(error) = stopping {
                tracing::debug!(%error, "cannot note that this broker stops following");
            }
        }
        let _ = self.stop.send(true);
        self.accept.await?;
        let connections_closed = started.elapsed();
        if let Some(storage) = self.shared.storage() {
            // What was appended (and answered, with acks=1) goes to object storage.
            storage.close().await;
        }
        if let Some(view) = self.shared.cluster() {
            view.leave(self.shared.metadata()).await;
        }
        let shared = self.shared.clone();
        tokio::task::spawn_blocking(move || shared.logs().shutdown()).await??;
        if let Some((server, _)) = admin {
            server.shutdown().await;
        }
        tracing::info!(
            connections_closed_ms = connections_closed.as_millis(),
            stopped_ms = started.elapsed().as_millis(),
            "stopped"
        );
        Ok(())
    }
}

/// `host:port` from `--advertise`, or the bound address.
fn advertised_address(advertise: Option<&str>, bound: SocketAddr) -> (String, i32) {
    let parsed = advertise.and_then(|text| {
        let (host, port) = text.rsplit_once(':')?;
        Some((host.to_owned(), port.parse().ok()?))
    });
    parsed.unwrap_or_else(|| (bound.ip().to_string(), i32::from(bound.port())))
}

async fn accept_loop(
    listener: TcpListener,
    setup: spool_security::ListenerSetup,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let permits = Arc::new(Semaphore::new(shared.started_config().max_connections));
    let mut connections = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = stopped.changed() => break,
            // Finished connections are reaped as they end: a JoinSet keeps every
            // finished task until it is joined, which would grow with every
            // connection the broker ever served.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(pair) => pair,
                    Err(error) => {
                        tracing::warn!(%error, "accept failed");
                        continue;
                    }
                };
                let Ok(permit) = permits.clone().try_acquire_owned() else {
                    if let Some(metrics) = shared.metrics() {
                        metrics.connections_rejected.inc();
                    }
                    tracing::warn!(%peer, limit = shared.started_config().max_connections, "connection limit reached; refusing");
                    continue;
                };
                let shared = shared.clone();
                let stopped = stopped.clone();
                let open = shared.metrics().map(|metrics| {
                    metrics.connections_accepted.inc();
                    metrics.connections_open.inc();
                    metrics.connections_open.clone()
                });
                let setup = setup.clone();
                connections.spawn(async move {
                    connection::serve(stream, peer, setup, shared, stopped).await;
                    if let Some(open) = open {
                        open.dec();
                    }
                    drop(permit);
                });
            }
        }
    }
    // Connections see the same stop signal; give them a moment to finish.
    let drained = tokio::time::timeout(Duration::from_secs(5), async {
        while connections.join_next().await.is_some() {}
    });
    if drained.await.is_err() {
        connections.abort_all();
    }
}
