//! One group member of the rebalance benchmark: a librdkafka consumer in a thread of
//! its own that records what it holds (incremental protocols revoke and assign only
//! what moves), what it revoked, and every record it was given.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::client::ClientContext;
use rdkafka::consumer::{
    BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance, RebalanceProtocol,
};
use rdkafka::message::Message;

use crate::BenchError;

/// What every member of a trial shares: records seen, by (partition, offset).
#[derive(Debug, Default)]
pub(super) struct Seen(Mutex<HashMap<(i32, i64), u32>>);

impl Seen {
    fn note(&self, partition: i32, offset: i64) {
        *lock(&self.0).entry((partition, offset)).or_default() += 1;
    }

    /// Records delivered more than once (each extra delivery counts).
    pub(super) fn twice(&self) -> u64 {
        lock(&self.0)
            .values()
            .map(|n| u64::from(n.saturating_sub(1)))
            .sum()
    }
}

/// What a member holds and has given up, as its rebalance callbacks said.
#[derive(Debug, Default)]
pub(super) struct Holdings {
    pub(super) held: BTreeSet<i32>,
    /// Partitions revoked since the count was last taken.
    pub(super) revoked: u64,
}

struct Context {
    holdings: Arc<Mutex<Holdings>>,
}

impl ClientContext for Context {}

impl ConsumerContext for Context {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Context>, rebalance: &Rebalance<'_>) {
        let incremental = matches!(
            consumer.rebalance_protocol(),
            RebalanceProtocol::Cooperative
        );
        match rebalance {
            Rebalance::Revoke(list) => {
                // What was consumed is committed before it goes, as applications do.
                let _ = consumer.commit_consumer_state(CommitMode::Sync);
                let mut holdings = lock(&self.holdings);
                let revoked: Vec<i32> = list.elements().iter().map(|e| e.partition()).collect();
                holdings.revoked += revoked.len() as u64;
                if incremental {
                    for partition in revoked {
                        holdings.held.remove(&partition);
                    }
                } else {
                    holdings.held.clear();
                }
            }
            Rebalance::Assign(list) => {
                let mut holdings = lock(&self.holdings);
                if !incremental {
                    holdings.held.clear();
                }
                holdings
                    .held
                    .extend(list.elements().iter().map(|e| e.partition()));
            }
            Rebalance::Error(_) => {}
        }
    }
}

/// A running member; stopping it closes the consumer (a clean leave).
pub(super) struct Member {
    pub(super) holdings: Arc<Mutex<Holdings>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), BenchError>>>,
}

impl Member {
    pub(super) fn start(
        config: &ClientConfig,
        topic: &str,
        seen: &Arc<Seen>,
    ) -> Result<Member, BenchError> {
        let holdings = Arc::new(Mutex::new(Holdings::default()));
        let consumer: BaseConsumer<Context> = config
            .create_with_context(Context {
                holdings: holdings.clone(),
            })
            .map_err(BenchError::kafka("create a group member"))?;
        consumer
            .subscribe(&[topic])
            .map_err(BenchError::kafka("subscribe"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (stopping, seen) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let mut last_commit = Instant::now();
            while !stopping.load(Ordering::Relaxed) {
                if let Some(Ok(message)) = consumer.poll(Duration::from_millis(50)) {
                    seen.note(message.partition(), message.offset());
                }
                if last_commit.elapsed() >= Duration::from_millis(500) {
                    let _ = consumer.commit_consumer_state(CommitMode::Async);
                    last_commit = Instant::now();
                }
            }
            consumer.unsubscribe();
            // Served until the revocation is done, then dropped: the member leaves.
            let leaving = Instant::now();
            while leaving.elapsed() < Duration::from_millis(300) {
                if let Some(Ok(message)) = consumer.poll(Duration::from_millis(20)) {
                    seen.note(message.partition(), message.offset());
                }
            }
            Ok(())
        });
        Ok(Member {
            holdings,
            stop,
            thread: Some(thread),
        })
    }

    pub(super) fn stop(mut self) -> Result<(), BenchError> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(BenchError::Failed("a group member panicked".to_owned())),
            None => Ok(()),
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
