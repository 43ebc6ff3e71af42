//! Mirror links through the REST API (`spool mirror`): checked here, kept in the
//! metadata store, followed by every broker ([`crate::mirror`]).

use std::sync::Arc;

use spool_admin::{
    ApiError, FailedOverTopic, MirrorFailover, MirrorInfo, MirrorPartitionInfo, NewMirror,
    StatusCode,
};
use spool_metadata::MirrorLinkRecord;

use crate::mirror::topics::{FailoverError, failover, topic_regex};
use crate::mirror::{LinkState, REPORT_STALE_MS, merged, settings_of};
use crate::shared::Shared;

pub(super) async fn list(shared: &Arc<Shared>) -> Result<Vec<MirrorInfo>, ApiError> {
    let links = shared
        .metadata()
        .mirror_links()
        .await
        .map_err(store_failed)?;
    let mut infos = Vec::with_capacity(links.len());
    for link in &links {
        infos.push(info(shared, link).await?);
    }
    Ok(infos)
}

pub(super) async fn describe(shared: &Arc<Shared>, name: &str) -> Result<MirrorInfo, ApiError> {
    let link = find(shared, name).await?;
    info(shared, &link).await
}

pub(super) async fn create(
    shared: &Arc<Shared>,
    mirror: NewMirror,
) -> Result<MirrorInfo, ApiError> {
    let record = record_of(mirror, shared.clock().now_ms())?;
    let links = shared
        .metadata()
        .mirror_links()
        .await
        .map_err(store_failed)?;
    if links.iter().any(|link| link.name == record.name) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "NONE",
            format!("a mirror link named {:?} exists", record.name),
        ));
    }
    shared
        .metadata()
        .put_mirror_link(&record)
        .await
        .map_err(store_failed)?;
    tracing::info!(link = %record.name, source = %record.source, topics = %record.topics,
        "mirror link created");
    info(shared, &record).await
}

pub(super) async fn delete(shared: &Arc<Shared>, name: &str) -> Result<(), ApiError> {
    find(shared, name).await?;
    let copied: Vec<String> = shared
        .topics()
        .all()
        .iter()
        .filter(|topic| topic.mirror.as_deref() == Some(name))
        .map(|topic| topic.record.name.to_string())
        .collect();
    if !copied.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "NONE",
            format!(
                "the link still has read-only mirror topics ({}): fail them over (spool mirror failover {name}), or pause the link and delete them, first",
                copied.join(", ")
            ),
        ));
    }
    shared
        .metadata()
        .remove_mirror_link(name)
        .await
        .map_err(store_failed)?;
    tracing::info!(link = name, "mirror link deleted");
    Ok(())
}

pub(super) async fn pause(
    shared: &Arc<Shared>,
    name: &str,
    paused: bool,
) -> Result<MirrorInfo, ApiError> {
    let mut link = find(shared, name).await?;
    link.paused = paused;
    shared
        .metadata()
        .put_mirror_link(&link)
        .await
        .map_err(store_failed)?;
    tracing::info!(link = name, paused, "mirror link paused or resumed");
    info(shared, &link).await
}

pub(super) async fn fail_over(
    shared: &Arc<Shared>,
    name: &str,
    request: MirrorFailover,
) -> Result<Vec<FailedOverTopic>, ApiError> {
    let done = failover(shared, name, request.topics.as_deref())
        .await
        .map_err(|error| match error {
            FailoverError::NoLink(name) => not_found(&name),
            FailoverError::Invalid(message) => ApiError::bad_request(message),
            FailoverError::Store(message) => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "KAFKA_STORAGE_ERROR",
                message,
            ),
        })?;
    Ok(done
        .into_iter()
        .map(|(topic, log_ends)| FailedOverTopic { topic, log_ends })
        .collect())
}

async fn find(shared: &Shared, name: &str) -> Result<MirrorLinkRecord, ApiError> {
    shared
        .metadata()
        .mirror_links()
        .await
        .map_err(store_failed)?
        .into_iter()
        .find(|link| link.name == name)
        .ok_or_else(|| not_found(name))
}

