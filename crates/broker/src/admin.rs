//! The broker behind the HTTP admin listener (`spool-admin`): readiness, `/metrics`
//! and the REST API's operations, through the same services the Kafka handlers use
//! (topic creation and deletion, config changes, partition reads, the group
//! coordinator), so both paths validate alike and answer alike.
//!
//! In a cluster each broker answers for what it holds: the topics and configs are
//! the cluster's (the metadata store's); offsets and messages are given for the
//! partitions it leads, the others named with their leader; groups, for those it
//! coordinates.

pub(crate) mod bounds;
mod groups;
mod messages;
mod mirrors;
mod schemas;
mod share_groups;
mod topics;
mod txn_checkers;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use spool_admin::{
    AdminApi, AdminSource, ApiError, ClusterInfo, ConfigChanges, ConfigEntry, FoundMessages,
    GroupDetail, GroupSummary, MessagePage, MessageQuery, MessageSearch, NewTopic, NewTxnChecker,
    OffsetReset, Readiness, StatusCode, TopicDetail, TopicSummary, TxnCheckerInfo,
};

use crate::errors::code;
use crate::shared::Shared;

/// How long readiness waits for the metadata store, and for the object store.
const STORE_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The running broker, as the admin listener sees it.
#[derive(Debug)]
pub(crate) struct BrokerAdmin {
    shared: Arc<Shared>,
    /// Set as the broker starts to stop: it is no longer ready.
    stopping: AtomicBool,
}

impl BrokerAdmin {
    pub(crate) fn new(shared: Arc<Shared>) -> BrokerAdmin {
        BrokerAdmin {
            shared,
            stopping: AtomicBool::new(false),
        }
    }

    /// The broker is shutting down: readiness says so from now on.
    pub(crate) fn stopping(&self) {
        self.stopping.store(true, Ordering::Release);
    }
}

#[async_trait::async_trait]
impl AdminSource for BrokerAdmin {
    async fn readiness(&self) -> Readiness {
        let mut checks = BTreeMap::new();
        let mut ready = true;
        let mut check = |name: &str, outcome: Result<(), String>| {
            ready &= outcome.is_ok();
            checks.insert(
                name.to_owned(),
                outcome.err().unwrap_or_else(|| "ok".to_owned()),
            );
        };
        check("started", Ok(()));
        let stopping = self.stopping.load(Ordering::Acquire);
        check(
            "serving",
            if stopping {
                Err("stopping".to_owned())
            } else {
                Ok(())
            },
        );
        let store =
            tokio::time::timeout(STORE_CHECK_TIMEOUT, self.shared.metadata().topics_version());
        check(
            "metadata_store",
            match store.await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(error)) => Err(format!("unreachable: {error}")),
                Err(_) => Err(format!(
                    "no answer within {} ms",
                    STORE_CHECK_TIMEOUT.as_millis()
                )),
            },
        );
        if let Some(storage) = self.shared.storage() {
            let probe = tokio::time::timeout(STORE_CHECK_TIMEOUT, storage.probe());
            check(
                "object_storage",
                match (probe.await, storage.write_failure()) {
                    (Ok(Ok(())), None) => Ok(()),
                    (Ok(Ok(())), Some(failure)) => Err(format!("the last write failed: {failure}")),
                    (Ok(Err(error)), _) => Err(format!("unreachable: {error}")),
                    (Err(_), _) => Err(format!(
                        "no answer within {} ms",
                        STORE_CHECK_TIMEOUT.as_millis()
                    )),
                },
            );
        }
        if let Some(view) = self.shared.cluster() {
            check(
                "cluster_lease",
                if view.is_replaced() {
                    Err("replaced: another process registered this node id".to_owned())
                } else if view.is_member() {
                    Ok(())
                } else {
                    Err("lost: not renewed within cluster.lease.ms".to_owned())
                },
            );
        }
        Readiness { ready, checks }
    }

    async fn metrics(&self) -> Option<String> {
        let metrics = self.shared.metrics().cloned()?;
        let shared = self.shared.clone();
        // A scrape takes each partition's lock in turn: off the async threads.
        tokio::task::spawn_blocking(move || crate::metrics::scrape::encode(&metrics, &shared))
            .await
            .ok()
    }

    fn api(&self) -> &dyn AdminApi {
        self
    }
}

#[async_trait::async_trait]
impl AdminApi for BrokerAdmin {
    async fn cluster(&self) -> Result<ClusterInfo, ApiError> {
        Ok(topics::cluster(&self.shared))
    }

    async fn topics(&self) -> Result<Vec<TopicSummary>, ApiError> {
        topics::list(&self.shared).await
    }

    async fn topic(&self, name: &str) -> Result<TopicDetail, ApiError> {
        topics::describe(&self.shared, name).await
    }

