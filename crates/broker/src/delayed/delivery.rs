//! The leader's side of delayed delivery. Every [`TICK`], for each partition of a
//! topic with `delivery.delay.enable` that this broker leads:
//!
//! 1. **Note** the holds written since the last round: the log from the store's
//!    searched-through mark to the high watermark is read batch by batch (a header
//!    check, no inflating), each hold's due time noted in the store with the new
//!    mark. The store, not memory, keeps the timer; a leader that takes over (or
//!    restarts) resumes at the mark.
//! 2. **Deliver** what is due: the held records are appended again as one plain batch
//!    (timestamp: now; headers `spool.delayed-from` and `spool.delayed-offset` added),
//!    after the store has the intent (the log end before the append); once the batch
//!    is durable their rows go (waited for apart: rounds go on meanwhile, and skip
//!    what is in flight). A row found with an intent is first looked for in the
//!    log from there, so a delivery interrupted by a crash is not made twice.
//!
//! In memory, per partition, only its mark and its next due time.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use spool_metadata::{DelayedRecord, PartitionKey};
use spool_model::{Offset, Timestamp};
use spool_protocol::batch::BatchFrames;
use spool_protocol::internal::{self, Kind};
use spool_protocol::keyed::BatchRecords;
use tokio::sync::watch;

use crate::partitions::{PartitionError, PartitionHandle, on_blocking_pool};
use crate::shared::Shared;
use crate::topics::Topic;

/// When the record was produced (epoch ms, decimal ASCII).
pub(crate) const DELAYED_FROM: &str = "spool.delayed-from";
/// The offset its hold had in the partition (decimal ASCII).
pub(crate) const DELAYED_OFFSET: &str = "spool.delayed-offset";

/// How often each partition is looked at: due records are delivered within about
/// this much of their time, plus the append.
const TICK: Duration = Duration::from_millis(20);
/// Records delivered in one round of a partition (one batch).
const DUE_PER_ROUND: i64 = 500;
/// How often a partition's pending holds are counted for `/metrics`.
const COUNT_EVERY: Duration = Duration::from_secs(1);
/// Bytes of log read per step of noting holds.
const NOTE_READ_BYTES: u64 = 1 << 20;
/// Steps of noting holds per round: a partition with much to catch up on (delayed
/// delivery just turned on) does not hold up the others' deliveries.
const NOTE_READS_PER_ROUND: usize = 16;

/// What this broker remembers of a partition between rounds.
#[derive(Debug, Default, Clone)]
struct PartitionTimer {
    /// The store's searched-through mark, once read.
    noted_through: Option<i64>,
    /// The earliest due time of its pending holds (`None`: unknown, ask the store).
    next_due: Option<Option<i64>>,
    /// Holds whose delivery is appended and not yet durable: a round does not deliver
    /// them again (rounds go on while deliveries wait for their fsync or upload).
    in_flight: Arc<Mutex<BTreeSet<i64>>>,
    /// The partition, as opened under its current leader epoch.
    partition: Option<PartitionHandle>,
    /// The pending count as last read, and when.
    pending: i64,
    counted_at: Option<std::time::Instant>,
}

/// Runs the rounds until the broker stops.
pub(crate) async fn run(shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    let mut timers: HashMap<PartitionKey, PartitionTimer> = HashMap::new();
    loop {
        tokio::select! {
            () = tokio::time::sleep(TICK) => {}
            _ = stopped.changed() => return,
        }
        let mut seen = std::collections::HashSet::new();
        for topic in shared.topics().matching(|topic| topic.delay.is_some()) {
            for index in 0..topic.record.partitions {
                if shared.partitions().led_epoch(&topic, index).is_none() {
                    continue;
                }
                let key = topic.partition_key(index);
                seen.insert(key);
                let timer = timers.entry(key).or_default();
                if let Err(error) = round(&shared, &topic, index, key, timer).await {
                    // The next round tries again from the store's state.
                    timer.noted_through = None;
                    timer.next_due = None;
                    timer.partition = None;
                    tracing::debug!(topic = %topic.record.name, partition = index, %error, "delayed delivery round failed");
                }
            }
        }
        // Partitions no longer led (or deleted) are read from the store again if they
        // come back.
        timers.retain(|key, _| seen.contains(key));
        shared.delayed().retain(&seen);
    }
}

