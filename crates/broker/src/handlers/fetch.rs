//! Fetch (key 1): whole batches from each requested partition, within the per-partition
//! and response budgets; a long poll when fewer than `min_bytes` are ready, woken by
//! new data (a watch on each partition's high watermark), not by a timer loop.
//!
//! The records are not copied: the response carries the segment-file ranges the log
//! read returned, and the connection's writer sends them with `sendfile` (see
//! [`encode`] and `crate::response`); only the tail cache's recent bytes come from
//! memory. The read (on a blocking thread) asks the kernel to start reading the file
//! ranges into the page cache, so that `sendfile` on the async threads seldom waits
//! for the disk; when it does, it stalls that thread for the read, as Kafka's network
//! threads are stalled by theirs.
//!
//! From v13 on, topics are named by id. In shared-storage mode, a consumer's fetch
//! (v11+) of a partition another broker leads is served here from its committed
//! records when the consumer names its rack or this broker is a reader, and a leader
//! sends a consumer of another rack to a broker of that rack (KIP-392; see
//! [`replica`]). Otherwise a partition another broker leads is refused
//! with `NOT_LEADER_OR_FOLLOWER` and that leader named (KIP-951: its id and epoch from
//! v12 on, its address from v16 on).
//!
//! A read_committed fetch (`isolation_level` 1) returns data up to the last stable
//! offset, with the aborted transactions of what it returns; the client drops their
//! records (see `docs/transactions.md`).
//!
//! A view topic's partition is read from its source's and filtered (see
//! `crate::view_reader`), and so is any partition for a consumer in a lane, or a
//! base consumer whose group has live members in a lane (`crate::lanes`); such reads
//! are the leader's only, as views' are.
//!
//! Not yet: fetch sessions (Spool answers session id 0: no session, which KIP-227
//! allows).

mod encode;
mod replica;

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::fetch_request::FetchTopic;
use kafka_protocol::messages::{ApiKey, FetchRequest};
use spool_log::{Isolation, ReadChunk, ReadResult};
use spool_model::Offset;
use tokio::sync::watch;

pub(crate) use self::encode::FetchBody;
use self::encode::{PartitionOut, TopicOut};
use super::api::{ApiDecl, RequestContext};
use crate::consumer_offsets;
use crate::errors::code;
use crate::index::views::IndexedFilter;
use crate::lanes::LaneRead;
use crate::partitions::{PartitionError, PartitionHandle, on_blocking_pool};
use crate::replica_reads;
use crate::response;
use crate::shared::Shared;
use crate::topics::Topic;
use crate::view_reader::ViewReader;
use spool_security::acl::Operation;
use spool_security::authorizer::Access;
use spool_views::selection::Selection;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::Fetch,
    // Below v4: Kafka 3.9's versions, converted (spool_protocol::legacy).
    min: 0,
    max: 16,
};

/// The longest a fetch may wait, whatever the client asks.
const MAX_WAIT_CAP: Duration = Duration::from_secs(30);

pub(crate) async fn handle(
    request: FetchRequest,
    context: &RequestContext,
    shared: Arc<Shared>,
) -> FetchBody {
    let (version, access, listener) = (context.version, &context.access, &context.listener);
    let wait = Duration::from_millis(u64::try_from(request.max_wait_ms.max(0)).unwrap_or(0))
        .min(MAX_WAIT_CAP);
    let deadline = tokio::time::Instant::now() + wait;
    let request = Arc::new(request);
    // The time spent reading, not waiting for data: what `request_percentage` counts.
    let mut busy = Duration::ZERO;
    loop {
        let started = std::time::Instant::now();
        open_tails(&shared, &request, version, access).await;
        let prepared_at = std::time::Instant::now();
        replica::prepare(&shared, &request, version, access).await;
        // Each pass asks again: a lane member that joined while this fetch waited
        // changes what a base consumer may see.
        let lanes = (shared.lanes())
            .filter_for(
                &shared.current_config(),
                &context.client_id,
                &context.client_host,
            )
            .map(Arc::new);
        let pass = {
            let (shared, request, access) = (shared.clone(), request.clone(), access.clone());
            let preferring = if lanes.is_none() {
                replica::preferring(&shared, &request, version, listener)
            } else {
                None
            };
            let asked = Asked {
                version,
                access,
                preferring,
                prepared_at,
                lanes,
            };
            on_blocking_pool(move || read_all(&shared, &request, &asked)).await
        };
        let mut pass = match pass {
            Ok(pass) => pass,
            Err(error) => return failed(&request, error.code()),
        };
        read_offsets_topic(&shared, &request, version, access, &mut pass).await;
        busy += started.elapsed();
        let enough = pass.bytes >= u64::try_from(request.min_bytes.max(0)).unwrap_or(0)
            || pass.errors
            || pass.redirected;
        if enough || tokio::time::Instant::now() >= deadline || pass.watches.is_empty() {
            // Leaders elsewhere, at their endpoints on the request's listener.
            let leaders = shared.hinted_brokers(pass.hinted, listener);
            return FetchBody {
                busy,
                leaders,
                ..pass.body
            };
        }
        wait_for_data(pass.watches, deadline).await;
    }
}