    async fn create_topic(&self, request: NewTopic) -> Result<TopicDetail, ApiError> {
        topics::create(&self.shared, request).await
    }

    async fn delete_topic(&self, name: &str) -> Result<(), ApiError> {
        topics::delete(&self.shared, name).await
    }

    async fn alter_topic_configs(
        &self,
        name: &str,
        changes: ConfigChanges,
    ) -> Result<Vec<ConfigEntry>, ApiError> {
        topics::alter_configs(&self.shared, name, changes).await
    }

    async fn messages(&self, query: MessageQuery) -> Result<MessagePage, ApiError> {
        messages::read(&self.shared, query).await
    }

    async fn find_messages(&self, search: MessageSearch) -> Result<FoundMessages, ApiError> {
        messages::find(&self.shared, search).await
    }

    async fn groups(&self) -> Result<Vec<GroupSummary>, ApiError> {
        groups::list(&self.shared).await
    }

    async fn group(&self, id: &str) -> Result<GroupDetail, ApiError> {
        groups::describe(&self.shared, id).await
    }

    async fn delete_group(&self, id: &str) -> Result<(), ApiError> {
        groups::delete(&self.shared, id).await
    }

    async fn reset_group_offsets(
        &self,
        id: &str,
        reset: OffsetReset,
    ) -> Result<GroupDetail, ApiError> {
        groups::reset_offsets(&self.shared, id, reset).await
    }

    async fn txn_checkers(&self) -> Result<Vec<TxnCheckerInfo>, ApiError> {
        txn_checkers::list(&self.shared).await
    }

    async fn put_txn_checker(&self, checker: NewTxnChecker) -> Result<TxnCheckerInfo, ApiError> {
        txn_checkers::put(&self.shared, checker).await
    }

    async fn remove_txn_checker(&self, prefix: &str) -> Result<(), ApiError> {
        txn_checkers::remove(&self.shared, prefix).await
    }

    async fn schema_subjects(&self) -> Result<Vec<spool_admin::SubjectInfo>, ApiError> {
        schemas::subjects(&self.shared).await
    }

    async fn schema_version(
        &self,
        subject: &str,
        version: &str,
    ) -> Result<spool_admin::SchemaVersionInfo, ApiError> {
        schemas::version(&self.shared, subject, version).await
    }

    async fn mirrors(&self) -> Result<Vec<spool_admin::MirrorInfo>, ApiError> {
        mirrors::list(&self.shared).await
    }

    async fn mirror(&self, name: &str) -> Result<spool_admin::MirrorInfo, ApiError> {
        mirrors::describe(&self.shared, name).await
    }

    async fn create_mirror(
        &self,
        mirror: spool_admin::NewMirror,
    ) -> Result<spool_admin::MirrorInfo, ApiError> {
        mirrors::create(&self.shared, mirror).await
    }

    async fn delete_mirror(&self, name: &str) -> Result<(), ApiError> {
        mirrors::delete(&self.shared, name).await
    }

    async fn pause_mirror(
        &self,
        name: &str,
        paused: bool,
    ) -> Result<spool_admin::MirrorInfo, ApiError> {
        mirrors::pause(&self.shared, name, paused).await
    }

    async fn failover_mirror(
        &self,
        name: &str,
        failover: spool_admin::MirrorFailover,
    ) -> Result<Vec<spool_admin::FailedOverTopic>, ApiError> {
        mirrors::fail_over(&self.shared, name, failover).await
    }
}

/// The REST answer for a Kafka error code: its name, a status that says what kind
/// of failure it is, and `message`.
pub(crate) fn kafka_error(error_code: i16, message: impl Into<String>) -> ApiError {
    let status = match error_code {
        code::UNKNOWN_TOPIC_OR_PARTITION | code::GROUP_ID_NOT_FOUND | code::UNKNOWN_TOPIC_ID => {
            StatusCode::NOT_FOUND
        }
        code::TOPIC_ALREADY_EXISTS | code::NON_EMPTY_GROUP => StatusCode::CONFLICT,
        code::OFFSET_OUT_OF_RANGE
        | code::INVALID_TOPIC_EXCEPTION
        | code::INVALID_PARTITIONS
        | code::INVALID_REPLICATION_FACTOR
        | code::INVALID_CONFIG
        | code::INVALID_REQUEST
        | code::INVALID_TIMESTAMP => StatusCode::BAD_REQUEST,
        code::NOT_LEADER_OR_FOLLOWER
        | code::NOT_COORDINATOR
        | code::LEADER_NOT_AVAILABLE
        | code::COORDINATOR_NOT_AVAILABLE
        | code::KAFKA_STORAGE_ERROR
        | code::REQUEST_TIMED_OUT => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, &crate::metrics::error_name(error_code), message)
}
