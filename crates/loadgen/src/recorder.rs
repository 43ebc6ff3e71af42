//! What producers and consumers record while a run goes: counts, bytes and a latency
//! histogram (HDR, microseconds, three significant digits).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latencies above this are recorded as this (an hour).
const HIGHEST_MICROS: u64 = 3_600_000_000;

#[derive(Debug)]
pub(crate) struct Recorder {
    /// Every message seen, measured or not (for the live progress line).
    pub(crate) seen: AtomicU64,
    /// Messages and bytes inside the measured window.
    measured: AtomicU64,
    measured_bytes: AtomicU64,
    pub(crate) errors: AtomicU64,
    latencies: Mutex<Histogram<u64>>,
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        let histogram = Histogram::new_with_bounds(1, HIGHEST_MICROS, 3)
            .unwrap_or_else(|_| unreachable!("constant, valid histogram bounds"));
        Recorder {
            seen: AtomicU64::new(0),
            measured: AtomicU64::new(0),
            measured_bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            latencies: Mutex::new(histogram),
        }
    }

    pub(crate) fn saw(&self) {
        self.seen.fetch_add(1, Ordering::Relaxed);
    }

    /// A message inside the measured window, with its latency if there is one.
    pub(crate) fn measure(&self, bytes: usize, latency: Option<Duration>) {
        self.measured.fetch_add(1, Ordering::Relaxed);
        self.measured_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        if let Some(latency) = latency {
            let micros = u64::try_from(latency.as_micros())
                .unwrap_or(HIGHEST_MICROS)
                .clamp(1, HIGHEST_MICROS);
            let mut histogram = self
                .latencies
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // In bounds by the clamp above.
            let _ = histogram.record(micros);
        }
    }

    pub(crate) fn failed(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn throughput(&self, window: Duration) -> Throughput {
        let messages = self.measured.load(Ordering::Relaxed);
        let bytes = self.measured_bytes.load(Ordering::Relaxed);
        let seconds = window.as_secs_f64().max(1e-9);
        Throughput {
            messages,
            bytes,
            seconds,
            msg_per_s: messages as f64 / seconds,
            mb_per_s: bytes as f64 / 1e6 / seconds,
            errors: self.errors.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn latency(&self) -> Option<LatencySummary> {
        let histogram = self
            .latencies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if histogram.is_empty() {
            return None;
        }
        let ms = |micros: u64| micros as f64 / 1000.0;
        Some(LatencySummary {
            count: histogram.len(),
            mean: histogram.mean() / 1000.0,
            p50: ms(histogram.value_at_quantile(0.50)),
            p99: ms(histogram.value_at_quantile(0.99)),
            p999: ms(histogram.value_at_quantile(0.999)),
            max: ms(histogram.max()),
        })
    }
}

/// Messages and bytes over the measured window.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    pub messages: u64,
    pub bytes: u64,
    pub seconds: f64,
    pub msg_per_s: f64,
    pub mb_per_s: f64,
    pub errors: u64,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}
