//! A metadata store that fails on purpose, for tests of the shared-storage write
//! path: an object commit that fails before it happens (the store refused it, or the
//! connection dropped before the commit), or one that happens but whose answer is lost
//! (the connection dropped during the commit: the caller cannot know); reads of the
//! catalogue that fail while the store is "down". Everything else passes through.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use uuid::Uuid;

use crate::{
    AclRecord, Acls, BrokerLease, BrokerRecord, Catalogue, ClientQuotas, Cluster, CommittedOffset,
    ConfigChange, ControllerLease, DelayedRecord, DelayedRecords, GroupStates, LanePresences,
    Leadership, MetadataError, MetadataStore, MirrorLinkRecord, MirrorLinks, ObjectCommit,
    PartitionKey, PartitionMove, PartitionState, PendingHolds, QueuedDeadLetter, QuotaEntity,
    QuotaRecord, Result, ScramCredentialRecord, ScramCredentials, SharePartitionRecord,
    SharePartitions, StoredRange, TopicRecord, TransactionRecord, Transactions, TxnCheckerRecord,
    TxnCheckers, TxnMarker, TxnUpdate,
};

/// Wraps a store; see the module doc.
#[derive(Debug)]
pub struct FaultyMetadata {
    inner: Arc<dyn MetadataStore>,
    fail_commits: AtomicU64,
    lose_commit_answers: AtomicU64,
    down: AtomicBool,
}

impl FaultyMetadata {
    #[must_use]
    pub fn new(inner: Arc<dyn MetadataStore>) -> FaultyMetadata {
        FaultyMetadata {
            inner,
            fail_commits: AtomicU64::new(0),
            lose_commit_answers: AtomicU64::new(0),
            down: AtomicBool::new(false),
        }
    }

    /// The next `n` object commits fail without happening.
    pub fn fail_next_commits(&self, n: u64) {
        self.fail_commits.store(n, Ordering::SeqCst);
    }

    /// The next `n` object commits happen, but the caller hears they failed.
    pub fn lose_next_commit_answers(&self, n: u64) {
        self.lose_commit_answers.store(n, Ordering::SeqCst);
    }

    /// While down, every catalogue call fails as an unreachable store does.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    fn check_up(&self) -> Result<()> {
        if self.down.load(Ordering::SeqCst) {
            return Err(MetadataError::Retriable(
                "injected: the metadata store is down".to_owned(),
            ));
        }
        Ok(())
    }
}

/// Takes one from a countdown; whether there was one to take.
fn take(counter: &AtomicU64) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

#[async_trait::async_trait]
impl Catalogue for FaultyMetadata {
    async fn commit_object(&self, commit: &ObjectCommit) -> Result<Vec<bool>> {
        self.check_up()?;
        if take(&self.fail_commits) {
            return Err(MetadataError::Retriable(
                "injected: the commit failed".to_owned(),
            ));
        }
        let answer = self.inner.commit_object(commit).await?;
        if take(&self.lose_commit_answers) {
            return Err(MetadataError::Retriable(
                "injected: the connection dropped during the commit".to_owned(),
            ));
        }
        Ok(answer)
    }

    async fn partition_state(&self, key: PartitionKey) -> Result<Option<PartitionState>> {
        self.check_up()?;
        self.inner.partition_state(key).await
    }

    async fn committed_marks(
        &self,
        keys: &[PartitionKey],
        producer_states: bool,
    ) -> Result<Vec<crate::CommittedMarks>> {
        self.check_up()?;
        self.inner.committed_marks(keys, producer_states).await
    }

    async fn begin_epoch(&self, key: PartitionKey, epoch: i32, start_offset: i64) -> Result<()> {
        self.check_up()?;
        self.inner.begin_epoch(key, epoch, start_offset).await
    }

    async fn ranges_from(
        &self,
        key: PartitionKey,
        offset: i64,
        max_bytes: i64,
        limit: i64,
    ) -> Result<Vec<StoredRange>> {
        self.check_up()?;
        self.inner.ranges_from(key, offset, max_bytes, limit).await
    }

    async fn range_for_timestamp(
        &self,
        key: PartitionKey,
        timestamp: i64,
    ) -> Result<Option<StoredRange>> {
        self.check_up()?;
        self.inner.range_for_timestamp(key, timestamp).await
    }

    async fn range_with_max_timestamp(&self, key: PartitionKey) -> Result<Option<StoredRange>> {
        self.check_up()?;
        self.inner.range_with_max_timestamp(key).await
    }

