//! Copying one partition: the leader of a mirror partition fetches it from the
//! source's leader and appends the batches **at their own offsets**, byte for byte
//! (`PartitionLog::append_at_own_offsets`), from its own log end — so a restart, a
//! kill -9 or a leadership move resumes where the log ends, with no gap and no
//! duplicate. Fetches are read_uncommitted: open transactions' records and their
//! markers are copied as they are, so read_committed on the mirror sees what it would
//! on the source.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, FetchRequest, FetchResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use spool_kafka_client::{ClientSettings, Connection, error_name};
use spool_model::{Offset, RecordBatchHeader};
use spool_protocol::batch::{self, BatchError, BatchFrames, BatchRules};
use tokio::sync::watch;

use super::source::{call, metadata, offset_at, open, version};
use super::{MirrorStatus, PartitionKey};
use crate::errors::code;
use crate::partitions::{PartitionHandle, on_blocking_pool};
use crate::shared::Shared;
use crate::topics::Topic;

/// How long the source may hold a fetch for new records.
const FETCH_WAIT_MS: i32 = 500;
/// The most bytes asked per fetch of a partition.
const PARTITION_FETCH_BYTES: i32 = 8 << 20;
/// How long an append may wait to become durable.
const DURABLE_WAIT: Duration = Duration::from_secs(30);
/// The waits after a failure: doubled up to the last.
const BACKOFF: [Duration; 4] = [
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(5),
];

/// What a link's copies share.
#[derive(Debug)]
pub(super) struct CopyContext {
    pub(super) shared: Arc<Shared>,
    pub(super) link: String,
    pub(super) settings: ClientSettings,
    /// Where an empty mirror partition starts: -2 earliest, -1 latest.
    pub(super) start_at: i64,
    pub(super) status: Arc<MirrorStatus>,
}

/// Why a round of copying stopped.
enum Stop {
    /// This broker no longer leads the partition (or it is gone): the task ends.
    NotLeading,
    /// Something failed: retried after a wait, with a new connection.
    Failed(String),
}

/// Copies partition `index` of mirror topic `topic` until `stop` says so or this
/// broker stops leading it; then it is no longer shown as copied here.
pub(super) async fn run(
    context: Arc<CopyContext>,
    topic: Arc<Topic>,
    index: i32,
    stop: watch::Receiver<bool>,
) {
    let key = PartitionKey {
        link: context.link.clone(),
        topic: topic.record.name.to_string(),
        partition: index,
    };
    copy_until_stopped(&context, topic, index, &key, stop).await;
    context.status.forget(&key);
}

async fn copy_until_stopped(
    context: &Arc<CopyContext>,
    topic: Arc<Topic>,
    index: i32,
    key: &PartitionKey,
    mut stop: watch::Receiver<bool>,
) {
    let mut copier = Copier {
        context: context.clone(),
        topic,
        index,
        key: key.clone(),
        connection: None,
        position: None,
        skipping_from: None,
    };
    let mut failures = 0_usize;
    loop {
        let step = tokio::select! {
            step = copier.step() => step,
            _ = stop.changed() => return,
        };
        match step {
            Ok(()) => failures = 0,
            Err(Stop::NotLeading) => return,
            Err(Stop::Failed(error)) => {
                tracing::warn!(link = %key.link, topic = %key.topic, partition = index, %error,
                    "mirroring a partition failed; retrying");
                context.status.failed(key, error);
                copier.connection = None;
                let wait = BACKOFF[failures.min(BACKOFF.len() - 1)];
                failures += 1;
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    _ = stop.changed() => return,
                }
            }
        }
        if *stop.borrow() {
            return;
        }
    }
}

struct Copier {
    context: Arc<CopyContext>,
    topic: Arc<Topic>,
    index: i32,
    key: PartitionKey,
    /// The connection to the source partition's leader.
    connection: Option<Connection>,
    /// Where the next fetch starts, once known (the log end, or where the source's
    /// log starts when the mirror has nothing yet).
    position: Option<i64>,
    /// Where the mirror ended when the copy jumped past records the source had
    /// removed: the gap is counted at the next append.
    skipping_from: Option<i64>,
}

