//! Client quotas (KIP-13, KIP-124, KIP-219, KIP-546): `producer_byte_rate`,
//! `consumer_byte_rate` and `request_percentage` per user, client id or both, with
//! defaults, resolved in Kafka's order of precedence ([`index`]), metered per quota
//! entity on each broker ([`meter`]). A request over its quota is answered at once
//! with `throttle_time_ms`, and its connection then reads nothing more for that long
//! (KIP-219); clients too old for that get their answer late instead. With no quota
//! configured, a request costs a clock read and an atomic load.

pub mod index;
pub mod meter;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use spool_metadata::{QuotaEntity, QuotaRecord};
use spool_model::Clock;

use self::index::QuotaIndex;
use self::meter::Meters;

/// The quota keys Spool enforces, by Kafka's names.
pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
pub const KEYS: [&str; 3] = [PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE];

/// The quotas in force and what each entity has used.
#[derive(Debug, Default)]
pub struct Quotas {
    /// Whether any quota is configured: the fast path's one check.
    any: AtomicBool,
    index: RwLock<Arc<QuotaIndex>>,
    meters: Mutex<Meters>,
    /// The broker's clock: what the meters measure rates by.
    clock: Clock,
}

impl Quotas {
    /// No quotas yet, metered by `clock`.
    pub fn new(clock: Clock) -> Quotas {
        Quotas {
            clock,
            ..Quotas::default()
        }
    }

    /// Indexes `records` (read again from the store) in place of the old ones.
    pub fn load(&self, records: Vec<QuotaRecord>) {
        let index = Arc::new(QuotaIndex::new(records));
        self.any.store(!index.is_empty(), Ordering::Release);
        *self.index.write().unwrap_or_else(PoisonError::into_inner) = index;
    }

    /// The quotas as they are now.
    pub fn current(&self) -> Arc<QuotaIndex> {
        self.index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Counts `amount` (bytes, or percent-seconds of handler time) against the quota
    /// `key` of a request from `principal` with `client_id`; how long the client is
    /// to be throttled for it (zero within its quota, or with no quota).
    pub fn record(&self, principal: &str, client_id: &str, key: &str, amount: f64) -> Duration {
        self.with_meter(principal, client_id, key, |meters, entity, rate| {
            meters.charge(entity, key, rate, amount, self.clock.instant())
        })
    }

    /// How long a request from `principal` with `client_id` would be throttled for
    /// the quota `key` before it is charged anything: zero unless its entity is
    /// already over its quota.
    pub fn owed(&self, principal: &str, client_id: &str, key: &str) -> Duration {
        self.with_meter(principal, client_id, key, |meters, entity, _| {
            meters.owed(entity, key, self.clock.instant())
        })
    }

    /// `throttle` on the meters with the entity whose quota `key` applies to the
    /// request, and its rate; zero when no quota applies.
    fn with_meter(
        &self,
        principal: &str,
        client_id: &str,
        key: &str,
        throttle: impl FnOnce(&mut Meters, QuotaEntity, f64) -> Duration,
    ) -> Duration {
        if !self.any.load(Ordering::Acquire) {
            return Duration::ZERO;
        }
        let user = principal.strip_prefix("User:").unwrap_or(principal);
        let Some((entity, rate)) = self.current().resolve(user, client_id, key) else {
            return Duration::ZERO;
        };
        let mut meters = self.meters.lock().unwrap_or_else(PoisonError::into_inner);
        throttle(&mut meters, entity, rate)
    }
}

/// The throttle time as a response field (ms, at most `i32::MAX`).
pub fn throttle_ms(throttle: Duration) -> i32 {
    i32::try_from(throttle.as_millis()).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use spool_metadata::EntityPart;

    use super::*;

    #[test]
    fn a_client_over_its_byte_rate_owes_time_until_the_clock_moves_on() {
        let (clock, hand) = Clock::manual();
        let quotas = Quotas::new(clock);
        quotas.load(vec![QuotaRecord {
            entity: QuotaEntity {
                user: EntityPart::Absent,
                client_id: EntityPart::Named("greedy".to_owned()),
            },
            key: PRODUCER_BYTE_RATE.to_owned(),
            value: 1000.0,
        }]);
        let throttle = quotas.record("User:ANONYMOUS", "greedy", PRODUCER_BYTE_RATE, 50_000.0);
        assert!(throttle > Duration::from_secs(1), "{throttle:?}");
        let owed = quotas.owed("User:ANONYMOUS", "greedy", PRODUCER_BYTE_RATE);
        assert!(owed > Duration::ZERO, "over its quota until time passes");

        hand.advance(owed + Duration::from_secs(60));
        let owed = quotas.owed("User:ANONYMOUS", "greedy", PRODUCER_BYTE_RATE);
        assert_eq!(owed, Duration::ZERO, "paid off by the time that passed");
        let other = quotas.owed("User:ANONYMOUS", "modest", PRODUCER_BYTE_RATE);
        assert_eq!(other, Duration::ZERO, "another client has no quota");
    }
}