    async fn advance_log_start(&self, key: PartitionKey, offset: i64) -> Result<i64> {
        self.check_up()?;
        self.inner.advance_log_start(key, offset).await
    }

    async fn advance_cleaned_offset(
        &self,
        key: PartitionKey,
        leader_epoch: i32,
        offset: i64,
    ) -> Result<bool> {
        self.check_up()?;
        self.inner
            .advance_cleaned_offset(key, leader_epoch, offset)
            .await
    }

    async fn replace_ranges(
        &self,
        key: PartitionKey,
        leader_epoch: i32,
        replaced: &[StoredRange],
        object: &ObjectCommit,
    ) -> Result<bool> {
        self.check_up()?;
        self.inner
            .replace_ranges(key, leader_epoch, replaced, object)
            .await
    }

    async fn note_unreferenced_objects(&self, now_ms: i64) -> Result<u64> {
        self.check_up()?;
        self.inner.note_unreferenced_objects(now_ms).await
    }

    async fn unreferenced_objects(&self, before_ms: i64, limit: i64) -> Result<Vec<String>> {
        self.check_up()?;
        self.inner.unreferenced_objects(before_ms, limit).await
    }

    async fn forget_objects(&self, names: &[String]) -> Result<()> {
        self.check_up()?;
        self.inner.forget_objects(names).await
    }

    async fn known_objects(&self, names: &[String]) -> Result<Vec<String>> {
        self.check_up()?;
        self.inner.known_objects(names).await
    }
}

/// The transaction coordinator's state fails while the store is "down".
#[async_trait::async_trait]
impl Transactions for FaultyMetadata {
    async fn transaction(&self, transactional_id: &str) -> Result<Option<TransactionRecord>> {
        self.check_up()?;
        self.inner.transaction(transactional_id).await
    }

    async fn transactions(&self) -> Result<Vec<TransactionRecord>> {
        self.check_up()?;
        self.inner.transactions().await
    }

    async fn update_transaction(&self, update: &TxnUpdate) -> Result<TransactionRecord> {
        self.check_up()?;
        self.inner.update_transaction(update).await
    }

    async fn delete_transaction(&self, transactional_id: &str, version: i64) -> Result<bool> {
        self.check_up()?;
        self.inner
            .delete_transaction(transactional_id, version)
            .await
    }

    async fn pending_markers(&self) -> Result<Vec<TxnMarker>> {
        self.check_up()?;
        self.inner.pending_markers().await
    }

    async fn markers_written(&self, markers: &[TxnMarker]) -> Result<()> {
        self.check_up()?;
        self.inner.markers_written(markers).await
    }

    async fn marker_pending(&self, marker: &TxnMarker) -> Result<bool> {
        self.check_up()?;
        self.inner.marker_pending(marker).await
    }

    async fn add_txn_offsets(
        &self,
        transactional_id: &str,
        producer_id: i64,
        producer_epoch: i16,
        offsets: &[CommittedOffset],
    ) -> Result<()> {
        self.check_up()?;
        self.inner
            .add_txn_offsets(transactional_id, producer_id, producer_epoch, offsets)
            .await
    }

    async fn pending_txn_offsets(&self, group: &str) -> Result<Vec<(Uuid, i32)>> {
        self.check_up()?;
        self.inner.pending_txn_offsets(group).await
    }
}

/// Membership and control fail while the store is "down", as catalogue reads do.
#[async_trait::async_trait]
impl Cluster for FaultyMetadata {
    async fn register_broker(&self, lease: &BrokerLease, lease_ms: i64) -> Result<Vec<Leadership>> {
        self.check_up()?;
        self.inner.register_broker(lease, lease_ms).await
    }

    async fn bind_storage(&self, url: &str) -> Result<()> {
        self.check_up()?;
        self.inner.bind_storage(url).await
    }

    async fn bound_storage(&self) -> Result<Option<String>> {
        self.check_up()?;
        self.inner.bound_storage().await
    }

    async fn renew_lease(&self, node_id: i32, incarnation: Uuid, lease_ms: i64) -> Result<bool> {
        self.check_up()?;
        self.inner.renew_lease(node_id, incarnation, lease_ms).await
    }

    async fn set_draining(&self, node_id: i32, draining: bool) -> Result<bool> {
        self.check_up()?;
        self.inner.set_draining(node_id, draining).await
    }

    async fn deregister_broker(&self, node_id: i32, incarnation: Uuid) -> Result<()> {
        self.check_up()?;
        self.inner.deregister_broker(node_id, incarnation).await
    }

