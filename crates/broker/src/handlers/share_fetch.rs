//! ShareFetch (key 78, KIP-932): a share consumer's fetch, at the leader of the
//! partitions it reads. In order: the share session's rules (`spool_share::session`),
//! the acknowledgements the request carries (written before the answer), the release
//! of what a replaced session or forgotten partitions held, then records acquired
//! for the member from every partition of its session — waiting up to `MaxWaitMs`
//! for some when there are none, woken by new data or by records made available
//! again.
//!
//! A partition appears in the answer when it has records, an error, or carried
//! acknowledgements (librdkafka counts on the last: an acknowledged partition left
//! out is taken as failed). `Records` is never null.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, LeaderIdAndEpoch, NodeEndpoint, PartitionData, ShareFetchableTopicResponse,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ResponseKind, ShareFetchRequest, ShareFetchResponse,
};
use kafka_protocol::protocol::StrBytes;
use spool_share::partition::MemberId;
use spool_share::{AckBatch, AckType, SessionRequest, SessionStep, ShareError};
use tokio::sync::watch;
use uuid::Uuid;

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, share_error_code};
use crate::share::SharePartitionId;
use crate::share::held::{self, settings_of};
use crate::share::partition_access::{self, Refusal};
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ShareFetch,
    min: 1,
    max: 1,
};

/// The longest a fetch waits, whatever the client asks.
const MAX_WAIT_CAP: Duration = Duration::from_secs(30);

/// The most records one fetch acquires when the client names no limit.
const DEFAULT_MAX_RECORDS: usize = 500;

type PartitionRef = (Uuid, i32);

pub(crate) async fn handle(
    request: ShareFetchRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let group = request
        .group_id
        .as_ref()
        .map_or("", |g| g.0.as_str())
        .to_owned();
    let member = request
        .member_id
        .as_ref()
        .map_or("", |m| m.as_str())
        .to_owned();
    if group.is_empty() || member.is_empty() {
        return refused(
            code::INVALID_REQUEST,
            "a ShareFetch names its group and member".to_owned(),
        );
    }
    let acknowledgements = match acknowledgements_of(&request) {
        Ok(acks) => acks,
        Err(error) => return refused(share_error_code(&error), error.to_string()),
    };
    let named: Vec<PartitionRef> = request
        .topics
        .iter()
        .flat_map(|topic| {
            topic
                .partitions
                .iter()
                .map(|p| (topic.topic_id, p.partition_index))
        })
        .collect();
    let forgotten: Vec<PartitionRef> = request
        .forgotten_topics_data
        .iter()
        .flat_map(|topic| topic.partitions.iter().map(|p| (topic.topic_id, *p)))
        .collect();
    let session = SessionRequest {
        group: &group,
        member: &member,
        epoch: request.share_session_epoch,
        connection: context.connection,
        added: named,
        forgotten,
        has_acknowledgements: !acknowledgements.is_empty(),
    };
    let step = shared
        .share()
        .sessions()
        .fetch(&session, shared.clock().instant());
    let step = match step {
        Ok(step) => step,
        Err(error) => return refused(share_error_code(&error), error.to_string()),
    };
    if request.share_session_epoch == 0
        && let SessionStep::Fetch { partitions, .. } = &step
    {
        for &(topic_id, partition) in partitions {
            let id = SharePartitionId {
                group: group.clone(),
                topic_id,
                partition,
            };
            held::forget_if_idle(shared, &id).await;
        }
    }
    let settings = settings_of(shared, &group);
    let mut answers: BTreeMap<PartitionRef, PartitionData> = BTreeMap::new();
    for ((topic_id, partition), batches) in acknowledgements {
        let id = SharePartitionId {
            group: group.clone(),
            topic_id,
            partition,
        };
        let acked = partition_access::acknowledge(
            shared,
            &context.access,
            &id,
            &member,
            &batches,
            &settings,
        )
        .await;
        let answer = answers
            .entry((topic_id, partition))
            .or_insert_with(|| empty(partition));
        if let Err(refusal) = acked {
            answer.acknowledge_error_code = refusal.code;
            set_leader(answer, &refusal);
            answer.acknowledge_error_message = Some(StrBytes::from_string(refusal.message));
        }
    }
    let (partitions, released) = match step {
        SessionStep::Fetch {
            partitions,
            released,
        } => (partitions, released),
        SessionStep::Closed { released } => (Vec::new(), released),
    };
    held::release_member(shared, &group, &member, &released).await;
    if !partitions.is_empty() {
        fetch(
            shared,
            context,
            &request,
            &group,
            &member,
            &partitions,
            &mut answers,
        )
        .await;
    }
    respond(shared, context, &answers, &settings)
}

