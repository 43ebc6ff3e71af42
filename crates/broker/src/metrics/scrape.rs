//! Series read from the broker's state when `/metrics` is scraped, not counted as
//! things happen: partitions, the flush queue, object storage, consumer groups and
//! the cluster. A scrape takes the partitions' locks briefly, one at a time; the
//! admin listener runs it on the blocking pool.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;

use prometheus_client::registry::Registry;

use super::BrokerMetrics;
use super::labels::Text;
use crate::shared::Shared;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PartitionLabels {
    topic: Text,
    partition: i32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct AnswerLabels {
    answer: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct GroupLabels {
    group: Text,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct GroupStateLabels {
    group: Text,
    state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct GroupPartitionLabels {
    group: Text,
    topic: Text,
    partition: i32,
}

/// Kafka's group states, each a series of a group (1 for the one it is in).
const GROUP_STATES: [&str; 7] = [
    "Empty",
    "PreparingRebalance",
    "CompletingRebalance",
    "Assigning",
    "Reconciling",
    "Stable",
    "Dead",
];

/// Every series in the OpenMetrics text format: those `metrics` counted, then those
/// read from the broker's state now. Takes the partitions' locks: not on an async
/// thread.
pub(crate) fn encode(metrics: &BrokerMetrics, shared: &Arc<Shared>) -> String {
    let mut state = Registry::with_prefix(super::PREFIX);
    state.register_collector(Box::new(StateCollector {
        broker: shared.clone(),
        partition_series_limit: metrics.partition_series_limit(),
    }));
    let mut text = String::new();
    let encoded = metrics
        .encode_counted(&mut text)
        .and_then(|()| prometheus_client::encoding::text::encode_registry(&mut text, &state))
        .and_then(|()| prometheus_client::encoding::text::encode_eof(&mut text));
    if let Err(error) = encoded {
        tracing::warn!(%error, "cannot write the metrics");
    }
    text
}

/// Reads the broker's state when encoded: made for one scrape.
#[derive(Debug)]
struct StateCollector {
    broker: Arc<Shared>,
    partition_series_limit: usize,
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> std::fmt::Result {
        let shared: &Shared = &self.broker;
        gauge(
            &mut encoder,
            "storage_flush_queue_depth",
            "Partitions waiting for a flusher to fsync them",
            shared.logs().flush_queue_len(),
        )?;
        partitions(&mut encoder, shared, self.partition_series_limit)?;
        delayed(&mut encoder, shared)?;
        views(&mut encoder, shared)?;
        super::lanes::encode(&mut encoder, shared)?;
        groups(&mut encoder, shared)?;
        share_groups(&mut encoder, shared)?;
        transaction_checks(&mut encoder, shared)?;
        super::mirror::encode(&mut encoder, shared)?;
        super::tables::encode(&mut encoder, shared)?;
        object_storage(&mut encoder, shared)?;
        cluster(&mut encoder, shared)
    }
}

/// One gauge without labels.
fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: impl TryInto<i64>,
) -> std::fmt::Result {
    let value = value.try_into().unwrap_or(i64::MAX);
    let metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    ConstGauge::new(value).encode(metric)
}

/// One counter without labels (`_total` is added).
fn counter(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: &AtomicU64,
) -> std::fmt::Result {
    let metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    ConstCounter::new(value.load(Ordering::Relaxed)).encode(metric)
}

/// Transaction check-backs this broker's coordinator made, by answer (`none`: the
/// checker failed or timed out).
fn transaction_checks(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let stats = shared.txn_checks();
    let mut family = encoder.encode_descriptor(
        "transaction_checks",
        "Open transactions checked back with their application's checker, by answer",
        None,
        MetricType::Counter,
    )?;
    for (answer, value) in [
        ("commit", &stats.commit),
        ("rollback", &stats.rollback),
        ("unknown", &stats.unknown),
        ("none", &stats.failed),
    ] {
        ConstCounter::new(value.load(Ordering::Relaxed))
            .encode(family.encode_family(&AnswerLabels { answer })?)?;
    }
    Ok(())
}

/// Share groups (KIP-932): what the share-partitions led here did.
fn share_groups(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let stats = &shared.share().stats;
    let counters = [
        (
            "share_records_acquired",
            "Records handed to share consumers (each delivery once)",
            &stats.acquired,
        ),
        (
            "share_records_redelivered",
            "Deliveries after the first (released, or a lock ran out)",
            &stats.redelivered,
        ),
        (
            "share_records_accepted",
            "Records share consumers acknowledged with Accept",
            &stats.accepted,
        ),
        (
            "share_records_released",
            "Records given back (Release, a closed or expired session)",
            &stats.released,
        ),
        (
            "share_records_rejected",
            "Records share consumers acknowledged with Reject",
            &stats.rejected,
        ),
        (
            "share_lock_expiries",
            "Acquired records whose acquisition lock ran out",
            &stats.lock_expiries,
        ),
        (
            "share_dead_letters",
            "Records archived as undeliverable (rejected, or at the delivery count limit)",
            &stats.dead_letters,
        ),
        (
            "share_dead_letters_written",
            "Dead letters written to their group's dead-letter topic (by this broker)",
            &stats.dead_letters_written,
        ),
        (
            "share_dead_letters_queued",
            "Dead letters queued in the metadata store for the broker leading their partition",
            &stats.dead_letters_queued,
        ),
    ];
    for (name, help, value) in counters {
        counter(encoder, name, help, value)?;
    }
    Ok(())
}

fn histogram(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    histogram: &Histogram,
) -> std::fmt::Result {
    let metric = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    histogram.encode(metric)
}

/// One labelled gauge per item.
fn gauges<L: EncodeLabelSet, V: TryInto<i64>>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, V)>,
) -> std::fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        let value = value.try_into().unwrap_or(i64::MAX);
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// A partition's numbers as the series show them.
struct PartitionRow {
    labels: PartitionLabels,
    log_start: i64,
    high_watermark: i64,
    usage: spool_log::DiskUsage,
}

/// The partitions this broker has open and leads: their offsets, and their size on
/// this broker's disk (in shared-storage mode, the tail's).
fn partitions(
    encoder: &mut DescriptorEncoder<'_>,
    shared: &Shared,
    limit: usize,
) -> std::fmt::Result {
    let opened: HashMap<_, _> = shared.logs().opened().into_iter().collect();
    if opened.is_empty() || opened.len() > limit {
        return Ok(());
    }
    let mut rows = Vec::with_capacity(opened.len());
    for topic in shared.topics().all() {
        for index in 0..topic.record.partitions {
            let Some(log) = topic.log_partition(index).and_then(|key| opened.get(&key)) else {
                continue;
            };
            let offsets = log.offsets();
            let log_start = if shared.storage().is_some() {
                // The tail starts where it was opened; the catalogue knows the start.
                match shared.partitions().partition_of(topic.clone(), index, -1) {
                    Ok(partition) => partition.log_start().0,
                    Err(_) => continue,
                }
            } else {
                offsets.log_start.0
            };
            rows.push(PartitionRow {
                labels: PartitionLabels {
                    topic: Text(topic.record.name.as_str().to_owned()),
                    partition: index,
                },
                log_start,
                high_watermark: offsets.high_watermark.0,
                usage: log.disk_usage(),
            });
        }
    }
    let series = |value: fn(&PartitionRow) -> i64| {
        rows.iter()
            .map(move |row| (row.labels.clone(), value(row)))
            .collect::<Vec<_>>()
    };
    gauges(
        encoder,
        "partition_log_start_offset",
        "The first offset a consumer can read, by partition",
        series(|row| row.log_start),
    )?;
    gauges(
        encoder,
        "partition_high_watermark",
        "The offset after the last record consumers can read, by partition",
        series(|row| row.high_watermark),
    )?;
    gauges(
        encoder,
        "partition_size_bytes",
        "Bytes of record batches in the partition's segment files on this broker (in shared-storage mode, its local tail)",
        series(|row| i64::try_from(row.usage.bytes).unwrap_or(i64::MAX)),
    )?;
    gauges(
        encoder,
        "partition_segments",
        "Segment files of the partition on this broker (in shared-storage mode, its local tail)",
        series(|row| i64::try_from(row.usage.segments).unwrap_or(i64::MAX)),
    )
}

/// Delayed delivery: each led partition's held records, as its last round read them.
fn delayed(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let mut pending = Vec::new();
    let mut next_due = Vec::new();
    for (key, holds) in shared.delayed().all() {
        let Some(topic) = shared.topics().by_id(key.topic_id) else {
            continue;
        };
        let labels = PartitionLabels {
            topic: Text(topic.record.name.as_str().to_owned()),
            partition: key.partition,
        };
        if let Some(due) = holds.next_due_ms {
            next_due.push((labels.clone(), due));
        }
        pending.push((labels, holds.count));
    }
    gauges(
        encoder,
        "partition_delayed_records",
        "Held records waiting for their due time, by partition (topics with delivery.delay.enable)",
        pending,
    )?;
    let mut family = encoder.encode_descriptor(
        "partition_delayed_next_due_timestamp_seconds",
        "When the partition's next held record is due (Unix time)",
        None,
        MetricType::Gauge,
    )?;
    for (labels, due_ms) in next_due {
        #[allow(clippy::cast_precision_loss)]
        let seconds = due_ms as f64 / 1000.0;
        ConstGauge::new(seconds).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ViewBatchLabels {
    topic: Text,
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TopicLabels {
    topic: Text,
}

/// What the views read on this broker made of their sources' batches, and the tag
/// index's size.
fn views(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let views: Vec<_> = shared
        .views()
        .all()
        .into_iter()
        .filter_map(|(id, stats)| Some((shared.topics().by_id(id)?, stats)))
        .collect();
    let mut family = encoder.encode_descriptor(
        "view_batches",
        "Source batches a view's fetches took: sent as stored, rewritten with the matching records, or skipped as a gap",
        None,
        MetricType::Counter,
    )?;
    for (topic, stats) in &views {
        for outcome in spool_views::Outcome::ALL {
            let labels = ViewBatchLabels {
                topic: Text(topic.record.name.as_str().to_owned()),
                outcome: outcome.label(),
            };
            ConstCounter::new(stats.batches(outcome)).encode(family.encode_family(&labels)?)?;
        }
    }
    let per_view: [(&str, &str, ViewCount); 2] = [
        (
            "view_batches_inflated",
            "Source batches a view had to read the records of (the tag index could not decide)",
            spool_views::ViewStats::inflated,
        ),
        (
            "view_index_jumps",
            "Stretches of the source a view jumped over with the source's message index, unread",
            spool_views::ViewStats::index_jumps,
        ),
    ];
    for (name, help, count) in per_view {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (topic, stats) in &views {
            let labels = TopicLabels {
                topic: Text(topic.record.name.as_str().to_owned()),
            };
            ConstCounter::new(count(stats)).encode(family.encode_family(&labels)?)?;
        }
    }
    gauge(
        encoder,
        "view_tag_index_batches",
        "Source batches whose tags the tag index holds",
        shared.views().index.len(),
    )
}

/// The groups this broker coordinates: members, state, committed offsets and lag
/// (where this broker knows the partition's high watermark: every partition in
/// embedded mode, those it leads in a cluster).
fn groups(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let listed = shared.groups().list();
    let mut members = Vec::with_capacity(listed.len());
    let mut states = Vec::with_capacity(listed.len() * GROUP_STATES.len());
    let mut committed = Vec::new();
    let mut lags = Vec::new();
    for listing in &listed {
        let group = Text(listing.group_id.clone());
        let (count, state) = (
            shared.groups().member_count(&listing.group_id),
            listing.state,
        );
        members.push((
            GroupLabels {
                group: group.clone(),
            },
            count,
        ));
        for name in GROUP_STATES {
            let labels = GroupStateLabels {
                group: group.clone(),
                state: name,
            };
            states.push((labels, i64::from(name == state)));
        }
        for lag in crate::lag::group_lag(shared, &listing.group_id) {
            let labels = GroupPartitionLabels {
                group: group.clone(),
                topic: Text(lag.topic),
                partition: lag.partition,
            };
            committed.push((labels.clone(), lag.committed));
            if let Some(behind) = lag.lag {
                lags.push((labels, behind));
            }
        }
    }
    gauges(
        encoder,
        "group_members",
        "Members of each consumer group this broker coordinates",
        members,
    )?;
    gauges(
        encoder,
        "group_state",
        "1 for the state each consumer group is in, 0 for the others",
        states,
    )?;
    gauges(
        encoder,
        "group_committed_offset",
        "Each group's committed offset, by partition",
        committed,
    )?;
    gauges(
        encoder,
        "group_lag",
        "Records between each group's committed offset and the partition's high watermark",
        lags,
    )
}

/// Shared-storage mode's object store and catalogue.
fn object_storage(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let Some(storage) = shared.storage() else {
        return Ok(());
    };
    let counts = &storage.counts;
    counter(encoder, "object_puts", "Objects written", &counts.puts)?;
    counter(
        encoder,
        "object_put_bytes",
        "Bytes of objects written",
        &counts.put_bytes,
    )?;
    counter(
        encoder,
        "object_put_failures",
        "Object writes that failed",
        &counts.put_failures,
    )?;
    counter(encoder, "object_gets", "Ranged object reads", &counts.gets)?;
    counter(
        encoder,
        "object_get_bytes",
        "Bytes read from objects",
        &counts.get_bytes,
    )?;
    counter(
        encoder,
        "object_cache_hits",
        "Reads of object bytes served by the local cache (or by a GET of the same bytes under way)",
        &counts.cache_hits,
    )?;
    counter(
        encoder,
        "object_cache_misses",
        "Reads of object bytes that made a GET of their own",
        &counts.cache_misses,
    )?;
    counter(
        encoder,
        "object_deletes",
        "Objects deleted (retention, collection, orphans)",
        &counts.deletes,
    )?;
    counter(
        encoder,
        "catalogue_commits",
        "Uploads committed to the catalogue",
        &counts.commits,
    )?;
    counter(
        encoder,
        "catalogue_commit_failures",
        "Catalogue commits that failed",
        &counts.commit_failures,
    )?;
    let hits = counts.cache_hits.load(Ordering::Relaxed);
    let reads = hits + counts.cache_misses.load(Ordering::Relaxed);
    let metric = encoder.encode_descriptor(
        "object_cache_hit_ratio",
        "Share of object reads served by the local cache since start",
        None,
        MetricType::Gauge,
    )?;
    #[allow(clippy::cast_precision_loss)]
    let ratio = if reads == 0 {
        0.0
    } else {
        hits as f64 / reads as f64
    };
    ConstGauge::new(ratio).encode(metric)?;
    let histograms = &counts.histograms;
    histogram(
        encoder,
        "object_put_seconds",
        "Time each object write took",
        &histograms.put,
    )?;
    histogram(
        encoder,
        "object_get_seconds",
        "Time each ranged object read took",
        &histograms.get,
    )?;
    histogram(
        encoder,
        "catalogue_commit_seconds",
        "Time each catalogue commit took",
        &histograms.commit,
    )?;
    histogram(
        encoder,
        "object_flush_wait_seconds",
        "Time from an append to the start of its object's write",
        &histograms.flush_wait,
    )
}

/// This broker's place in the cluster (shared-storage mode).
fn cluster(encoder: &mut DescriptorEncoder<'_>, shared: &Shared) -> std::fmt::Result {
    let Some(view) = shared.cluster() else {
        return Ok(());
    };
    gauge(
        encoder,
        "cluster_lease_held",
        "1 while this broker's membership lease is live (it serves only then)",
        i64::from(view.is_member()),
    )?;
    gauge(
        encoder,
        "cluster_controller",
        "1 while this broker is the controller",
        i64::from(view.controller() == view.node_id),
    )?;
    gauge(
        encoder,
        "cluster_partitions_led",
        "Partitions this broker leads",
        view.led_count(),
    )?;
    gauge(
        encoder,
        "cluster_brokers_live",
        "Brokers whose lease was live at the last heartbeat",
        view.live_brokers().len(),
    )
}

/// A per-view counter of [`spool_views::ViewStats`].
type ViewCount = fn(&spool_views::ViewStats) -> u64;