    async fn note_followed(
        &self,
        node_id: i32,
        incarnation: Uuid,
        topics: i64,
        assignments: i64,
    ) -> Result<()> {
        self.check_up()?;
        self.inner
            .note_followed(node_id, incarnation, topics, assignments)
            .await
    }

    async fn brokers(&self) -> Result<Vec<BrokerRecord>> {
        self.check_up()?;
        self.inner.brokers().await
    }

    async fn claim_controller(
        &self,
        node_id: i32,
        incarnation: Uuid,
        lease_ms: i64,
    ) -> Result<Option<ControllerLease>> {
        self.check_up()?;
        self.inner
            .claim_controller(node_id, incarnation, lease_ms)
            .await
    }

    async fn controller(&self) -> Result<Option<ControllerLease>> {
        self.check_up()?;
        self.inner.controller().await
    }

    async fn leaderships(&self) -> Result<Vec<Leadership>> {
        self.check_up()?;
        self.inner.leaderships().await
    }

    async fn assignments_version(&self) -> Result<i64> {
        self.check_up()?;
        self.inner.assignments_version().await
    }

    async fn move_partitions(
        &self,
        controller_epoch: i64,
        moves: &[PartitionMove],
    ) -> Result<Option<Vec<Leadership>>> {
        self.check_up()?;
        self.inner.move_partitions(controller_epoch, moves).await
    }

    async fn assign_new_partitions(
        &self,
        assignments: &[(PartitionKey, i32)],
    ) -> Result<Vec<Leadership>> {
        self.check_up()?;
        self.inner.assign_new_partitions(assignments).await
    }

    async fn request_handovers(
        &self,
        controller_epoch: i64,
        moves: &[PartitionMove],
    ) -> Result<Option<Vec<Leadership>>> {
        self.check_up()?;
        self.inner.request_handovers(controller_epoch, moves).await
    }

    async fn request_move(&self, key: PartitionKey, to: i32) -> Result<Option<Leadership>> {
        self.check_up()?;
        self.inner.request_move(key, to).await
    }

    async fn complete_handover(
        &self,
        node_id: i32,
        incarnation: Uuid,
        key: PartitionKey,
        leader_epoch: i32,
    ) -> Result<Option<Leadership>> {
        self.check_up()?;
        self.inner
            .complete_handover(node_id, incarnation, key, leader_epoch)
            .await
    }
}

#[async_trait::async_trait]
impl MetadataStore for FaultyMetadata {
    async fn create_topic(&self, topic: &TopicRecord) -> Result<()> {
        self.inner.create_topic(topic).await
    }
    async fn delete_topic(&self, id: Uuid) -> Result<()> {
        self.inner.delete_topic(id).await
    }
    async fn topics(&self) -> Result<Vec<TopicRecord>> {
        self.inner.topics().await
    }
    async fn store_id(&self) -> Result<Uuid> {
        self.inner.store_id().await
    }
    async fn topics_version(&self) -> Result<i64> {
        self.inner.topics_version().await
    }
    async fn add_partitions(&self, id: Uuid, partitions: i32) -> Result<()> {
        self.inner.add_partitions(id, partitions).await
    }
    async fn set_replica_assignment(&self, id: Uuid, assignment: &[Vec<i32>]) -> Result<()> {
        self.inner.set_replica_assignment(id, assignment).await
    }
    async fn alter_topic_configs(&self, id: Uuid, changes: &[ConfigChange]) -> Result<()> {
        self.inner.alter_topic_configs(id, changes).await
    }
    async fn bump_leader_epochs(&self, id: Uuid) -> Result<Vec<i32>> {
        self.inner.bump_leader_epochs(id).await
    }
    async fn bump_all_leader_epochs(&self) -> Result<HashMap<Uuid, Vec<i32>>> {
        self.inner.bump_all_leader_epochs().await
    }
    async fn broker_configs(&self) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
        self.inner.broker_configs().await
    }
    async fn alter_broker_configs(&self, scope: &str, changes: &[ConfigChange]) -> Result<()> {
        self.inner.alter_broker_configs(scope, changes).await
    }
    async fn claim_group(&self, group: &str, node_id: i32) -> Result<i64> {
        self.inner.claim_group(group, node_id).await
    }
    async fn group_claimant(&self, group: &str) -> Result<Option<i32>> {
        self.inner.group_claimant(group).await
    }
    async fn group_offsets(&self, group: &str) -> Result<Vec<CommittedOffset>> {
        self.inner.group_offsets(group).await
    }
    async fn committed_offsets(&self) -> Result<Vec<CommittedOffset>> {
        self.inner.committed_offsets().await
    }
    async fn commit_offsets(
        &self,
        group: &str,
        coordinator_epoch: i64,
        offsets: &[CommittedOffset],
    ) -> Result<()> {
        self.inner
            .commit_offsets(group, coordinator_epoch, offsets)
            .await
    }
    async fn delete_offsets(
        &self,
        group: &str,
        coordinator_epoch: i64,
        partitions: Option<&[(Uuid, i32)]>,
    ) -> Result<()> {
        self.inner
            .delete_offsets(group, coordinator_epoch, partitions)
            .await
    }
    async fn allocate_producer_ids(&self, count: i64) -> Result<i64> {
        self.inner.allocate_producer_ids(count).await
    }
}

