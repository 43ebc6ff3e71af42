//! The fetch of a partition another broker leads (shared-storage mode), served here
//! from its committed records (`crate::replica_reads`), and KIP-392's preferred read
//! replica, which a leader names to a consumer of another rack.
//!
//! A consumer's fetch from v11 on (which carries its rack) is served by a broker that
//! does not lead the partition when the consumer names a rack (it takes part in
//! rack-aware reads: a leader may have sent it here) or the broker is a reader.
//! Others — no rack at a writer, earlier versions, views — are refused with
//! `NOT_LEADER_OR_FOLLOWER` and the leader named, as before: a consumer whose
//! partition moved learns the new leader at once rather than being served, a little
//! later, by its old one. The consumer's leader epoch is checked against the
//! partition's: an older one is fenced, with the leader named (KIP-951).

use kafka_protocol::messages::FetchRequest;
use kafka_protocol::messages::fetch_request::FetchPartition;
use spool_log::Isolation;
use spool_model::Offset;
use tokio::sync::watch;

use super::encode::PartitionOut;
use crate::errors::code;
use crate::partitions::{ObjectRead, PartitionError};
use crate::replica_reads::Committed;
use crate::replica_reads::preferred::preferred_replica;
use crate::shared::Shared;
use crate::topics::Topic;
use spool_metadata::BrokerRecord;
use spool_security::authorizer::Access;

/// The first Fetch version that names the client's rack: from it on, any broker
/// serves consumers (Kafka's rule: earlier ones read from the leader only).
pub(super) const CLIENT_METADATA: i16 = 11;

/// Whether this broker serves the `version` fetch `request` of `topic`'s partitions
/// it does not lead.
pub(super) fn serves(shared: &Shared, request: &FetchRequest, version: i16, topic: &Topic) -> bool {
    let reader = shared.cluster().is_some_and(|view| view.reader);
    version >= CLIENT_METADATA
        && topic.view.is_none()
        && shared.replicas().is_some()
        && (reader || !request.rack_id.is_empty())
}

/// Reads the committed marks of the partitions the request may read that this broker
/// serves and does not lead, so that the pass finds them; a failure leaves them
/// unread, and the pass refuses them as before (the leader serves them). Nothing to
/// do in embedded mode.
pub(super) async fn prepare(
    shared: &Shared,
    request: &FetchRequest,
    version: i16,
    access: &Access,
) {
    let Some(replicas) = shared.replicas() else {
        return;
    };
    let wanted: Vec<_> = request
        .topics
        .iter()
        .filter_map(|asked| {
            Some((
                asked,
                super::readable_topic(shared, asked, version, access).0?,
            ))
        })
        .filter(|(_, topic)| serves(shared, request, version, topic))
        .flat_map(|(asked, topic)| {
            asked
                .partitions
                .iter()
                .filter(|p| (0..topic.record.partitions).contains(&p.partition))
                .filter(|p| shared.partitions().led_epoch(&topic, p.partition).is_none())
                .map(|p| (topic.partition_key(p.partition), Offset(p.fetch_offset)))
                .collect::<Vec<_>>()
        })
        .collect();
    if wanted.is_empty() {
        return;
    }
    if let Err(error) = replicas.prepare(&wanted).await {
        tracing::debug!(%error, "cannot read committed marks; fetches go to the leaders");
    }
}

/// One partition served from its committed records.
pub(super) struct ReplicaRead {
    pub(super) out: PartitionOut,
    /// Bytes of records in `out`.
    pub(super) bytes: u64,
    /// Woken when the marks move: for a fetch that waits.
    pub(super) watch: Option<watch::Receiver<Committed>>,
    /// A leader to name in the response's endpoints (a fenced epoch, or marks that
    /// could not be read).
    pub(super) hinted: Option<i32>,
}

impl ReplicaRead {
    fn failed(out: PartitionOut) -> ReplicaRead {
        ReplicaRead {
            out,
            bytes: 0,
            watch: None,
            hinted: None,
        }
    }

    pub(super) fn is_error(&self) -> bool {
        self.out.error != code::NONE
    }
}

/// How a partition is read from its committed records: within `budget`, the first
/// batch whole when `first`; `asked_since`: when this fetch's marks were prepared.
#[derive(Debug, Clone, Copy)]
pub(super) struct ReplicaAsk {
    pub(super) budget: u64,
    pub(super) first: bool,
    pub(super) isolation: Isolation,
    pub(super) asked_since: std::time::Instant,
}

