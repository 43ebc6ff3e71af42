//! Every topic config Kafka documents: its type, Kafka's default and validity, the
//! broker settings that default it, a line of documentation for admin tools, and
//! what Spool does with it. A config that cannot apply to a single-replica broker is
//! accepted, stored and described, and says why it changes nothing
//! (`docs/configuration.md` has the same table for people).

/// Kafka's config types, with their codes in DescribeConfigs v3+.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConfigType {
    Boolean,
    String,
    Int,
    /// Broker configs only, as are classes and passwords.
    Short,
    Long,
    Double,
    List,
    Class,
    Password,
}

impl ConfigType {
    pub(crate) fn code(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }
}

/// What makes a value valid, beyond its type.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Valid {
    Any,
    /// A number within these bounds (inclusive).
    Range(i64, i64),
    /// A fraction from 0 to 1.
    Ratio,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// A comma-separated list of these words (at least one).
    ListOf(&'static [&'static str]),
    /// Kafka's throttled-replica lists: `*`, or `partition:broker` pairs.
    Replicas,
}

/// Whether Spool acts on a config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    Honoured,
    /// Accepted, stored and described; it changes nothing, for this reason.
    NoOp(&'static str),
}

/// A broker setting that defaults a topic config; coarser units (hours, minutes) are
/// converted to the topic config's milliseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BrokerSynonym {
    pub(crate) name: &'static str,
    pub(crate) unit_ms: i64,
}

const fn same(name: &'static str) -> BrokerSynonym {
    BrokerSynonym { name, unit_ms: 1 }
}

const fn hours(name: &'static str) -> BrokerSynonym {
    BrokerSynonym {
        name,
        unit_ms: 3_600_000,
    }
}

const fn minutes(name: &'static str) -> BrokerSynonym {
    BrokerSynonym {
        name,
        unit_ms: 60_000,
    }
}

/// One topic config.
#[derive(Debug)]
pub(crate) struct TopicConfig {
    pub(crate) name: &'static str,
    pub(crate) kind: ConfigType,
    /// Kafka's default, as DescribeConfigs shows it.
    pub(crate) default: &'static str,
    pub(crate) valid: Valid,
    /// The broker settings that default it, the one that wins first.
    pub(crate) broker: &'static [BrokerSynonym],
    pub(crate) doc: &'static str,
    pub(crate) effect: Effect,
}

const LONG_MAX: i64 = i64::MAX;
const INT_MAX: i64 = i32::MAX as i64;
const LONG_MAX_TEXT: &str = "9223372036854775807";
const NO_REPLICATION: &str = "one broker owns each partition and storage keeps the copies: there is no replication to throttle or elect from";

