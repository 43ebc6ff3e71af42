//! Reads anywhere (shared-storage mode): a broker that does not lead a partition
//! serves its committed records to consumers from object storage and the read cache —
//! BMQ's proxy reads, and the follower side of KIP-392 (see
//! `docs/cluster.md#racks-readers-and-preferred-replicas`).
//!
//! What such a broker may serve is what the catalogue says is committed: its high
//! watermark, log start and (from the producer state committed with it) the last
//! stable offset and the aborted transactions. It keeps those **marks** for each
//! partition consumers fetch here, read in one lookup for all of them every
//! [`REFRESH`] while they are fetched (the producer states only of the partitions
//! whose marks moved); a fetch that waits is woken by the refresh that finds the high
//! watermark moved. The bytes come from the same ranges the leader reads below its
//! tail, so both serve the same batches at the same offsets.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use spool_log::{AbortedTxn, ReadResult};
use spool_metadata::{CommittedMarks, MetadataError, PartitionKey};
use spool_model::Offset;
use spool_shared_storage::SharedStorage;
use tokio::sync::watch;

use crate::partitions::{CommittedBounds, ObjectRead, PartitionError, read_from_objects};

pub(crate) mod preferred;

/// How often the marks of the partitions fetched here are read again: what a fetch
/// waiting on a broker that does not lead its partition waits past a commit at most.
const REFRESH: Duration = Duration::from_millis(25);

/// Marks older than this are read again before a fetch uses them (the refresher fell
/// behind: the metadata store is slow, or the partition was not fetched for a while).
const FRESH: Duration = Duration::from_millis(250);

/// A partition not fetched here for this long is no longer refreshed.
const IDLE: Duration = Duration::from_secs(10);

/// The committed marks of the partitions consumers fetch from this broker, which
/// leads none of them.
#[derive(Debug)]
pub(crate) struct ReplicaReads {
    storage: Arc<SharedStorage>,
    watched: Mutex<HashMap<PartitionKey, Arc<Watched>>>,
    /// What `Watched::asked` counts from.
    origin: Instant,
}

#[derive(Debug)]
struct Watched {
    marks: watch::Sender<Committed>,
    /// When a fetch last asked for the partition (ms since `ReplicaReads::origin`).
    asked: AtomicU64,
}

/// A partition's committed marks as last read from the catalogue.
#[derive(Debug, Clone)]
pub(crate) struct Committed {
    pub(crate) leader_epoch: i32,
    pub(crate) bounds: CommittedBounds,
    /// The aborted transactions the producer state keeps, oldest first.
    aborted: Arc<[AbortedTxn]>,
    read_at: Instant,
}

impl Committed {
    /// The aborted transactions with records in `from..to`.
    fn aborted_between(&self, from: Offset, to: Offset) -> Vec<AbortedTxn> {
        self.aborted
            .iter()
            .filter(|txn| txn.last_offset >= from && txn.first_offset < to)
            .copied()
            .collect()
    }

    fn same_marks(&self, other: &Committed) -> bool {
        self.leader_epoch == other.leader_epoch && self.bounds == other.bounds
    }

    /// Whether `self` was read no earlier than `other`: marks only move forward, so a
    /// slower refresh that read them first never replaces a newer one.
    fn not_older_than(&self, other: &Committed) -> bool {
        let marks = |c: &Committed| {
            (
                c.leader_epoch,
                c.bounds.high_watermark,
                c.bounds.log_start,
                c.bounds.last_stable,
            )
        };
        let (mine, theirs) = (marks(self), marks(other));
        mine.0 > theirs.0
            || (mine.0 == theirs.0
                && mine.1 >= theirs.1
                && mine.2 >= theirs.2
                && mine.3 >= theirs.3)
    }

    /// When the marks were read from the catalogue.
    pub(crate) fn read_at(&self) -> Instant {
        self.read_at
    }
}

impl ReplicaReads {
    pub(crate) fn new(storage: Arc<SharedStorage>) -> ReplicaReads {
        ReplicaReads {
            storage,
            watched: Mutex::new(HashMap::new()),
            origin: Instant::now(),
        }
    }

    /// Notes that a fetch asks for each partition of `wanted` from an offset, and
    /// reads the marks of those that have none here yet, only stale ones, or a high
    /// watermark below the offset (the consumer may have seen a newer one at the
    /// leader: whether the offset is out of range is the catalogue's to say), so that
    /// the fetch's blocking work finds them.
    pub(crate) async fn prepare(
        &self,
        wanted: &[(PartitionKey, Offset)],
    ) -> Result<(), MetadataError> {
        let now = self.since_origin();
        let stale: Vec<PartitionKey> = {
            let watched = self.lock();
            wanted
                .iter()
                .filter(|(key, offset)| match watched.get(key) {
                    Some(known) => {
                        known.asked.store(now, Ordering::Relaxed);
                        let marks = known.marks.borrow();
                        marks.read_at.elapsed() > FRESH || *offset > marks.bounds.high_watermark
                    }
                    None => true,
                })
                .map(|(key, _)| *key)
                .collect()
        };
        if stale.is_empty() {
            return Ok(());
        }
        self.refresh(&stale).await
    }

