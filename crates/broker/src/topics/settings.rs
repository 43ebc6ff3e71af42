//! A topic's configs resolved into what the broker acts on: each config checked by the
//! one table of topic configs (`crate::topic_configs`), then the honoured ones turned
//! into log settings, the produce path's limits and its recompression.

use std::collections::BTreeMap;

use spool_log::{Cleanup, FlushPolicy, LogConfig};
use spool_metadata::TopicRecord;
use spool_model::{CompressionCodec, TimestampType, TopicName};
use uuid::Uuid;

use super::table::Topic;
use crate::topic_configs::{self, TOPIC_CONFIGS};
use spool_views::View;

/// Why a topic config was refused; the message goes back to the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct InvalidConfig(pub(crate) String);

/// What `compression.type` asks of produce when it names a codec: batches are
/// recompressed to it (at the codec's level) before they are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recompression {
    pub(crate) codec: CompressionCodec,
    /// `compression.<codec>.level`; `None`: the codec's default.
    pub(crate) level: Option<i32>,
}

/// Delayed delivery on a topic (`delivery.delay.*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DelayPolicy {
    /// `delivery.delay.max.ms`: the longest a record may be held.
    pub(crate) max_ms: u64,
}

/// How far a CreateTime batch's timestamps may stray from the broker's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TimestampBounds {
    /// `message.timestamp.before.max.ms`: `None` for no limit.
    pub(crate) before_ms: Option<i64>,
    /// `message.timestamp.after.max.ms`: `None` for no limit.
    pub(crate) after_ms: Option<i64>,
}

impl TimestampBounds {
    /// Whether `timestamp` (ms) is acceptable at `now` (ms).
    pub(crate) fn allows(&self, timestamp: i64, now: i64) -> bool {
        let early = self
            .before_ms
            .is_some_and(|limit| now.saturating_sub(timestamp) > limit);
        let late = self
            .after_ms
            .is_some_and(|limit| timestamp.saturating_sub(now) > limit);
        !(early || late)
    }

    pub(crate) fn is_unlimited(&self) -> bool {
        self.before_ms.is_none() && self.after_ms.is_none()
    }
}

