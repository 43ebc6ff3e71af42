//! Fetch (key 1): whole batches from each requested partition, within the per-partition
//! and response budgets; a long poll when fewer than `min_bytes` are ready, woken by
//! new data (a watch on each partition's high watermark), not by a timer loop.
//!
//! Not yet: `sendfile` from the segment files (the bytes are copied into the response
//! for now), fetch sessions (Spool answers session id 0: no session, which KIP-227
//! allows), topic ids (v13+).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, FetchResponse, ResponseKind};
use spool_model::Offset;
use tokio::sync::watch;

use super::ApiDecl;
use crate::errors::{self, code};
use crate::server::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::Fetch,
    min: 4,
    max: 12,
};

/// The longest a fetch may wait, whatever the client asks.
const MAX_WAIT_CAP: Duration = Duration::from_secs(30);

pub(crate) async fn handle(
    request: FetchRequest,
    version: i16,
    shared: Arc<Shared>,
) -> ResponseKind {
    let wait = Duration::from_millis(u64::try_from(request.max_wait_ms.max(0)).unwrap_or(0))
        .min(MAX_WAIT_CAP);
    let deadline = tokio::time::Instant::now() + wait;
    let request = Arc::new(request);
    loop {
        let pass = {
            let (shared, request) = (shared.clone(), request.clone());
            tokio::task::spawn_blocking(move || read_all(&shared, &request, version)).await
        };
        let Ok(pass) = pass else {
            return ResponseKind::Fetch(
                FetchResponse::default().with_error_code(code::UNKNOWN_SERVER_ERROR),
            );
        };
        let enough = pass.bytes >= i64::from(request.min_bytes.max(0)) || pass.errors;
        if enough || tokio::time::Instant::now() >= deadline || pass.watches.is_empty() {
            return ResponseKind::Fetch(FetchResponse::default().with_responses(pass.topics));
        }
        wait_for_data(pass.watches, deadline).await;
    }
}

/// One read of every requested partition.
struct Pass {
    topics: Vec<FetchableTopicResponse>,
    bytes: i64,
    errors: bool,
    watches: Vec<watch::Receiver<Offset>>,
}

fn read_all(shared: &Shared, request: &FetchRequest, version: i16) -> Pass {
    let mut budget = i64::from(request.max_bytes.max(0));
    let mut pass = Pass {
        topics: Vec::new(),
        bytes: 0,
        errors: false,
        watches: Vec::new(),
    };
    for topic in &request.topics {
        let known = shared.topics.get(topic.topic.0.as_str());
        let mut partitions = Vec::with_capacity(topic.partitions.len());
        for wanted in &topic.partitions {
            let mut data = PartitionData::default()
                .with_partition_index(wanted.partition)
                .with_high_watermark(-1)
                .with_last_stable_offset(-1)
                .with_log_start_offset(-1);
            if version >= 11 {
                data = data.with_preferred_read_replica(BrokerId(-1));
            }
            let log = known
                .as_ref()
                .and_then(|t| t.partition(wanted.partition))
                .and_then(|tp| shared.logs.partition(&tp).ok().flatten());
            let Some(log) = log else {
                pass.errors = true;
                partitions.push(data.with_error_code(code::UNKNOWN_TOPIC_OR_PARTITION));
                continue;
            };
            // The first partition with data gets at least one whole batch, even past
            // the response budget, so consumers always make progress (as in Kafka).
            let partition_budget = i64::from(wanted.partition_max_bytes.max(0))
                .min(budget.max(if pass.bytes == 0 { 1 } else { 0 }));
            let read = if partition_budget > 0 {
                log.read(
                    Offset(wanted.fetch_offset),
                    u64::try_from(partition_budget).unwrap_or(0),
                )
            } else {
                log.read(Offset(wanted.fetch_offset), 0).map(|mut r| {
                    r.chunks.clear();
                    r
                })
            };
            match read {
                Ok(result) => {
                    let offsets = log.offsets();
                    let bytes = result.to_vec().map(Bytes::from);
                    let (error, records) = match bytes {
                        Ok(bytes) => (code::NONE, bytes),
                        Err(_) => (code::KAFKA_STORAGE_ERROR, Bytes::new()),
                    };
                    let len = i64::try_from(records.len()).unwrap_or(i64::MAX);
                    pass.bytes += len;
                    budget -= len;
                    pass.errors |= error != code::NONE;
                    pass.watches.push(log.subscribe_high_watermark());
                    partitions.push(
                        data.with_error_code(error)
                            .with_high_watermark(offsets.high_watermark.0)
                            .with_last_stable_offset(offsets.high_watermark.0)
                            .with_log_start_offset(offsets.log_start.0)
                            .with_aborted_transactions(Some(Vec::new()))
                            .with_records(Some(records)),
                    );
                }
                Err(error) => {
                    pass.errors = true;
                    let offsets = log.offsets();
                    partitions.push(
                        data.with_error_code(errors::log_error_code(&error))
                            .with_high_watermark(offsets.high_watermark.0)
                            .with_last_stable_offset(offsets.high_watermark.0)
                            .with_log_start_offset(offsets.log_start.0),
                    );
                }
            }
        }
        pass.topics.push(
            FetchableTopicResponse::default()
                .with_topic(topic.topic.clone())
                .with_partitions(partitions),
        );
    }
    pass
}

/// Waits until any watched high watermark moves, or the deadline.
async fn wait_for_data(mut watches: Vec<watch::Receiver<Offset>>, deadline: tokio::time::Instant) {
    for watch in &mut watches {
        watch.borrow_and_update();
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