impl Copier {
    /// One fetch and its append.
    async fn step(&mut self) -> Result<(), Stop> {
        let shared = self.context.shared.clone();
        let name = self.topic.record.name.to_string();
        if !is_mirrored(&shared, &name, &self.key.link) {
            return Err(Stop::NotLeading);
        }
        let handle = shared
            .partitions()
            .open(self.topic.clone(), self.index, -1)
            .await
            .map_err(|error| {
                tracing::debug!(link = %self.key.link, topic = %name, partition = self.index,
                    %error, "not copying the partition here");
                Stop::NotLeading
            })?;
        let offsets = handle.log.offsets();
        if self.connection.is_none() {
            self.connection = Some(self.connect().await.map_err(Stop::Failed)?);
        }
        let position = match self.position {
            Some(position) if position >= offsets.log_end.0 => position,
            _ if offsets.log_end.0 > 0 => offsets.log_end.0,
            // Nothing copied yet: where the link says to start.
            _ => self.source_offset(self.context.start_at).await?,
        };
        self.position = Some(position);
        let connection = self.connection.as_mut().ok_or(Stop::NotLeading)?;
        let fetched = fetch(connection, &name, self.index, position)
            .await
            .map_err(Stop::Failed)?;
        if fetched.error_code == code::OFFSET_OUT_OF_RANGE {
            return self
                .start_at_source_log_start(position, offsets.log_end.0)
                .await;
        }
        if fetched.error_code != 0 {
            return Err(Stop::Failed(format!(
                "the source answered the fetch of {name}-{} at {position} with {}",
                self.index,
                error_name(fetched.error_code)
            )));
        }
        let batches =
            batches_from(&fetched.records, position, offsets.log_end.0).map_err(Stop::Failed)?;
        let copied: u64 = batches.iter().map(|b| b.len() as u64).sum();
        let end = match batches.last() {
            Some(last) => {
                let end = RecordBatchHeader::parse(last).map_or(position, |h| h.next_offset().0);
                let first = batches
                    .first()
                    .and_then(|first| RecordBatchHeader::parse(first))
                    .map_or(position, |h| h.base_offset.0);
                let still_mirrored = {
                    let (shared, link, name) =
                        (shared.clone(), self.key.link.clone(), name.clone());
                    move || is_mirrored(&shared, &name, &link)
                };
                let gate = shared.failovers().copy_gate();
                append(handle.clone(), batches, still_mirrored, gate)
                    .await
                    .map_err(Stop::Failed)?;
                self.count_gap(offsets.log_end.0, first);
                end
            }
            None => position,
        };
        self.position = Some(end);
        follow_log_start(&handle, fetched.log_start_offset).await;
        self.context.status.copied(
            &self.key,
            fetched.high_watermark,
            end,
            copied,
            shared.clock().now_ms(),
        );
        Ok(())
    }

    /// A connection to the source partition's leader.
    async fn connect(&self) -> Result<Connection, String> {
        let settings = &self.context.settings;
        let (mut bootstrap, _) = spool_kafka_client::connect(settings, "mirror")
            .await
            .map_err(|error| error.to_string())?;
        bootstrap.guarded_only();
        let name = self.topic.record.name.to_string();
        let found = metadata(&mut bootstrap, Some(std::slice::from_ref(&name))).await?;
        let leader = found
            .topics
            .get(&name)
            .and_then(|topic| {
                usize::try_from(self.index)
                    .ok()
                    .and_then(|i| topic.leaders.get(i))
            })
            .copied()
            .ok_or_else(|| format!("the source has no partition {name}-{}", self.index))?;
        let address = found
            .brokers
            .get(&leader)
            .ok_or_else(|| format!("the source's partition {name}-{} has no leader", self.index))?;
        open(settings, address).await
    }

    /// The source has no records at `position` any more (retention, DeleteRecords):
    /// the copy goes on from where the source's log starts now. For a mirror that has
    /// records, what the source removed before it was copied becomes a gap here,
    /// counted once the next batch is appended past it ([`Copier::count_gap`]); a
    /// source whose log ends before `position` lost records the mirror has — that is
    /// an error, never papered over.
    async fn start_at_source_log_start(&mut self, position: i64, log_end: i64) -> Result<(), Stop> {
        let earliest = self.source_offset(-2).await?;
        if earliest <= position {
            let latest = self.source_offset(-1).await?;
            return Err(Stop::Failed(format!(
                "the source's log of {}-{} is {earliest}..{latest} and the mirror's ends at {position}: \
                 the source lost records the mirror has",
                self.key.topic, self.key.partition
            )));
        }
        self.skipping_from = (log_end > 0).then_some(log_end);
        self.position = Some(earliest);
        Ok(())
    }

