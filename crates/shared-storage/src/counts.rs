//! What the shared-storage mode counts, for operators and benchmarks: requests and
//! bytes each way, commits, and the latencies of each stage of the write path (how
//! long appends waited for their flush, the PUT, the commit).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::metrics::histogram::Histogram;

/// Latency samples kept per stage: the most recent ones.
const SAMPLES: usize = 8_192;

/// Latency buckets of object-store requests and catalogue commits, in seconds.
const OBJECT_BUCKETS: [f64; 14] = [
    0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Counters of the write and read paths.
#[derive(Debug)]
pub struct StorageCounts {
    pub puts: AtomicU64,
    pub put_bytes: AtomicU64,
    pub put_failures: AtomicU64,
    pub gets: AtomicU64,
    pub get_bytes: AtomicU64,
    pub cache_hits: AtomicU64,
    /// Reads of a consumer that made a GET (not in the cache, none under way).
    pub cache_misses: AtomicU64,
    /// Objects deleted (retention, collection, orphans).
    pub deletes: AtomicU64,
    pub commits: AtomicU64,
    pub commit_failures: AtomicU64,
    /// Ranges the catalogue refused (their partition had moved on).
    pub fenced_ranges: AtomicU64,
    flush_wait: Samples,
    put_latency: Samples,
    commit_latency: Samples,
    /// The same latencies (and the GETs'), for `/metrics`.
    pub histograms: StorageHistograms,
    /// When and why the last object write failed, until one succeeds: what a
    /// producer waiting for durability is told, and what readiness reports.
    write_failure: Mutex<Option<(std::time::Instant, String)>>,
}

/// Object-store and catalogue latencies as Prometheus histograms.
#[derive(Debug, Clone)]
pub struct StorageHistograms {
    pub flush_wait: Histogram,
    pub put: Histogram,
    pub get: Histogram,
    pub commit: Histogram,
}

impl Default for StorageCounts {
    fn default() -> Self {
        let histogram = || Histogram::new(OBJECT_BUCKETS);
        StorageCounts {
            puts: AtomicU64::new(0),
            put_bytes: AtomicU64::new(0),
            put_failures: AtomicU64::new(0),
            gets: AtomicU64::new(0),
            get_bytes: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            cache_misses: AtomicU64::new(0),
            deletes: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            commit_failures: AtomicU64::new(0),
            fenced_ranges: AtomicU64::new(0),
            flush_wait: Samples::default(),
            put_latency: Samples::default(),
            commit_latency: Samples::default(),
            histograms: StorageHistograms {
                flush_wait: histogram(),
                put: histogram(),
                get: histogram(),
                commit: histogram(),
            },
            write_failure: Mutex::new(None),
        }
    }
}

#[derive(Debug, Default)]
struct Samples(Mutex<VecDeque<u64>>);

impl Samples {
    fn record(&self, took: Duration) {
        let mut samples = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if samples.len() == SAMPLES {
            samples.pop_front();
        }
        samples.push_back(u64::try_from(took.as_micros()).unwrap_or(u64::MAX));
    }

    fn percentiles(&self) -> Latency {
        let mut sorted: Vec<u64> = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .copied()
            .collect();
        sorted.sort_unstable();
        let at = |fraction: f64| -> u64 {
            if sorted.is_empty() {
                return 0;
            }
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let index = ((sorted.len() - 1) as f64 * fraction).round() as usize;
            sorted.get(index).copied().unwrap_or(0)
        };
        Latency {
            samples: sorted.len() as u64,
            p50_us: at(0.5),
            p99_us: at(0.99),
            max_us: sorted.last().copied().unwrap_or(0),
        }
    }
}

/// Percentiles of one stage's recent latencies, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    pub samples: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}

/// A snapshot of [`StorageCounts`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StorageStats {
    pub puts: u64,
    pub put_bytes: u64,
    pub put_failures: u64,
    pub gets: u64,
    pub get_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub deletes: u64,
    pub commits: u64,
    pub commit_failures: u64,
    pub fenced_ranges: u64,
    /// From an append to the start of its object's PUT.
    pub flush_wait: Latency,
    pub put: Latency,
    pub commit: Latency,
}

impl StorageCounts {
    /// An object write failed (`Some(why)`) or succeeded (`None`).
    pub fn note_write(&self, failure: Option<String>) {
        *self
            .write_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) =
            failure.map(|why| (std::time::Instant::now(), why));
    }

    /// Why the last object write failed, if it failed within `recent` and no write
    /// succeeded since.
    pub fn write_failure(&self, recent: std::time::Duration) -> Option<String> {
        self.write_failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_ref()
            .filter(|(when, _)| when.elapsed() <= recent)
            .map(|(_, why)| why.clone())
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub fn flush_waited(&self, took: Duration) {
        self.flush_wait.record(took);
        self.histograms.flush_wait.observe(took.as_secs_f64());
    }

    pub fn put_took(&self, took: Duration) {
        self.put_latency.record(took);
        self.histograms.put.observe(took.as_secs_f64());
    }

    pub fn get_took(&self, took: Duration) {
        self.histograms.get.observe(took.as_secs_f64());
    }

    pub fn commit_took(&self, took: Duration) {
        self.commit_latency.record(took);
        self.histograms.commit.observe(took.as_secs_f64());
    }

    pub fn snapshot(&self) -> StorageStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StorageStats {
            puts: get(&self.puts),
            put_bytes: get(&self.put_bytes),
            put_failures: get(&self.put_failures),
            gets: get(&self.gets),
            get_bytes: get(&self.get_bytes),
            cache_hits: get(&self.cache_hits),
            cache_misses: get(&self.cache_misses),
            deletes: get(&self.deletes),
            commits: get(&self.commits),
            commit_failures: get(&self.commit_failures),
            fenced_ranges: get(&self.fenced_ranges),
            flush_wait: self.flush_wait.percentiles(),
            put: self.put_latency.percentiles(),
            commit: self.commit_latency.percentiles(),
        }
    }
}