/// Every topic config, in Kafka's documentation order.
pub(crate) const TOPIC_CONFIGS: &[TopicConfig] = &[
    TopicConfig {
        name: "cleanup.policy",
        kind: ConfigType::List,
        default: "delete",
        valid: Valid::ListOf(&["delete", "compact"]),
        broker: &[same("log.cleanup.policy")],
        doc: "delete: old segments are removed by retention; compact: the cleaner keeps the latest record of each key; both may be given.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "compression.gzip.level",
        kind: ConfigType::Int,
        default: "-1",
        valid: Valid::Range(-1, 9),
        broker: &[same("compression.gzip.level")],
        doc: "The gzip level used when the topic recompresses to gzip (-1: the codec's default).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "compression.lz4.level",
        kind: ConfigType::Int,
        default: "9",
        valid: Valid::Range(1, 17),
        broker: &[same("compression.lz4.level")],
        doc: "The lz4 level used when the topic recompresses to lz4.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "compression.type",
        kind: ConfigType::String,
        default: "producer",
        valid: Valid::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        broker: &[same("compression.type")],
        doc: "producer: batches are stored as the producer compressed them; a codec name: batches are recompressed to it on produce.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "compression.zstd.level",
        kind: ConfigType::Int,
        default: "3",
        valid: Valid::Range(-131_072, 22),
        broker: &[same("compression.zstd.level")],
        doc: "The zstd level used when the topic recompresses to zstd.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "delete.retention.ms",
        kind: ConfigType::Long,
        default: "86400000",
        valid: Valid::Range(0, LONG_MAX),
        broker: &[same("log.cleaner.delete.retention.ms")],
        doc: "How long a tombstone (a null value) of a compacted topic is kept after the segment holding it was cleaned.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "file.delete.delay.ms",
        kind: ConfigType::Long,
        default: "60000",
        valid: Valid::Range(0, LONG_MAX),
        broker: &[same("log.segment.delete.delay.ms")],
        doc: "How long Kafka waits before deleting a segment file from the file system.",
        effect: Effect::NoOp(
            "Spool deletes a segment file at once; readers still holding it keep their open handle, which is what the delay protects in Kafka",
        ),
    },
    TopicConfig {
        name: "flush.messages",
        kind: ConfigType::Long,
        default: LONG_MAX_TEXT,
        valid: Valid::Range(1, LONG_MAX),
        broker: &[same("log.flush.interval.messages")],
        doc: "fsync after this many unflushed records (with flush.ms); unset: every acknowledged write is durable (group commit).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "flush.ms",
        kind: ConfigType::Long,
        default: LONG_MAX_TEXT,
        valid: Valid::Range(0, LONG_MAX),
        broker: &[same("log.flush.interval.ms")],
        doc: "fsync when this long has passed since the last one (with flush.messages); unset: every acknowledged write is durable (group commit).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "follower.replication.throttled.replicas",
        kind: ConfigType::List,
        default: "",
        valid: Valid::Replicas,
        broker: &[],
        doc: "Replicas whose replication the follower throttles.",
        effect: Effect::NoOp(NO_REPLICATION),
    },
    TopicConfig {
        name: "index.interval.bytes",
        kind: ConfigType::Int,
        default: "4096",
        valid: Valid::Range(1, INT_MAX),
        broker: &[same("log.index.interval.bytes")],
        doc: "Bytes of records between two entries of the sparse offset index.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "leader.replication.throttled.replicas",
        kind: ConfigType::List,
        default: "",
        valid: Valid::Replicas,
        broker: &[],
        doc: "Replicas whose replication the leader throttles.",
        effect: Effect::NoOp(NO_REPLICATION),
    },
    TopicConfig {
        name: "local.retention.bytes",
        kind: ConfigType::Long,
        default: "-2",
        valid: Valid::Range(-2, LONG_MAX),
        broker: &[same("log.local.retention.bytes")],
        doc: "With tiered storage, the bytes kept on local disk (-2: retention.bytes).",
        effect: Effect::NoOp(
            "Spool has no tiered storage: the embedded broker keeps everything locally, the cluster everything in object storage",
        ),
    },
    TopicConfig {
        name: "local.retention.ms",
        kind: ConfigType::Long,
        default: "-2",
        valid: Valid::Range(-2, LONG_MAX),
        broker: &[same("log.local.retention.ms")],
        doc: "With tiered storage, how long data stays on local disk (-2: retention.ms).",
        effect: Effect::NoOp(
            "Spool has no tiered storage: the embedded broker keeps everything locally, the cluster everything in object storage",
        ),
    },
    TopicConfig {
        name: "max.compaction.lag.ms",
        kind: ConfigType::Long,
        default: LONG_MAX_TEXT,
        valid: Valid::Range(1, LONG_MAX),
        broker: &[same("log.cleaner.max.compaction.lag.ms")],
        doc: "The longest a record may stay uncompacted: a compacted log with older dirty records is cleaned whatever its dirty ratio.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "max.message.bytes",
        kind: ConfigType::Int,
        default: "1048588",
        valid: Valid::Range(0, INT_MAX),
        broker: &[same("message.max.bytes")],
        doc: "The largest record batch the topic accepts (MESSAGE_TOO_LARGE beyond).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "message.downconversion.enable",
        kind: ConfigType::Boolean,
        default: "true",
        valid: Valid::Any,
        broker: &[same("log.message.downconversion.enable")],
        doc: "Whether old fetch versions get records converted to old formats (removed in Kafka 4).",
        effect: Effect::NoOp(
            "Spool serves Fetch v4 and later only, which read the v2 record format it stores: nothing is ever down-converted",
        ),
    },
    TopicConfig {
        name: "message.format.version",
        kind: ConfigType::String,
        default: "3.0-IV1",
        valid: Valid::Any,
        broker: &[same("log.message.format.version")],
        doc: "The record format version (removed in Kafka 4).",
        effect: Effect::NoOp("Spool stores the v2 record format only"),
    },
    TopicConfig {
        name: "message.timestamp.after.max.ms",
        kind: ConfigType::Long,
        default: "3600000",
        valid: Valid::Range(0, LONG_MAX),
        broker: &[same("log.message.timestamp.after.max.ms")],
        doc: "With CreateTime, how far into the future (past the broker's clock) a batch's timestamps may be (INVALID_TIMESTAMP beyond).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "message.timestamp.before.max.ms",
        kind: ConfigType::Long,
        default: LONG_MAX_TEXT,
        valid: Valid::Range(0, LONG_MAX),
        broker: &[same("log.message.timestamp.before.max.ms")],
        doc: "With CreateTime, how far in the past a batch's timestamps may be (INVALID_TIMESTAMP beyond).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "message.timestamp.difference.max.ms",
        kind: ConfigType::Long,
        default: LONG_MAX_TEXT,
        valid: Valid::Range(0, LONG_MAX),
        broker: &[same("log.message.timestamp.difference.max.ms")],
        doc: "Deprecated (removed in Kafka 4): the largest difference either way, where the before/after configs are not set.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "message.timestamp.type",
        kind: ConfigType::String,
        default: "CreateTime",
        valid: Valid::OneOf(&["CreateTime", "LogAppendTime"]),
        broker: &[same("log.message.timestamp.type")],
        doc: "CreateTime keeps the producer's timestamps; LogAppendTime stamps batches with the broker's clock.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "min.cleanable.dirty.ratio",
        kind: ConfigType::Double,
        default: "0.5",
        valid: Valid::Ratio,
        broker: &[same("log.cleaner.min.cleanable.ratio")],
        doc: "A compacted log is cleaned when the uncleaned part is at least this fraction of it.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "min.compaction.lag.ms",
        kind: ConfigType::Long,
        default: "0",
        valid: Valid::Range(0, LONG_MAX),
        broker: &[same("log.cleaner.min.compaction.lag.ms")],
        doc: "The least time a record stays uncompacted.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "min.insync.replicas",
        kind: ConfigType::Int,
        default: "1",
        valid: Valid::Range(1, INT_MAX),
        broker: &[same("min.insync.replicas")],
        doc: "With acks=all, the replicas that must have a write.",
        effect: Effect::NoOp(
            "a partition has one copy, on this broker's disk or in object storage; acks=all answers once it is durable there",
        ),
    },
    TopicConfig {
        name: "preallocate",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[same("log.preallocate")],
        doc: "Whether new segment files are preallocated.",
        effect: Effect::NoOp(
            "segment files grow as they are written; preallocation would only move when a full disk is noticed",
        ),
    },
    TopicConfig {
        name: "remote.log.copy.disable",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[],
        doc: "With tiered storage, stops copying segments to remote storage.",
        effect: Effect::NoOp("Spool has no tiered storage"),
    },
    TopicConfig {
        name: "remote.log.delete.on.disable",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[],
        doc: "With tiered storage, deletes remote segments when tiering is turned off.",
        effect: Effect::NoOp("Spool has no tiered storage"),
    },
    TopicConfig {
        name: "remote.storage.enable",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[],
        doc: "Whether the topic tiers old segments to remote storage.",
        effect: Effect::NoOp(
            "Spool has no tiered storage: the embedded broker keeps everything locally, the cluster everything in object storage",
        ),
    },
    TopicConfig {
        name: "retention.bytes",
        kind: ConfigType::Long,
        default: "-1",
        valid: Valid::Range(-1, LONG_MAX),
        broker: &[same("log.retention.bytes")],
        doc: "The oldest closed segments are deleted while a partition is larger (-1: no limit).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "retention.ms",
        kind: ConfigType::Long,
        default: "604800000",
        valid: Valid::Range(-1, LONG_MAX),
        broker: &[
            same("log.retention.ms"),
            minutes("log.retention.minutes"),
            hours("log.retention.hours"),
        ],
        doc: "Closed segments whose newest record is older are deleted (-1: no limit).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "segment.bytes",
        kind: ConfigType::Int,
        default: "1073741824",
        valid: Valid::Range(1024, INT_MAX),
        broker: &[same("log.segment.bytes")],
        doc: "A new segment is started when the active one would grow past this.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "segment.index.bytes",
        kind: ConfigType::Int,
        default: "10485760",
        valid: Valid::Range(4, INT_MAX),
        broker: &[same("log.index.size.max.bytes")],
        doc: "The size Kafka preallocates for a segment's index files.",
        effect: Effect::NoOp(
            "Spool's index files grow with their entries; nothing is preallocated and no segment rolls for a full index",
        ),
    },
    TopicConfig {
        name: "segment.jitter.ms",
        kind: ConfigType::Long,
        default: "0",
        valid: Valid::Range(0, LONG_MAX),
        broker: &[same("log.roll.jitter.ms"), hours("log.roll.jitter.hours")],
        doc: "Up to this much is taken at random off segment.ms for each segment, so that partitions do not roll together.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "segment.ms",
        kind: ConfigType::Long,
        default: "604800000",
        valid: Valid::Range(1, LONG_MAX),
        broker: &[same("log.roll.ms"), hours("log.roll.hours")],
        doc: "A new segment is started when the active one is older than this.",
        effect: Effect::Honoured,
    },
    // Spool's own, after Kafka's: delayed delivery (docs/delayed-delivery.md).
    TopicConfig {
        name: "delivery.delay.enable",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: records with a spool.deliver-at or spool.delay-ms header in the future are held and appended to their partition when due.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "delivery.delay.max.ms",
        kind: ConfigType::Long,
        default: "3456000000",
        valid: Valid::Range(1, LONG_MAX),
        broker: &[],
        doc: "Spool: the longest a record may be held (40 days by default); a later due time is refused with INVALID_RECORD.",
        effect: Effect::Honoured,
    },
    // Confluent Server's broker-side schema validation (docs/schema-registry.md).
    TopicConfig {
        name: "confluent.key.schema.validation",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[],
        doc: "Records whose key does not start with the magic byte and a schema id registered under the subject TOPIC-key are refused with INVALID_RECORD (null keys pass).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "confluent.value.schema.validation",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[],
        doc: "Records whose value does not start with the magic byte and a schema id registered under the subject TOPIC-value are refused with INVALID_RECORD (null values pass).",
        effect: Effect::Honoured,
    },
    // Spool's own: table topics (docs/tables.md).
    TopicConfig {
        name: "table.enable",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: the topic's committed records are also an Iceberg table of Parquet files (from the log start), queried by DuckDB, Spark, Trino or pyiceberg through the catalogue in the metadata store.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "table.commit.interval.ms",
        kind: ConfigType::Long,
        default: "60000",
        valid: Valid::Range(100, LONG_MAX),
        broker: &[],
        doc: "Spool: how often the table takes the topic's new records (one Parquet file per partition, one snapshot per commit).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "table.schema",
        kind: ConfigType::String,
        default: "key_value",
        valid: Valid::OneOf(&["key_value", "registry"]),
        broker: &[],
        doc: "Spool: key_value (columns partition, offset, timestamp, key, value, headers) or registry (the value's fields as columns, from the latest schema of the subject TOPIC-value).",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "table.namespace",
        kind: ConfigType::String,
        default: "spool",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: the Iceberg namespace of the topic's table (the table is named after the topic).",
        effect: Effect::Honoured,
    },
    // Spool's own: message indexes (docs/index.md).
    TopicConfig {
        name: "index.fields",
        kind: ConfigType::List,
        default: "",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: what to index for finding records by value (GET /api/topics/T/messages, spool find): key, header:NAME, value:$.path (a JSON value's field), comma-separated; empty for none.",
        effect: Effect::Honoured,
    },
    // Spool's own: view topics (docs/views.md).
    TopicConfig {
        name: "view.filter",
        kind: ConfigType::String,
        default: "*",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: the tags a view lets through, as TagA || TagB (the spool.tag header), or * for every record.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "view.filter.sql",
        kind: ConfigType::String,
        default: "",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: an expression over headers a view's records must also match (RocketMQ's SQL92 subset), e.g. region = 'eu' AND amount > 100.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "mirror.link",
        kind: ConfigType::String,
        default: "",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: the mirror link whose source this topic copies at the source's offsets; read-only until mirror.failed.over. Set by spool mirror.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "mirror.failed.over",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: the mirror topic was failed over (spool mirror failover): no longer copied, and writable.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "mirror.producer.id.floor",
        kind: ConfigType::Long,
        default: "-1",
        valid: Valid::Range(-1, i64::MAX),
        broker: &[],
        doc: "Spool: set by failover: producer ids below it are the source's (their transactions still open are aborted here); this cluster hands out none below it.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "view.source.topic",
        kind: ConfigType::String,
        default: "",
        valid: Valid::Any,
        broker: &[],
        doc: "Spool: makes the topic a read-only view of this topic's records that match view.filter and view.filter.sql, at the source's offsets. Set at creation only.",
        effect: Effect::Honoured,
    },
    TopicConfig {
        name: "unclean.leader.election.enable",
        kind: ConfigType::Boolean,
        default: "false",
        valid: Valid::Any,
        broker: &[same("unclean.leader.election.enable")],
        doc: "Whether a replica out of sync may become leader.",
        effect: Effect::NoOp(NO_REPLICATION),
    },
];

