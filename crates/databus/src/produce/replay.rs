//! acks=0 batches and the spill directory: while the upstream is unreachable they
//! are written there (with every acks=0 batch that comes while the directory holds
//! any, so that they reach the upstream in order), and sent, oldest file first,
//! when the upstream answers again, merged per partition; a file is deleted once
//! every partition of it was acknowledged.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ProduceRequest, RequestKind, ResponseKind};
use spool_protocol::merge::merge_batches;

use super::send::{INFLATE_LIMIT, add_batch, codec_of, produce_version};
use super::{QueueKey, Work, code};
use crate::Bus;
use crate::upstream::BrokerId;

/// Writes an acks=0 work's batches to the spill directory; `false` without one.
pub(super) fn spill_work(bus: &Bus, key: &QueueKey, work: &Work) -> bool {
    let Some(spill) = &bus.merger.spill else {
        return false;
    };
    for batch in work.pendings.iter().flat_map(|p| &p.batches) {
        if !spill.push(&key.0, key.1, batch) {
            tracing::warn!(topic = %key.0, partition = key.1, "spill full: an acks=0 batch dropped");
        }
    }
    true
}

/// While the spill directory holds batches, the acks=0 batches waiting in memory
/// join them there.
pub(super) fn spill_acks_zero(bus: &Bus) {
    let Some(spill) = &bus.merger.spill else {
        return;
    };
    if spill.is_empty() {
        return;
    }
    let mut queues = bus.merger.lock();
    let mut freed = 0;
    let mut spilled = Vec::new();
    for (key, queue) in &mut queues.by_key {
        queue.retain(|work| {
            let acks_zero = work.sealed.is_none() && work.pendings.iter().all(|p| p.acks == 0);
            if acks_zero {
                freed += work.pendings.iter().map(|p| p.bytes).sum::<usize>();
                spilled.push((
                    key.clone(),
                    work.pendings
                        .iter()
                        .flat_map(|p| p.batches.clone())
                        .collect::<Vec<_>>(),
                ));
            }
            !acks_zero
        });
    }
    queues.by_key.retain(|_, queue| !queue.is_empty());
    queues.bytes = queues.bytes.saturating_sub(freed);
    drop(queues);
    for (key, batches) in spilled {
        for batch in batches {
            if !spill.push(&key.0, key.1, &batch) {
                tracing::warn!(topic = %key.0, "spill full: an acks=0 batch dropped");
            }
        }
    }
}

/// Sends the spill directory's oldest files upstream, deleting each once
/// acknowledged; `true` when the directory is empty afterwards.
pub(super) async fn replay_spill(bus: &Arc<Bus>) -> bool {
    let Some(spill) = &bus.merger.spill else {
        return true;
    };
    while let Some((path, batches)) = spill.oldest() {
        let mut by_partition: BTreeMap<QueueKey, Vec<Bytes>> = BTreeMap::new();
        for spilled in batches {
            by_partition
                .entry((spilled.topic, spilled.partition))
                .or_default()
                .push(spilled.batch);
        }
        if !send_spilled(bus, by_partition).await {
            return false;
        }
        spill.done(&path);
        tracing::info!(path = %path.display(), "spilled acks=0 batches sent upstream");
    }
    true
}

/// Sends spilled batches, merged per partition, a request per leader; whether every
/// partition was acknowledged.
async fn send_spilled(bus: &Arc<Bus>, by_partition: BTreeMap<QueueKey, Vec<Bytes>>) -> bool {
    let mut by_leader: BTreeMap<BrokerId, ProduceRequest> = BTreeMap::new();
    let timeout = i32::try_from(bus.config.request_timeout.as_millis()).unwrap_or(30_000);
    for ((topic, partition), batches) in by_partition {
        let parts: Vec<&[u8]> = batches.iter().map(|b| &b[..]).collect();
        let Ok(merged) = merge_batches(&parts, codec_of(bus, &parts), INFLATE_LIMIT, None) else {
            tracing::warn!(
                topic,
                partition,
                "spilled batches that cannot be merged: dropped"
            );
            continue;
        };
        let Some(leader) = bus.upstream.leader(&topic, partition).await else {
            return false;
        };
        let request = by_leader.entry(leader).or_insert_with(|| {
            ProduceRequest::default()
                .with_acks(1)
                .with_timeout_ms(timeout)
        });
        add_batch(request, &(topic, partition), Bytes::from(merged.batch));
    }
    let version = produce_version(bus);
    for (leader, request) in by_leader {
        let kind = RequestKind::Produce(request);
        let Ok(ResponseKind::Produce(answer)) = bus
            .upstream
            .call(leader, ApiKey::Produce, &kind, version)
            .await
        else {
            return false;
        };
        if (answer.responses.iter())
            .flat_map(|t| &t.partition_responses)
            .any(|p| p.error_code != code::NONE)
        {
            bus.upstream.refresh().await;
            return false;
        }
    }
    true
}