/// Every requested partition answered with `error`.
fn failed(request: &FetchRequest, error: i16) -> FetchBody {
    FetchBody {
        topics: request
            .topics
            .iter()
            .map(|topic| TopicOut {
                name: topic.topic.clone(),
                id: topic.topic_id,
                known: None,
                partitions: topic
                    .partitions
                    .iter()
                    .map(|p| PartitionOut::error(p.partition, error))
                    .collect(),
            })
            .collect(),
        leaders: Vec::new(),
        throttle_time_ms: 0,
        busy: Duration::ZERO,
    }
}

/// What a waiting fetch is woken by: a partition's high watermark, where it leads
/// it; its committed marks, where another broker does.
enum Watch {
    Leader(watch::Receiver<Offset>),
    Replica(watch::Receiver<replica_reads::Committed>),
    /// A log kept in the metadata store (`__consumer_offsets`): looked at again after
    /// this long.
    Poll(Duration),
}

impl Watch {
    /// From now on only a later change wakes the fetch. A replica's watch is left as
    /// it was subscribed, at the marks the pass read by: a refresh during the pass
    /// (while it read objects) wakes it at once.
    fn mark_seen(&mut self) {
        match self {
            Watch::Leader(watch) => {
                watch.borrow_and_update();
            }
            Watch::Replica(_) | Watch::Poll(_) => {}
        }
    }

    async fn changed(&mut self) {
        let _ = match self {
            Watch::Leader(watch) => watch.changed().await,
            Watch::Replica(watch) => watch.changed().await,
            Watch::Poll(after) => {
                tokio::time::sleep(*after).await;
                Ok(())
            }
        };
    }
}

/// One read of every requested partition.
struct Pass {
    body: FetchBody,
    bytes: u64,
    errors: bool,
    watches: Vec<Watch>,
    /// The leaders named in refusals, by node id.
    hinted: Vec<i32>,
    /// A partition was sent to its preferred read replica: answered at once.
    redirected: bool,
}

/// The topic of the request's `topic` if it is known here and may be read, else the
/// code its partitions are refused with. A topic named but not to be read is refused
/// whether it exists or not.
fn readable_topic(
    shared: &Shared,
    topic: &FetchTopic,
    version: i16,
    access: &Access,
) -> (Option<Arc<Topic>>, i16) {
    let (known, unknown) = if version >= TOPIC_IDS {
        (
            shared.topics().by_id(topic.topic_id),
            code::UNKNOWN_TOPIC_ID,
        )
    } else {
        let known = shared.topics().get(topic.topic.0.as_str());
        (known, code::UNKNOWN_TOPIC_OR_PARTITION)
    };
    let name = known
        .as_ref()
        .map_or(topic.topic.0.as_str(), |known| known.record.name.as_str());
    if (known.is_some() || version < TOPIC_IDS) && !access.topic(Operation::Read, name) {
        return (None, code::TOPIC_AUTHORIZATION_FAILED);
    }
    (known, unknown)
}

/// Shared-storage mode: opens the tails of the partitions the request may read, so
/// that the pass (on the blocking pool) finds them.
async fn open_tails(shared: &Shared, request: &FetchRequest, version: i16, access: &Access) {
    if shared.storage().is_none() {
        return;
    }
    let wanted: Vec<(Arc<Topic>, i32)> = request
        .topics
        .iter()
        .filter_map(|topic| Some((readable_topic(shared, topic, version, access).0?, topic)))
        .flat_map(|(known, topic)| {
            topic
                .partitions
                .iter()
                .map(move |wanted| (known.clone(), wanted.partition))
        })
        .collect();
    shared.partitions().open_tails(wanted).await;
}

/// What a pass needs besides the request.
struct Asked {
    version: i16,
    access: Access,
    /// Where the consumer's rack is served, if leaders name preferred read replicas
    /// to it.
    preferring: Option<replica::Preferring>,
    /// When the committed marks of the partitions led elsewhere were made ready.
    prepared_at: std::time::Instant,
    /// What the consumer's lanes let it see; `None`: everything.
    lanes: Option<Arc<LaneRead>>,
}

