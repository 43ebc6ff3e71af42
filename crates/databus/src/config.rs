//! What `spool databus` is told: where it listens, the upstream cluster (and how to
//! reach it: librdkafka's names for TLS and SASL), and the `databus.*` settings.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use spool_kafka_client::ClientSettings;
use spool_model::CompressionCodec;

/// Databus's settings.
#[derive(Debug, Clone)]
pub struct DatabusConfig {
    /// Where local clients connect (`--listen`); Metadata names this address.
    pub listen: SocketAddr,
    /// The upstream cluster: bootstrap brokers and how to reach them.
    pub upstream: ClientSettings,
    /// `databus.node.id`: the node id Databus gives itself in Metadata.
    pub node_id: i32,
    /// `databus.linger.ms`: how long produced batches wait to be merged.
    pub linger: Duration,
    /// `databus.batch.bytes`: the most record bytes (uncompressed) of one merged
    /// batch; a request bigger than it is sent alone.
    pub batch_bytes: usize,
    /// `databus.compression.type`: the merged batches' codec; `None` (`producer`,
    /// the default) keeps the codec the producers used (the first batch's), so that
    /// consumers read what they could read before.
    pub compression: Option<CompressionCodec>,
    /// `databus.spill.dir`: where acks=0 batches wait while upstream is unreachable
    /// (none: they wait in memory, within `databus.buffer.bytes`).
    pub spill_dir: Option<PathBuf>,
    /// `databus.spill.bytes`: the most the spill directory holds.
    pub spill_bytes: u64,
    /// `databus.buffer.bytes`: the most produced bytes waiting in memory; past it new
    /// produce requests are refused (retriable) until upstream takes some.
    pub buffer_bytes: usize,
    /// `databus.request.timeout.ms`: how long a forwarded request, or a merged
    /// batch's retries, may take.
    pub request_timeout: Duration,
}

/// The settings `spool databus --set` takes, besides the upstream client's.
pub const SETTINGS: &[&str] = &[
    "databus.node.id",
    "databus.linger.ms",
    "databus.batch.bytes",
    "databus.compression.type",
    "databus.spill.dir",
    "databus.spill.bytes",
    "databus.buffer.bytes",
    "databus.request.timeout.ms",
];

impl DatabusConfig {
    /// The configuration of `--listen`, `--brokers` and `--set` pairs: `databus.*`
    /// ones are Databus's, the others the upstream client's (librdkafka's names:
    /// `security.protocol`, `sasl.*`, `ssl.*`); the message says what is wrong.
    pub fn new(
        listen: SocketAddr,
        brokers: &str,
        settings: &[(String, String)],
    ) -> Result<DatabusConfig, String> {
        let (ours, client): (Vec<_>, Vec<_>) = settings
            .iter()
            .cloned()
            .partition(|(name, _)| name.starts_with("databus."));
        let mut upstream = ClientSettings::from_config(brokers, "spool-databus", &client)
            .map_err(|error| error.to_string())?;
        upstream.timeout = Duration::from_secs(30);
        let mut config = DatabusConfig {
            listen,
            upstream,
            node_id: 0,
            linger: Duration::from_millis(5),
            batch_bytes: 512 << 10,
            compression: None,
            spill_dir: None,
            spill_bytes: 1 << 30,
            buffer_bytes: 256 << 20,
            request_timeout: Duration::from_secs(30),
        };
        for (name, value) in &ours {
            config.set(name, value)?;
        }
        Ok(config)
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let number = |low: u64, high: u64| -> Result<u64, String> {
            value
                .parse::<u64>()
                .ok()
                .filter(|n| (low..=high).contains(n))
                .ok_or_else(|| format!("{name}={value}: expected a number from {low} to {high}"))
        };
        match name {
            "databus.node.id" => {
                self.node_id = i32::try_from(number(0, i32::MAX as u64)?).unwrap_or(0);
            }
            "databus.linger.ms" => self.linger = Duration::from_millis(number(0, 60_000)?),
            "databus.batch.bytes" => {
                self.batch_bytes = usize::try_from(number(1 << 10, 64 << 20)?).unwrap_or(0);
            }
            "databus.compression.type" => {
                self.compression = match value {
                    "producer" => None,
                    "none" => Some(CompressionCodec::None),
                    "gzip" => Some(CompressionCodec::Gzip),
                    "snappy" => Some(CompressionCodec::Snappy),
                    "lz4" => Some(CompressionCodec::Lz4),
                    "zstd" => Some(CompressionCodec::Zstd),
                    _ => {
                        return Err(format!(
                            "{name}={value}: expected producer, none, gzip, snappy, lz4 or zstd"
                        ));
                    }
                };
            }
            "databus.spill.dir" => {
                self.spill_dir = (!value.is_empty()).then(|| PathBuf::from(value));
            }
            "databus.spill.bytes" => self.spill_bytes = number(1 << 20, u64::MAX >> 1)?,
            "databus.buffer.bytes" => {
                self.buffer_bytes = usize::try_from(number(1 << 20, 16 << 30)?).unwrap_or(0);
            }
            "databus.request.timeout.ms" => {
                self.request_timeout = Duration::from_millis(number(100, 600_000)?);
            }
            _ => {
                return Err(format!(
                    "{name}: not a Databus setting (known: {})",
                    SETTINGS.join(", ")
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn databus_settings_and_the_upstream_clients_are_told_apart() {
        let listen = "127.0.0.1:9093".parse().unwrap_or_else(|_| unreachable!());
        let config = DatabusConfig::new(
            listen,
            "10.0.0.1:9092",
            &pairs(&[
                ("databus.linger.ms", "20"),
                ("databus.compression.type", "zstd"),
                ("security.protocol", "ssl"),
            ]),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.linger, Duration::from_millis(20));
        assert_eq!(config.compression, Some(CompressionCodec::Zstd));
        assert_eq!(config.upstream.security_protocol, "SSL");
        for bad in [
            ("databus.linger.ms", "soon"),
            ("databus.compression.type", "brotli"),
            ("databus.nope", "1"),
            ("no.such.client.setting", "1"),
        ] {
            assert!(
                DatabusConfig::new(listen, "h:1", &pairs(&[bad])).is_err(),
                "{bad:?}"
            );
        }
    }
}
