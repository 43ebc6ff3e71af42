//! Quotas as requests meet them (see `spool_security::quotas`): what a request is charged, and
//! the throttle time written into its response.

use std::time::Duration;

use kafka_protocol::messages::{ApiKey, ResponseKind};

use super::api::RequestContext;
use crate::shared::Shared;
use spool_security::quotas::{REQUEST_PERCENTAGE, throttle_ms};
use spool_security::session::Session;

/// Charges `amount` to the request's quota `key`; the throttle time.
pub(crate) fn charge(
    shared: &Shared,
    context: &RequestContext,
    key: &str,
    amount: f64,
) -> Duration {
    shared
        .quotas()
        .record(context.access.principal(), &context.client_id, key, amount)
}

/// How long the request would be throttled for its quota `key` before it is
/// charged: zero unless its client is already over that quota.
pub(crate) fn owed(shared: &Shared, context: &RequestContext, key: &str) -> Duration {
    shared
        .quotas()
        .owed(context.access.principal(), &context.client_id, key)
}

/// Charges the time a request took to handle to its `request_percentage` quota
/// (percent of one core: a request of 10 ms costs 1 percent-second).
pub(crate) fn charge_time(shared: &Shared, context: &RequestContext, took: Duration) -> Duration {
    charge(
        shared,
        context,
        REQUEST_PERCENTAGE,
        took.as_secs_f64() * 100.0,
    )
}

/// KIP-219: a client that knows it (`client_side`) is answered at once, with the
/// throttle time, and its connection then muted; an older one gets its answer late
/// instead. How long to hold the answer back.
pub(crate) fn mute_or_delay(
    session: &mut Session,
    throttle: Duration,
    client_side: bool,
) -> Duration {
    if client_side {
        session.mute(throttle);
        Duration::ZERO
    } else {
        throttle
    }
}

/// Holds an answer back for `delay` (a client too old for KIP-219, over its quota).
/// Zero costs nothing: no timer. A zero-length `tokio::time::sleep` is not free: it
/// registers in the timer wheel and ends at the wheel's next millisecond tick, once
/// the runtime turns its driver; on the reply path, where answers leave one after the
/// other, that capped a connection at some hundreds of answers a second and put
/// produce latency at 200 ms at 20,000 msg/s (issue 31).
pub(crate) async fn hold_back(delay: Duration) {
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
}

/// Whether a request of `key` waits by design (for a rebalance), so that its time is
/// not work to charge to `request_percentage`.
pub(crate) fn waits(key: ApiKey) -> bool {
    matches!(key, ApiKey::JoinGroup | ApiKey::SyncGroup)
}

/// Writes `throttle` into the response's `throttle_time_ms` (the versions without
/// the field leave it out when encoding).
pub(crate) fn set_throttle_time(response: &mut ResponseKind, throttle: Duration) {
    let ms = throttle_ms(throttle);
    macro_rules! set {
        ($($kind:ident),+ $(,)?) => {
            match response {
                $(ResponseKind::$kind(r) => r.throttle_time_ms = ms,)+
                _ => {}
            }
        };
    }
    set!(
        Produce,
        ListOffsets,
        Metadata,
        OffsetCommit,
        OffsetFetch,
        FindCoordinator,
        JoinGroup,
        Heartbeat,
        LeaveGroup,
        SyncGroup,
        DescribeGroups,
        ListGroups,
        ApiVersions,
        CreateTopics,
        DeleteTopics,
        DeleteRecords,
        InitProducerId,
        OffsetForLeaderEpoch,
        AddPartitionsToTxn,
        AddOffsetsToTxn,
        EndTxn,
        TxnOffsetCommit,
        DescribeAcls,
        CreateAcls,
        DeleteAcls,
        DescribeConfigs,
        AlterConfigs,
        CreatePartitions,
        DeleteGroups,
        IncrementalAlterConfigs,
        OffsetDelete,
        DescribeClientQuotas,
        AlterClientQuotas,
        DescribeUserScramCredentials,
        AlterUserScramCredentials,
        DescribeTransactions,
        ListTransactions,
    );
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    use super::*;

    fn poll_once(future: impl Future<Output = ()>) -> Poll<()> {
        pin!(future).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[tokio::test]
    async fn no_throttle_holds_nothing_back() {
        // A zero-length tokio sleep is still pending on its first poll (it waits for
        // the timer wheel's next tick): that was issue 31's stall.
        assert!(poll_once(tokio::time::sleep(Duration::ZERO)).is_pending());
        assert!(poll_once(hold_back(Duration::ZERO)).is_ready());
        assert!(poll_once(hold_back(Duration::from_millis(5))).is_pending());
    }
}
