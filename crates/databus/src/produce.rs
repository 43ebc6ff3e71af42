//! Produce through Databus: the batches of producers of no producer id (neither
//! idempotent nor transactional) wait up to `databus.linger.ms` in a queue per
//! partition; each round merges each queue's waiting batches (up to
//! `databus.batch.bytes`) into one batch compressed once with
//! `databus.compression.type`, and sends one Produce request per upstream leader
//! ([`send`]). A producer is answered after the upstream acknowledged the merged
//! batch, with the offset its own first record got; acks=0 producers are not
//! answered.
//!
//! Databus is itself an idempotent producer upstream (its own producer id, a
//! sequence per partition): a merged batch sent again after a lost answer (an
//! upstream broker killed, a leader moved) is kept once, so every acknowledged record
//! is upstream once. Order: a queue is taken in arrival order (a connection's
//! requests are queued before the next one is read), and a round waits for every
//! answer before the next, so one partition's batches reach the upstream in the
//! order they came; a batch that must be sent again goes back to the front of its
//! queue as it was (same bytes, same sequence). acks=0-only batches are sent without
//! a sequence, and go to the spill directory while the upstream is unreachable
//! ([`replay`], [`crate::spill`]).

mod replay;
mod send;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, ResponseKind, TopicName};
use spool_protocol::batch::{BatchFrames, validate_crc};
use spool_protocol::merge::is_mergeable;
use tokio::sync::{Notify, oneshot};

pub(crate) use self::send::run;
use crate::Bus;
use crate::spill::Spill;

/// Kafka's codes used here.
mod code {
    pub(super) const NONE: i16 = 0;
    pub(super) const CORRUPT_MESSAGE: i16 = 2;
    pub(super) const REQUEST_TIMED_OUT: i16 = 7;
    pub(super) const NETWORK_EXCEPTION: i16 = 13;
    pub(super) const INVALID_REQUIRED_ACKS: i16 = 21;
    /// The batch goes back to its queue as it was.
    pub(super) const RETRIABLE: [i16; 8] = [6, 5, 74, 3, 7, 13, 19, 20];
    /// Databus's producer is unknown or fenced upstream: a new one, and the batch
    /// merged again under it.
    pub(super) const PRODUCER_LOST: [i16; 4] = [45, 47, 49, 59];
    /// MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE: the merged batch is over the topic's
    /// limit; its producers' requests go again one at a time.
    pub(super) const TOO_LARGE: [i16; 2] = [10, 18];
}

/// What a producer's partition got.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    error: i16,
    base_offset: i64,
    log_append_time: i64,
    log_start: i64,
}

impl Outcome {
    fn failed(error: i16) -> Outcome {
        Outcome {
            error,
            base_offset: -1,
            log_append_time: -1,
            log_start: -1,
        }
    }
}

/// One producer request's batches for one partition.
#[derive(Debug)]
struct Pending {
    batches: Vec<Bytes>,
    bytes: usize,
    acks: i16,
    /// `None` for acks=0, or once answered.
    reply: Option<oneshot::Sender<Outcome>>,
    deadline: Instant,
}

impl Pending {
    fn answer(&mut self, outcome: Outcome) {
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(outcome);
        }
    }
}

/// A partition's batches queued (the answer to come), or refused at once.
type Queued = Result<oneshot::Receiver<Outcome>, i16>;

/// A queue: a topic and partition.
type QueueKey = (String, i32);

#[derive(Debug, Default)]
struct Queues {
    by_key: BTreeMap<QueueKey, VecDeque<Work>>,
    bytes: usize,
    /// When the oldest waiting batch came.
    oldest: Option<Instant>,
}

/// A queue's entries: one producer's request, or a merged batch sent before that
/// must go again as it was.
#[derive(Debug)]
struct Work {
    pendings: Vec<Pending>,
    sealed: Option<Sealed>,
    /// Sent without merging others into it: a merged batch over the topic's
    /// `max.message.bytes` is sent again one producer request at a time.
    alone: bool,
}

