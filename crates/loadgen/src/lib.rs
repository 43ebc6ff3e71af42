//! Spool's load generator, behind `spool bench`: OpenMessaging Benchmark-style
//! workloads (topics, partitions, message size, rate, producers, consumers, duration,
//! warm-up, acks, compression, key distribution) run through librdkafka against any
//! Kafka-compatible broker, and the machine's own limits (disk with and without fsync,
//! fsync latency, loopback TCP) measured the same way every time.
//!
//! Latency is measured from the **intended** send time: at a fixed rate, message `i` is
//! due at `start + i / rate`, and a producer that falls behind (a full queue, a stalled
//! broker) does not move that time, so stalls show in the percentiles instead of
//! silently lowering the rate (coordinated omission).

mod consumer;
pub mod limits;
mod producer;
mod progress;
pub mod rebalance;
mod recorder;
pub mod registry;
pub mod run;
mod topics;
pub mod workload;

pub use producer::wait_for_deliveries;
pub use run::{Report, consume, end_to_end, produce};
pub use workload::{Compression, KeyDistribution, Workload};

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("cannot {what}: {error}")]
    Kafka {
        what: &'static str,
        error: rdkafka::error::KafkaError,
    },
    #[error("the cluster refused to create topic {topic}: {code}")]
    TopicRefused { topic: String, code: String },
    #[error("{0}")]
    Stalled(String),
    #[error("{0}")]
    Invalid(String),
    /// A benchmark outside this crate (`spool bench failover`) failed.
    #[error("{0}")]
    Failed(String),
    #[error("cannot {what}: {error}")]
    Io {
        what: &'static str,
        error: std::io::Error,
    },
}

impl BenchError {
    fn kafka(what: &'static str) -> impl FnOnce(rdkafka::error::KafkaError) -> BenchError {
        move |error| BenchError::Kafka { what, error }
    }

    fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> BenchError {
        move |error| BenchError::Io { what, error }
    }
}