#[async_trait::async_trait]
impl DelayedRecords for FaultyMetadata {
    async fn note_holds(
        &self,
        key: PartitionKey,
        holds: &[(i64, i64)],
        through: i64,
    ) -> Result<()> {
        self.check_up()?;
        self.inner.note_holds(key, holds, through).await
    }

    async fn holds_noted_through(&self, key: PartitionKey) -> Result<i64> {
        self.check_up()?;
        self.inner.holds_noted_through(key).await
    }

    async fn due_holds(
        &self,
        key: PartitionKey,
        now_ms: i64,
        limit: i64,
    ) -> Result<Vec<DelayedRecord>> {
        self.check_up()?;
        self.inner.due_holds(key, now_ms, limit).await
    }

    async fn begin_delivery(
        &self,
        key: PartitionKey,
        hold_offsets: &[i64],
        log_end: i64,
    ) -> Result<()> {
        self.check_up()?;
        self.inner.begin_delivery(key, hold_offsets, log_end).await
    }

    async fn holds_delivered(&self, key: PartitionKey, hold_offsets: &[i64]) -> Result<()> {
        self.check_up()?;
        self.inner.holds_delivered(key, hold_offsets).await
    }

    async fn pending_holds(&self, key: PartitionKey) -> Result<PendingHolds> {
        self.check_up()?;
        self.inner.pending_holds(key).await
    }

    async fn next_hold_due(&self, key: PartitionKey) -> Result<Option<i64>> {
        self.check_up()?;
        self.inner.next_hold_due(key).await
    }
}

#[async_trait::async_trait]
impl ScramCredentials for FaultyMetadata {
    async fn upsert_credential(&self, credential: &ScramCredentialRecord) -> Result<()> {
        self.check_up()?;
        self.inner.upsert_credential(credential).await
    }

    async fn delete_credential(&self, user: &str, mechanism: i8) -> Result<bool> {
        self.check_up()?;
        self.inner.delete_credential(user, mechanism).await
    }

    async fn credential(&self, user: &str, mechanism: i8) -> Result<Option<ScramCredentialRecord>> {
        self.check_up()?;
        self.inner.credential(user, mechanism).await
    }

    async fn credential_list(&self) -> Result<Vec<(String, i8, i32)>> {
        self.check_up()?;
        self.inner.credential_list().await
    }
}

#[async_trait::async_trait]
impl Acls for FaultyMetadata {
    async fn create_acls(&self, acls: &[AclRecord]) -> Result<()> {
        self.check_up()?;
        self.inner.create_acls(acls).await
    }

    async fn delete_acls(&self, acls: &[AclRecord]) -> Result<Vec<AclRecord>> {
        self.check_up()?;
        self.inner.delete_acls(acls).await
    }

    async fn acls(&self) -> Result<Vec<AclRecord>> {
        self.check_up()?;
        self.inner.acls().await
    }
}

#[async_trait::async_trait]
impl ClientQuotas for FaultyMetadata {
    async fn alter_quotas(&self, changes: &[(QuotaEntity, String, Option<f64>)]) -> Result<()> {
        self.check_up()?;
        self.inner.alter_quotas(changes).await
    }

    async fn quotas(&self) -> Result<Vec<QuotaRecord>> {
        self.check_up()?;
        self.inner.quotas().await
    }
}

#[async_trait::async_trait]
impl GroupStates for FaultyMetadata {
    async fn save_group_state(
        &self,
        group: &str,
        coordinator_epoch: i64,
        state: &str,
    ) -> Result<()> {
        self.check_up()?;
        self.inner
            .save_group_state(group, coordinator_epoch, state)
            .await
    }