/// A merged batch as it was sent, and where each pending's records begin in it.
#[derive(Debug)]
struct Sealed {
    batch: Bytes,
    starts: Vec<i32>,
    /// Its first sequence, when sent by Databus's idempotent producer.
    base_sequence: Option<i32>,
}

/// Databus's own idempotent producer upstream.
#[derive(Debug, Default)]
struct Idempotence {
    /// (id, epoch); `None` until the upstream gave one.
    producer: Option<(i64, i16)>,
    /// The next sequence of each partition.
    next: HashMap<QueueKey, i32>,
}

/// The merging side of Databus.
#[derive(Debug)]
pub(crate) struct Merger {
    queues: Mutex<Queues>,
    wake: Notify,
    spill: Option<Spill>,
    idempotence: Mutex<Idempotence>,
}

/// What became of a produce request.
pub(crate) enum Accepted {
    /// Queued to be merged: its answer, when it comes (none for acks=0).
    Merged(std::pin::Pin<Box<dyn std::future::Future<Output = Option<ResponseKind>> + Send>>),
    /// Idempotent or transactional: sent as it came.
    AsIs(ProduceRequest),
}

impl Merger {
    pub(crate) fn new(spill: Option<Spill>) -> Merger {
        Merger {
            queues: Mutex::default(),
            wake: Notify::new(),
            spill,
            idempotence: Mutex::default(),
        }
    }

    /// Queues `request`'s batches (checked first: whole batches, CRCs matching).
    pub(crate) fn accept(&self, bus: &Bus, request: ProduceRequest) -> Accepted {
        let mergeable = request.transactional_id.is_none()
            && (request.topic_data.iter().flat_map(|t| &t.partition_data))
                .filter_map(|p| p.records.as_ref())
                .all(|records| {
                    BatchFrames::new(records)
                        .all(|frame| frame.is_ok_and(|(h, _)| is_mergeable(&h)))
                });
        if !mergeable {
            return Accepted::AsIs(request);
        }
        let acks = request.acks;
        let timeout = u64::try_from(request.timeout_ms.max(1_000)).unwrap_or(30_000);
        let deadline = Instant::now() + Duration::from_millis(timeout);
        let mut answers: Vec<(TopicName, Vec<(i32, Queued)>)> = Vec::new();
        {
            let mut queues = self.lock();
            for topic in request.topic_data {
                let mut partitions = Vec::new();
                for partition in topic.partition_data {
                    let records = partition.records.unwrap_or_default();
                    let queued = if !(-1..=1).contains(&acks) {
                        Err(code::INVALID_REQUIRED_ACKS)
                    } else if queues.bytes + records.len() > bus.config.buffer_bytes {
                        Err(code::REQUEST_TIMED_OUT)
                    } else {
                        split_batches(&records).map(|batches| {
                            let (reply, answer) = oneshot::channel();
                            queues.bytes += records.len();
                            queues.oldest.get_or_insert_with(Instant::now);
                            let key = (topic.name.0.to_string(), partition.index);
                            queues.by_key.entry(key).or_default().push_back(Work {
                                pendings: vec![Pending {
                                    batches,
                                    bytes: records.len(),
                                    acks,
                                    reply: (acks != 0).then_some(reply),
                                    deadline,
                                }],
                                sealed: None,
                                alone: false,
                            });
                            answer
                        })
                    };
                    partitions.push((partition.index, queued));
                }
                answers.push((topic.name, partitions));
            }
        }
        self.wake.notify_one();
        Accepted::Merged(Box::pin(async move {
            if acks == 0 {
                return None;
            }
            Some(ResponseKind::Produce(answered(answers, deadline).await))
        }))
    }

