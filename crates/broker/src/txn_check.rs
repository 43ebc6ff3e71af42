//! Transaction checkers over HTTP: the broker's side of check-back
//! ([`spool_coordinator::TxnChecker`]). The checker of a transactional id (the longest
//! prefix in the store's list) is sent a JSON check — the transaction, and per
//! partition the first record's key and headers, so that the application can find
//! its business object — and answers `COMMIT`, `ROLLBACK` or `UNKNOWN`, as the body's
//! text or as `{"decision": …}`. An error status, a timeout or anything else is no
//! answer (UNKNOWN). The first record is read from the log where this broker leads
//! the partition, and from the catalogue and objects where another broker of the
//! cluster does.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use spool_coordinator::{CheckAnswer, TxnChecker};
use spool_log::open_transaction_start_in;
use spool_metadata::{
    MetadataStore, PartitionKey, TransactionRecord, TxnCheckerRecord, checker_of,
};
use spool_model::Offset;
use spool_protocol::plain::PlainRecord;

use crate::partitions::{
    PartitionHandle, Partitions, RECORD_READ_BYTES, on_blocking_pool, record_in,
};
use crate::topics::Topic;

/// The most bytes of an answer read.
const ANSWER_MAX: usize = 64 * 1024;

/// The checks made, by answer (`/metrics`).
#[derive(Debug, Default)]
pub(crate) struct CheckStats {
    pub(crate) commit: AtomicU64,
    pub(crate) rollback: AtomicU64,
    pub(crate) unknown: AtomicU64,
    /// No answer: the checker failed, timed out or said something else.
    pub(crate) failed: AtomicU64,
}

/// Asks the checkers the metadata store names.
#[derive(Debug)]
pub(crate) struct HttpChecker {
    metadata: Arc<dyn MetadataStore>,
    partitions: Arc<Partitions>,
    stats: Arc<CheckStats>,
}

impl HttpChecker {
    pub(crate) fn new(
        metadata: Arc<dyn MetadataStore>,
        partitions: Arc<Partitions>,
        stats: Arc<CheckStats>,
    ) -> HttpChecker {
        HttpChecker {
            metadata,
            partitions,
            stats,
        }
    }
}

