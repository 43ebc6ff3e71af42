//! Spool's metadata: which topics exist (keyed by their id), with how many partitions,
//! their configs and leader epochs; the broker configs changed at run time; consumer
//! groups' committed offsets and coordinator epochs; the producer ids handed out; and,
//! in shared-storage mode, the [`Catalogue`] of what is where in object storage and
//! the [`Cluster`]'s membership, controller lease and partition leaders; the
//! [`Transactions`] of the transaction coordinator; and the [`GroupStates`] of
//! consumer-protocol groups.
//!
//! [`MetadataStore`] is the one interface the broker uses. Two backends implement it
//! with the same SQL and the same semantics (the conformance suite in
//! `tests/conformance.rs` runs against both): [`SqliteStore`], an embedded database in
//! the data directory (one broker), and [`PostgresStore`], which several brokers share.
//! [`open`] picks one from a `--metadata-url`.
//!
//! Every operation is safe when several brokers share the store: each is one
//! transaction whose outcome does not depend on a read made before it (producer-id
//! blocks are taken by one `UPDATE … RETURNING`, configs change key by key, committed
//! offsets are fenced by the coordinator epoch in the same transaction).

mod acls;
mod acls_sql;
mod catalogue;
mod catalogue_sql;
mod cluster;
mod cluster_sql;
mod credentials;
mod credentials_sql;
mod delayed;
mod delayed_sql;
mod error;
mod faulty;
mod group_states;
mod group_states_sql;
mod lane_presence;
mod lane_presence_sql;
mod mirror_links;
mod mirror_links_sql;
mod offset_log;
mod offset_log_sql;
mod postgres;
mod quotas;
mod quotas_sql;
mod records;
mod schema_registry;
mod schema_registry_sql;
mod share_partitions;
mod share_partitions_sql;
mod sql;
mod sqlite;
mod store;
mod table_files;
mod table_files_sql;
mod transactions;
mod transactions_sql;
mod txn_checkers;
mod txn_checkers_sql;
mod url;

pub use acls::{AclRecord, Acls};
pub use catalogue::{
    Catalogue, CommittedMarks, ObjectCommit, PartitionKey, PartitionState, RangeCommit, StoredRange,
};
pub use cluster::{
    BrokerEndpoint, BrokerLease, BrokerRecord, Cluster, ControllerLease, Leadership, PartitionMove,
};
pub use credentials::{ScramCredentialRecord, ScramCredentials};
pub use delayed::{DelayedRecord, DelayedRecords, PendingHolds};
pub use error::{MetadataError, Result};
pub use faulty::FaultyMetadata;
pub use group_states::GroupStates;
pub use lane_presence::LanePresences;
pub use mirror_links::{MirrorFailoverRecord, MirrorLinkRecord, MirrorLinks, MirrorStatusRecord};
pub use offset_log::{LoggedOffset, OFFSETS_TOPIC_PARTITIONS, OffsetLog, offsets_topic_partition};
pub use postgres::PostgresStore;
pub use quotas::{ClientQuotas, EntityPart, QuotaEntity, QuotaRecord};
pub use records::{
    CommittedOffset, ConfigChange, TopicRecord, decode_assignment, encode_assignment,
};
pub use schema_registry::{
    RegistryConfigRecord, RegistrySchemaRecord, RegistrySetting, SchemaRegistryStore,
    SubjectVersionRecord,
};
pub use share_partitions::{QueuedDeadLetter, SharePartitionRecord, SharePartitions};
pub use sqlite::SqliteStore;
pub use store::MetadataStore;
pub use table_files::{TableFileRecord, TableFiles, TableStatusRecord};
pub use transactions::{
    SettleOffsets, TransactionRecord, Transactions, TxnMarker, TxnState, TxnUpdate,
};
pub use txn_checkers::{TxnCheckerRecord, TxnCheckers, checker_of};
pub use url::{MetadataUrl, open};
