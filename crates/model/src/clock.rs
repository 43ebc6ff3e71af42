//! The one clock of a broker: the system's, or a manual one that tests move forward
//! instead of sleeping. Domain code asks it for the time (both the wall clock, for
//! what is stored and compared across brokers, and the monotonic one, for timeouts)
//! rather than reading `SystemTime` or `Instant` itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::Timestamp;

/// Where the time comes from. Cheap to clone: the manual clock is shared.
#[derive(Debug, Clone, Default)]
pub enum Clock {
    /// The system's clocks.
    #[default]
    System,
    /// Time that moves only when a test says so.
    Manual(Arc<ManualClock>),
}

impl Clock {
    /// A manual clock at the system's time now, and the handle that moves it.
    #[must_use]
    pub fn manual() -> (Clock, Arc<ManualClock>) {
        let manual = Arc::new(ManualClock::new());
        (Clock::Manual(manual.clone()), manual)
    }

    /// The monotonic time now (for timeouts and rates).
    #[must_use]
    pub fn instant(&self) -> Instant {
        match self {
            Clock::System => Instant::now(),
            Clock::Manual(manual) => manual.instant(),
        }
    }

    /// Wall-clock milliseconds since the Unix epoch (for what is stored or compared
    /// with other brokers' times).
    #[must_use]
    pub fn now_ms(&self) -> i64 {
        match self {
            Clock::System => system_ms(),
            Clock::Manual(manual) => manual.now_ms(),
        }
    }

    /// [`Clock::now_ms`] as a record timestamp.
    #[must_use]
    pub fn timestamp(&self) -> Timestamp {
        Timestamp(self.now_ms())
    }
}

/// A clock that stands still until [`ManualClock::advance`] moves both its wall and
/// its monotonic time.
#[derive(Debug)]
pub struct ManualClock {
    /// The monotonic time it started at; it reads this plus what it was moved by.
    base: Instant,
    moved_nanos: AtomicU64,
    wall_ms: AtomicI64,
}

impl ManualClock {
    fn new() -> ManualClock {
        ManualClock {
            base: Instant::now(),
            moved_nanos: AtomicU64::new(0),
            wall_ms: AtomicI64::new(system_ms()),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let nanos = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.moved_nanos.fetch_add(nanos, Ordering::AcqRel);
        let millis = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.wall_ms.fetch_add(millis, Ordering::AcqRel);
    }

    fn instant(&self) -> Instant {
        self.base + Duration::from_nanos(self.moved_nanos.load(Ordering::Acquire))
    }

    fn now_ms(&self) -> i64 {
        self.wall_ms.load(Ordering::Acquire)
    }
}

/// The system's wall clock in milliseconds since the Unix epoch (0 before it).
fn system_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| {
            i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced() {
        let (clock, hand) = Clock::manual();
        let (instant, ms) = (clock.instant(), clock.now_ms());
        assert_eq!(clock.instant(), instant);
        assert_eq!(clock.now_ms(), ms);
        hand.advance(Duration::from_millis(1500));
        assert_eq!(clock.instant() - instant, Duration::from_millis(1500));
        assert_eq!(clock.now_ms() - ms, 1500);
    }
}
