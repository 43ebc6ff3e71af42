//! The rounds: every `databus.linger.ms`, each queue's share merged and sealed
//! (Databus's producer id and the partition's next sequence), one Produce request per
//! upstream leader and acks, all side by side; then each producer answered, or its
//! batch put back as it was.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    ApiKey, InitProducerIdRequest, ProduceRequest, RequestKind, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_model::{CompressionCodec, RecordBatchHeader};
use spool_protocol::merge::{Producer, merge_batches};
use tokio::task::JoinSet;

use super::{Outcome, QueueKey, Sealed, Work, code, replay};
use crate::Bus;
use crate::upstream::{BrokerId, UpstreamError};

/// The most a client batch may inflate to when merged.
pub(super) const INFLATE_LIMIT: usize = 256 << 20;
/// The Produce version sent upstream at most (v13 names topics by id).
const MAX_PRODUCE_VERSION: i16 = 12;
/// How long a round waits after a failed send before trying again.
const BACKOFF: Duration = Duration::from_millis(100);

/// Sends rounds until `stopped`.
pub(crate) async fn run(bus: Arc<Bus>, mut stopped: tokio::sync::watch::Receiver<bool>) {
    init_producer(&bus).await;
    loop {
        let linger = bus.config.linger;
        let oldest = bus.merger.lock().oldest;
        match oldest {
            None => {
                tokio::select! {
                    () = bus.merger.wake.notified() => {}
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = stopped.changed() => return,
                }
                if bus.merger.lock().oldest.is_none() {
                    replay::replay_spill(&bus).await;
                    continue;
                }
                tokio::time::sleep(linger).await;
            }
            Some(oldest) => {
                if let Some(left) = linger.checked_sub(oldest.elapsed()) {
                    tokio::time::sleep(left).await;
                }
            }
        }
        if !replay::replay_spill(&bus).await {
            replay::spill_acks_zero(&bus);
        }
        ensure_producer(&bus).await;
        let round = bus.merger.take_round(bus.config.batch_bytes);
        if round.is_empty() {
            continue;
        }
        if !send_round(&bus, round).await {
            bus.upstream.refresh().await;
            tokio::time::sleep(BACKOFF).await;
        }
        if bus.upstream.stale() {
            bus.upstream.refresh().await;
        }
    }
}

/// Asks the upstream for a producer id (an idempotent producer's: no transactional
/// id) until it gives one or nothing is waiting; merged batches are sent without
/// one meanwhile.
async fn init_producer(bus: &Bus) {
    let request = RequestKind::InitProducerId(
        InitProducerIdRequest::default()
            .with_transaction_timeout_ms(-1)
            .with_producer_id(kafka_protocol::messages::ProducerId(-1))
            .with_producer_epoch(-1),
    );
    let version = bus
        .upstream
        .max_version(ApiKey::InitProducerId)
        .unwrap_or(0)
        .min(4);
    for _ in 0..10 {
        let Some(broker) = bus.upstream.any_broker() else {
            break;
        };
        match bus
            .upstream
            .call(broker, ApiKey::InitProducerId, &request, version)
            .await
        {
            Ok(ResponseKind::InitProducerId(answer)) if answer.error_code == code::NONE => {
                bus.merger
                    .set_producer(answer.producer_id.0, answer.producer_epoch);
                return;
            }
            Ok(_) | Err(_) => tokio::time::sleep(BACKOFF).await,
        }
    }
    tracing::warn!("no producer id from upstream: merged batches go without sequences");
}

/// One round: the works grouped by leader and acks, a request each, side by side.
/// `false` when some went back to their queues.
async fn send_round(bus: &Arc<Bus>, round: Vec<(QueueKey, Work)>) -> bool {
    let mut groups: BTreeMap<(BrokerId, i16), Vec<(QueueKey, Work)>> = BTreeMap::new();
    for (key, work) in round {
        let leader = match bus.upstream.leader(&key.0, key.1).await {
            Some(leader) => leader,
            None => bus.upstream.any_broker().unwrap_or(-1),
        };
        // The strongest acks its producers asked for (acks=0 is sent as 1: Databus
        // wants to know).
        let acks = if work.pendings.iter().any(|p| p.acks == -1) {
            -1
        } else {
            1
        };
        groups.entry((leader, acks)).or_default().push((key, work));
    }
    let version = produce_version(bus);
    let mut sends = JoinSet::new();
    for ((leader, acks), works) in groups {
        let bus = bus.clone();
        sends.spawn(async move {
            let (request, works) = sealed_request(&bus, works, acks);
            if works.is_empty() {
                return true;
            }
            let kind = RequestKind::Produce(request);
            let answer = bus
                .upstream
                .call(leader, ApiKey::Produce, &kind, version)
                .await;
            settle(&bus, works, answer)
        });
    }
    let mut all_done = true;
    while let Some(done) = sends.join_next().await {
        all_done &= done.unwrap_or(false);
    }
    all_done
}

