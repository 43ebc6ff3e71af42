//! One share-partition: the records of one topic partition as one share group reads
//! them, kept by the partition's leader.
//!
//! Everything below the start offset (SPSO) is done with; from it to the end offset
//! (SPEO, exclusive) every record is in flight, in one of Kafka's states:
//!
//! ```text
//!   Available --acquire--> Acquired --Accept--> Acknowledged
//!       ^                     |  |----Reject / Gap------> Archived
//!       '---Release / lock expiry (after the backoff)      ^
//!                             '--- ... at the delivery limit ----'
//! ```
//!
//! A record is acquired by one member, for the lock duration, and its delivery
//! count goes up by one; only that member may acknowledge it. A released or expired
//! record that has been delivered as often as the limit allows is archived instead,
//! and becomes a dead letter; so does a rejected one. The start moves over every
//! acknowledged or archived record at its front; records past the end are acquired
//! straight from the log, while fewer than `share.partition.max.record.locks` are in
//! flight.
//!
//! Records are kept one entry per offset: the window is at most a few thousand
//! records, and acknowledgements come per record anyway.

mod stored;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

pub use self::stored::{StoredBatch, StoredPartition, StoredState};
use crate::error::ShareError;
use crate::settings::ShareSettings;

/// A record's state, by Kafka's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    Available,
    Acquired,
    Acknowledged,
    Archived,
}

/// How a member acknowledges a record (the wire's AcknowledgeType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckType {
    /// No record at the offset (compacted away, a control record): archived.
    Gap,
    Accept,
    /// Deliver it again (to anyone), after the group's backoff.
    Release,
    /// It cannot be processed: archived, and a dead letter.
    Reject,
}

impl AckType {
    /// The type of a wire code (0 to 3).
    pub fn from_code(code: i8) -> Result<AckType, ShareError> {
        match code {
            0 => Ok(AckType::Gap),
            1 => Ok(AckType::Accept),
            2 => Ok(AckType::Release),
            3 => Ok(AckType::Reject),
            other => Err(ShareError::InvalidRequest(format!(
                "acknowledge type {other} is not one of 0 (gap), 1 (accept), 2 (release), 3 (reject)"
            ))),
        }
    }
}

/// The acknowledgement of the records `first..=last`: one type for all of them, or
/// one per record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckBatch {
    pub first: i64,
    pub last: i64,
    pub types: Vec<AckType>,
}

/// Records a member acquired: `first..=last`, each delivered `delivery_count` times
/// now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquiredRange {
    pub first: i64,
    pub last: i64,
    pub delivery_count: u16,
}

/// Why a record became a dead letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadLetterReason {
    Rejected,
    DeliveryCountLimit,
}

impl DeadLetterReason {
    /// What the dead letter's header says.
    #[must_use]
    pub fn message(self) -> &'static str {
        match self {
            DeadLetterReason::Rejected => "the record was rejected by a consumer",
            DeadLetterReason::DeliveryCountLimit => "the record reached its delivery count limit",
        }
    }
}

/// A record archived as undeliverable, for the dead-letter topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeadLetter {
    pub offset: i64,
    pub delivery_count: u16,
    pub reason: DeadLetterReason,
}

/// What a change did, for the broker to act on: store the partition again (when
/// `stored` changed), write the dead letters, count.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Whether what the store keeps changed.
    pub changed: bool,
    pub dead_letters: Vec<DeadLetter>,
    pub accepted: u64,
    pub released: u64,
    pub rejected: u64,
    /// Acquired records whose lock ran out.
    pub expired: u64,
    /// Whether a record became available again (a waiting fetch may take it).
    pub made_available: bool,
}

impl Outcome {
    fn absorb(&mut self, other: Outcome) {
        self.changed |= other.changed;
        self.dead_letters.extend(other.dead_letters);
        self.accepted += other.accepted;
        self.released += other.released;
        self.rejected += other.rejected;
        self.expired += other.expired;
        self.made_available |= other.made_available;
    }
}

/// A member, as the records it holds name it.
pub type MemberId = Arc<str>;

#[derive(Debug, Clone)]
struct InFlight {
    state: RecordState,
    delivery_count: u16,
    /// The member holding it, while acquired.
    owner: Option<MemberId>,
    /// While acquired: when the lock runs out. While available: not before this
    /// (the backoff).
    until: Option<Instant>,
}

/// One share-partition's records in flight.
#[derive(Debug, Clone)]
pub struct SharePartition {
    start: i64,
    end: i64,
    records: BTreeMap<i64, InFlight>,
}

/// How many records are in each state, for describing the partition.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InFlightCounts {
    pub available: u64,
    pub acquired: u64,
    pub acknowledged: u64,
    pub archived: u64,
}

impl SharePartition {
    /// A share-partition nobody has read yet, starting at `start`.
    #[must_use]
    pub fn new(start: i64) -> SharePartition {
        SharePartition {
            start,
            end: start,
            records: BTreeMap::new(),
        }
    }