/// Why a round stopped.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error("{0}")]
    Partition(#[from] PartitionError),
    #[error("metadata store: {0}")]
    Store(#[from] spool_metadata::MetadataError),
}

async fn round(
    shared: &Arc<Shared>,
    topic: &Arc<Topic>,
    index: i32,
    key: PartitionKey,
    timer: &mut PartitionTimer,
) -> Result<(), RoundError> {
    // The handle is kept while the leader epoch stays: an idle partition's round
    // then costs a look at its high watermark and nothing else.
    let epoch = shared.partitions().led_epoch(topic, index);
    let partition = match &timer.partition {
        Some(partition) if Some(partition.leader_epoch) == epoch => partition.clone(),
        _ => {
            // Another leader may have noted and delivered meanwhile: start from the
            // store's state again.
            timer.noted_through = None;
            timer.next_due = None;
            let partition = shared.partitions().open(topic.clone(), index, -1).await?;
            timer.partition = Some(partition.clone());
            partition
        }
    };
    let noted = note_holds(shared, &partition, key, timer).await?;
    let now = shared.clock().now_ms();
    let next_due = match timer.next_due {
        Some(next) if !noted => next,
        _ => refresh(shared, key, timer).await?,
    };
    if next_due.is_none_or(|due| due > now) {
        return Ok(());
    }
    // Rows in flight are still in the store and sort first: ask for that many more.
    let in_flight_count = i64::try_from(lock(&timer.in_flight).len()).unwrap_or(0);
    let mut due = shared
        .metadata()
        .due_holds(key, now, DUE_PER_ROUND + in_flight_count)
        .await?;
    {
        let in_flight = lock(&timer.in_flight);
        due.retain(|hold| !in_flight.contains(&hold.hold_offset));
    }
    deliver(
        shared,
        &partition,
        key,
        &due,
        &timer.in_flight,
        topic.max_message_bytes,
    )
    .await?;
    refresh(shared, key, timer).await?;
    Ok(())
}

/// Reads the partition's next due time from the store (one row, by index), and at
/// most every [`COUNT_EVERY`] the pending count `/metrics` shows (a count reads every
/// row: with a million waiting, far too slow for every round).
async fn refresh(
    shared: &Shared,
    key: PartitionKey,
    timer: &mut PartitionTimer,
) -> Result<Option<i64>, RoundError> {
    let next_due_ms = if timer
        .counted_at
        .is_none_or(|at| at.elapsed() >= COUNT_EVERY)
    {
        let pending = shared.metadata().pending_holds(key).await?;
        timer.counted_at = Some(std::time::Instant::now());
        timer.pending = pending.count;
        pending.next_due_ms
    } else {
        shared.metadata().next_hold_due(key).await?
    };
    shared.delayed().set(
        key,
        spool_metadata::PendingHolds {
            count: timer.pending,
            next_due_ms,
        },
    );
    timer.next_due = Some(next_due_ms);
    Ok(next_due_ms)
}

/// Step 1: notes the holds between the store's mark and the high watermark; whether
/// it noted any.
async fn note_holds(
    shared: &Arc<Shared>,
    partition: &PartitionHandle,
    key: PartitionKey,
    timer: &mut PartitionTimer,
) -> Result<bool, RoundError> {
    let mut noted = false;
    let mut through = match timer.noted_through {
        Some(through) => through,
        None => shared.metadata().holds_noted_through(key).await?,
    };
    // Only what is durable: with interval flushing the high watermark runs ahead of
    // the fsync, and a crash could take back (and reuse) offsets noted beyond it.
    let offsets = partition.log.offsets();
    let high_watermark = offsets.high_watermark.0.min(offsets.durable.0);
    through = through.max(partition.log_start().0);
    let mut reads = 0;
    while through < high_watermark && reads < NOTE_READS_PER_ROUND {
        reads += 1;
        let (holds, next) = {
            let partition = partition.clone();
            on_blocking_pool(move || holds_from(&partition, through, high_watermark)).await??
        };
        if next <= through {
            break;
        }
        noted |= !holds.is_empty();
        shared.metadata().note_holds(key, &holds, next).await?;
        through = next;
    }
    timer.noted_through = Some(through);
    Ok(noted)
}

/// The holds (offset, due ms) in one read of the log from `from`, below `end`, and
/// where the next read starts. Blocking.
fn holds_from(
    partition: &PartitionHandle,
    from: i64,
    end: i64,
) -> Result<(Vec<(i64, i64)>, i64), PartitionError> {
    let bytes = partition.read_bytes(Offset(from), NOTE_READ_BYTES)?;
    let mut holds = Vec::new();
    let mut next = from;
    for frame in BatchFrames::new(&bytes) {
        let Ok((header, batch)) = frame else { break };
        if header.base_offset.0 >= end {
            break;
        }
        if internal::kind_of(batch) == Some(Kind::Hold)
            && let Some(hold) = internal::read_hold(batch)
        {
            holds.push((header.base_offset.0, hold.due.0));
        }
        next = header.last_offset().0 + 1;
    }
    Ok((holds, next))
}

/// Step 2: delivers `due` records as one batch, exactly once.
async fn deliver(
    shared: &Arc<Shared>,
    partition: &PartitionHandle,
    key: PartitionKey,
    due: &[DelayedRecord],
    in_flight: &Arc<Mutex<BTreeSet<i64>>>,
    max_bytes: usize,
) -> Result<(), RoundError> {
    if due.is_empty() {
        return Ok(());
    }
    let Prepared {
        batch,
        offsets,
        done,
    } = {
        let (partition, due, now) = (partition.clone(), due.to_vec(), shared.clock().timestamp());
        on_blocking_pool(move || prepare(&partition, &due, max_bytes, now)).await??
    };
    // Delivered before a crash, or gone with retention: nothing more to do for them.
    shared.metadata().holds_delivered(key, &done).await?;
    let Some(batch) = batch else {
        return Ok(());
    };
    let log_end = partition.log.offsets().log_end.0;
    shared
        .metadata()
        .begin_delivery(key, &offsets, log_end)
        .await?;
    let appended = {
        let partition = partition.clone();
        on_blocking_pool(move || {
            let info = partition.log.append(&[&batch])?;
            partition.appended(batch.len());
            Ok::<_, PartitionError>(info)
        })
        .await??
    };
    // Durability is waited for apart, so that the next rounds go on meanwhile.
    lock(in_flight).extend(offsets.iter().copied());
    let (shared, partition, in_flight) = (shared.clone(), partition.clone(), in_flight.clone());
    tokio::spawn(async move {
        let durable = partition.log.wait_durable(appended.next_offset()).await;
        let forgotten = match durable {
            Ok(()) => shared
                .metadata()
                .holds_delivered(key, &offsets)
                .await
                .map_err(|e| e.to_string()),
            Err(error) => Err(error.to_string()),
        };
        if let Err(error) = forgotten {
            // The rows keep their intent: a later round finds the delivery, if it
            // was kept, before delivering again.
            tracing::warn!(%error, "a delayed delivery was not confirmed");
        }
        let mut in_flight = lock(&in_flight);
        for offset in &offsets {
            in_flight.remove(offset);
        }
    });
    Ok(())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a round delivers.
struct Prepared {
    /// The batch delivering the due records; `None` if none is left to deliver.
    batch: Option<Vec<u8>>,
    /// The hold offsets it delivers.
    offsets: Vec<i64>,
    /// Holds needing nothing more: delivered before, or no longer in the log.
    done: Vec<i64>,
}

/// Reads the due holds and builds their delivery. Blocking.
fn prepare(
    partition: &PartitionHandle,
    due: &[DelayedRecord],
    max_bytes: usize,
    now: Timestamp,
) -> Result<Prepared, PartitionError> {
    let mut batch_bytes = 0usize;
    let log_start = partition.log_start().0;
    let mut holds = Vec::new();
    let mut extra = Vec::new();
    let mut offsets = Vec::new();
    let mut done = Vec::new();
    let mut window = ReadWindow::default();
    // Rows with an intent: a delivery begun before a crash may be in the log.
    let delivered = match due.iter().filter_map(|record| record.delivering_from).min() {
        Some(from) => delivered_since(partition, from)?,
        None => std::collections::HashSet::new(),
    };
    for record in due {
        let hold_offset = record.hold_offset;
        if record.hold_offset < log_start {
            tracing::warn!(
                hold = hold_offset,
                log_start,
                "a delayed record was removed by retention before it was due"
            );
            done.push(hold_offset);
            continue;
        }
        if record.delivering_from.is_some() && delivered.contains(&hold_offset) {
            done.push(hold_offset);
            continue;
        }
        let hold = window.hold_at(partition, hold_offset)?;
        let Some(hold) = hold else {
            tracing::warn!(
                hold = hold_offset,
                "no hold batch at a noted offset; forgetting it"
            );
            done.push(hold_offset);
            continue;
        };
        extra.push(vec![
            (DELAYED_FROM, hold.produced.0.to_string().into_bytes()),
            (DELAYED_OFFSET, hold_offset.to_string().into_bytes()),
        ]);
        // A delivery stays within the topic's max.message.bytes (the first record
        // whatever its size): what is left goes in the next round.
        let size = hold_size(&hold);
        if !holds.is_empty() && batch_bytes + size > max_bytes {
            extra.pop();
            break;
        }
        batch_bytes += size;
        holds.push(hold);
        offsets.push(hold_offset);
    }
    let batch = (!holds.is_empty()).then(|| internal::delivery_batch(&holds, &extra, now));
    Ok(Prepared {
        batch,
        offsets,
        done,
    })
}

/// The stretch of log last read for holds: due holds mostly lie close together (records
/// produced together are due together), so one read serves many.
#[derive(Default)]
struct ReadWindow {
    /// The first offset read and the offset after the last batch.
    from: i64,
    to: i64,
    bytes: Vec<u8>,
    /// Where the last hold found starts (byte position, offset): the next search
    /// starts there when it asks for a later offset.
    resume: (usize, i64),
}

/// Bytes of log one read for holds takes.
const HOLD_READ_BYTES: u64 = 256 << 10;

impl ReadWindow {
    /// The hold batch at `offset`; `None` if there is none there. Blocking.
    fn hold_at(
        &mut self,
        partition: &PartitionHandle,
        offset: i64,
    ) -> Result<Option<internal::Hold>, PartitionError> {
        if !(self.from..self.to).contains(&offset) {
            self.bytes = partition.read_bytes(Offset(offset), HOLD_READ_BYTES)?;
            self.from = offset;
            self.to = BatchFrames::new(&self.bytes)
                .map_while(Result::ok)
                .last()
                .map_or(offset, |(header, _)| header.last_offset().0 + 1);
            self.resume = (0, offset);
        }
        let start = if offset >= self.resume.1 {
            self.resume.0
        } else {
            0
        };
        let mut position = start;
        for (header, batch) in
            BatchFrames::new(self.bytes.get(start..).unwrap_or_default()).map_while(Result::ok)
        {
            if header.base_offset.0 > offset {
                break;
            }
            if header.base_offset.0 == offset {
                self.resume = (position, offset);
                return Ok(internal::read_hold(batch));
            }
            position += batch.len();
        }
        Ok(None)
    }
}

/// About what a held record takes in a batch.
fn hold_size(hold: &internal::Hold) -> usize {
    let headers: usize = hold
        .headers
        .iter()
        .map(|(name, value)| name.len() + value.as_ref().map_or(0, Vec::len) + 4)
        .sum();
    64 + hold.key.as_ref().map_or(0, Vec::len) + hold.value.as_ref().map_or(0, Vec::len) + headers
}

/// The holds whose deliveries are in the log from `from` on (by their
/// `spool.delayed-offset` header): one scan for all the rows a round finds with an
/// intent. Blocking.
fn delivered_since(
    partition: &PartitionHandle,
    from: i64,
) -> Result<std::collections::HashSet<i64>, PartitionError> {
    let mut delivered = std::collections::HashSet::new();
    let end = partition.log.offsets().log_end.0;
    let mut at = from.max(partition.log_start().0);
    while at < end {
        let bytes = partition.read_bytes(Offset(at), NOTE_READ_BYTES)?;
        let before = at;
        for frame in BatchFrames::new(&bytes) {
            let Ok((header, batch)) = frame else { break };
            at = header.last_offset().0 + 1;
            if header.is_control() || !internal::is_delivery(&header) {
                continue;
            }
            let Ok(records) = BatchRecords::read(batch, 64 << 20) else {
                continue;
            };
            for record in records.records().into_iter().flatten() {
                let offset = record
                    .headers()
                    .into_iter()
                    .flatten()
                    .find_map(|(name, value)| {
                        (name == DELAYED_OFFSET.as_bytes())
                            .then(|| std::str::from_utf8(value?).ok()?.parse::<i64>().ok())
                            .flatten()
                    });
                delivered.extend(offset);
            }
        }
        if at == before {
            break;
        }
    }
    Ok(delivered)
}
