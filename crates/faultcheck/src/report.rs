//! What a run did and what it found, as text for people and JSON for scripts.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use crate::checker::transactions::TransformOutcome;
use crate::checker::{self, Drained, Findings};
use crate::history::{Events, TxnOutcome, Value};
use crate::{Crash, FaultCheck, Mode};

#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub mode: Mode,
    /// What machine crashes kept of unsynced bytes (machine mode only).
    pub crash: Option<Crash>,
    /// Kill mode over shared storage: the storage URL (each life on an empty data dir).
    pub storage_url: Option<String>,
    pub seed: u64,
    pub cycles: u32,
    pub partitions: i32,
    pub seconds: f64,
    /// Values sent by the producers.
    pub sent: u64,
    /// Values the broker acknowledged.
    pub acknowledged: u64,
    /// Values whose delivery failed (each may or may not be in the log).
    pub failed: u64,
    /// The first few failed deliveries, with librdkafka's error.
    pub failed_examples: Vec<String>,
    /// Records in the log at the end.
    pub log_records: u64,
    /// Assignments received by group members.
    pub assignments: u64,
    pub polls: u64,
    pub commits: u64,
    pub commits_failed: u64,
    /// The transactional workload, when it ran.
    pub transactions: Option<TransactionCounts>,
    pub findings: Findings,
    /// Kept for inspection when something was violated.
    pub data_dir: Option<String>,
}

/// What the transactional workload did.
#[derive(Debug, serde::Serialize)]
pub struct TransactionCounts {
    pub committed: u64,
    pub aborted: u64,
    /// Transactions whose outcome the writer could not learn.
    pub unknown: u64,
    /// Values the read_committed reader saw during the run.
    pub read: u64,
    /// Values of the writers' topic read back at the end.
    pub in_log: u64,
    pub transformer_transactions: u64,
    pub transformer_restarts: u64,
    /// Records the transformer's output holds at the end.
    pub transformed: u64,
    /// With `--check-back`: the checks the broker sent the run's checker.
    pub checked_back: u64,
}

impl Report {
    pub(crate) fn new(
        check: &FaultCheck,
        seed: u64,
        events: &Events,
        drained: &Drained,
        transactional: Option<&(Vec<Value>, TransformOutcome)>,
        elapsed: Duration,
        data_dir: &Path,
    ) -> Report {
        let mut findings = checker::check(events, drained);
        if let Some((written, transform)) = transactional {
            checker::transactions::check(events, written, transform, &mut findings);
            if !events
                .txns
                .iter()
                .any(|t| t.outcome == TxnOutcome::Committed)
            {
                findings.note("no-progress", || "no transaction committed".to_owned());
            }
            if transform.outputs.is_empty() {
                findings.note("no-progress", || "the transformer wrote nothing".to_owned());
            }
        }
        let transactions = transactional.map(|(written, transform)| {
            let outcomes =
                |outcome| events.txns.iter().filter(|t| t.outcome == outcome).count() as u64;
            TransactionCounts {
                committed: outcomes(TxnOutcome::Committed),
                aborted: outcomes(TxnOutcome::Aborted),
                unknown: outcomes(TxnOutcome::Unknown),
                read: events.txn_reads.len() as u64,
                in_log: written.len() as u64,
                transformer_transactions: events.ctp_transactions,
                transformer_restarts: events.ctp_restarts,
                transformed: transform.outputs.len() as u64,
                checked_back: 0,
            }
        });
        if events.acked.is_empty() {
            findings.note("no-progress", || "no write was acknowledged".to_owned());
        }
        if check.consumers > 0 && events.polls.is_empty() {
            findings.note("no-progress", || "no group member read anything".to_owned());
        }
        let count = |n: usize| n as u64;
        Report {
            mode: check.mode,
            crash: (check.mode == Mode::Machine).then_some(check.crash),
            storage_url: check.storage_url.clone(),
            seed,
            cycles: check.cycles,
            partitions: check.partitions,
            seconds: elapsed.as_secs_f64(),
            sent: events.sent.iter().sum(),
            acknowledged: count(events.acked.len()),
            failed: count(events.failed.len()),
            failed_examples: events
                .failed
                .iter()
                .take(10)
                .map(|(value, error)| format!("{value}: {error}"))
                .collect(),
            log_records: drained.values().map(|records| count(records.len())).sum(),
            assignments: count(events.sessions.len()),
            polls: count(events.polls.len()),
            commits: count(events.commits.len()),
            commits_failed: count(
                events
                    .commits
                    .iter()
                    .filter(|c| c.acknowledged().is_none())
                    .count(),
            ),
            data_dir: (!findings.is_clean()).then(|| data_dir.display().to_string()),
            transactions,
            findings,
        }
    }

    #[must_use]
    pub fn is_clean(&self) -> bool {
        self.findings.is_clean()
    }

    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        let mode = match (self.mode, self.crash) {
            (Mode::Kill, _) if self.storage_url.is_some() => {
                "kill -9 of the broker process, restarted on an empty data dir over shared storage"
            }
            (Mode::Kill, _) => "kill -9 of the broker process",
            (Mode::Cluster, _) => {
                "faults of one broker of a cluster over shared storage (kill -9, kill -9 past its lease, SIGSTOP past its lease, SIGTERM)"
            }
            (Mode::Machine, Some(Crash::Tear)) => "machine crash (unsynced writes torn)",
            (Mode::Machine, Some(Crash::Garble)) => "machine crash (unsynced writes garbled)",
            (Mode::Machine, _) => "machine crash (unsynced data lost)",
        };
        let _ = writeln!(
            text,
            "{} cycles of {mode}, seed {}, {} partitions, {:.1} s",
            self.cycles, self.seed, self.partitions, self.seconds
        );
        let _ = writeln!(
            text,
            "produced: {} sent, {} acknowledged, {} failed; log holds {} records",
            self.sent, self.acknowledged, self.failed, self.log_records
        );
        let _ = writeln!(
            text,
            "group: {} assignments, {} polls, {} offset commits ({} failed)",
            self.assignments, self.polls, self.commits, self.commits_failed
        );
        if let Some(t) = &self.transactions {
            let _ = writeln!(
                text,
                "transactions: {} committed, {} aborted, {} unknown, {} checks back; {} values read during the run, {} in the log",
                t.committed, t.aborted, t.unknown, t.checked_back, t.read, t.in_log
            );
            let _ = writeln!(
                text,
                "transformer: {} transactions, {} restarts, {} records written",
                t.transformer_transactions, t.transformer_restarts, t.transformed
            );
        }
        for example in &self.failed_examples {
            let _ = writeln!(text, "  failed: {example}");
        }
        if self.is_clean() {
            let _ = writeln!(text, "no violations");
            return text;
        }
        for (kind, violation) in &self.findings.violations {
            let _ = writeln!(text, "VIOLATION {kind}: {}", violation.count);
            for example in &violation.examples {
                let _ = writeln!(text, "  {example}");
            }
        }
        if let Some(dir) = &self.data_dir {
            let _ = writeln!(text, "data kept in {dir}");
        }
        text
    }
}
