//! The upstream cluster as Databus sees it: its brokers, who leads each partition,
//! who coordinates each group and transaction, and connections to each broker (a
//! pool: a connection carries one request at a time, and a JoinGroup may hold one for
//! seconds). Metadata is refreshed when a request finds a partition without a known
//! leader, when an answer says a leader moved, and every [`REFRESH`].

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, MetadataRequest, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use spool_kafka_client::{ClientError, ClientSettings, Connection};
use uuid::Uuid;

/// How often metadata is refreshed when nothing asks for it sooner.
const REFRESH: Duration = Duration::from_secs(30);
/// The soonest metadata is asked again after a refresh.
const MIN_REFRESH: Duration = Duration::from_millis(100);
/// Idle connections kept per broker.
const IDLE_PER_BROKER: usize = 8;
/// The Metadata version asked (topic ids from v10).
const METADATA_VERSION: i16 = 12;
/// The FindCoordinator version asked (one key, v1–v3).
const FIND_COORDINATOR_VERSION: i16 = 3;

/// Which broker a request goes to.
pub(crate) type BrokerId = i32;

/// What is known of the upstream cluster.
#[derive(Debug, Default)]
struct Cluster {
    /// Address by node id.
    brokers: HashMap<BrokerId, String>,
    /// Leader by (topic, partition).
    leaders: HashMap<(String, i32), BrokerId>,
    /// Topic names by id.
    names: HashMap<Uuid, String>,
    refreshed: Option<Instant>,
}

/// The upstream cluster and connections to it.
#[derive(Debug)]
pub(crate) struct Upstream {
    settings: ClientSettings,
    cluster: RwLock<Cluster>,
    idle: Mutex<HashMap<BrokerId, Vec<Connection>>>,
    /// Coordinator by (key type, key).
    coordinators: Mutex<HashMap<(i8, String), BrokerId>>,
    /// The upstream's API versions: (key, min, max).
    versions: Vec<(i16, i16, i16)>,
    /// One refresh at a time.
    refreshing: tokio::sync::Mutex<()>,
}

/// A failed upstream request: whether the broker could not be reached (or the
/// connection broke), or it answered with a failure.
#[derive(Debug)]
pub(crate) enum UpstreamError {
    Unreachable(String),
    Failed(String),
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Unreachable(detail) => write!(f, "upstream unreachable: {detail}"),
            UpstreamError::Failed(detail) => write!(f, "upstream failed: {detail}"),
        }
    }
}

impl From<ClientError> for UpstreamError {
    fn from(error: ClientError) -> UpstreamError {
        match error {
            ClientError::Unreachable { detail, .. } => UpstreamError::Unreachable(detail),
            // A request that got no answer leaves the connection unusable: as good as
            // unreachable for what was sent on it.
            ClientError::Failed(detail)
                if detail.contains("connection failed") || detail.contains("no answer") =>
            {
                UpstreamError::Unreachable(detail)
            }
            other => UpstreamError::Failed(other.to_string()),
        }
    }
}

impl Upstream {
    /// Connects to the first bootstrap broker that answers: its API versions and the
    /// cluster's metadata.
    pub(crate) async fn connect(settings: ClientSettings) -> Result<Upstream, UpstreamError> {
        let (mut connection, _) = spool_kafka_client::connect(&settings, "start Databus").await?;
        let versions = connection.versions().await?;
        let upstream = Upstream {
            settings,
            cluster: RwLock::default(),
            idle: Mutex::default(),
            coordinators: Mutex::default(),
            versions,
            refreshing: tokio::sync::Mutex::new(()),
        };
        upstream.refresh_with(&mut connection).await?;
        Ok(upstream)
    }

    /// The upstream's API versions.
    pub(crate) fn versions(&self) -> &[(i16, i16, i16)] {
        &self.versions
    }

    /// The highest version of `key` the upstream speaks.
    pub(crate) fn max_version(&self, key: ApiKey) -> Option<i16> {
        self.versions
            .iter()
            .find(|(api, _, _)| *api == key as i16)
            .map(|(_, _, max)| *max)
    }

    /// Sends `request` (API `key` at `version`) to broker `broker` in Databus's
    /// name and reads the answer.
    pub(crate) async fn call(
        &self,
        broker: BrokerId,
        key: ApiKey,
        request: &RequestKind,
        version: i16,
    ) -> Result<ResponseKind, UpstreamError> {
        self.call_as(broker, key, request, version, None).await
    }

    /// [`Upstream::call`] in the name of the client `client_id` (what a group shows
    /// of its members, what quotas count).
    pub(crate) async fn call_as(
        &self,
        broker: BrokerId,
        key: ApiKey,
        request: &RequestKind,
        version: i16,
        client_id: Option<&StrBytes>,
    ) -> Result<ResponseKind, UpstreamError> {
        let mut connection = self.take(broker).await?;
        match connection.call_kind(key, request, version, client_id).await {
            Ok(response) => {
                self.give_back(broker, connection);
                Ok(response)
            }
            Err(error) => Err(error.into()),
        }
    }

    /// Any live broker, for requests any broker answers (admin, Metadata).
    pub(crate) fn any_broker(&self) -> Option<BrokerId> {
        let cluster = self.read();
        let mut ids: Vec<BrokerId> = cluster.brokers.keys().copied().collect();
        ids.sort_unstable();
        ids.get(fastrand::usize(..ids.len().max(1))).copied()
    }