/// Acquires records for the member from `partitions`, waiting for some up to the
/// request's `MaxWaitMs`.
async fn fetch(
    shared: &Arc<Shared>,
    context: &RequestContext,
    request: &ShareFetchRequest,
    group: &str,
    member: &str,
    partitions: &[PartitionRef],
    answers: &mut BTreeMap<PartitionRef, PartitionData>,
) {
    let wait = Duration::from_millis(u64::try_from(request.max_wait_ms.max(0)).unwrap_or(0))
        .min(MAX_WAIT_CAP);
    let deadline = tokio::time::Instant::now() + wait;
    let max_records = usize::try_from(request.max_records)
        .ok()
        .filter(|n| *n > 0)
        .unwrap_or(DEFAULT_MAX_RECORDS);
    let member: MemberId = Arc::from(member);
    let mut available = shared.share().watch_available();
    loop {
        available.borrow_and_update();
        // Settings are read again each pass: a group config may have changed.
        let settings = settings_of(shared, group);
        let mut left = max_records;
        let mut watches: Vec<watch::Receiver<spool_model::Offset>> = Vec::new();
        let mut answered = false;
        // Each fetch starts at another partition, so that a member's record budget
        // does not always go to the first ones.
        let first =
            usize::try_from(request.share_session_epoch.max(0)).unwrap_or(0) % partitions.len();
        for &(topic_id, partition) in partitions.iter().cycle().skip(first).take(partitions.len()) {
            if left == 0 {
                break;
            }
            let id = SharePartitionId {
                group: group.to_owned(),
                topic_id,
                partition,
            };
            let acquired =
                partition_access::acquire(shared, &context.access, &id, &member, left, &settings)
                    .await;
            match acquired {
                Ok(Some(acquired)) => {
                    let count: usize = acquired
                        .ranges
                        .iter()
                        .map(|r| usize::try_from(r.last - r.first + 1).unwrap_or(0))
                        .sum();
                    left = left.saturating_sub(count);
                    let answer = answers
                        .entry((topic_id, partition))
                        .or_insert_with(|| empty(partition));
                    answer.records = Some(acquired.records);
                    answer.acquired_records = acquired
                        .ranges
                        .iter()
                        .map(|range| {
                            AcquiredRecords::default()
                                .with_first_offset(range.first)
                                .with_last_offset(range.last)
                                .with_delivery_count(
                                    i16::try_from(range.delivery_count).unwrap_or(i16::MAX),
                                )
                        })
                        .collect();
                    answered = true;
                }
                Ok(None) => {
                    if let Some(watch) = high_watermark_watch(shared, topic_id, partition) {
                        watches.push(watch);
                    }
                }
                Err(refusal) => {
                    let answer = answers
                        .entry((topic_id, partition))
                        .or_insert_with(|| empty(partition));
                    answer.error_code = refusal.code;
                    answer.error_message = Some(StrBytes::from_string(refusal.message.clone()));
                    set_leader(answer, &refusal);
                    answered = true;
                }
            }
        }
        if answered || tokio::time::Instant::now() >= deadline {
            return;
        }
        wait_for_records(watches, &mut available, deadline).await;
    }
}

/// The high watermark of a partition led here, to wait on.
fn high_watermark_watch(
    shared: &Shared,
    topic_id: Uuid,
    partition: i32,
) -> Option<watch::Receiver<spool_model::Offset>> {
    let topic = shared.topics().by_id(topic_id)?;
    let handle = shared
        .partitions()
        .partition_of(topic, partition, -1)
        .ok()?;
    Some(handle.log.subscribe_high_watermark())
}