/// Resolves a topic's Kafka configs, over the broker's `defaults` of them (by topic
/// config name), into the settings the broker acts on; refuses unknown keys and
/// values the config does not accept, with a message that names them.
pub(crate) fn resolve(
    record: TopicRecord,
    defaults: &BTreeMap<String, String>,
) -> Result<Topic, InvalidConfig> {
    for (key, value) in defaults.iter().chain(&record.configs) {
        let config = topic_configs::lookup(key)
            .ok_or_else(|| InvalidConfig(format!("unknown topic config {key}")))?;
        config.check(value).map_err(InvalidConfig)?;
    }
    let set = |name: &str| record.configs.get(name).or_else(|| defaults.get(name));
    let configs: BTreeMap<&'static str, String> = TOPIC_CONFIGS
        .iter()
        .map(|config| {
            let value = set(config.name).map_or(config.default, String::as_str);
            (config.name, value.to_owned())
        })
        .collect();
    let values = Values(&configs);

    let mut log = LogConfig {
        retention_ms: values.unlimited_or_positive("retention.ms")?,
        retention_bytes: values.unlimited_or_positive("retention.bytes")?,
        segment_bytes: values.positive("segment.bytes")?,
        segment_ms: Some(values.positive("segment.ms")?),
        segment_jitter_ms: u64::try_from(values.number("segment.jitter.ms")?).unwrap_or(0),
        index_interval_bytes: values.positive("index.interval.bytes")?,
        timestamp_type: match values.text("message.timestamp.type") {
            "LogAppendTime" => TimestampType::LogAppendTime,
            _ => TimestampType::CreateTime,
        },
        ..LogConfig::default()
    };
    if set("flush.ms").is_some() || set("flush.messages").is_some() {
        log.flush = FlushPolicy::Interval {
            ms: Some(values.positive("flush.ms")?).filter(|ms| *ms < i64::MAX as u64),
            messages: Some(values.positive("flush.messages")?).filter(|n| *n < i64::MAX as u64),
        };
    }
    let policy = topic_configs::list_items(values.text("cleanup.policy"));
    log.cleanup = Cleanup {
        delete: policy.contains(&"delete"),
        compact: policy.contains(&"compact"),
        min_dirty_ratio_ppm: parts_per_million(values.text("min.cleanable.dirty.ratio")),
        min_lag_ms: u64::try_from(values.number("min.compaction.lag.ms")?).unwrap_or(0),
        max_lag_ms: u64::try_from(values.number("max.compaction.lag.ms")?).unwrap_or(u64::MAX),
        delete_retention_ms: u64::try_from(values.number("delete.retention.ms")?).unwrap_or(0),
    };
    log.validate()
        .map_err(|error| InvalidConfig(error.to_string()))?;

    let max_message_bytes = usize::try_from(values.number("max.message.bytes")?).unwrap_or(0);
    let limit = |name: &str| -> Result<Option<i64>, InvalidConfig> {
        let ms = values.number(name)?;
        Ok((ms < i64::MAX).then_some(ms))
    };
    // The deprecated difference config stands in for either bound not set itself.
    let difference = set("message.timestamp.difference.max.ms")
        .map(|_| limit("message.timestamp.difference.max.ms"))
        .transpose()?
        .flatten();
    let bound = |name: &str| -> Result<Option<i64>, InvalidConfig> {
        match (set(name), difference) {
            (None, Some(difference)) => Ok(Some(difference)),
            _ => limit(name),
        }
    };
    let timestamps = TimestampBounds {
        before_ms: bound("message.timestamp.before.max.ms")?,
        after_ms: bound("message.timestamp.after.max.ms")?,
    };
    let level = |name: &str| -> Result<i32, InvalidConfig> {
        i32::try_from(values.number(name)?)
            .map_err(|_| InvalidConfig(format!("{name} is out of range")))
    };
    let recompression = match values.text("compression.type") {
        "uncompressed" => Some((CompressionCodec::None, None)),
        "gzip" => Some((
            CompressionCodec::Gzip,
            Some(level("compression.gzip.level")?).filter(|l| *l >= 0),
        )),
        "snappy" => Some((CompressionCodec::Snappy, None)),
        "lz4" => Some((CompressionCodec::Lz4, Some(level("compression.lz4.level")?))),
        "zstd" => Some((
            CompressionCodec::Zstd,
            Some(level("compression.zstd.level")?),
        )),
        _ => None,
    }
    .map(|(codec, level)| Recompression { codec, level });
    let delay = match values
        .text("delivery.delay.enable")
        .to_ascii_lowercase()
        .as_str()
    {
        "true" => Some(DelayPolicy {
            max_ms: values.positive("delivery.delay.max.ms")?,
        }),
        _ => None,
    };
    let schema_validation = crate::schema_registry::SchemaValidation {
        key: values
            .text("confluent.key.schema.validation")
            .eq_ignore_ascii_case("true"),
        value: values
            .text("confluent.value.schema.validation")
            .eq_ignore_ascii_case("true"),
    };
    let table = values
        .text("table.enable")
        .eq_ignore_ascii_case("true")
        .then(|| TableSettings::from_values(&values))
        .transpose()?;
    let view = View::from_configs(
        values.text("view.source.topic"),
        values.text("view.filter"),
        values.text("view.filter.sql"),
    )
    .map_err(InvalidConfig)?;
    let index = spool_index::IndexFields::parse(values.text("index.fields"))
        .map_err(|error| InvalidConfig(error.to_string()))?;
    let index = (!index.is_empty()).then(|| std::sync::Arc::new(index));
    if view.is_some() && index.is_some() {
        return Err(InvalidConfig(
            "a view has no records of its own: index.fields is for its source (a view uses its index)"
                .to_owned(),
        ));
    }
    if view.is_some() && table.is_some() {
        return Err(InvalidConfig(
            "a view has no records of its own: table.enable is for its source".to_owned(),
        ));
    }
    if view.is_some() && delay.is_some() {
        return Err(InvalidConfig(
            "a view has no records of its own to delay: delivery.delay.enable is for its source"
                .to_owned(),
        ));
    }
    let link = Some(values.text("mirror.link").trim())
        .filter(|link| !link.is_empty())
        .map(str::to_owned);
    if link.is_some() && (view.is_some() || delay.is_some()) {
        return Err(InvalidConfig(
            "a mirror topic copies its source's records: it is no view and delays nothing"
                .to_owned(),
        ));
    }
    // A mirror's log keeps its source's offsets (and their gaps) even once failed over.
    log.own_offsets = link.is_some();
    let failed_over = values
        .text("mirror.failed.over")
        .eq_ignore_ascii_case("true");
    let failed_over_floor = link
        .as_ref()
        .filter(|_| failed_over)
        .and_then(|_| values.text("mirror.producer.id.floor").trim().parse().ok())
        .filter(|floor: &i64| *floor >= 0);
    let mirror = link.filter(|_| !failed_over);
    Ok(Topic {
        record,
        log,
        max_message_bytes,
        recompression,
        timestamps,
        delay,
        schema_validation,
        table,
        index,
        view,
        mirror,
        failed_over_floor,
        configs,
        leader_epochs: Vec::new(),
    })
}

/// A ratio from 0 to 1 (checked) in millionths.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn parts_per_million(ratio: &str) -> u32 {
    let ratio: f64 = ratio.trim().parse().unwrap_or(0.5);
    (ratio.clamp(0.0, 1.0) * 1_000_000.0).round() as u32
}

/// The effective values of a topic's configs, read by type (each was checked).
/// A table topic's settings (`table.*`, docs/tables.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableSettings {
    /// `table.commit.interval.ms`.
    pub(crate) commit_interval: std::time::Duration,
    /// `table.schema=registry`: the value's fields as columns (else `key_value`).
    pub(crate) from_registry: bool,
    /// `table.namespace`.
    pub(crate) namespace: String,
}