/// Seals each work (merged, with Databus's producer id and the partition's next
/// sequence, unless only acks=0 producers wait on it) and puts the batches in one
/// request; a work whose batches cannot be merged is answered CORRUPT_MESSAGE.
fn sealed_request(
    bus: &Bus,
    works: Vec<(QueueKey, Work)>,
    acks: i16,
) -> (ProduceRequest, Vec<(QueueKey, Work)>) {
    let timeout = i32::try_from(bus.config.request_timeout.as_millis()).unwrap_or(30_000);
    let mut request = ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(timeout);
    let mut sent = Vec::new();
    for (key, mut work) in works {
        if work.sealed.is_none() {
            match seal(bus, &key, &work) {
                Ok(sealed) => work.sealed = Some(sealed),
                Err(error) => {
                    tracing::warn!(%error, topic = %key.0, "a produced batch cannot be merged");
                    for pending in &mut work.pendings {
                        pending.answer(Outcome::failed(code::CORRUPT_MESSAGE));
                    }
                    continue;
                }
            }
        }
        let Some(sealed) = &work.sealed else {
            continue;
        };
        add_batch(&mut request, &key, sealed.batch.clone());
        sent.push((key, work));
    }
    (request, sent)
}

/// Adds `batch` for the partition `key` to `request` (under its topic's entry).
pub(super) fn add_batch(request: &mut ProduceRequest, key: &QueueKey, batch: Bytes) {
    let data = PartitionProduceData::default()
        .with_index(key.1)
        .with_records(Some(batch));
    match (request.topic_data.iter_mut()).find(|t| t.name.0.as_str() == key.0) {
        Some(existing) => existing.partition_data.push(data),
        None => request.topic_data.push(
            TopicProduceData::default()
                .with_name(TopicName(StrBytes::from_string(key.0.clone())))
                .with_partition_data(vec![data]),
        ),
    }
}

/// The Produce version sent upstream: the upstream's highest, at most
/// [`MAX_PRODUCE_VERSION`].
pub(super) fn produce_version(bus: &Bus) -> i16 {
    bus.upstream
        .max_version(ApiKey::Produce)
        .unwrap_or(MAX_PRODUCE_VERSION)
        .min(MAX_PRODUCE_VERSION)
}

/// `work`'s batches merged into one.
fn seal(bus: &Bus, key: &QueueKey, work: &Work) -> Result<Sealed, String> {
    let batches: Vec<&[u8]> = (work.pendings.iter())
        .flat_map(|p| p.batches.iter().map(|b| &b[..]))
        .collect();
    let count = |merged: &spool_protocol::merge::Merged| {
        merged.parts.iter().map(|(_, count)| *count).sum::<i32>()
    };
    let acks_zero_only = work.pendings.iter().all(|p| p.acks == 0);
    let mut idempotence = bus.merger.lock_idempotence();
    let producer = match idempotence.producer {
        Some((id, epoch)) if !acks_zero_only => Some(Producer {
            id,
            epoch,
            base_sequence: idempotence.next.get(key).copied().unwrap_or(0),
        }),
        _ => None,
    };
    let merged = merge_batches(&batches, codec_of(bus, &batches), INFLATE_LIMIT, producer)
        .map_err(|error| error.to_string())?;
    if let Some(producer) = producer {
        let next = producer.base_sequence.wrapping_add(count(&merged));
        idempotence.next.insert(key.clone(), next & i32::MAX);
    }
    let mut starts = Vec::with_capacity(work.pendings.len());
    let mut part = 0;
    for pending in &work.pendings {
        starts.push(merged.parts.get(part).map_or(0, |(first, _)| *first));
        part += pending.batches.len();
    }
    Ok(Sealed {
        batch: Bytes::from(merged.batch),
        starts,
        base_sequence: producer.map(|p| p.base_sequence),
    })
}

