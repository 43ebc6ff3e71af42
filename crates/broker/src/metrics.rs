//! What `/metrics` shows, in the Prometheus (OpenMetrics) text format, through
//! `prometheus-client`.
//!
//! Two kinds of series:
//! - **counted** as things happen, with per-request work only (never per record):
//!   requests per API and version, errors per error code, request latency per API,
//!   connections, request bytes in flight, bytes and records in and out per topic,
//!   fsync latency;
//! - **read at scrape time** by [`scrape::StateCollector`] from the broker's state:
//!   partitions (log start, high watermark, size, segments), the flush queue, object
//!   storage, consumer groups and their lag, cluster leases and leadership.
//!
//! With `metrics.enable=false` nothing is counted (the handlers find no
//! [`BrokerMetrics`]) and `/metrics` answers 404.

mod labels;
mod lanes;
mod mirror;
mod response_errors;
pub(crate) mod scrape;
mod tables;

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Instant;

use kafka_protocol::messages::{ApiKey, ResponseKind};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use uuid::Uuid;

pub(crate) use self::labels::error_name;
use self::labels::{ApiName, ErrorName, Text};

/// What every series' name starts with.
pub(crate) const PREFIX: &str = "spool";

/// Request latency buckets, in seconds: from a cached metadata answer (well under a
/// millisecond) to a long-polling fetch (up to its 30 s cap).
const LATENCY_BUCKETS: [f64; 16] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// fsync buckets, in seconds: a few tens of microseconds on a write-back cache to
/// seconds on a struggling disk.
pub(crate) const SYNC_BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0,
];

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    api: ApiName,
    version: i16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ErrorLabels {
    api: ApiName,
    error: ErrorName,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ApiLabels {
    api: ApiName,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TopicLabels {
    topic: Text,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// One topic's counters, kept by topic id so that the request path looks them up
/// without building a label.
#[derive(Debug, Clone)]
pub(crate) struct TopicCounters {
    pub(crate) bytes_in: Counter,
    pub(crate) records_in: Counter,
    pub(crate) bytes_out: Counter,
}

/// The broker's counters and the registry that writes them out.
#[derive(Debug)]
pub(crate) struct BrokerMetrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    errors: Family<ErrorLabels, Counter>,
    latency: HistogramFamily<ApiLabels>,
    pub(crate) connections_open: Gauge,
    pub(crate) connections_accepted: Counter,
    pub(crate) connections_rejected: Counter,
    /// Bytes of requests read and not yet handled.
    pub(crate) request_bytes_in_flight: Gauge,
    topic_bytes_in: Family<TopicLabels, Counter>,
    topic_records_in: Family<TopicLabels, Counter>,
    topic_bytes_out: Family<TopicLabels, Counter>,
    topics: RwLock<HashMap<Uuid, TopicCounters>>,
    /// Observed by every partition log's fsync rounds.
    pub(crate) sync_timer: Histogram,
    /// Partitions shown with series of their own at most (`scrape`).
    partition_series_limit: usize,
}

impl BrokerMetrics {
    /// The registry with every series; `sync_timer` is the fsync histogram the logs
    /// observe.
    pub(crate) fn new(sync_timer: Histogram, partition_series_limit: usize) -> BrokerMetrics {
        let mut registry = Registry::with_prefix(PREFIX);
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "requests",
            "Requests handled, by API and version",
            requests.clone(),
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register(
            "request_errors",
            "Error codes answered (each failed partition, topic or member counts), by API and error",
            errors.clone(),
        );
        let latency: HistogramFamily<ApiLabels> =
            Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS));
        registry.register(
            "request_duration_seconds",
            "Time from reading a request to its response being ready (a produce with acks=all includes waiting for durability; a fetch, its long poll)",
            latency.clone(),
        );
        let connections_open = Gauge::default();
        registry.register(
            "connections_open",
            "Kafka connections open",
            connections_open.clone(),
        );
        let connections_accepted = Counter::default();
        registry.register(
            "connections_accepted",
            "Kafka connections accepted",
            connections_accepted.clone(),
        );
        let connections_rejected = Counter::default();
        registry.register(
            "connections_rejected",
            "Kafka connections refused at max.connections",
            connections_rejected.clone(),
        );
        let request_bytes_in_flight = Gauge::default();
        registry.register(
            "request_bytes_in_flight",
            "Bytes of requests read and not yet handled",
            request_bytes_in_flight.clone(),
        );
        let topic_bytes_in = Family::<TopicLabels, Counter>::default();
        registry.register(
            "topic_bytes_in",
            "Bytes of record batches appended, by topic (retries already written not counted)",
            topic_bytes_in.clone(),
        );
        let topic_records_in = Family::<TopicLabels, Counter>::default();
        registry.register(
            "topic_records_in",
            "Records appended, by topic",
            topic_records_in.clone(),
        );
        let topic_bytes_out = Family::<TopicLabels, Counter>::default();
        registry.register(
            "topic_bytes_out",
            "Bytes of record batches returned by fetches, by topic",
            topic_bytes_out.clone(),
        );
        registry.register(
            "storage_fsync_seconds",
            "Time each fsync round of a partition took (its files and, when it changed, its directory)",
            sync_timer.clone(),
        );
        BrokerMetrics {
            registry,
            requests,
            errors,
            latency,
            connections_open,
            connections_accepted,
            connections_rejected,
            request_bytes_in_flight,
            topic_bytes_in,
            topic_records_in,
            topic_bytes_out,
            topics: RwLock::new(HashMap::new()),
            sync_timer,
            partition_series_limit,
        }
    }

    /// The series counted as things happen, in the OpenMetrics text format without
    /// its end (`scrape::encode` adds the broker's state and the end).
    pub(crate) fn encode_counted(&self, text: &mut String) -> std::fmt::Result {
        prometheus_client::encoding::text::encode_registry(text, &self.registry)
    }

    /// Partitions shown with series of their own at most.
    pub(crate) fn partition_series_limit(&self) -> usize {
        self.partition_series_limit
    }

    /// A request of `api` at `version` was read.
    pub(crate) fn request(&self, api: ApiKey, version: i16) {
        self.requests
            .get_or_create(&RequestLabels {
                api: ApiName(api),
                version,
            })
            .inc();
    }

    /// The response to a request of `api` read at `started` is ready.
    pub(crate) fn answered(&self, api: ApiKey, started: Instant) {
        self.latency
            .get_or_create(&ApiLabels { api: ApiName(api) })
            .observe(started.elapsed().as_secs_f64());
    }

    /// Counts the error codes in `response`.
    pub(crate) fn response_errors(&self, api: ApiKey, response: &ResponseKind) {
        response_errors::each_error(response, |code| self.error(api, code));
    }

    /// Counts one error code answered to a request of `api`.
    pub(crate) fn error(&self, api: ApiKey, code: i16) {
        self.errors
            .get_or_create(&ErrorLabels {
                api: ApiName(api),
                error: ErrorName(code),
            })
            .inc();
    }

    /// Runs `count` with the counters of topic `id` (named `name`).
    pub(crate) fn topic(&self, id: Uuid, name: &str, count: impl FnOnce(&TopicCounters)) {
        if let Some(counters) = self
            .topics
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&id)
        {
            count(counters);
            return;
        }
        let labels = TopicLabels {
            topic: Text(name.to_owned()),
        };
        let counters = TopicCounters {
            bytes_in: self.topic_bytes_in.get_or_create_owned(&labels),
            records_in: self.topic_records_in.get_or_create_owned(&labels),
            bytes_out: self.topic_bytes_out.get_or_create_owned(&labels),
        };
        count(&counters);
        self.topics
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, counters);
    }

    /// Drops a deleted topic's series.
    pub(crate) fn forget_topic(&self, id: Uuid, name: &str) {
        self.topics
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
        let labels = TopicLabels {
            topic: Text(name.to_owned()),
        };
        self.topic_bytes_in.remove(&labels);
        self.topic_records_in.remove(&labels);
        self.topic_bytes_out.remove(&labels);
    }
}
