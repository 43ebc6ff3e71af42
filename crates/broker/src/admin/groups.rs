//! The REST API's consumer groups: state, members with their assignments, and each
//! committed offset with its lag; deleting a group and moving its offsets, as
//! `spool group delete|seek` do. A broker answers for the groups it coordinates
//! (every group in embedded mode).

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_admin::{ApiError, GroupDetail, GroupMember, GroupOffset, GroupSummary, OffsetReset};
use spool_coordinator::{CommitOffset, CommitRequest, GroupError, GroupType};
use spool_protocol::consumer_protocol;

use super::bounds::partition_bounds;
use super::kafka_error;
use crate::errors::{code, group_error_code};
use crate::partitions::on_blocking_pool;
use crate::shared::Shared;

pub(super) async fn list(shared: &Arc<Shared>) -> Result<Vec<GroupSummary>, ApiError> {
    let mut listed = consumer_groups(shared).await?;
    listed.extend(super::share_groups::list(shared).await?);
    listed.sort_by(|a, b| a.group.cmp(&b.group));
    Ok(listed)
}

async fn consumer_groups(shared: &Arc<Shared>) -> Result<Vec<GroupSummary>, ApiError> {
    let shared = shared.clone();
    on_blocking_pool(move || {
        shared
            .groups()
            .list()
            .into_iter()
            .map(|listing| {
                let members = shared.groups().member_count(&listing.group_id);
                let lag = crate::lag::group_lag_with(&shared, &listing.group_id, |topic, index| {
                    partition_bounds(&shared, topic, index).map(|bounds| bounds.high_watermark)
                })
                .iter()
                .filter_map(|partition| partition.lag)
                .sum();
                GroupSummary {
                    group_type: listing.group_type.name().to_owned(),
                    state: listing.state.to_owned(),
                    protocol_type: listing.protocol_type,
                    group: listing.group_id,
                    members,
                    lag,
                }
            })
            .collect()
    })
    .await
    .map_err(|error| kafka_error(error.code(), error.to_string()))
}

pub(super) async fn describe(shared: &Arc<Shared>, id: &str) -> Result<GroupDetail, ApiError> {
    coordinated_here(shared, id)?;
    if let Some(share) = super::share_groups::describe(shared, id).await? {
        return Ok(share);
    }
    let Some(group) = shared.groups().describe(id, shared.topics()) else {
        return Err(kafka_error(
            code::GROUP_ID_NOT_FOUND,
            format!("group {id} has no members and no committed offsets"),
        ));
    };
    let consumer = group.protocol_type == "consumer";
    let members = group
        .members
        .iter()
        .map(|member| GroupMember {
            member_id: member.member_id.clone(),
            instance_id: member.group_instance_id.clone(),
            client_id: member.client_id.clone(),
            client_host: member.client_host.clone(),
            assignment: consumer
                .then(|| consumer_protocol::assigned_partitions(&member.assignment))
                .flatten()
                .map(|assigned| assigned.into_iter().collect::<BTreeMap<_, _>>())
                .unwrap_or_default(),
        })
        .collect();
    let offsets = {
        let (shared, id) = (shared.clone(), id.to_owned());
        on_blocking_pool(move || offsets(&shared, &id))
            .await
            .map_err(|error| kafka_error(error.code(), error.to_string()))?
    };
    let group_type = if shared.groups().is_consumer_group(id) {
        GroupType::Consumer
    } else {
        GroupType::Classic
    };
    Ok(GroupDetail {
        group: id.to_owned(),
        group_type: group_type.name().to_owned(),
        state: group.state.to_owned(),
        protocol_type: group.protocol_type,
        protocol: group.protocol,
        members,
        offsets,
        share_partitions: Vec::new(),
    })
}

/// Each committed offset, with the lag (the high watermark from the partition, or in
/// a cluster from the catalogue for partitions other brokers lead). Blocking.
fn offsets(shared: &Shared, group: &str) -> Vec<GroupOffset> {
    crate::lag::group_lag_with(shared, group, |topic, index| {
        partition_bounds(shared, topic, index).map(|bounds| bounds.high_watermark)
    })
    .into_iter()
    .map(|lag| GroupOffset {
        topic: lag.topic,
        partition: lag.partition,
        committed: lag.committed,
        high_watermark: lag.high_watermark,
        lag: lag.lag,
        matching_lag: lag.matching,
    })
    .collect()
}

/// `NOT_COORDINATOR`, naming the coordinator, for a group another broker
/// coordinates.
pub(super) fn coordinated_here(shared: &Shared, id: &str) -> Result<(), ApiError> {
    if shared.groups().owns(id) {
        return Ok(());
    }
    let coordinator = shared
        .cluster()
        .and_then(|view| view.coordinator_of(id))
        .map_or_else(
            || "no broker".to_owned(),
            |broker| {
                format!(
                    "broker {} ({}:{})",
                    broker.node_id, broker.host, broker.port
                )
            },
        );
    Err(kafka_error(
        code::NOT_COORDINATOR,
        format!("group {id} is coordinated by {coordinator}: ask its admin listener"),
    ))
}