    /// After a jump past records the source removed, the first append tells how many
    /// offsets the mirror skipped: from its end before (`log_end`) to the first batch
    /// copied (`first`), which may begin before the source's log start.
    fn count_gap(&mut self, log_end: i64, first: i64) {
        let Some(from) = self.skipping_from.take() else {
            return;
        };
        let skipped = first - from.max(log_end);
        if skipped > 0 {
            tracing::warn!(link = %self.key.link, topic = %self.key.topic,
                partition = self.key.partition, from, to = first,
                "the source removed records before they were copied: the mirror skipped them");
            self.context
                .status
                .skipped(&self.key, u64::try_from(skipped).unwrap_or(0));
        }
    }

    /// The source leader's offset for `timestamp` (-2 earliest, -1 latest).
    async fn source_offset(&mut self, timestamp: i64) -> Result<i64, Stop> {
        let name = self.topic.record.name.to_string();
        let connection = self.connection.as_mut().ok_or(Stop::NotLeading)?;
        offset_at(connection, &name, self.index, timestamp)
            .await
            .map_err(Stop::Failed)
    }
}

/// A partition's part of a fetch answer.
struct Fetched {
    error_code: i16,
    high_watermark: i64,
    log_start_offset: i64,
    records: Bytes,
}

/// Fetches `topic`-`partition` from `offset`, everything (read_uncommitted).
async fn fetch(
    connection: &mut Connection,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<Fetched, String> {
    // Up to v11: topics by name, and answers the guard describes.
    let version = version(connection, ApiKey::Fetch, 4..=11).await?;
    connection.set_timeout(Duration::from_millis(
        u64::try_from(FETCH_WAIT_MS).unwrap_or(500) + 30_000,
    ));
    let request = FetchRequest::default()
        .with_max_wait_ms(FETCH_WAIT_MS)
        .with_min_bytes(1)
        .with_max_bytes(PARTITION_FETCH_BYTES)
        .with_isolation_level(0)
        .with_topics(vec![
            FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_string(topic.to_owned())))
                .with_partitions(vec![
                    FetchPartition::default()
                        .with_partition(partition)
                        .with_fetch_offset(offset)
                        .with_partition_max_bytes(PARTITION_FETCH_BYTES),
                ]),
        ]);
    let answer: FetchResponse = call(connection, request, version).await?;
    if answer.error_code != 0 {
        return Err(format!(
            "the source refused the fetch: {}",
            error_name(answer.error_code)
        ));
    }
    let found = answer
        .responses
        .into_iter()
        .flat_map(|topic| topic.partitions)
        .find(|answer| answer.partition_index == partition)
        .ok_or_else(|| format!("the fetch did not answer for {topic}-{partition}"))?;
    Ok(Fetched {
        error_code: found.error_code,
        high_watermark: found.high_watermark,
        log_start_offset: found.log_start_offset,
        records: found.records.unwrap_or_default(),
    })
}

/// The whole batches of `records` that end past `position`, each checked (framing,
/// CRC). A last batch cut short (the fetch's size limit) is left for the next fetch;
/// an answer without one whole batch, or with a malformed one, is an error. A batch
/// that begins before the mirror's `log_end` cannot be appended at its own offsets:
/// an error, never a silent skip. (One that begins before `position` but not before
/// `log_end` — the source's log starts inside it — is copied whole.)
fn batches_from(records: &Bytes, position: i64, log_end: i64) -> Result<Vec<Bytes>, String> {
    let mut batches = Vec::new();
    // `whole`: the whole batches before this one.
    for (whole, frame) in BatchFrames::new(records).enumerate() {
        let (header, bytes) = match frame {
            Ok(frame) => frame,
            Err(BatchError::TruncatedHeader { .. } | BatchError::TruncatedBatch { .. })
                if whole > 0 =>
            {
                break;
            }
            Err(error) => {
                return Err(format!(
                    "the source's answer is malformed after {whole} whole batches: {error}"
                ));
            }
        };
        if header.next_offset().0 <= position {
            continue;
        }
        if header.base_offset.0 < log_end {
            return Err(format!(
                "the source's batch {}..{} straddles the mirror's end {log_end}",
                header.base_offset,
                header.last_offset()
            ));
        }
        batch::validate_batch(bytes, BatchRules::Stored).map_err(|error| {
            format!(
                "the source's batch at {} is corrupt: {error}",
                header.base_offset
            )
        })?;
        batches.push(records.slice_ref(bytes));
    }
    Ok(batches)
}

/// Whether `name` is still a mirror topic of `link` (not failed over, not gone).
fn is_mirrored(shared: &Shared, name: &str, link: &str) -> bool {
    shared
        .topics()
        .get(name)
        .is_some_and(|topic| topic.mirror.as_deref() == Some(link))
}