/// Waits until new data comes to any of the partitions, records are made available
/// again, or the deadline.
async fn wait_for_records(
    mut watches: Vec<watch::Receiver<spool_model::Offset>>,
    available: &mut watch::Receiver<u64>,
    deadline: tokio::time::Instant,
) {
    for watch in &mut watches {
        watch.borrow_and_update();
    }
    let data = async {
        if watches.is_empty() {
            std::future::pending::<()>().await;
        }
        let changes = watches.iter_mut().map(|w| Box::pin(w.changed()));
        let _ = futures::future::select_all(changes).await;
    };
    tokio::select! {
        () = data => {}
        _ = available.changed() => {}
        () = tokio::time::sleep_until(deadline) => {}
    }
}

/// The acknowledgements of the request, by partition (a topic named twice is one).
fn acknowledgements_of(
    request: &ShareFetchRequest,
) -> Result<BTreeMap<PartitionRef, Vec<AckBatch>>, ShareError> {
    let mut acks: BTreeMap<PartitionRef, Vec<AckBatch>> = BTreeMap::new();
    for topic in &request.topics {
        for partition in &topic.partitions {
            for batch in &partition.acknowledgement_batches {
                let types = batch
                    .acknowledge_types
                    .iter()
                    .map(|code| AckType::from_code(*code))
                    .collect::<Result<Vec<_>, _>>()?;
                acks.entry((topic.topic_id, partition.partition_index))
                    .or_default()
                    .push(AckBatch {
                        first: batch.first_offset,
                        last: batch.last_offset,
                        types,
                    });
            }
        }
    }
    for batches in acks.values_mut() {
        batches.sort_by_key(|batch| batch.first);
    }
    Ok(acks)
}

fn empty(partition: i32) -> PartitionData {
    PartitionData::default()
        .with_partition_index(partition)
        .with_records(Some(Bytes::new()))
        .with_current_leader(
            LeaderIdAndEpoch::default()
                .with_leader_id(-1)
                .with_leader_epoch(-1),
        )
}

fn set_leader(answer: &mut PartitionData, refusal: &Refusal) {
    if let Some(hint) = refusal.leader {
        answer.current_leader = LeaderIdAndEpoch::default()
            .with_leader_id(hint.leader)
            .with_leader_epoch(hint.epoch);
    }
}

fn respond(
    shared: &Shared,
    context: &RequestContext,
    answers: &BTreeMap<PartitionRef, PartitionData>,
    settings: &spool_share::ShareSettings,
) -> ResponseKind {
    let mut topics: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    let mut hinted = Vec::new();
    for ((topic_id, _), answer) in answers {
        if answer.current_leader.leader_id >= 0 {
            hinted.push(answer.current_leader.leader_id);
        }
        topics.entry(*topic_id).or_default().push(answer.clone());
    }
    let endpoints = shared
        .hinted_brokers(hinted, &context.listener)
        .into_iter()
        .map(|broker| {
            NodeEndpoint::default()
                .with_node_id(BrokerId(broker.node_id))
                .with_host(StrBytes::from_string(broker.host))
                .with_port(broker.port)
                .with_rack(broker.rack.map(StrBytes::from_string))
        })
        .collect();
    ResponseKind::ShareFetch(
        ShareFetchResponse::default()
            .with_acquisition_lock_timeout_ms(
                i32::try_from(settings.record_lock_duration.as_millis()).unwrap_or(i32::MAX),
            )
            .with_responses(
                topics
                    .into_iter()
                    .map(|(topic_id, partitions)| {
                        ShareFetchableTopicResponse::default()
                            .with_topic_id(topic_id)
                            .with_partitions(partitions)
                    })
                    .collect(),
            )
            .with_node_endpoints(endpoints),
    )
}

fn refused(error_code: i16, message: String) -> ResponseKind {
    ResponseKind::ShareFetch(
        ShareFetchResponse::default()
            .with_error_code(error_code)
            .with_error_message(Some(StrBytes::from_string(message))),
    )
}
