//! The REST API's consumer groups: state, members with their assignments, and each
//! committed offset with its lag. A broker answers for the groups it coordinates
//! (every group in embedded mode).

use std::collections::BTreeMap;
use std::sync::Arc;

use spool_admin::{ApiError, GroupDetail, GroupMember, GroupOffset, GroupSummary};
use spool_protocol::consumer_protocol;

use super::bounds::partition_bounds;
use super::kafka_error;
use crate::errors::code;
use crate::partitions::on_blocking_pool;
use crate::server::Shared;

pub(super) async fn list(shared: &Arc<Shared>) -> Result<Vec<GroupSummary>, ApiError> {
    let shared = shared.clone();
    on_blocking_pool(move || {
        shared
            .groups
            .list()
            .into_iter()
            .map(|listing| {
                let members = shared
                    .groups
                    .describe(&listing.group_id)
                    .map_or(0, |group| group.members.len());
                let lag = crate::lag::group_lag_with(&shared, &listing.group_id, |topic, index| {
                    partition_bounds(&shared, topic, index).map(|bounds| bounds.high_watermark)
                })
                .iter()
                .filter_map(|partition| partition.lag)
                .sum();
                GroupSummary {
                    state: listing.state.name().to_owned(),
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
    if !shared.groups.owns(id) {
        let coordinator = shared
            .cluster
            .as_ref()
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
        return Err(kafka_error(
            code::NOT_COORDINATOR,
            format!("group {id} is coordinated by {coordinator}: ask its admin listener"),
        ));
    }
    let Some(group) = shared.groups.describe(id) else {
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
    Ok(GroupDetail {
        group: id.to_owned(),
        state: group.state.name().to_owned(),
        protocol_type: group.protocol_type,
        protocol: group.protocol,
        members,
        offsets,
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
