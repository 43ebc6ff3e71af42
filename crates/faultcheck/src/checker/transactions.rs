//! Jepsen's checks for transactions, on the writers' history, what a read_committed
//! consumer saw during the run, and the topics read back read_committed at the end:
//!
//! - no aborted read: no value of a transaction whose abort was acknowledged is ever
//!   read, during the run or at the end;
//! - no intermediate read: a transaction is in the log whole or not at all (one whose
//!   outcome the writer could not learn included), and nothing read during the run
//!   belongs to a transaction that in the end did not commit;
//! - no lost committed write: every value of an acknowledged commit is in the log;
//! - no duplicate, in the writers' topic and in the transformer's output;
//! - consume-transform-produce is exactly once: the output holds each input record
//!   below the group's committed offsets once, and none at or past them.

use std::collections::{BTreeSet, HashMap};

use super::Findings;
use crate::history::{Events, TxnOutcome, Value};

/// The transformer's run as read back: its output, and the input records below and
/// at or past the group's final committed offsets.
#[derive(Debug, Default)]
pub struct TransformOutcome {
    pub outputs: Vec<Value>,
    pub consumed: BTreeSet<Value>,
    pub unconsumed: BTreeSet<Value>,
}

/// Checks the writers' transactions against `drained`, their topic read back
/// read_committed, and the transformer's run.
pub fn check(
    events: &Events,
    drained: &[Value],
    transform: &TransformOutcome,
    findings: &mut Findings,
) {
    let mut outcome_of: HashMap<Value, (usize, TxnOutcome)> = HashMap::new();
    for (index, txn) in events.txns.iter().enumerate() {
        for value in &txn.values {
            outcome_of.insert(*value, (index, txn.outcome));
        }
    }
    let mut in_log: HashMap<Value, usize> = HashMap::new();
    for value in drained {
        *in_log.entry(*value).or_default() += 1;
    }
    for (value, count) in &in_log {
        if *count > 1 {
            findings.note("txn-duplicate", || {
                format!("{value} is in the log {count} times")
            });
        }
        match outcome_of.get(value) {
            Some((_, TxnOutcome::Aborted)) => {
                findings.note("aborted-read", || {
                    format!("{value} of an aborted transaction is in the log")
                });
            }
            None => findings.note("txn-unknown-value", || format!("{value} was never written")),
            Some(_) => {}
        }
    }
    for (index, txn) in events.txns.iter().enumerate() {
        let present = txn.values.iter().filter(|v| in_log.contains_key(v)).count();
        if txn.outcome == TxnOutcome::Committed && present < txn.values.len() {
            findings.note("lost-committed-write", || {
                format!(
                    "transaction {index} committed {} values; {present} are in the log",
                    txn.values.len()
                )
            });
        }
        if present != 0 && present != txn.values.len() {
            findings.note("intermediate-read", || {
                format!(
                    "transaction {index} ({:?}) is in the log in part: {present} of {} values",
                    txn.outcome,
                    txn.values.len()
                )
            });
        }
    }
    for value in &events.txn_reads {
        match outcome_of.get(value) {
            Some((_, TxnOutcome::Aborted)) => {
                findings.note("aborted-read", || {
                    format!("a read_committed consumer read {value} of an aborted transaction")
                });
            }
            Some((index, _)) if !in_log.contains_key(value) => {
                findings.note("intermediate-read", || {
                    format!("a read_committed consumer read {value} of transaction {index}, which did not commit")
                });
            }
            _ => {}
        }
    }
    check_transform(transform, findings);
}

fn check_transform(transform: &TransformOutcome, findings: &mut Findings) {
    let mut outputs: HashMap<Value, usize> = HashMap::new();
    for value in &transform.outputs {
        *outputs.entry(*value).or_default() += 1;
    }
    for (value, count) in &outputs {
        if *count > 1 {
            findings.note("ctp-duplicate", || {
                format!("{value} was transformed {count} times")
            });
        }
        if transform.unconsumed.contains(value) {
            findings.note("ctp-uncommitted-output", || {
                format!("{value} is in the output but its input is past the committed offset")
            });
        } else if !transform.consumed.contains(value) {
            findings.note("ctp-unknown-output", || {
                format!("{value} is no input record")
            });
        }
    }
    for value in &transform.consumed {
        if !outputs.contains_key(value) {
            findings.note("ctp-lost", || {
                format!("{value} is below the committed offset but not in the output")
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::TxnRecord;

    fn value(seq: u64) -> Value {
        Value {
            producer: 1000,
            seq,
        }
    }

    fn txn(seqs: &[u64], outcome: TxnOutcome) -> TxnRecord {
        TxnRecord {
            values: seqs.iter().map(|s| value(*s)).collect(),
            outcome,
        }
    }

    #[test]
    fn each_kind_of_violation_is_found() {
        let events = Events {
            txns: vec![
                txn(&[0, 1], TxnOutcome::Committed),
                txn(&[2, 3], TxnOutcome::Aborted),
                txn(&[4, 5], TxnOutcome::Unknown),
                txn(&[6, 7], TxnOutcome::Committed),
            ],
            txn_reads: vec![value(2), value(4)],
            ..Events::default()
        };
        let drained = [value(0), value(1), value(1), value(3), value(5), value(6)];
        let transform = TransformOutcome {
            outputs: vec![value(10), value(10), value(12)],
            consumed: [value(10), value(11)].into(),
            unconsumed: [value(12)].into(),
        };
        let mut findings = Findings::default();
        check(&events, &drained, &transform, &mut findings);
        assert_eq!(findings.count("txn-duplicate"), 1);
        assert_eq!(
            findings.count("aborted-read"),
            2,
            "in the log and read live"
        );
        assert_eq!(findings.count("lost-committed-write"), 1);
        assert_eq!(findings.count("intermediate-read"), 4, "{findings:?}");
        assert_eq!(findings.count("ctp-duplicate"), 1);
        assert_eq!(findings.count("ctp-lost"), 1);
        assert_eq!(findings.count("ctp-uncommitted-output"), 1);
    }

    #[test]
    fn a_clean_history_has_no_findings() {
        let events = Events {
            txns: vec![
                txn(&[0, 1], TxnOutcome::Committed),
                txn(&[2, 3], TxnOutcome::Aborted),
                txn(&[4, 5], TxnOutcome::Unknown),
            ],
            txn_reads: vec![value(0)],
            ..Events::default()
        };
        let transform = TransformOutcome {
            outputs: vec![value(10)],
            consumed: [value(10)].into(),
            unconsumed: [value(11)].into(),
        };
        let mut findings = Findings::default();
        check(
            &events,
            &[value(0), value(1), value(4), value(5)],
            &transform,
            &mut findings,
        );
        assert!(findings.is_clean(), "{findings:?}");
    }
}
