//! Per-partition settings, named after their Kafka topic configs.

use std::time::Duration;

use spool_model::TimestampType;

/// When appended bytes are made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// fsync after every append, shared by concurrent appenders (group commit). The
    /// high watermark moves only with durable data, so a consumer never sees a record
    /// that a crash could take back. The default.
    Durable,
    /// fsync when `ms` have passed since the last one or `messages` records are
    /// unflushed, whichever comes first (Kafka's `flush.ms` / `flush.messages`). Data
    /// is visible to consumers as soon as it is written.
    Interval {
        ms: Option<u64>,
        messages: Option<u64>,
    },
}

/// `cleanup.policy` and the log cleaner's per-topic settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cleanup {
    /// `delete` in `cleanup.policy`: retention deletes old segments.
    pub delete: bool,
    /// `compact` in `cleanup.policy`: the cleaner keeps the latest record per key.
    pub compact: bool,
    /// `min.cleanable.dirty.ratio`, in millionths.
    pub min_dirty_ratio_ppm: u32,
    /// `min.compaction.lag.ms`.
    pub min_lag_ms: u64,
    /// `max.compaction.lag.ms`.
    pub max_lag_ms: u64,
    /// `delete.retention.ms`: how long a tombstone stays once cleaned.
    pub delete_retention_ms: u64,
}

impl Default for Cleanup {
    fn default() -> Self {
        Cleanup {
            delete: true,
            compact: false,
            min_dirty_ratio_ppm: 500_000,
            min_lag_ms: 0,
            max_lag_ms: u64::MAX,
            delete_retention_ms: 86_400_000,
        }
    }
}

/// Settings of one partition's log. Defaults follow Kafka's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// `segment.bytes`: roll when the active segment would grow past this.
    pub segment_bytes: u64,
    /// `segment.ms`: roll when the active segment is older than this.
    pub segment_ms: Option<u64>,
    /// `segment.jitter.ms`: up to this much off `segment.ms`, different for each
    /// segment, so that partitions created together do not all roll together.
    pub segment_jitter_ms: u64,
    /// `index.interval.bytes`: bytes between two sparse index entries.
    pub index_interval_bytes: u64,
    /// `retention.ms`: delete closed segments whose newest record is older; `None` keeps all.
    pub retention_ms: Option<u64>,
    /// `retention.bytes`: delete the oldest closed segments while the log is bigger.
    pub retention_bytes: Option<u64>,
    /// `flush.ms` / `flush.messages`, or durable group commit.
    pub flush: FlushPolicy,
    /// `message.timestamp.type`.
    pub timestamp_type: TimestampType,
    /// Bytes of the newest data kept in memory to serve tailing consumers.
    pub tail_cache_bytes: u64,
    /// `cleanup.policy` and compaction.
    pub cleanup: Cleanup,
    /// The log keeps another log's offsets (a mirror topic's copy): batches are
    /// appended at their own offsets ([`crate::PartitionLog::append_at_own_offsets`]),
    /// so gaps between them are expected, and recovery keeps them.
    pub own_offsets: bool,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            segment_bytes: 1 << 30,
            segment_ms: Some(7 * 24 * 3600 * 1000),
            segment_jitter_ms: 0,
            index_interval_bytes: 4096,
            retention_ms: Some(7 * 24 * 3600 * 1000),
            retention_bytes: None,
            flush: FlushPolicy::Durable,
            timestamp_type: TimestampType::CreateTime,
            tail_cache_bytes: 1 << 20,
            cleanup: Cleanup::default(),
            own_offsets: false,
        }
    }
}

/// A setting outside its bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} = {value} is out of bounds: {bounds}")]
pub struct ConfigError {
    pub key: &'static str,
    pub value: String,
    pub bounds: &'static str,
}

/// Index positions are 32-bit, as in Kafka, so a segment stays below 2 GiB.
pub(crate) const MAX_SEGMENT_BYTES: u64 = i32::MAX as u64;

impl LogConfig {
    /// Checks every bound; the message names the key and its allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let check = |ok: bool, key: &'static str, value: String, bounds: &'static str| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError { key, value, bounds })
            }
        };
        check(
            (1024..=MAX_SEGMENT_BYTES).contains(&self.segment_bytes),
            "segment.bytes",
            self.segment_bytes.to_string(),
            "1024 to 2147483647",
        )?;
        check(
            self.segment_ms != Some(0),
            "segment.ms",
            "0".into(),
            "at least 1 (or unset)",
        )?;
        check(
            (1..=MAX_SEGMENT_BYTES).contains(&self.index_interval_bytes),
            "index.interval.bytes",
            self.index_interval_bytes.to_string(),
            "1 to 2147483647",
        )?;
        if let FlushPolicy::Interval { ms, messages } = self.flush {
            check(
                ms != Some(0),
                "flush.ms",
                "0".into(),
                "at least 1 (or unset)",
            )?;
            check(
                messages != Some(0),
                "flush.messages",
                "0".into(),
                "at least 1 (or unset)",
            )?;
        }
        Ok(())
    }

    /// The age at which a segment rolls: `segment.ms` less this segment's share of
    /// `segment.jitter.ms`, drawn from `seed` (the same for a segment every time, and
    /// different across segments and partitions).
    pub(crate) fn segment_age_limit(&self, seed: u64) -> Option<Duration> {
        let jitter = match self.segment_jitter_ms {
            0 => 0,
            range => seed % range,
        };
        self.segment_ms
            .map(|ms| Duration::from_millis(ms.saturating_sub(jitter).max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bounds_are_named() {
        assert!(LogConfig::default().validate().is_ok());
        let tiny = LogConfig {
            segment_bytes: 10,
            ..LogConfig::default()
        };
        let error = tiny.validate().unwrap_err();
        assert_eq!(error.key, "segment.bytes");
        assert!(error.to_string().contains("1024 to 2147483647"));
        let flush = LogConfig {
            flush: FlushPolicy::Interval {
                ms: Some(0),
                messages: None,
            },
            ..LogConfig::default()
        };
        assert_eq!(flush.validate().unwrap_err().key, "flush.ms");
    }

    #[test]
    fn segment_jitter_takes_a_different_share_off_each_segment() {
        let config = LogConfig {
            segment_ms: Some(10_000),
            segment_jitter_ms: 4_000,
            ..LogConfig::default()
        };
        let limits: Vec<Duration> = (0..50u64)
            .map(|seed| config.segment_age_limit(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
            .map(Option::unwrap)
            .collect();
        assert!(
            limits
                .iter()
                .all(|l| (6_001..=10_000).contains(&l.as_millis()))
        );
        assert!(limits.iter().any(|l| *l != limits[0]), "not all the same");
        let plain = LogConfig::default();
        assert_eq!(
            plain.segment_age_limit(12345),
            Some(Duration::from_millis(7 * 24 * 3600 * 1000))
        );
    }
}
