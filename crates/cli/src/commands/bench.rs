//! `spool bench`: the load generator (`crates/loadgen`) against any Kafka-compatible
//! cluster, and the machine's limits. See docs/performance.md.

use std::path::PathBuf;

use spool_loadgen::{BenchError, Workload, limits};

use crate::client::ClientArgs;
use crate::error::CliError;
use crate::output::{self, Format};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum BenchCommand {
    /// Producers only: publish throughput and latency (from the intended send time).
    Produce(Workload),
    /// Write a backlog, then read it back: consume throughput.
    Consume(Workload),
    /// Producers and consumers together: end-to-end latency at a rate.
    E2e(Workload),
    /// Rebalance cost of each group protocol (classic eager, classic cooperative,
    /// KIP-848's consumer protocol): a member joins, then one leaves; how long until
    /// every partition is owned again, what was revoked, what was read twice.
    Rebalance(spool_loadgen::rebalance::Rebalance),
    /// Failover in a cluster over shared storage: how long partitions are unavailable
    /// when their leader is killed, stopped (SIGTERM) or drained, and when a broker
    /// joins. Starts its own brokers (`spool serve` processes).
    Failover(spool_faultcheck::failover::Failover),
    /// Reads anywhere in a cluster over shared storage: read rate, GETs per MB and
    /// bytes served by each broker with 0, 1, 2 reader brokers, the share served
    /// across racks, and end-to-end latency from a reader against from the leaders.
    /// Starts its own brokers (`spool serve` processes).
    Reads(spool_faultcheck::reads::Reads),
    /// The schema registry: lookups by id and register-or-get calls per second, and
    /// their latencies, with many subjects registered.
    Registry(spool_loadgen::registry::RegistryBench),
    /// Message indexes: produce throughput without and with an index, search
    /// latency, the index's size, a view of one id with and without the index.
    Index(super::bench_index::IndexBench),
    /// Lanes: a base consumer's read rate on a topic with lane traffic, its group
    /// having a member in the lane, against a plain read of a topic without lanes.
    Lanes(super::bench_lanes::LanesBench),
    /// Databus: many small producers directly and through `spool databus`,
    /// produce requests at the broker, its CPU and end-to-end latency. Starts its
    /// own broker and Databus (processes of this binary).
    Databus(super::bench_databus::DatabusBench),
    /// The machine's limits: disk writes with and without fsync, fsync latency,
    /// loopback TCP.
    Limits {
        /// A directory on the disk to measure.
        #[arg(long, default_value = "target/bench-data")]
        dir: PathBuf,
        /// Bytes written per measurement.
        #[arg(long, default_value_t = 1 << 30)]
        bytes: u64,
        /// Bytes per write (and per fsync in the fsync measurement).
        #[arg(long, default_value_t = 256 << 10)]
        chunk: usize,
    },
}

pub(crate) async fn run(command: BenchCommand, client: &ClientArgs) -> Result<(), CliError> {
    let brokers = client.brokers.clone();
    let format = client.format;
    let outcome =
        tokio::task::spawn_blocking(move || -> Result<(String, serde_json::Value), BenchError> {
            match command {
                BenchCommand::Produce(workload) => {
                    report(spool_loadgen::produce(&brokers, &workload)?)
                }
                BenchCommand::Consume(workload) => {
                    report(spool_loadgen::consume(&brokers, &workload)?)
                }
                BenchCommand::E2e(workload) => {
                    report(spool_loadgen::end_to_end(&brokers, &workload)?)
                }
                BenchCommand::Rebalance(settings) => {
                    let report = spool_loadgen::rebalance::run(&brokers, &settings)?;
                    Ok((report.to_text(), serde_json::json!(report)))
                }
                BenchCommand::Failover(failover) => {
                    let report =
                        spool_faultcheck::failover::run(&failover).map_err(|e| match e {
                            spool_faultcheck::CheckError::Invalid(message) => {
                                BenchError::Invalid(message)
                            }
                            other => BenchError::Failed(other.to_string()),
                        })?;
                    Ok((report.to_text(), serde_json::json!(report)))
                }
                BenchCommand::Reads(reads) => {
                    let report = spool_faultcheck::reads::run(&reads).map_err(|e| match e {
                        spool_faultcheck::CheckError::Invalid(message) => {
                            BenchError::Invalid(message)
                        }
                        other => BenchError::Failed(other.to_string()),
                    })?;
                    Ok((report.to_text(), serde_json::json!(report)))
                }
                BenchCommand::Registry(settings) => {
                    let report = spool_loadgen::registry::run(&settings)?;
                    Ok((report.to_text(), serde_json::json!(report)))
                }
                BenchCommand::Index(bench) => {
                    let report = super::bench_index::run(&bench, &brokers)
                        .map_err(|e| BenchError::Failed(e.to_string()))?;
                    Ok((report.to_text(), serde_json::json!(report)))
                }
                BenchCommand::Lanes(bench) => {
                    let report = super::bench_lanes::run(&bench, &brokers)
                        .map_err(|e| BenchError::Failed(e.to_string()))?;
                    Ok((report.to_text(), serde_json::json!(report)))
                }
                BenchCommand::Databus(bench) => {
                    let report = super::bench_databus::run(&bench)
                        .map_err(|e| BenchError::Failed(e.to_string()))?;
                    Ok((report.to_text(), serde_json::json!(report)))
                }
                BenchCommand::Limits { dir, bytes, chunk } => {
                    let limits = limits::measure(&dir, bytes, chunk)?;
                    Ok((limits.to_text(), serde_json::json!(limits)))
                }
            }
        })
        .await
        .map_err(|e| CliError::Failed(format!("the benchmark stopped: {e}")))?;
    let (text, json) = outcome.map_err(|e| match e {
        BenchError::Invalid(message) => CliError::Usage(message),
        other => CliError::Failed(format!("benchmark: {other}")),
    })?;
    match format {
        Format::Json => output::print_json(&json),
        Format::Human => println!("{text}"),
    }
    Ok(())
}

fn report(report: spool_loadgen::Report) -> Result<(String, serde_json::Value), BenchError> {
    Ok((report.to_text(), serde_json::json!(report)))
}