    /// Starts Databus's idempotent producer with the id and epoch the upstream gave;
    /// every partition's sequence from 0.
    pub(crate) fn set_producer(&self, id: i64, epoch: i16) {
        let mut idempotence = self.lock_idempotence();
        idempotence.producer = Some((id, epoch));
        idempotence.next.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queues> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_idempotence(&self) -> std::sync::MutexGuard<'_, Idempotence> {
        self.idempotence
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes from every queue: a batch to send again alone, else waiting requests up
    /// to `batch_bytes` (at least one).
    fn take_round(&self, batch_bytes: usize) -> Vec<(QueueKey, Work)> {
        let mut queues = self.lock();
        let mut round = Vec::new();
        let mut taken_bytes = 0;
        for (key, queue) in &mut queues.by_key {
            let Some(first) = queue.pop_front() else {
                continue;
            };
            let mut work = first;
            let mut bytes: usize = work.pendings.iter().map(|p| p.bytes).sum();
            if work.sealed.is_none() && !work.alone {
                while queue.front().is_some_and(|next| {
                    next.sealed.is_none()
                        && !next.alone
                        && bytes + next.pendings.iter().map(|p| p.bytes).sum::<usize>()
                            <= batch_bytes
                }) {
                    if let Some(next) = queue.pop_front() {
                        bytes += next.pendings.iter().map(|p| p.bytes).sum::<usize>();
                        work.pendings.extend(next.pendings);
                    }
                }
            }
            taken_bytes += bytes;
            round.push((key.clone(), work));
        }
        queues.by_key.retain(|_, queue| !queue.is_empty());
        queues.bytes = queues.bytes.saturating_sub(taken_bytes);
        queues.oldest = (!queues.by_key.is_empty()).then(Instant::now);
        round
    }

    /// Puts works back at the front of their queues.
    fn requeue(&self, works: Vec<(QueueKey, Work)>) {
        let mut queues = self.lock();
        for (key, work) in works.into_iter().rev() {
            queues.bytes += work.pendings.iter().map(|p| p.bytes).sum::<usize>();
            queues.by_key.entry(key).or_default().push_front(work);
        }
        if !queues.by_key.is_empty() {
            queues.oldest.get_or_insert_with(Instant::now);
        }
    }
}

/// The produce response of `answers` as they come, by `deadline`.
async fn answered(
    answers: Vec<(TopicName, Vec<(i32, Queued)>)>,
    deadline: Instant,
) -> ProduceResponse {
    let mut response = ProduceResponse::default();
    for (name, partitions) in answers {
        let mut topic = TopicProduceResponse::default().with_name(name);
        for (index, queued) in partitions {
            let outcome = match queued {
                Ok(answer) => match tokio::time::timeout_at(deadline.into(), answer).await {
                    Ok(Ok(outcome)) => outcome,
                    Ok(Err(_)) => Outcome::failed(code::NETWORK_EXCEPTION),
                    Err(_) => Outcome::failed(code::REQUEST_TIMED_OUT),
                },
                Err(error) => Outcome::failed(error),
            };
            topic.partition_responses.push(
                PartitionProduceResponse::default()
                    .with_index(index)
                    .with_error_code(outcome.error)
                    .with_base_offset(outcome.base_offset)
                    .with_log_append_time_ms(outcome.log_append_time)
                    .with_log_start_offset(outcome.log_start),
            );
        }
        response.responses.push(topic);
    }
    response
}

/// The batches of a partition's records, each whole with its CRC matching.
fn split_batches(records: &Bytes) -> Result<Vec<Bytes>, i16> {
    let mut batches = Vec::new();
    let mut at = 0;
    for frame in BatchFrames::new(records) {
        let (header, batch) = frame.map_err(|_| code::CORRUPT_MESSAGE)?;
        validate_crc(batch, &header).map_err(|_| code::CORRUPT_MESSAGE)?;
        batches.push(records.slice(at..at + batch.len()));
        at += batch.len();
    }
    if batches.is_empty() {
        return Err(code::CORRUPT_MESSAGE);
    }
    Ok(batches)
}
