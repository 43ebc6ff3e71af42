//! A workload, with the OpenMessaging Benchmark's fields as flags.

use std::time::Duration;

use serde::Serialize;

#[derive(Debug, Clone, clap::Args, Serialize)]
pub struct Workload {
    /// Topics created for the run (and deleted after it).
    #[arg(long, default_value_t = 1)]
    pub topics: usize,
    /// Partitions of each topic.
    #[arg(long, default_value_t = 16)]
    pub partitions_per_topic: i32,
    /// Bytes per message value.
    #[arg(long, default_value_t = 1024)]
    pub message_size: usize,
    /// Messages per second over all producers; 0 sends as fast as the cluster takes them.
    #[arg(long, default_value_t = 0)]
    pub producer_rate: u64,
    /// Producers per topic, each on its own connection.
    #[arg(long, default_value_t = 1)]
    pub producers_per_topic: usize,
    /// Consumers per topic, sharing its partitions.
    #[arg(long, default_value_t = 1)]
    pub consumers_per_topic: usize,
    /// Seconds measured, after the warm-up.
    #[arg(long, default_value_t = 60.0)]
    pub duration: f64,
    /// Seconds run before measuring.
    #[arg(long, default_value_t = 5.0)]
    pub warmup: f64,
    /// Acknowledgements producers wait for: all, 1 or 0.
    #[arg(long, value_parser = ["all", "1", "0"], default_value = "all")]
    pub acks: String,
    #[arg(long, value_enum, default_value_t = Compression::None)]
    pub compression: Compression,
    #[arg(long, value_enum, default_value_t = KeyDistribution::NoKey)]
    pub key_distribution: KeyDistribution,
    /// Bytes written before `consume` reads them back.
    #[arg(long, default_value_t = 1 << 30)]
    pub backlog_bytes: u64,
    /// Messages per transaction: each producer is transactional and commits every this
    /// many messages (0: no transactions). Read them back with
    /// `--consumer-config isolation.level=read_committed`.
    #[arg(long, default_value_t = 0)]
    pub transaction_size: u64,
    /// A config of the run's topics, e.g. `confluent.value.schema.validation=true`
    /// (repeatable).
    #[arg(long = "topic-config", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub topic_config: Vec<(String, String)>,
    /// Frame every value as Confluent's serializers do: an Avro `bytes` schema is
    /// registered under each topic's value subject in this registry, and every value
    /// starts with magic byte 0 and its id (the send time follows them).
    #[arg(long)]
    pub schema_registry: Option<String>,
    /// Keep the topics after the run.
    #[arg(long)]
    pub keep_topics: bool,
    /// A librdkafka property for every client of the run (admin, producers,
    /// consumers), e.g. `security.protocol=SASL_SSL` (repeatable).
    #[arg(long = "client-config", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub client_config: Vec<(String, String)>,
    /// A librdkafka property for the producers, e.g. `linger.ms=5` (repeatable).
    #[arg(long = "producer-config", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub producer_config: Vec<(String, String)>,
    /// A librdkafka property for the consumers, e.g. `fetch.max.bytes=104857600`
    /// (repeatable).
    #[arg(long = "consumer-config", value_name = "KEY=VALUE", value_parser = parse_property)]
    pub consumer_config: Vec<(String, String)>,
}

/// Parses `KEY=VALUE` (a non-empty key; the value may be empty or hold `=`).
pub fn parse_property(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("expected KEY=VALUE, got `{text}`")),
    }
}

impl Workload {
    /// The bytes before each value's send time: Confluent's framing (magic byte and
    /// schema id) with `--schema-registry`.
    #[must_use]
    pub fn frame_len(&self) -> usize {
        if self.schema_registry.is_some() { 5 } else { 0 }
    }

    /// Checks the workload before anything is created.
    pub fn validate(&self) -> Result<(), String> {
        if self.topics == 0 || self.partitions_per_topic < 1 {
            return Err("--topics and --partitions-per-topic must be at least 1".into());
        }
        if self.producers_per_topic == 0 || self.consumers_per_topic == 0 {
            return Err(
                "--producers-per-topic and --consumers-per-topic must be at least 1".into(),
            );
        }
        if self.message_size < 8 + self.frame_len() {
            return Err(
                "--message-size must be at least 8 (13 with --schema-registry): each message carries its send time".into(),
            );
        }
        if self.transaction_size > 0 && self.acks != "all" {
            return Err("--transaction-size needs --acks all (transactions are idempotent)".into());
        }
        let seconds = |s: f64| s.is_finite() && (0.0..=86_400.0).contains(&s);
        if !seconds(self.warmup) || !seconds(self.duration) || self.duration <= 0.0 {
            return Err("--duration (> 0) and --warmup are seconds, at most a day".into());
        }
        Ok(())
    }

    pub(crate) fn warmup(&self) -> Duration {
        Duration::from_secs_f64(self.warmup.max(0.0))
    }

    pub(crate) fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.duration.max(0.1))
    }

    pub(crate) fn producers(&self) -> usize {
        self.topics * self.producers_per_topic.max(1)
    }

    pub(crate) fn consumers(&self) -> usize {
        self.topics * self.consumers_per_topic.max(1)
    }
}

/// A producer's compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

impl Compression {
    /// librdkafka's name for it (`compression.codec`).
    #[must_use]
    pub fn codec(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }
}

/// How messages are keyed (the OpenMessaging Benchmark's key distributors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyDistribution {
    /// No key: librdkafka spreads messages over partitions.
    NoKey,
    /// Keys cycle through as many values as there are partitions.
    RoundRobin,
    /// A random key per message.
    Random,
}