/// The codec of a merged batch: `databus.compression.type`, or the producers' (the
/// first batch's).
pub(super) fn codec_of(bus: &Bus, batches: &[&[u8]]) -> CompressionCodec {
    bus.config.compression.unwrap_or_else(|| {
        batches
            .first()
            .and_then(|batch| RecordBatchHeader::parse(batch))
            .map_or(CompressionCodec::None, |header| header.compression())
    })
}

/// Answers the producers of a sent request, or puts their batches back; `false`
/// when any went back (or to the spill directory).
fn settle(
    bus: &Bus,
    works: Vec<(QueueKey, Work)>,
    answer_of_upstream: Result<ResponseKind, UpstreamError>,
) -> bool {
    let unreachable = matches!(answer_of_upstream, Err(UpstreamError::Unreachable(_)));
    let answer_of_upstream = match answer_of_upstream {
        Ok(ResponseKind::Produce(answer)) => Some(answer),
        _ => None,
    };
    let mut back = Vec::new();
    let mut all_done = true;
    for (key, mut work) in works {
        let partition = answer_of_upstream.as_ref().and_then(|answer| {
            (answer.responses.iter())
                .filter(|t| t.name.0.as_str() == key.0)
                .flat_map(|t| &t.partition_responses)
                .find(|p| p.index == key.1)
        });
        let error = partition.map_or(code::NETWORK_EXCEPTION, |p| p.error_code);
        if let Some(partition) = partition.filter(|_| error == code::NONE) {
            let starts = work
                .sealed
                .as_ref()
                .map(|s| s.starts.clone())
                .unwrap_or_default();
            for (pending, start) in work.pendings.iter_mut().zip(starts) {
                pending.answer(Outcome {
                    error: code::NONE,
                    base_offset: partition.base_offset + i64::from(start),
                    log_append_time: partition.log_append_time_ms,
                    log_start: partition.log_start_offset,
                });
            }
            continue;
        }
        all_done = false;
        let acks_zero_only = work.pendings.iter().all(|p| p.acks == 0);
        if unreachable && acks_zero_only && replay::spill_work(bus, &key, &work) {
            continue;
        }
        if code::TOO_LARGE.contains(&error) && work.pendings.len() > 1 {
            // Over the topic's limit merged, not each: one at a time, from the
            // sequence the refused batch had (the upstream did not take it).
            if let Some(sequence) = work.sealed.as_ref().and_then(|s| s.base_sequence) {
                (bus.merger.lock_idempotence().next).insert(key.clone(), sequence);
            }
            for pending in work.pendings {
                let alone = Work {
                    pendings: vec![pending],
                    sealed: None,
                    alone: true,
                };
                back.push((key.clone(), alone));
            }
            continue;
        }
        if code::PRODUCER_LOST.contains(&error) {
            // Merged again under a new producer id (asked before the next round).
            tracing::warn!(
                code = error,
                "Databus's producer was lost upstream; a new one"
            );
            bus.merger.lock_idempotence().producer = None;
            work.sealed = None;
        }
        if code::RETRIABLE.contains(&error) || code::PRODUCER_LOST.contains(&error) {
            // Producers whose time ran out are told; the batch goes again as it was
            // (its sequence stays in order), unanswered for them.
            let now = Instant::now();
            for pending in work.pendings.iter_mut().filter(|p| p.deadline <= now) {
                pending.answer(Outcome::failed(error));
            }
            // Nobody waits any more: dropped (a sequence gap makes the upstream ask
            // for a new producer id, which the next round gets).
            if work.pendings.iter().all(|p| p.deadline <= now) {
                continue;
            }
            back.push((key, work));
        } else {
            for pending in &mut work.pendings {
                pending.answer(Outcome::failed(error));
            }
        }
    }
    bus.merger.requeue(back);
    all_done
}

/// A new producer id when the last one was lost.
async fn ensure_producer(bus: &Bus) {
    if bus.merger.lock_idempotence().producer.is_none() {
        init_producer(bus).await;
    }
}