impl TableSettings {
    fn from_values(values: &Values<'_>) -> Result<TableSettings, InvalidConfig> {
        let namespace = values.text("table.namespace").trim().to_owned();
        if namespace.is_empty() || namespace.contains('.') {
            return Err(InvalidConfig(format!(
                "table.namespace={namespace}: expected a name without dots"
            )));
        }
        Ok(TableSettings {
            commit_interval: std::time::Duration::from_millis(
                values.positive("table.commit.interval.ms")?,
            ),
            from_registry: values.text("table.schema") == "registry",
            namespace,
        })
    }
}

struct Values<'a>(&'a BTreeMap<&'static str, String>);

impl Values<'_> {
    fn text(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }

    fn number(&self, name: &str) -> Result<i64, InvalidConfig> {
        let value = self.text(name);
        value
            .trim()
            .parse::<i64>()
            .map_err(|_| InvalidConfig(format!("{name}={value} is not a number")))
    }

    fn positive(&self, name: &str) -> Result<u64, InvalidConfig> {
        u64::try_from(self.number(name)?)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| InvalidConfig(format!("{name}={} must be positive", self.text(name))))
    }

    fn unlimited_or_positive(&self, name: &str) -> Result<Option<u64>, InvalidConfig> {
        if self.number(name)? == -1 {
            Ok(None)
        } else {
            self.positive(name).map(Some)
        }
    }
}

/// A topic that has only the broker's defaults.
pub(crate) fn defaults_only(defaults: &BTreeMap<String, String>) -> Result<Topic, InvalidConfig> {
    resolve(placeholder_record()?, defaults)
}

fn placeholder_record() -> Result<TopicRecord, InvalidConfig> {
    Ok(TopicRecord {
        name: TopicName::new("defaults").map_err(|e| InvalidConfig(e.to_string()))?,
        id: Uuid::nil(),
        partitions: 1,
        replication_factor: 1,
        replica_assignment: Vec::new(),
        configs: BTreeMap::new(),
    })
}

/// Checks one topic config value on its own.
pub(crate) fn check_config(key: &str, value: &str) -> Result<(), InvalidConfig> {
    defaults_only(&BTreeMap::from([(key.to_owned(), value.to_owned())])).map(|_| ())
}

/// The value of every topic config for a topic that sets none, under `defaults`.
pub(crate) fn default_config_values(
    defaults: &BTreeMap<String, String>,
) -> BTreeMap<&'static str, String> {
    defaults_only(defaults)
        .or_else(|_| defaults_only(&BTreeMap::new()))
        .map(|topic| topic.configs)
        .unwrap_or_default()
}

/// Every topic config with its current value and whether the topic sets it
/// explicitly (otherwise it comes from the broker or Kafka's default).
pub(crate) fn config_entries(topic: &Topic) -> Vec<(&'static str, String, bool)> {
    topic
        .configs
        .iter()
        .map(|(key, value)| (*key, value.clone(), topic.record.configs.contains_key(*key)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(configs: &[(&str, &str)]) -> Result<Topic, InvalidConfig> {
        let mut record = placeholder_record().unwrap();
        record.configs = configs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        resolve(record, &BTreeMap::new())
    }

    #[test]
    fn every_kafka_topic_config_is_accepted_and_described() {
        for config in TOPIC_CONFIGS {
            let resolved = topic(&[(config.name, config.default)])
                .unwrap_or_else(|e| panic!("{}: {e}", config.name));
            assert_eq!(resolved.configs[config.name], config.default);
        }
        let described = config_entries(&topic(&[("preallocate", "true")]).unwrap());
        assert_eq!(described.len(), TOPIC_CONFIGS.len());
        assert!(described.contains(&("preallocate", "true".to_owned(), true)));
        assert!(described.contains(&("retention.ms", "604800000".to_owned(), false)));
        assert!(topic(&[("colour", "blue")]).is_err());
    }

    #[test]
    fn honoured_configs_reach_their_settings() {
        let t = topic(&[
            ("compression.type", "zstd"),
            ("compression.zstd.level", "7"),
            ("message.timestamp.difference.max.ms", "1000"),
            ("message.timestamp.after.max.ms", "50"),
            ("segment.jitter.ms", "30"),
            ("retention.ms", "-1"),
        ])
        .unwrap();
        assert_eq!(
            t.recompression,
            Some(Recompression {
                codec: CompressionCodec::Zstd,
                level: Some(7)
            })
        );
        assert_eq!(t.timestamps.before_ms, Some(1000), "from the difference");
        assert_eq!(t.timestamps.after_ms, Some(50), "its own setting wins");
        assert_eq!(t.log.segment_jitter_ms, 30);
        assert_eq!(t.log.retention_ms, None);
        let plain = topic(&[]).unwrap();
        assert_eq!(plain.recompression, None);
        assert_eq!(plain.timestamps.before_ms, None);
        assert_eq!(
            plain.timestamps.after_ms,
            Some(3_600_000),
            "Kafka 4's default"
        );
        assert!(plain.timestamps.allows(0, 1_000));
        assert!(!plain.timestamps.allows(10_000_000, 0));
        let gzip = topic(&[("compression.type", "gzip")]).unwrap();
        assert_eq!(gzip.recompression.unwrap().level, None, "-1: the default");
    }
}