fn not_found(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "NONE",
        format!("no mirror link is named {name:?}"),
    )
}

/// The link to store, or why it cannot be.
fn record_of(mirror: NewMirror, now_ms: i64) -> Result<MirrorLinkRecord, ApiError> {
    let name_ok = !mirror.name.is_empty()
        && mirror.name.len() <= 200
        && mirror
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !name_ok {
        return Err(ApiError::bad_request(format!(
            "{:?}: a link's name is letters, digits, '.', '_' and '-'",
            mirror.name
        )));
    }
    if mirror.source.trim().is_empty() {
        return Err(ApiError::bad_request(
            "the source's bootstrap brokers are missing",
        ));
    }
    topic_regex(&mirror.topics)
        .map_err(|error| ApiError::bad_request(format!("topics: {error}")))?;
    if let Some(groups) = &mirror.groups {
        topic_regex(groups).map_err(|error| ApiError::bad_request(format!("groups: {error}")))?;
    }
    let start = mirror.start.unwrap_or_else(|| "earliest".to_owned());
    if !matches!(start.as_str(), "earliest" | "latest") {
        return Err(ApiError::bad_request(format!(
            "start {start:?}: earliest or latest"
        )));
    }
    let record = MirrorLinkRecord {
        name: mirror.name,
        source: mirror.source.trim().to_owned(),
        source_config: mirror.source_config.into_iter().collect(),
        topics: mirror.topics,
        groups: mirror.groups,
        start,
        paused: false,
        failed_over: Vec::new(),
        created_ms: now_ms,
    };
    settings_of(&record).map_err(ApiError::bad_request)?;
    Ok(record)
}

/// The link as the API shows it, with the state every broker reported of it.
async fn info(shared: &Shared, link: &MirrorLinkRecord) -> Result<MirrorInfo, ApiError> {
    let now = shared.clock().now_ms();
    let reports: Vec<(i32, String)> = shared
        .metadata()
        .mirror_statuses(&link.name)
        .await
        .map_err(store_failed)?
        .into_iter()
        .filter(|report| now - report.updated_ms <= REPORT_STALE_MS)
        .map(|report| (report.node_id, report.status))
        .collect();
    let (status, partitions) = merged(&link.name, &reports);
    let state = if link.paused {
        LinkState::Paused
    } else {
        status.state
    };
    let partitions = partitions
        .into_iter()
        .map(|(key, partition)| MirrorPartitionInfo {
            topic: key.topic,
            partition: key.partition,
            source_end: partition.source_end,
            mirror_end: partition.mirror_end,
            lag_records: partition.lag_records(),
            lag_ms: partition.lag_ms(now),
            copied_bytes: partition.copied_bytes,
            error: partition.error,
        })
        .collect();
    let mirror_topics = shared
        .topics()
        .all()
        .iter()
        .filter(|topic| topic.record.configs.get("mirror.link") == Some(&link.name))
        .map(|topic| topic.record.name.to_string())
        .collect();
    Ok(MirrorInfo {
        name: link.name.clone(),
        source: link.source.clone(),
        source_config: link
            .source_config
            .iter()
            .map(|(name, value)| {
                let shown = if spool_kafka_client::settings::is_secret(name) {
                    "********".to_owned()
                } else if name.ends_with(".pem") {
                    "(PEM)".to_owned()
                } else {
                    value.clone()
                };
                (name.clone(), shown)
            })
            .collect(),
        topics: link.topics.clone(),
        groups: link.groups.clone(),
        start: link.start.clone(),
        paused: link.paused,
        state: state.name().to_owned(),
        error: status.error.filter(|_| !link.paused),
        failed_over: link.failed_over.clone(),
        mirror_topics,
        created_ms: link.created_ms,
        copied_bytes: status.copied_bytes,
        errors: status.errors,
        offsets_copied: status.offsets_copied,
        skipped_records: status.skipped_records,
        partitions,
    })
}

fn store_failed(error: spool_metadata::MetadataError) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "KAFKA_STORAGE_ERROR",
        format!("the metadata store failed: {error}"),
    )
}