/// Appends `batches` at their own offsets, if the topic is `still_mirrored` just
/// before (a failover meanwhile made it writable: the fetch in flight is dropped), and
/// waits until they are durable. The check and the append hold `gate`'s read side:
/// once a failover's settling holds its write side, no copy appends again.
async fn append(
    handle: PartitionHandle,
    batches: Vec<Bytes>,
    still_mirrored: impl FnOnce() -> bool + Send + 'static,
    gate: Arc<std::sync::RwLock<()>>,
) -> Result<(), String> {
    let log = handle.log.clone();
    let bytes: usize = batches.iter().map(Bytes::len).sum();
    let end = on_blocking_pool(move || {
        let _copying = gate
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !still_mirrored() {
            return Err("the topic was failed over".to_owned());
        }
        let slices: Vec<&[u8]> = batches.iter().map(|b| b.as_ref()).collect();
        log.append_at_own_offsets(&slices)
            .map_err(|error| error.to_string())
    })
    .await
    .map_err(|error| error.to_string())??;
    // Shared-storage mode: the uploader takes it with its next object.
    handle.appended(bytes);
    let durable = handle.log.wait_durable(end.last_offset.plus(1));
    match tokio::time::timeout(DURABLE_WAIT, durable).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(format!("the copy did not become durable: {error}")),
        Err(_) => Err("the copy did not become durable in time".to_owned()),
    }
}

/// Moves the mirror's log start up to the source's (retention or DeleteRecords
/// there), as far as the mirror has records.
async fn follow_log_start(handle: &PartitionHandle, source_log_start: i64) {
    let offsets = handle.log.offsets();
    let target = Offset(source_log_start.min(offsets.high_watermark.0));
    if target <= offsets.log_start {
        return;
    }
    let handle = handle.clone();
    let moved = on_blocking_pool(move || handle.advance_log_start(target)).await;
    if let Ok(Err(error)) = moved {
        tracing::debug!(%error, "the mirror's log start stays");
    }
}

#[cfg(test)]
mod tests {
    use spool_model::Timestamp;
    use spool_protocol::plain::{PlainRecord, plain_batch};

    use super::*;

    /// A batch of `count` records at `base`.
    fn batch_at(base: i64, count: usize) -> Vec<u8> {
        let records = vec![
            PlainRecord {
                value: Some(b"v".to_vec()),
                ..PlainRecord::default()
            };
            count
        ];
        let mut batch = plain_batch(&records, Timestamp(1_000));
        batch::patch_base_offset(&mut batch, Offset(base));
        batch
    }

    fn bases(batches: &[Bytes]) -> Vec<i64> {
        batches
            .iter()
            .map(|b| RecordBatchHeader::parse(b).unwrap().base_offset.0)
            .collect()
    }

    #[test]
    fn a_source_log_starting_inside_a_batch_copies_that_batch_whole_into_an_empty_mirror() {
        let records = Bytes::from([batch_at(0, 10), batch_at(10, 5)].concat());
        // The source's log starts at 5 (inside the first batch): the mirror is empty.
        let batches = batches_from(&records, 5, 0).expect("copied");
        assert_eq!(bases(&batches), vec![0, 10]);
        // A mirror that has 0..3 cannot take the batch at its own offsets.
        let error = batches_from(&records, 5, 3).unwrap_err();
        assert!(error.contains("straddles"), "{error}");
        // Batches the mirror has are skipped.
        assert_eq!(bases(&batches_from(&records, 10, 10).unwrap()), vec![10]);
    }

    #[test]
    fn only_a_last_batch_cut_short_is_left_for_later_and_a_malformed_answer_is_an_error() {
        let whole = [batch_at(0, 3), batch_at(3, 3)].concat();
        // The fetch's size limit cut the last batch short.
        let cut = Bytes::from(whole[..whole.len() - 7].to_vec());
        assert_eq!(bases(&batches_from(&cut, 0, 0).unwrap()), vec![0]);
        // Nothing whole at all: an error, not an empty fetch forever.
        let first_cut = Bytes::from(whole[..20].to_vec());
        assert!(batches_from(&first_cut, 0, 0).is_err());
        // A frame whose length field is nonsense is malformed, not "partial".
        let mut broken = whole.clone();
        let second = batch_at(0, 3).len();
        broken[second + 8..second + 12].copy_from_slice(&3_i32.to_be_bytes());
        let error = batches_from(&Bytes::from(broken), 0, 0).unwrap_err();
        assert!(error.contains("malformed"), "{error}");
        // A corrupt batch (its CRC) is an error too.
        let mut corrupt = whole;
        let last = corrupt.len() - 1;
        corrupt[last] ^= 0xff;
        assert!(batches_from(&Bytes::from(corrupt), 0, 0).is_err());
    }
}
