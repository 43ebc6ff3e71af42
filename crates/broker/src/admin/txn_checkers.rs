//! The transaction checkers through the REST API (`spool txn-checker`): checked here,
//! kept in the metadata store, so that every broker's coordinator asks the same.

use std::sync::Arc;

use spool_admin::{ApiError, NewTxnChecker, StatusCode, TxnCheckerInfo};
use spool_metadata::TxnCheckerRecord;

use crate::shared::Shared;

/// A check's wait for its answer when the checker does not say.
const DEFAULT_TIMEOUT_MS: i32 = 5_000;

/// The longest wait a checker may ask for: the coordinator waits with the
/// transaction locked.
const MAX_TIMEOUT_MS: i32 = 60_000;

pub(super) async fn list(shared: &Arc<Shared>) -> Result<Vec<TxnCheckerInfo>, ApiError> {
    let checkers = shared
        .metadata()
        .txn_checkers()
        .await
        .map_err(store_failed)?;
    Ok(checkers.iter().map(info).collect())
}

pub(super) async fn put(
    shared: &Arc<Shared>,
    checker: NewTxnChecker,
) -> Result<TxnCheckerInfo, ApiError> {
    let record = record_of(checker)?;
    shared
        .metadata()
        .put_txn_checker(&record)
        .await
        .map_err(store_failed)?;
    tracing::info!(prefix = %record.prefix, url = %record.url, "transaction checker added");
    Ok(info(&record))
}

pub(super) async fn remove(shared: &Arc<Shared>, prefix: &str) -> Result<(), ApiError> {
    let removed = shared
        .metadata()
        .remove_txn_checker(prefix)
        .await
        .map_err(store_failed)?;
    if !removed {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NONE",
            format!("no transaction checker has the prefix {prefix:?}"),
        ));
    }
    tracing::info!(prefix, "transaction checker removed");
    Ok(())
}

/// The checker to store, or why it cannot be.
fn record_of(checker: NewTxnChecker) -> Result<TxnCheckerRecord, ApiError> {
    if checker.prefix.is_empty() {
        return Err(ApiError::bad_request(
            "a checker's prefix has at least one character",
        ));
    }
    let (scheme, rest) = checker.url.split_once("://").unwrap_or_default();
    if !matches!(scheme, "http" | "https") || rest.is_empty() {
        return Err(ApiError::bad_request(format!(
            "{:?}: a checker's URL is http://… or https://…",
            checker.url
        )));
    }
    let timeout_ms = checker.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if !(1..=MAX_TIMEOUT_MS).contains(&timeout_ms) {
        return Err(ApiError::bad_request(format!(
            "timeout_ms {timeout_ms}: between 1 and {MAX_TIMEOUT_MS}"
        )));
    }
    for (name, value) in &checker.headers {
        let token = |c: char| c.is_ascii_graphic() && c != ':';
        if name.is_empty() || !name.chars().all(token) || value.contains(['\r', '\n']) {
            return Err(ApiError::bad_request(format!(
                "header {name:?}: not a header name and value HTTP can send"
            )));
        }
    }
    if let Some(pem) = &checker.ca_pem
        && !pem.contains("-----BEGIN CERTIFICATE-----")
    {
        return Err(ApiError::bad_request(
            "ca_pem holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
        ));
    }
    Ok(TxnCheckerRecord {
        prefix: checker.prefix,
        url: checker.url,
        headers: checker.headers.into_iter().collect(),
        timeout_ms,
        ca_pem: checker.ca_pem,
    })
}

fn info(record: &TxnCheckerRecord) -> TxnCheckerInfo {
    TxnCheckerInfo {
        prefix: record.prefix.clone(),
        url: record.url.clone(),
        header_names: record
            .headers
            .iter()
            .map(|(name, _)| name.clone())
            .collect(),
        timeout_ms: record.timeout_ms,
        own_ca: record.ca_pem.is_some(),
    }
}

fn store_failed(error: spool_metadata::MetadataError) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "KAFKA_STORAGE_ERROR",
        format!("the metadata store failed: {error}"),
    )
}