    /// Every broker.
    pub(crate) fn all_brokers(&self) -> Vec<BrokerId> {
        let mut ids: Vec<BrokerId> = self.read().brokers.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The leader of `topic`'s `partition`, refreshing once if it is not known.
    pub(crate) async fn leader(&self, topic: &str, partition: i32) -> Option<BrokerId> {
        if let Some(leader) = self.known_leader(topic, partition) {
            return Some(leader);
        }
        self.refresh().await;
        self.known_leader(topic, partition)
    }

    fn known_leader(&self, topic: &str, partition: i32) -> Option<BrokerId> {
        self.read()
            .leaders
            .get(&(topic.to_owned(), partition))
            .copied()
    }

    /// The name of the topic `id`, refreshing once if it is not known.
    pub(crate) async fn topic_name(&self, id: Uuid) -> Option<String> {
        if let Some(name) = self.read().names.get(&id).cloned() {
            return Some(name);
        }
        self.refresh().await;
        self.read().names.get(&id).cloned()
    }

    /// The coordinator of `key` (`key_type` 0 a group, 1 a transactional id), asked
    /// of the cluster when not known.
    pub(crate) async fn coordinator(
        &self,
        key_type: i8,
        key: &str,
    ) -> Result<BrokerId, UpstreamError> {
        let cache_key = (key_type, key.to_owned());
        if let Some(known) = self.lock_coordinators().get(&cache_key) {
            return Ok(*known);
        }
        let request = RequestKind::FindCoordinator(
            FindCoordinatorRequest::default()
                .with_key(StrBytes::from_string(key.to_owned()))
                .with_key_type(key_type),
        );
        let broker = self
            .any_broker()
            .ok_or_else(|| UpstreamError::Unreachable("no upstream broker known".into()))?;
        let answer = self
            .call(
                broker,
                ApiKey::FindCoordinator,
                &request,
                FIND_COORDINATOR_VERSION,
            )
            .await?;
        let ResponseKind::FindCoordinator(answer) = answer else {
            return Err(UpstreamError::Failed(
                "FindCoordinator answered otherwise".into(),
            ));
        };
        if answer.error_code != 0 {
            return Err(UpstreamError::Failed(format!(
                "FindCoordinator of {key}: {}",
                spool_kafka_client::error_name(answer.error_code)
            )));
        }
        let address = format!("{}:{}", answer.host.as_str(), answer.port);
        self.write()
            .brokers
            .entry(answer.node_id.0)
            .or_insert(address);
        self.lock_coordinators().insert(cache_key, answer.node_id.0);
        Ok(answer.node_id.0)
    }

    /// Forgets the coordinator of `key`: an answer said it moved.
    pub(crate) fn forget_coordinator(&self, key_type: i8, key: &str) {
        self.lock_coordinators().remove(&(key_type, key.to_owned()));
    }

    /// Refreshes metadata now unless it was just refreshed.
    pub(crate) async fn refresh(&self) {
        let _one = self.refreshing.lock().await;
        if self
            .read()
            .refreshed
            .is_some_and(|at| at.elapsed() < MIN_REFRESH)
        {
            return;
        }
        for broker in self.all_brokers().into_iter().map(Some).chain([None]) {
            let connection = match broker {
                Some(broker) => self.take(broker).await,
                None => spool_kafka_client::connect(&self.settings, "refresh metadata")
                    .await
                    .map(|(connection, _)| connection)
                    .map_err(UpstreamError::from),
            };
            let Ok(mut connection) = connection else {
                continue;
            };
            if self.refresh_with(&mut connection).await.is_ok() {
                if let Some(broker) = broker {
                    self.give_back(broker, connection);
                }
                return;
            }
        }
        tracing::warn!("no upstream broker answered Metadata");
    }

    /// Whether metadata is older than [`REFRESH`].
    pub(crate) fn stale(&self) -> bool {
        self.read()
            .refreshed
            .is_none_or(|at| at.elapsed() >= REFRESH)
    }

    async fn refresh_with(&self, connection: &mut Connection) -> Result<(), UpstreamError> {
        let request = RequestKind::Metadata(MetadataRequest::default().with_topics(None));
        let answer = connection
            .call_kind(ApiKey::Metadata, &request, METADATA_VERSION, None)
            .await?;
        let ResponseKind::Metadata(answer) = answer else {
            return Err(UpstreamError::Failed("Metadata answered otherwise".into()));
        };
        let mut cluster = Cluster {
            refreshed: Some(Instant::now()),
            ..Cluster::default()
        };
        for broker in &answer.brokers {
            cluster.brokers.insert(
                broker.node_id.0,
                format!("{}:{}", broker.host.as_str(), broker.port),
            );
        }
        for topic in &answer.topics {
            let Some(name) = &topic.name else {
                continue;
            };
            cluster.names.insert(topic.topic_id, name.0.to_string());
            for partition in &topic.partitions {
                if partition.leader_id.0 >= 0 {
                    cluster.leaders.insert(
                        (name.0.to_string(), partition.partition_index),
                        partition.leader_id.0,
                    );
                }
            }
        }
        *self.write() = cluster;
        Ok(())
    }

    /// An idle connection to `broker`, or a new one.
    async fn take(&self, broker: BrokerId) -> Result<Connection, UpstreamError> {
        if let Some(connection) = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&broker)
            .and_then(Vec::pop)
        {
            return Ok(connection);
        }
        let address =
            self.read().brokers.get(&broker).cloned().ok_or_else(|| {
                UpstreamError::Unreachable(format!("broker {broker} is not known"))
            })?;
        Ok(Connection::open(&self.settings, &address).await?)
    }

    fn give_back(&self, broker: BrokerId, connection: Connection) {
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        let pool = idle.entry(broker).or_default();
        if pool.len() < IDLE_PER_BROKER {
            pool.push(connection);
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Cluster> {
        self.cluster.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Cluster> {
        self.cluster.write().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_coordinators(&self) -> std::sync::MutexGuard<'_, HashMap<(i8, String), BrokerId>> {
        self.coordinators
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