/// One pass over the partitions asked for.
fn read_all(shared: &Shared, request: &FetchRequest, asked: &Asked) -> Pass {
    let Asked {
        version,
        ref access,
        ref preferring,
        prepared_at,
        ref lanes,
    } = *asked;
    let mut budget = u64::try_from(request.max_bytes.max(0)).unwrap_or(0);
    let mut pass = Pass {
        body: FetchBody::default(),
        bytes: 0,
        errors: false,
        watches: Vec::new(),
        hinted: Vec::new(),
        redirected: false,
    };
    let isolation = if request.isolation_level == super::api::READ_COMMITTED {
        Isolation::ReadCommitted
    } else {
        Isolation::ReadUncommitted
    };
    for topic in &request.topics {
        // Read after the pass, from the metadata store (`read_offsets_topic`).
        if asks_offsets_topic(shared, topic, version) {
            continue;
        }
        let (known, unknown) = readable_topic(shared, topic, version, access);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for wanted in &topic.partitions {
            let Some(known) = &known else {
                pass.errors = true;
                partitions.push(PartitionOut::error(wanted.partition, unknown));
                continue;
            };
            let found = shared.partitions().partition_of(
                known.clone(),
                wanted.partition,
                wanted.current_leader_epoch,
            );
            let partition = match found {
                Ok(partition) => partition,
                Err(PartitionError::NotLeader)
                    if lanes.is_none() && replica::serves(shared, request, version, known) =>
                {
                    let partition_budget = u64::try_from(wanted.partition_max_bytes.max(0))
                        .unwrap_or(0)
                        .min(budget);
                    let ask = replica::ReplicaAsk {
                        budget: partition_budget,
                        first: pass.bytes == 0,
                        isolation,
                        asked_since: prepared_at,
                    };
                    let read = replica::read(shared, known, wanted, &ask);
                    pass.errors |= read.is_error();
                    pass.bytes += read.bytes;
                    budget = budget.saturating_sub(read.bytes);
                    pass.watches.extend(read.watch.map(Watch::Replica));
                    pass.hinted.extend(read.hinted);
                    partitions.push(read.out);
                    continue;
                }
                Err(error) => {
                    pass.errors = true;
                    let mut out = PartitionOut::error(wanted.partition, error.code());
                    if error.is_not_leader() {
                        out.leader = shared.leader_hint(known, wanted.partition);
                        pass.hinted.extend(out.leader.map(|hint| hint.leader));
                    }
                    partitions.push(out);
                    continue;
                }
            };
            if let Some(other) = preferring
                .as_ref()
                .and_then(|preferring| preferring.of(known, wanted.partition))
            {
                // KIP-392: nothing read, no records; the consumer fetches from `other`
                // from now on.
                let log = &partition.log;
                let mut out = PartitionOut::error(wanted.partition, code::NONE);
                out.high_watermark = log.offsets().high_watermark.0;
                out.log_start = partition.log_start().0;
                out.last_stable = log.stable_offset().0;
                out.preferred_replica = other;
                pass.redirected = true;
                partitions.push(out);
                continue;
            }
            // The first partition with data gets at least one whole batch, even past
            // the budgets, so consumers always make progress; every later one only
            // what fits the rest of the response budget (Kafka's rule: one batch at
            // most exceeds `max_bytes`, and clients size their buffers by it).
            let partition_budget = u64::try_from(wanted.partition_max_bytes.max(0))
                .unwrap_or(0)
                .min(budget);
            let offset = Offset(wanted.fetch_offset);
            let first = pass.bytes == 0;
            let read = if known.view.is_none() && lanes.is_none() {
                partition.read(offset, partition_budget, first, isolation)
            } else {
                let ask = (offset, partition_budget, first, isolation);
                let at = (&partition, wanted.partition);
                filtered_read(shared, known, lanes.as_deref(), at, ask)
            };
            let log = &partition.log;
            let mut out = PartitionOut::error(wanted.partition, code::NONE);
            out.high_watermark = log.offsets().high_watermark.0;
            out.log_start = partition.log_start().0;
            match read {
                Ok(result) => {
                    out.last_stable = result.last_stable.0;
                    response::prefetch(&result.chunks);
                    let len = result.len();
                    pass.bytes += len;
                    budget = budget.saturating_sub(len);
                    pass.watches
                        .push(Watch::Leader(log.subscribe_high_watermark()));
                    out.records = result.chunks;
                    out.aborted = result.aborted;
                }
                Err(error) => {
                    pass.errors = true;
                    out.error = error.code();
                    out.last_stable = log.stable_offset().0;
                    if out.error == code::OFFSET_OUT_OF_RANGE {
                        // The consumer resets its position by its auto.offset.reset.
                        tracing::info!(topic = %known.record.name, partition = wanted.partition, offset = wanted.fetch_offset, log_start = out.log_start, high_watermark = out.high_watermark, "fetch offset out of range");
                    }
                }
            }
            partitions.push(out);
        }
        pass.body.topics.push(TopicOut {
            name: topic.topic.clone(),
            id: topic.topic_id,
            known,
            partitions,
        });
    }
    pass
}