/// The answer for a coordinator's refusal.
fn group_refusal(id: &str, error: GroupError) -> ApiError {
    let message = match error {
        GroupError::NonEmptyGroup => {
            format!("group {id} has members: stop them first (a live group keeps its offsets)")
        }
        GroupError::GroupIdNotFound => {
            format!("group {id} has no members and no committed offsets")
        }
        other => format!("group {id}: {other}"),
    };
    kafka_error(group_error_code(error), message)
}

pub(super) async fn delete(shared: &Arc<Shared>, id: &str) -> Result<(), ApiError> {
    coordinated_here(shared, id)?;
    match crate::share::describe::delete(shared, id).await {
        None => {}
        Some(code::NONE) => return Ok(()),
        Some(code::NON_EMPTY_GROUP) => {
            return Err(kafka_error(
                code::NON_EMPTY_GROUP,
                format!("share group {id} has members: stop them first"),
            ));
        }
        Some(other) => {
            return Err(kafka_error(
                other,
                format!("deleting share group {id} failed"),
            ));
        }
    }
    shared
        .groups()
        .delete_group(id)
        .await
        .map_err(|error| group_refusal(id, error))
}

/// Moves the group's committed offsets as `reset` says, then describes the group.
pub(super) async fn reset_offsets(
    shared: &Arc<Shared>,
    id: &str,
    reset: OffsetReset,
) -> Result<GroupDetail, ApiError> {
    coordinated_here(shared, id)?;
    if shared
        .groups()
        .describe(id, shared.topics())
        .is_some_and(|group| !group.members.is_empty())
    {
        return Err(group_refusal(id, GroupError::NonEmptyGroup));
    }
    let target = match reset.to.as_str() {
        "earliest" => Target::Earliest,
        "latest" => Target::Latest,
        offset => offset.parse().map(Target::Offset).map_err(|_| {
            ApiError::bad_request(format!(
                "to: {offset:?} is not earliest, latest or an offset"
            ))
        })?,
    };
    let mut partitions: Vec<(String, i32)> = shared
        .groups()
        .committed(id, None)
        .into_iter()
        .map(|offset| (offset.topic, offset.partition))
        .filter(|(topic, _)| reset.topic.as_ref().is_none_or(|only| only == topic))
        .collect();
    if let Some(topic) = &reset.topic
        && partitions.is_empty()
    {
        let found = shared
            .topics()
            .existing(topic)
            .map_err(|error| kafka_error(error.code, error.message))?;
        partitions = (0..found.record.partitions)
            .map(|index| (topic.clone(), index))
            .collect();
    }
    let offsets = {
        let shared = shared.clone();
        on_blocking_pool(move || targets(&shared, partitions, target))
            .await
            .map_err(|error| kafka_error(error.code(), error.to_string()))??
    };
    let request = CommitRequest {
        group_id: id.to_owned(),
        generation: -1,
        member_id: String::new(),
        group_instance_id: None,
        offsets,
        api_version: 9,
    };
    let results = shared
        .groups()
        .commit(request)
        .await
        .map_err(|error| group_refusal(id, error))?;
    if let Some(error) = results.into_iter().find_map(Result::err) {
        return Err(group_refusal(id, error));
    }
    describe(shared, id).await
}

/// Where a reset moves each partition.
#[derive(Debug, Clone, Copy)]
enum Target {
    Earliest,
    Latest,
    Offset(i64),
}

/// The offsets to commit for `partitions`, from their log starts and high
/// watermarks. Blocking.
fn targets(
    shared: &Shared,
    partitions: Vec<(String, i32)>,
    target: Target,
) -> Result<Vec<CommitOffset>, ApiError> {
    partitions
        .into_iter()
        .map(|(name, index)| {
            let unknown = || {
                kafka_error(
                    code::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("{name}-{index}: no such partition, or its offsets are unknown here"),
                )
            };
            let topic = shared.topics().get(&name).ok_or_else(unknown)?;
            let bounds = partition_bounds(shared, &topic, index).ok_or_else(unknown)?;
            let offset = match target {
                Target::Earliest => bounds.log_start,
                Target::Latest => bounds.high_watermark,
                Target::Offset(offset) => offset.clamp(bounds.log_start, bounds.high_watermark),
            };
            Ok(CommitOffset {
                topic: name,
                topic_id: topic.record.id,
                partition: index,
                offset,
                leader_epoch: -1,
                metadata: None,
            })
        })
        .collect()
}