/// The topic config named `name`.
pub(crate) fn lookup(name: &str) -> Option<&'static TopicConfig> {
    TOPIC_CONFIGS.iter().find(|config| config.name == name)
}

/// The topic config a broker setting defaults, with the synonym.
pub(crate) fn defaulted_by(
    broker_setting: &str,
) -> Option<(&'static TopicConfig, &'static BrokerSynonym)> {
    TOPIC_CONFIGS.iter().find_map(|config| {
        config
            .broker
            .iter()
            .find(|synonym| synonym.name == broker_setting)
            .map(|synonym| (config, synonym))
    })
}

/// Every broker setting that defaults a topic config.
pub(crate) fn broker_synonyms() -> impl Iterator<Item = &'static BrokerSynonym> {
    TOPIC_CONFIGS.iter().flat_map(|config| config.broker.iter())
}

impl TopicConfig {
    /// Checks `value` by the config's type and validity; the message says what the
    /// config accepts.
    pub(crate) fn check(&self, value: &str) -> Result<(), String> {
        let name = self.name;
        let expected = |what: &str| Err(format!("{name}={value}: expected {what}"));
        match self.kind {
            ConfigType::Boolean => {
                if value.eq_ignore_ascii_case("true") || value.eq_ignore_ascii_case("false") {
                    return Ok(());
                }
                return expected("true or false");
            }
            ConfigType::Int | ConfigType::Short | ConfigType::Long => {
                let Ok(number) = value.trim().parse::<i64>() else {
                    return Err(format!("{name}={value} is not a number"));
                };
                let top = match self.kind {
                    ConfigType::Int => INT_MAX,
                    ConfigType::Short => i64::from(i16::MAX),
                    _ => LONG_MAX,
                };
                let (low, high) = match self.valid {
                    Valid::Range(low, high) => (low, high.min(top)),
                    _ => (i64::MIN, top),
                };
                if !(low..=high).contains(&number) {
                    return expected(&format!("a number from {low} to {high}"));
                }
            }
            ConfigType::Double => {
                let Ok(number) = value.trim().parse::<f64>() else {
                    return Err(format!("{name}={value} is not a number"));
                };
                if matches!(self.valid, Valid::Ratio) && !(0.0..=1.0).contains(&number) {
                    return expected("a number from 0 to 1");
                }
            }
            ConfigType::String | ConfigType::Class | ConfigType::Password => {
                if let Valid::OneOf(words) = self.valid
                    && !words.contains(&value)
                {
                    return expected(&format!("one of {}", words.join(", ")));
                }
            }
            ConfigType::List => match self.valid {
                Valid::ListOf(words) => {
                    let items = list_items(value);
                    if items.is_empty() || !items.iter().all(|item| words.contains(item)) {
                        return expected(&format!("a list of {}", words.join(", ")));
                    }
                }
                Valid::Replicas => {
                    let pair = |item: &str| {
                        item.split_once(':').is_some_and(|(p, b)| {
                            p.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok()
                        })
                    };
                    let items = list_items(value);
                    let ok = value.trim() == "*" || items.iter().all(|item| pair(item));
                    if !ok {
                        return expected("* or a list of partition:broker pairs");
                    }
                }
                _ => {}
            },
        }
        Ok(())
    }