#[async_trait::async_trait]
impl TxnChecker for HttpChecker {
    async fn check(&self, record: &TransactionRecord, attempt: u32) -> Option<CheckAnswer> {
        let checkers = match self.metadata.txn_checkers().await {
            Ok(checkers) => checkers,
            Err(error) => {
                // Whether a checker answers is not known: not aborted yet.
                tracing::warn!(transactional_id = %record.transactional_id, %error,
                    "reading the transaction checkers failed");
                return Some(CheckAnswer::Unknown);
            }
        };
        let checker = checker_of(&checkers, &record.transactional_id)?;
        let check = self.check_of(record, attempt).await;
        let answer = match ask(checker, &check).await {
            Ok(answer) => answer,
            Err(error) => {
                tracing::warn!(transactional_id = %record.transactional_id, url = %checker.url,
                    attempt, %error, "the transaction checker gave no answer");
                self.stats.failed.fetch_add(1, Ordering::Relaxed);
                return Some(CheckAnswer::Unknown);
            }
        };
        let counter = match answer {
            CheckAnswer::Commit => &self.stats.commit,
            CheckAnswer::Rollback => &self.stats.rollback,
            CheckAnswer::Unknown => &self.stats.unknown,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        Some(answer)
    }
}

impl HttpChecker {
    /// The JSON of a check.
    async fn check_of(&self, record: &TransactionRecord, attempt: u32) -> Value {
        let mut partitions = Vec::new();
        for (topic_id, index) in &record.partitions {
            let Some(topic) = self.partitions.topics().by_id(*topic_id) else {
                continue;
            };
            let mut entry = json!({
                "topic": topic.record.name.as_str(),
                "partition": index,
            });
            let first = match self.partitions.open(topic.clone(), *index, -1).await {
                Ok(handle) => first_record_here(handle, record.producer_id).await,
                Err(_) => {
                    self.first_record_elsewhere(&topic, *index, record.producer_id)
                        .await
                }
            };
            if let (Some((offset, first)), Some(fields)) = (first, entry.as_object_mut()) {
                fields.extend(first_record_fields(offset, &first));
            }
            partitions.push(entry);
        }
        json!({
            "transactional_id": record.transactional_id,
            "producer_id": record.producer_id,
            "producer_epoch": record.producer_epoch,
            "started_ms": record.started_ms,
            "timeout_ms": record.timeout_ms,
            "attempt": attempt,
            "partitions": partitions,
        })
    }
}

/// The offset and record of the first record `producer_id`'s open transaction wrote
/// into `handle`'s partition, led here.
async fn first_record_here(
    handle: PartitionHandle,
    producer_id: i64,
) -> Option<(i64, PlainRecord)> {
    on_blocking_pool(move || {
        let (_, offset) = handle
            .log
            .open_transactions()
            .into_iter()
            .find(|(producer, _)| *producer == producer_id)?;
        Some((offset.0, handle.record_at(offset.0)?))
    })
    .await
    .ok()
    .flatten()
}

impl HttpChecker {
    /// As [`first_record_here`], for a partition another broker of the cluster leads:
    /// where the transaction began, from the catalogue's producer state, and the
    /// record from the objects (what the leader has not committed yet is not seen).
    async fn first_record_elsewhere(
        &self,
        topic: &Topic,
        index: i32,
        producer_id: i64,
    ) -> Option<(i64, PlainRecord)> {
        let storage = self.partitions.storage()?;
        let key = PartitionKey {
            topic_id: topic.record.id,
            partition: index,
        };
        let state = storage.catalogue().partition_state(key).await.ok()??;
        let start = open_transaction_start_in(state.producer_state.as_deref()?, producer_id)?;
        let read = storage
            .reader
            .read(
                key,
                start,
                Offset(state.high_watermark),
                RECORD_READ_BYTES,
                true,
            )
            .await
            .ok()?;
        Some((start.0, record_in(read.batches.first()?, start.0)?))
    }
}

/// The JSON fields of a transaction's first record in a partition: its offset, key and
/// headers.
fn first_record_fields(offset: i64, first: &PlainRecord) -> serde_json::Map<String, Value> {
    let headers = first
        .headers
        .iter()
        .map(|(name, value)| {
            json!({
                "name": String::from_utf8_lossy(name),
                "value": text(value.as_deref()),
                "value_base64": base64(value.as_deref()),
            })
        })
        .collect();
    let mut fields = serde_json::Map::new();
    fields.insert("first_offset".to_owned(), json!(offset));
    fields.insert("key".to_owned(), text(first.key.as_deref()));
    fields.insert("key_base64".to_owned(), base64(first.key.as_deref()));
    fields.insert("headers".to_owned(), Value::Array(headers));
    fields
}

/// Bytes as text when they are UTF-8, else null.
fn text(bytes: Option<&[u8]>) -> Value {
    bytes
        .and_then(|bytes| std::str::from_utf8(bytes).ok())
        .map_or(Value::Null, |text| Value::String(text.to_owned()))
}

fn base64(bytes: Option<&[u8]>) -> Value {
    bytes.map_or(Value::Null, |bytes| Value::String(STANDARD.encode(bytes)))
}

/// POSTs `check` to `checker` and reads its answer.
async fn ask(checker: &TxnCheckerRecord, check: &Value) -> Result<CheckAnswer, String> {
    let http = client(checker)?;
    let mut request = http.post(&checker.url).json(check);
    for (name, value) in &checker.headers {
        request = request.header(name, value);
    }
    let mut response = request
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|error| error.to_string())?;
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > ANSWER_MAX {
            return Err(format!("the answer is over {ANSWER_MAX} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    parse_answer(&body)
}

fn client(checker: &TxnCheckerRecord) -> Result<reqwest::Client, String> {
    // reqwest is built without a bundled crypto provider: ring, as the listeners.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let timeout = Duration::from_millis(u64::try_from(checker.timeout_ms).unwrap_or(5000));
    let mut builder = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none());
    if let Some(pem) = &checker.ca_pem {
        for certificate in reqwest::Certificate::from_pem_bundle(pem.as_bytes())
            .map_err(|error| format!("the checker's CA certificates: {error}"))?
        {
            builder = builder.add_root_certificate(certificate);
        }
    }
    builder.build().map_err(|error| error.to_string())
}

/// `COMMIT`, `ROLLBACK` or `UNKNOWN` (RocketMQ's `COMMIT_MESSAGE`, `ROLLBACK_MESSAGE`
/// and `UNKNOW` too), as text or as `{"decision": …}`.
fn parse_answer(body: &[u8]) -> Result<CheckAnswer, String> {
    let text = std::str::from_utf8(body).map_err(|_| "the answer is not text".to_owned())?;
    let text = text.trim();
    let decision = if text.starts_with('{') {
        let value: Value = serde_json::from_str(text).map_err(|error| error.to_string())?;
        value
            .get("decision")
            .and_then(Value::as_str)
            .ok_or("the answer has no \"decision\"")?
            .to_owned()
    } else {
        text.to_owned()
    };
    match decision.to_ascii_uppercase().as_str() {
        "COMMIT" | "COMMIT_MESSAGE" => Ok(CheckAnswer::Commit),
        "ROLLBACK" | "ROLLBACK_MESSAGE" | "ABORT" => Ok(CheckAnswer::Rollback),
        "UNKNOWN" | "UNKNOW" => Ok(CheckAnswer::Unknown),
        other => Err(format!(
            "the answer {other:?} is none of COMMIT, ROLLBACK, UNKNOWN"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_text_or_json_and_anything_else_is_none() {
        assert_eq!(parse_answer(b"COMMIT\n"), Ok(CheckAnswer::Commit));
        assert_eq!(parse_answer(b"rollback"), Ok(CheckAnswer::Rollback));
        assert_eq!(parse_answer(b"UNKNOW"), Ok(CheckAnswer::Unknown));
        assert_eq!(
            parse_answer(br#" {"decision": "COMMIT_MESSAGE"} "#),
            Ok(CheckAnswer::Commit)
        );
        assert!(parse_answer(b"yes").is_err());
        assert!(parse_answer(br#"{"state": "COMMIT"}"#).is_err());
        assert!(parse_answer(b"\xff").is_err());
    }
}
