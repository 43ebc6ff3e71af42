//! Metering against a rate: for each quota entity and key, the time at which what it
//! has used would be paid off at its rate (the generic cell rate algorithm). Use
//! within a second's worth of the rate passes; past it, the client is throttled for
//! what it is ahead, so that over time it gets its rate and no more.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use spool_metadata::QuotaEntity;

/// How far ahead of its rate an entity may run before it is throttled.
const BURST: Duration = Duration::from_secs(1);
/// The longest a client is throttled for one request (about Kafka's quota window,
/// 11 samples of a second, and well within a client's request timeout). What it is
/// still ahead stays on the meter for its next requests.
const MAX_THROTTLE: Duration = Duration::from_secs(10);
/// The most one request adds to the meter (a day at the rate).
const MAX_COST: Duration = Duration::from_secs(86_400);
/// Entities metered past which those with nothing owed are forgotten.
const FORGET_ABOVE: usize = 10_000;

#[derive(Debug, Default)]
pub struct Meters {
    paid_off_at: HashMap<(QuotaEntity, String), Instant>,
}

impl Meters {
    /// Charges `amount` at `rate` per second to the entity's `key`; the throttle time.
    pub fn charge(
        &mut self,
        entity: QuotaEntity,
        key: &str,
        rate: f64,
        amount: f64,
        now: Instant,
    ) -> Duration {
        if amount.is_nan() || amount <= 0.0 {
            return Duration::ZERO;
        }
        // AlterClientQuotas takes rates above 0 only; a stored one that is not stops
        // the entity as long as it may.
        if rate.is_nan() || rate <= 0.0 {
            return MAX_THROTTLE;
        }
        if self.paid_off_at.len() > FORGET_ABOVE {
            // An entity that owes nothing is as if never seen.
            self.paid_off_at.retain(|_, paid_off_at| *paid_off_at > now);
        }
        let cost = Duration::try_from_secs_f64(amount / rate).map_or(MAX_COST, |c| c.min(MAX_COST));
        let paid_off_at = self
            .paid_off_at
            .entry((entity, key.to_owned()))
            .or_insert(now);
        *paid_off_at = (*paid_off_at).max(now) + cost;
        throttle_for(*paid_off_at, now)
    }

    /// How long the entity's `key` would be throttled now, charging nothing: zero
    /// unless it is ahead of its rate by more than the burst.
    pub fn owed(&self, entity: QuotaEntity, key: &str, now: Instant) -> Duration {
        self.paid_off_at
            .get(&(entity, key.to_owned()))
            .map_or(Duration::ZERO, |paid_off_at| {
                throttle_for(*paid_off_at, now)
            })
    }
}

/// The throttle of a meter paid off at `paid_off_at`.
fn throttle_for(paid_off_at: Instant, now: Instant) -> Duration {
    paid_off_at
        .saturating_duration_since(now)
        .saturating_sub(BURST)
        .min(MAX_THROTTLE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use spool_metadata::EntityPart;

    fn entity() -> QuotaEntity {
        QuotaEntity {
            user: EntityPart::Named("alice".to_owned()),
            client_id: EntityPart::Absent,
        }
    }

    #[test]
    fn a_client_ahead_of_its_rate_is_throttled_for_what_it_is_ahead() {
        let mut meters = Meters::default();
        let start = Instant::now();
        // 1000 bytes/s: the first second's worth passes.
        assert_eq!(
            meters.charge(entity(), "k", 1000.0, 1000.0, start),
            Duration::ZERO
        );
        // Half a second more, at once: throttled half a second.
        let throttle = meters.charge(entity(), "k", 1000.0, 500.0, start);
        assert_eq!(throttle, Duration::from_millis(500));
        // A huge request is throttled at most MAX_THROTTLE, and the rest stays owed.
        let huge = meters.charge(entity(), "big", 1000.0, 30_000.0, start);
        assert_eq!(huge, MAX_THROTTLE);
        let after = start + MAX_THROTTLE;
        assert_eq!(
            meters.charge(entity(), "big", 1000.0, 1.0, after),
            MAX_THROTTLE
        );
        // After waiting it out and the rest of the burst, the next second's worth is
        // within the rate again.
        let later = start + Duration::from_millis(1500);
        assert_eq!(
            meters.charge(entity(), "k", 1000.0, 1000.0, later),
            Duration::ZERO
        );
        // Another key and another entity are metered apart.
        assert_eq!(
            meters.charge(entity(), "other", 1000.0, 1000.0, start),
            Duration::ZERO
        );
    }

    #[test]
    fn what_is_owed_is_read_without_charging() {
        let mut meters = Meters::default();
        let start = Instant::now();
        assert_eq!(meters.owed(entity(), "k", start), Duration::ZERO);
        meters.charge(entity(), "k", 1000.0, 1500.0, start);
        assert_eq!(
            meters.owed(entity(), "k", start),
            Duration::from_millis(500)
        );
        assert_eq!(
            meters.owed(entity(), "k", start),
            Duration::from_millis(500)
        );
        let later = start + Duration::from_millis(600);
        assert_eq!(meters.owed(entity(), "k", later), Duration::ZERO);
    }

    #[test]
    fn a_zero_rate_throttles_as_long_as_allowed() {
        let mut meters = Meters::default();
        let now = Instant::now();
        assert_eq!(meters.charge(entity(), "k", 0.0, 1.0, now), MAX_THROTTLE);
        assert_eq!(meters.charge(entity(), "k", 0.0, 0.0, now), Duration::ZERO);
    }
}