    async fn delete_group_state(&self, group: &str, coordinator_epoch: i64) -> Result<()> {
        self.check_up()?;
        self.inner
            .delete_group_state(group, coordinator_epoch)
            .await
    }

    async fn group_state(&self, group: &str) -> Result<Option<String>> {
        self.check_up()?;
        self.inner.group_state(group).await
    }

    async fn group_states(&self) -> Result<Vec<(String, String)>> {
        self.check_up()?;
        self.inner.group_states().await
    }

    async fn alter_group_configs(&self, group: &str, changes: &[ConfigChange]) -> Result<()> {
        self.check_up()?;
        self.inner.alter_group_configs(group, changes).await
    }

    async fn group_configs(&self) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
        self.check_up()?;
        self.inner.group_configs().await
    }
}

#[async_trait::async_trait]
impl SharePartitions for FaultyMetadata {
    async fn claim_share_partition(
        &self,
        group: &str,
        topic_id: Uuid,
        partition: i32,
        state_epoch: i32,
    ) -> Result<Option<SharePartitionRecord>> {
        self.check_up()?;
        self.inner
            .claim_share_partition(group, topic_id, partition, state_epoch)
            .await
    }

    async fn save_share_partition(
        &self,
        record: &SharePartitionRecord,
        letters: &[QueuedDeadLetter],
    ) -> Result<()> {
        self.check_up()?;
        self.inner.save_share_partition(record, letters).await
    }

    async fn queued_dead_letters(&self, limit: u32) -> Result<Vec<QueuedDeadLetter>> {
        self.check_up()?;
        self.inner.queued_dead_letters(limit).await
    }

    async fn dead_letters_written(&self, letters: &[QueuedDeadLetter]) -> Result<()> {
        self.check_up()?;
        self.inner.dead_letters_written(letters).await
    }

    async fn share_partitions(&self, group: Option<&str>) -> Result<Vec<SharePartitionRecord>> {
        self.check_up()?;
        self.inner.share_partitions(group).await
    }

    async fn delete_share_partitions(
        &self,
        group: &str,
        partitions: Option<&[(Uuid, i32)]>,
    ) -> Result<()> {
        self.check_up()?;
        self.inner.delete_share_partitions(group, partitions).await
    }
}

#[async_trait::async_trait]
impl TxnCheckers for FaultyMetadata {
    async fn put_txn_checker(&self, record: &TxnCheckerRecord) -> Result<()> {
        self.check_up()?;
        self.inner.put_txn_checker(record).await
    }

    async fn txn_checkers(&self) -> Result<Vec<TxnCheckerRecord>> {
        self.check_up()?;
        self.inner.txn_checkers().await
    }

    async fn remove_txn_checker(&self, prefix: &str) -> Result<bool> {
        self.check_up()?;
        self.inner.remove_txn_checker(prefix).await
    }
}

#[async_trait::async_trait]
impl LanePresences for FaultyMetadata {
    async fn put_lane_presence(&self, broker_id: i32, presence: &str) -> Result<()> {
        self.check_up()?;
        self.inner.put_lane_presence(broker_id, presence).await
    }

    async fn lane_presences(&self) -> Result<Vec<(i32, String)>> {
        self.check_up()?;
        self.inner.lane_presences().await
    }
}

#[async_trait::async_trait]
impl crate::OffsetLog for FaultyMetadata {
    async fn offset_log_head(&self, partition: i32) -> Result<i64> {
        self.check_up()?;
        self.inner.offset_log_head(partition).await
    }

    async fn offset_log(
        &self,
        partition: i32,
        from: i64,
        below: i64,
        limit: i64,
    ) -> Result<Vec<crate::LoggedOffset>> {
        self.check_up()?;
        self.inner.offset_log(partition, from, below, limit).await
    }
}

#[async_trait::async_trait]
impl MirrorLinks for FaultyMetadata {
    async fn put_mirror_link(&self, record: &MirrorLinkRecord) -> Result<()> {
        self.check_up()?;
        self.inner.put_mirror_link(record).await
    }

    async fn mirror_links(&self) -> Result<Vec<MirrorLinkRecord>> {
        self.check_up()?;
        self.inner.mirror_links().await
    }

    async fn remove_mirror_link(&self, name: &str) -> Result<bool> {
        self.check_up()?;
        self.inner.remove_mirror_link(name).await
    }

    async fn put_mirror_status(
        &self,
        link: &str,
        node_id: i32,
        status: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.check_up()?;
        self.inner
            .put_mirror_status(link, node_id, status, now_ms)
            .await
    }