    pub(crate) fn is_list(&self) -> bool {
        self.kind == ConfigType::List
    }
}

/// The items of a comma-separated list value, trimmed, empty ones left out.
pub(crate) fn list_items(value: &str) -> Vec<&str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_config_is_named_once_and_its_default_is_valid() {
        for (i, config) in TOPIC_CONFIGS.iter().enumerate() {
            assert!(
                TOPIC_CONFIGS[..i].iter().all(|c| c.name != config.name),
                "{} twice",
                config.name
            );
            if !config.default.is_empty() {
                assert_eq!(config.check(config.default), Ok(()), "{}", config.name);
            }
        }
        let synonyms: Vec<&str> = broker_synonyms().map(|s| s.name).collect();
        for (i, name) in synonyms.iter().enumerate() {
            assert!(!synonyms[..i].contains(name), "{name} defaults two configs");
        }
    }

    #[test]
    fn values_are_checked_by_type_and_validity() {
        let check = |name: &str, value: &str| lookup(name).unwrap().check(value);
        assert!(check("cleanup.policy", "compact, delete").is_ok());
        assert!(
            check("cleanup.policy", "shred")
                .unwrap_err()
                .contains("delete, compact")
        );
        assert!(check("cleanup.policy", "").is_err());
        assert!(check("min.cleanable.dirty.ratio", "0.25").is_ok());
        assert!(check("min.cleanable.dirty.ratio", "1.5").is_err());
        assert!(check("preallocate", "TRUE").is_ok());
        assert!(check("preallocate", "yes").is_err());
        assert!(check("segment.bytes", "3000000000").is_err(), "an int");
        assert!(check("retention.ms", "-1").is_ok());
        assert!(check("retention.ms", "-3").is_err());
        assert!(check("compression.type", "zstd").is_ok());
        assert!(check("compression.type", "brotli").is_err());
        assert!(check("leader.replication.throttled.replicas", "*").is_ok());
        assert!(check("leader.replication.throttled.replicas", "0:1,1:1").is_ok());
        assert!(check("leader.replication.throttled.replicas", "all").is_err());
        assert_eq!(
            defaulted_by("log.retention.hours").unwrap().0.name,
            "retention.ms"
        );
        assert_eq!(
            defaulted_by("log.retention.hours").unwrap().1.unit_ms,
            3_600_000
        );
    }
}