/// The partition `wanted` of `topic`, which this broker does not lead, read from its
/// committed records as `ask` says. Blocking.
pub(super) fn read(
    shared: &Shared,
    topic: &Topic,
    wanted: &FetchPartition,
    ask: &ReplicaAsk,
) -> ReplicaRead {
    let ReplicaAsk {
        budget,
        first,
        isolation,
        asked_since,
    } = *ask;
    let key = topic.partition_key(wanted.partition);
    let index = wanted.partition;
    let refused = |error: i16| {
        let mut out = PartitionOut::error(index, error);
        out.leader = shared.leader_hint(topic, index);
        let hinted = out.leader.map(|hint| hint.leader);
        ReplicaRead {
            hinted,
            ..ReplicaRead::failed(out)
        }
    };
    let Some((committed, watch)) = shared.replicas().and_then(|r| r.committed(key)) else {
        return refused(code::NOT_LEADER_OR_FOLLOWER);
    };
    // The newer of the epochs this broker knows: from the assignments (what its
    // Metadata says) and from the catalogue (which may be a moment ahead).
    let epoch = shared
        .partitions()
        .leadership(topic, index)
        .map_or(committed.leader_epoch, |(_, epoch)| {
            epoch.max(committed.leader_epoch)
        });
    if wanted.current_leader_epoch >= 0 && wanted.current_leader_epoch < epoch {
        return refused(code::FENCED_LEADER_EPOCH);
    }
    if wanted.current_leader_epoch > epoch {
        return ReplicaRead::failed(PartitionOut::error(index, code::UNKNOWN_LEADER_EPOCH));
    }
    let bounds = committed.bounds;
    let mut out = PartitionOut::error(index, code::NONE);
    out.high_watermark = bounds.high_watermark.0;
    out.last_stable = bounds.last_stable.0;
    out.log_start = bounds.log_start.0;
    let offset = Offset(wanted.fetch_offset);
    if offset > bounds.high_watermark {
        if committed.read_at() >= asked_since {
            // Past what the catalogue, read for this fetch, has committed.
            out.error = code::OFFSET_OUT_OF_RANGE;
            return ReplicaRead::failed(out);
        }
        // The marks could not be read again for this fetch (the catalogue did not
        // answer): no records, and a wait for the next refresh, rather than a verdict
        // on old marks.
        return ReplicaRead {
            out,
            bytes: 0,
            watch: Some(watch),
            hinted: None,
        };
    }
    let asked = ObjectRead {
        offset,
        max_bytes: budget,
        first_whole: first,
        isolation,
    };
    let Some(replicas) = shared.replicas() else {
        return refused(code::NOT_LEADER_OR_FOLLOWER);
    };
    match replicas.read(key, &committed, asked) {
        Ok(result) => {
            let bytes = result.len();
            out.records = result.chunks;
            out.aborted = result.aborted;
            ReplicaRead {
                out,
                bytes,
                watch: Some(watch),
                hinted: None,
            }
        }
        Err(error) => {
            out.error = error.code();
            if matches!(
                error,
                PartitionError::Catalogue(_) | PartitionError::ObjectRead(_)
            ) {
                tracing::debug!(%error, partition = index, "a read of committed records failed");
            }
            ReplicaRead::failed(out)
        }
    }
}

/// KIP-392, on the leader, for one fetch: where its consumer's rack is served.
pub(super) struct Preferring {
    rack: String,
    me: i32,
    my_rack: Option<String>,
    live: Vec<BrokerRecord>,
    listener: String,
}

/// What a leader needs to name preferred read replicas to the consumer of `request`,
/// if it names any (the consumer names a rack, Fetch v11+, a cluster, and
/// `broker.read.preferred`).
pub(super) fn preferring(
    shared: &Shared,
    request: &FetchRequest,
    version: i16,
    listener: &str,
) -> Option<Preferring> {
    let rack = request.rack_id.as_str();
    if rack.is_empty() || version < CLIENT_METADATA || shared.replicas().is_none() {
        return None;
    }
    let config = shared.current_config();
    if !config.reads.preferred_replicas {
        return None;
    }
    let view = shared.cluster()?;
    Some(Preferring {
        rack: rack.to_owned(),
        me: view.node_id,
        my_rack: config.reads.rack.clone(),
        live: view.live_brokers(),
        listener: listener.to_owned(),
    })
}

impl Preferring {
    /// The broker the consumer is to fetch `topic`'s partition `index` from instead
    /// of this one, if any (never for a view: only leaders serve those).
    pub(super) fn of(&self, topic: &Topic, index: i32) -> Option<i32> {
        if topic.view.is_some() {
            return None;
        }
        preferred_replica(
            topic.partition_key(index),
            &self.rack,
            self.me,
            self.my_rack.as_deref(),
            &self.live,
            &self.listener,
        )
    }
}