    async fn mirror_statuses(&self, link: &str) -> Result<Vec<crate::MirrorStatusRecord>> {
        self.check_up()?;
        self.inner.mirror_statuses(link).await
    }

    async fn put_mirror_failover(&self, record: &crate::MirrorFailoverRecord) -> Result<bool> {
        self.check_up()?;
        self.inner.put_mirror_failover(record).await
    }

    async fn mirror_failover(
        &self,
        topic_id: uuid::Uuid,
        partition: i32,
    ) -> Result<Option<crate::MirrorFailoverRecord>> {
        self.check_up()?;
        self.inner.mirror_failover(topic_id, partition).await
    }

    async fn mirror_failover_floor(&self) -> Result<Option<i64>> {
        self.check_up()?;
        self.inner.mirror_failover_floor().await
    }
}

#[async_trait::async_trait]
impl crate::SchemaRegistryStore for FaultyMetadata {
    async fn put_registry_schema(&self, record: &crate::RegistrySchemaRecord) -> Result<i32> {
        self.check_up()?;
        self.inner.put_registry_schema(record).await
    }

    async fn import_registry_schema(&self, record: &crate::RegistrySchemaRecord) -> Result<bool> {
        self.check_up()?;
        self.inner.import_registry_schema(record).await
    }

    async fn registry_schema_id(&self, fingerprint: &str) -> Result<Option<i32>> {
        self.check_up()?;
        self.inner.registry_schema_id(fingerprint).await
    }

    async fn registry_schema(&self, id: i32) -> Result<Option<crate::RegistrySchemaRecord>> {
        self.check_up()?;
        self.inner.registry_schema(id).await
    }

    async fn put_subject_version(&self, record: &crate::SubjectVersionRecord) -> Result<bool> {
        self.check_up()?;
        self.inner.put_subject_version(record).await
    }

    async fn subject_versions(
        &self,
        subject: Option<&str>,
    ) -> Result<Vec<crate::SubjectVersionRecord>> {
        self.check_up()?;
        self.inner.subject_versions(subject).await
    }

    async fn versions_of_schema(&self, id: i32) -> Result<Vec<crate::SubjectVersionRecord>> {
        self.check_up()?;
        self.inner.versions_of_schema(id).await
    }

    async fn soft_delete_versions(&self, subject: &str, version: Option<i32>) -> Result<u64> {
        self.check_up()?;
        self.inner.soft_delete_versions(subject, version).await
    }

    async fn remove_versions(&self, subject: &str, version: Option<i32>) -> Result<u64> {
        self.check_up()?;
        self.inner.remove_versions(subject, version).await
    }

    async fn registry_config(&self, subject: &str) -> Result<crate::RegistryConfigRecord> {
        self.check_up()?;
        self.inner.registry_config(subject).await
    }

    async fn put_registry_setting(
        &self,
        subject: &str,
        setting: crate::RegistrySetting,
        value: Option<&str>,
    ) -> Result<()> {
        self.check_up()?;
        self.inner
            .put_registry_setting(subject, setting, value)
            .await
    }

    async fn put_registry_config(
        &self,
        subject: &str,
        config: &crate::RegistryConfigRecord,
    ) -> Result<()> {
        self.check_up()?;
        self.inner.put_registry_config(subject, config).await
    }
}

#[async_trait::async_trait]
impl crate::TableFiles for FaultyMetadata {
    async fn add_table_file(&self, record: &crate::TableFileRecord) -> Result<bool> {
        self.check_up()?;
        self.inner.add_table_file(record).await
    }

    async fn table_files(&self, topic_id: uuid::Uuid) -> Result<Vec<crate::TableFileRecord>> {
        self.check_up()?;
        self.inner.table_files(topic_id).await
    }

    async fn remove_table_file(
        &self,
        topic_id: uuid::Uuid,
        partition: i32,
        first_offset: i64,
    ) -> Result<bool> {
        self.check_up()?;
        self.inner
            .remove_table_file(topic_id, partition, first_offset)
            .await
    }

    async fn put_table_status(
        &self,
        topic_id: uuid::Uuid,
        node_id: i32,
        status: &str,
        now_ms: i64,
    ) -> Result<()> {
        self.check_up()?;
        self.inner
            .put_table_status(topic_id, node_id, status, now_ms)
            .await
    }

    async fn table_statuses(&self, topic_id: uuid::Uuid) -> Result<Vec<crate::TableStatusRecord>> {
        self.check_up()?;
        self.inner.table_statuses(topic_id).await
    }
}