    /// The partition's marks and a watch on them, if a fetch prepared it.
    pub(crate) fn committed(
        &self,
        key: PartitionKey,
    ) -> Option<(Committed, watch::Receiver<Committed>)> {
        let watched = self.lock().get(&key).cloned()?;
        let receiver = watched.marks.subscribe();
        let committed = receiver.borrow().clone();
        Some((committed, receiver))
    }

    /// Whole batches of the partition from `wanted.offset`, within `committed`.
    /// Blocking.
    pub(crate) fn read(
        &self,
        key: PartitionKey,
        committed: &Committed,
        wanted: ObjectRead,
    ) -> Result<ReadResult, PartitionError> {
        read_from_objects(&self.storage, key, &committed.bounds, wanted, |from, to| {
            committed.aborted_between(from, to)
        })
    }

    /// Refreshes the marks of the partitions fetched lately, every [`REFRESH`], until
    /// the broker stops; forgets those not fetched for [`IDLE`].
    pub(crate) async fn run(self: Arc<Self>, mut stopped: watch::Receiver<bool>) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(REFRESH) => {}
                _ = stopped.changed() => return,
            }
            let keys: Vec<PartitionKey> = {
                let idle_before = self
                    .since_origin()
                    .saturating_sub(u64::try_from(IDLE.as_millis()).unwrap_or(u64::MAX));
                let mut watched = self.lock();
                watched.retain(|_, known| known.asked.load(Ordering::Relaxed) >= idle_before);
                watched.keys().copied().collect()
            };
            if keys.is_empty() {
                continue;
            }
            if let Err(error) = self.refresh(&keys).await {
                tracing::debug!(%error, "cannot read the committed marks of the partitions read here");
            }
        }
    }

    /// Reads the marks of `keys` (one lookup), and the producer states of those
    /// whose marks moved (another), and publishes them.
    async fn refresh(&self, keys: &[PartitionKey]) -> Result<(), MetadataError> {
        let catalogue = self.storage.catalogue();
        let marks = catalogue.committed_marks(keys, false).await?;
        let moved: Vec<PartitionKey> = {
            let watched = self.lock();
            marks
                .iter()
                .filter(|m| {
                    watched.get(&m.key).is_none_or(|known| {
                        let known = known.marks.borrow();
                        known.leader_epoch != m.leader_epoch
                            || known.bounds.high_watermark.0 != m.high_watermark
                            || known.bounds.log_start.0 != m.log_start
                    })
                })
                .map(|m| m.key)
                .collect()
        };
        let states: HashMap<PartitionKey, CommittedMarks> = if moved.is_empty() {
            HashMap::new()
        } else {
            catalogue
                .committed_marks(&moved, true)
                .await?
                .into_iter()
                .map(|m| (m.key, m))
                .collect()
        };
        let now = self.since_origin();
        let mut watched = self.lock();
        for mark in marks {
            let fresh = match states.get(&mark.key) {
                Some(with_state) => committed_of(with_state),
                None => {
                    let Some(known) = watched.get(&mark.key) else {
                        continue;
                    };
                    let mut same = known.marks.borrow().clone();
                    same.read_at = Instant::now();
                    same
                }
            };
            match watched.get(&mark.key) {
                Some(known) => {
                    known.marks.send_if_modified(|current| {
                        if !fresh.not_older_than(current) {
                            return false;
                        }
                        let moved = !current.same_marks(&fresh);
                        *current = fresh;
                        moved
                    });
                }
                None => {
                    watched.insert(
                        mark.key,
                        Arc::new(Watched {
                            marks: watch::Sender::new(fresh),
                            asked: AtomicU64::new(now),
                        }),
                    );
                }
            }
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PartitionKey, Arc<Watched>>> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn since_origin(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// The marks a reader serves by, from a catalogue row read with its producer state.
fn committed_of(marks: &CommittedMarks) -> Committed {
    let high_watermark = Offset(marks.high_watermark);
    let (last_stable, aborted) = match &marks.producer_state {
        None => (high_watermark, Vec::new()),
        Some(encoded) => spool_log::transactions_in(encoded, high_watermark).unwrap_or_else(|| {
            // Never written so by a leader: serve nothing read_committed rather
            // than records of transactions that may be open.
            tracing::warn!(partition = ?marks.key, "the catalogue's producer state does not decode");
            (Offset(marks.log_start), Vec::new())
        }),
    };
    Committed {
        leader_epoch: marks.leader_epoch,
        bounds: CommittedBounds {
            log_start: Offset(marks.log_start),
            high_watermark,
            last_stable,
        },
        aborted: aborted.into(),
        read_at: Instant::now(),
    }
}