/// Whether the request's `topic` is `__consumer_offsets` (by name, or by id from v13).
fn asks_offsets_topic(shared: &Shared, topic: &FetchTopic, version: i16) -> bool {
    if version >= TOPIC_IDS {
        consumer_offsets::with_id(topic.topic_id)
    } else {
        consumer_offsets::named(shared, topic.topic.0.as_str())
    }
}

/// Reads the partitions of `__consumer_offsets` the request asks for from the
/// metadata store into the pass, each topic where the request named it; one that
/// found nothing has the pass look again while it waits.
async fn read_offsets_topic(
    shared: &Shared,
    request: &FetchRequest,
    version: i16,
    access: &Access,
    pass: &mut Pass,
) {
    for (at, topic) in request.topics.iter().enumerate() {
        if !asks_offsets_topic(shared, topic, version) {
            continue;
        }
        let readable = access.topic(Operation::Read, consumer_offsets::NAME);
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for wanted in &topic.partitions {
            if !readable {
                pass.errors = true;
                partitions.push(PartitionOut::error(
                    wanted.partition,
                    code::TOPIC_AUTHORIZATION_FAILED,
                ));
                continue;
            }
            let budget = u64::try_from(wanted.partition_max_bytes.max(0)).unwrap_or(0);
            let first = pass.bytes == 0;
            let read = consumer_offsets::read(
                shared,
                wanted.partition,
                wanted.fetch_offset,
                budget,
                first,
            )
            .await;
            let mut out = PartitionOut::error(wanted.partition, code::NONE);
            match read {
                Ok(read) => {
                    out.high_watermark = read.high_watermark;
                    out.last_stable = read.high_watermark;
                    out.log_start = 0;
                    if read.batches.is_empty() {
                        pass.watches.push(Watch::Poll(consumer_offsets::POLL));
                    } else {
                        pass.bytes += read.batches.len() as u64;
                        out.records = vec![ReadChunk::Memory(read.batches.into())];
                    }
                }
                Err(error) => {
                    pass.errors = true;
                    out.error = error;
                }
            }
            partitions.push(out);
        }
        let out = TopicOut {
            name: topic.topic.clone(),
            id: topic.topic_id,
            known: None,
            partitions,
        };
        let at = at.min(pass.body.topics.len());
        pass.body.topics.insert(at, out);
    }
}

/// A read through filters: a view's (of its source) and the consumer's lanes.
fn filtered_read(
    shared: &Shared,
    known: &Arc<Topic>,
    lane: Option<&LaneRead>,
    (partition, index): (&PartitionHandle, i32),
    (offset, budget, first, isolation): (Offset, u64, bool, Isolation),
) -> Result<ReadResult, PartitionError> {
    let source = match &known.view {
        None => known.clone(),
        Some(_) => {
            (shared.partitions().source_of(known)).ok_or(PartitionError::UnknownTopicOrPartition)?
        }
    };
    let mut stats = Vec::with_capacity(2);
    if known.view.is_some() {
        stats.push(shared.views().stats(known.record.id));
    }
    if let Some(lane) = lane {
        stats.push(
            shared
                .lanes()
                .read_stats(known.record.name.as_str(), &lane.lane),
        );
    }
    let view = known.view.as_ref().map(|view| view.filter.as_ref());
    ViewReader {
        filter: Selection {
            view,
            lane: lane.map(|lane| &lane.filter),
        },
        index: &shared.views().index,
        stats: &stats,
        source: source.partition_key(index),
        indexed: view
            .and_then(|filter| IndexedFilter::of(&source, filter))
            .map(|filter| (shared.indexes(), filter)),
    }
    .read(partition, offset, budget, first, isolation)
}

/// The first version naming topics by id.
const TOPIC_IDS: i16 = 13;

/// Waits until any watched high watermark moves, or the deadline.
async fn wait_for_data(mut watches: Vec<Watch>, deadline: tokio::time::Instant) {
    for watch in &mut watches {
        watch.mark_seen();
    }
    let changed = async {
        let futures = watches.iter_mut().map(|w| Box::pin(w.changed()));
        let _ = futures_select_any(futures.collect()).await;
    };
    let _ = tokio::time::timeout_at(deadline, changed).await;
}

/// Resolves when the first of `futures` does.
async fn futures_select_any<F: std::future::Future + Unpin>(mut futures: Vec<F>) {
    std::future::poll_fn(|cx| {
        for future in &mut futures {
            if std::pin::Pin::new(future).poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        if futures.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await;
}