    /// The start offset: every record before it is done with.
    #[must_use]
    pub fn start(&self) -> i64 {
        self.start
    }

    /// The end offset: the first record never acquired.
    #[must_use]
    pub fn end(&self) -> i64 {
        self.end
    }

    /// The records in flight, by state.
    #[must_use]
    pub fn counts(&self) -> InFlightCounts {
        let mut counts = InFlightCounts::default();
        for record in self.records.values() {
            match record.state {
                RecordState::Available => counts.available += 1,
                RecordState::Acquired => counts.acquired += 1,
                RecordState::Acknowledged => counts.acknowledged += 1,
                RecordState::Archived => counts.archived += 1,
            }
        }
        counts
    }

    /// Where a fetch should read from: the first record available again, or the end
    /// if records past it exist (below `high_watermark`) and the window has room.
    /// `None`: nothing to acquire now.
    #[must_use]
    pub fn next_to_read(
        &self,
        now: Instant,
        high_watermark: i64,
        settings: &ShareSettings,
    ) -> Option<i64> {
        let redelivery = self
            .records
            .iter()
            .find(|(_, record)| is_available(record, now))
            .map(|(offset, _)| *offset);
        let fresh = (self.end < high_watermark && self.has_room(settings)).then_some(self.end);
        match (redelivery, fresh) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn has_room(&self, settings: &ShareSettings) -> bool {
        self.end - self.start < i64::from(settings.partition_max_record_locks)
    }

    /// Moves the start up to `log_start` when the log no longer has what it pointed
    /// at (retention, DeleteRecords): those records are gone for every reader.
    pub fn follow_log_start(&mut self, log_start: i64) -> bool {
        if log_start <= self.start {
            return false;
        }
        self.records = self.records.split_off(&log_start);
        self.start = log_start;
        self.end = self.end.max(log_start);
        true
    }

    /// Acquires for `member`, until `now + lock`, the records it may have among
    /// `from..=to` (what the log read covered: offsets without a record are
    /// acquired too, and acknowledged as gaps): those available again, then new ones
    /// past the end, at most `max_records` (whole ranges) and within the window.
    pub fn acquire(
        &mut self,
        member: &MemberId,
        now: Instant,
        (from, to): (i64, i64),
        max_records: usize,
        settings: &ShareSettings,
    ) -> Vec<AcquiredRange> {
        let deadline = now + settings.record_lock_duration;
        let mut acquired: Vec<(i64, u16)> = Vec::new();
        let from = from.max(self.start);
        let redeliver_to = to.min(self.end - 1);
        if from <= redeliver_to {
            for (offset, record) in self.records.range_mut(from..=redeliver_to) {
                if acquired.len() >= max_records {
                    break;
                }
                if is_available(record, now) {
                    record.state = RecordState::Acquired;
                    record.delivery_count = record.delivery_count.saturating_add(1);
                    record.owner = Some(member.clone());
                    record.until = Some(deadline);
                    acquired.push((*offset, record.delivery_count));
                }
            }
        }
        if from <= self.end {
            while self.end <= to && acquired.len() < max_records && self.has_room(settings) {
                self.records.insert(
                    self.end,
                    InFlight {
                        state: RecordState::Acquired,
                        delivery_count: 1,
                        owner: Some(member.clone()),
                        until: Some(deadline),
                    },
                );
                acquired.push((self.end, 1));
                self.end += 1;
            }
        }
        ranges(&acquired)
    }

    /// Applies `member`'s acknowledgements: all of them, or none if any names a
    /// record the member does not hold (`InvalidRecordState`) or breaks the rules.
    pub fn acknowledge(
        &mut self,
        member: &str,
        batches: &[AckBatch],
        now: Instant,
        settings: &ShareSettings,
    ) -> Result<Outcome, ShareError> {
        let mut previous_last = None;
        for batch in batches {
            let span = batch.last - batch.first + 1;
            if previous_last.is_some_and(|last| batch.first <= last) {
                return Err(ShareError::InvalidRequest(format!(
                    "acknowledgement batch {}..{} overlaps or precedes the one before",
                    batch.first, batch.last
                )));
            }
            previous_last = Some(batch.last);
            if span <= 0 {
                return Err(ShareError::InvalidRequest(format!(
                    "acknowledgement batch {}..{} is empty",
                    batch.first, batch.last
                )));
            }
            if batch.types.len() != 1 && i64::try_from(batch.types.len()) != Ok(span) {
                return Err(ShareError::InvalidRequest(format!(
                    "acknowledgement batch {}..{} has {} types: one, or one per record",
                    batch.first,
                    batch.last,
                    batch.types.len()
                )));
            }
            for offset in batch.first..=batch.last {
                let held = self.records.get(&offset).is_some_and(|record| {
                    record.state == RecordState::Acquired && record.owner.as_deref() == Some(member)
                });
                if !held {
                    return Err(ShareError::InvalidRecordState(format!(
                        "record {offset} is not acquired by member {member} (its lock may have expired)"
                    )));
                }
            }
        }
        let mut outcome = Outcome::default();
        for batch in batches {
            for (i, offset) in (batch.first..=batch.last).enumerate() {
                let ack = batch.types.get(i).or(batch.types.first()).copied();
                let Some(record) = self.records.get_mut(&offset) else {
                    continue;
                };
                match ack {
                    Some(AckType::Accept) => {
                        record.state = RecordState::Acknowledged;
                        outcome.accepted += 1;
                    }
                    Some(AckType::Gap) | None => record.state = RecordState::Archived,
                    Some(AckType::Reject) => {
                        record.state = RecordState::Archived;
                        outcome.rejected += 1;
                        outcome.dead_letters.push(DeadLetter {
                            offset,
                            delivery_count: record.delivery_count,
                            reason: DeadLetterReason::Rejected,
                        });
                    }
                    Some(AckType::Release) => {
                        outcome.released += 1;
                        outcome.absorb(release(offset, record, now, settings));
                        continue;
                    }
                }
                record.owner = None;
                record.until = None;
            }
        }
        outcome.changed = true;
        self.advance();
        Ok(outcome)
    }

    /// Releases every record `member` holds (its session closed or was replaced).
    pub fn release_member(
        &mut self,
        member: &str,
        now: Instant,
        settings: &ShareSettings,
    ) -> Outcome {
        let mut outcome = Outcome::default();
        for (offset, record) in &mut self.records {
            if record.state == RecordState::Acquired && record.owner.as_deref() == Some(member) {
                outcome.released += 1;
                outcome.absorb(release(*offset, record, now, settings));
            }
        }
        self.advance();
        outcome
    }

    /// Releases every acquired record whose lock ran out by `now`, and ends the
    /// backoffs that ran out (`made_available`).
    pub fn expire_locks(&mut self, now: Instant, settings: &ShareSettings) -> Outcome {
        let mut outcome = Outcome::default();
        for (offset, record) in &mut self.records {
            if record.until.is_none_or(|until| until > now) {
                continue;
            }
            match record.state {
                RecordState::Acquired => {
                    outcome.expired += 1;
                    outcome.absorb(release(*offset, record, now, settings));
                }
                RecordState::Available => {
                    record.until = None;
                    outcome.made_available = true;
                }
                RecordState::Acknowledged | RecordState::Archived => {}
            }
        }
        self.advance();
        outcome
    }

    /// When the next lock runs out or the next backoff ends (what a timer waits
    /// for).
    #[must_use]
    pub fn next_deadline(&self) -> Option<Instant> {
        self.records
            .values()
            .filter(|record| matches!(record.state, RecordState::Acquired | RecordState::Available))
            .filter_map(|record| record.until)
            .min()
    }

    /// Moves the start over the acknowledged and archived records at the front.
    fn advance(&mut self) {
        while let Some(entry) = self.records.first_entry() {
            if *entry.key() != self.start
                || !matches!(
                    entry.get().state,
                    RecordState::Acknowledged | RecordState::Archived
                )
            {
                break;
            }
            entry.remove();
            self.start += 1;
        }
    }
}

/// Whether a record may be acquired `now`.
fn is_available(record: &InFlight, now: Instant) -> bool {
    record.state == RecordState::Available && record.until.is_none_or(|until| until <= now)
}

/// An acquired record given back: available again after the backoff, or archived
/// as a dead letter if it was delivered as often as the limit allows.
fn release(offset: i64, record: &mut InFlight, now: Instant, settings: &ShareSettings) -> Outcome {
    record.owner = None;
    let mut outcome = Outcome {
        changed: true,
        ..Outcome::default()
    };
    if record.delivery_count >= settings.delivery_count_limit {
        record.state = RecordState::Archived;
        record.until = None;
        outcome.dead_letters.push(DeadLetter {
            offset,
            delivery_count: record.delivery_count,
            reason: DeadLetterReason::DeliveryCountLimit,
        });
    } else {
        record.state = RecordState::Available;
        let backoff = settings.backoff_after(record.delivery_count);
        record.until = (!backoff.is_zero()).then(|| now + backoff);
        outcome.made_available = true;
    }
    outcome
}

/// Offsets (ascending) with their delivery counts, as ranges of consecutive offsets
/// of one count.
fn ranges(acquired: &[(i64, u16)]) -> Vec<AcquiredRange> {
    let mut out: Vec<AcquiredRange> = Vec::new();
    for &(offset, count) in acquired {
        match out.last_mut() {
            Some(range) if range.last + 1 == offset && range.delivery_count == count => {
                range.last = offset;
            }
            _ => out.push(AcquiredRange {
                first: offset,
                last: offset,
                delivery_count: count,
            }),
        }
    }
    out
}
