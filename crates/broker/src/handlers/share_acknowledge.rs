//! ShareAcknowledge (key 79, KIP-932): a share consumer's acknowledgements without a
//! fetch (its commit, and its close at session epoch −1, which releases what it still
//! holds). It continues or closes a share session; it cannot open one. Every
//! acknowledged partition is in the answer, with its own error.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::share_acknowledge_response::{
    LeaderIdAndEpoch, PartitionData, ShareAcknowledgeTopicResponse,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ResponseKind, ShareAcknowledgeRequest, ShareAcknowledgeResponse,
};
use kafka_protocol::protocol::StrBytes;
use spool_share::{AckBatch, AckType, ShareError};
use uuid::Uuid;

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, share_error_code};
use crate::share::SharePartitionId;
use crate::share::held::{self, settings_of};
use crate::share::partition_access;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ShareAcknowledge,
    min: 1,
    max: 1,
};

pub(crate) async fn handle(
    request: ShareAcknowledgeRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let group = request
        .group_id
        .as_ref()
        .map_or("", |g| g.0.as_str())
        .to_owned();
    let member = request
        .member_id
        .as_ref()
        .map_or("", |m| m.as_str())
        .to_owned();
    if group.is_empty() || member.is_empty() {
        return refused(
            code::INVALID_REQUEST,
            "a ShareAcknowledge names its group and member".to_owned(),
        );
    }
    let acknowledgements = match acknowledgements_of(&request) {
        Ok(acks) => acks,
        Err(error) => return refused(share_error_code(&error), error.to_string()),
    };
    let closed = shared.share().sessions().acknowledge(
        &group,
        &member,
        request.share_session_epoch,
        context.connection,
        shared.clock().instant(),
    );
    let closed = match closed {
        Ok(closed) => closed,
        Err(error) => return refused(share_error_code(&error), error.to_string()),
    };
    let settings = settings_of(shared, &group);
    let mut topics: BTreeMap<Uuid, Vec<PartitionData>> = BTreeMap::new();
    let mut hinted = Vec::new();
    for ((topic_id, partition), batches) in acknowledgements {
        let id = SharePartitionId {
            group: group.clone(),
            topic_id,
            partition,
        };
        let acked = partition_access::acknowledge(
            shared,
            &context.access,
            &id,
            &member,
            &batches,
            &settings,
        )
        .await;
        let mut answer = PartitionData::default()
            .with_partition_index(partition)
            .with_current_leader(
                LeaderIdAndEpoch::default()
                    .with_leader_id(-1)
                    .with_leader_epoch(-1),
            );
        if let Err(refusal) = acked {
            answer.error_code = refusal.code;
            answer.error_message = Some(StrBytes::from_string(refusal.message));
            if let Some(hint) = refusal.leader {
                hinted.push(hint.leader);
                answer.current_leader = LeaderIdAndEpoch::default()
                    .with_leader_id(hint.leader)
                    .with_leader_epoch(hint.epoch);
            }
        }
        topics.entry(topic_id).or_default().push(answer);
    }
    if let Some(released) = closed {
        held::release_member(shared, &group, &member, &released).await;
    }
    let endpoints = shared
        .hinted_brokers(hinted, &context.listener)
        .into_iter()
        .map(|broker| {
            kafka_protocol::messages::share_acknowledge_response::NodeEndpoint::default()
                .with_node_id(BrokerId(broker.node_id))
                .with_host(StrBytes::from_string(broker.host))
                .with_port(broker.port)
                .with_rack(broker.rack.map(StrBytes::from_string))
        })
        .collect();
    ResponseKind::ShareAcknowledge(
        ShareAcknowledgeResponse::default()
            .with_responses(
                topics
                    .into_iter()
                    .map(|(topic_id, partitions)| {
                        ShareAcknowledgeTopicResponse::default()
                            .with_topic_id(topic_id)
                            .with_partitions(partitions)
                    })
                    .collect(),
            )
            .with_node_endpoints(endpoints),
    )
}

/// The acknowledgements of the request, by partition (a topic named twice is one).
fn acknowledgements_of(
    request: &ShareAcknowledgeRequest,
) -> Result<BTreeMap<(Uuid, i32), Vec<AckBatch>>, ShareError> {
    let mut acks: BTreeMap<(Uuid, i32), Vec<AckBatch>> = BTreeMap::new();
    for topic in &request.topics {
        for partition in &topic.partitions {
            let batches = acks
                .entry((topic.topic_id, partition.partition_index))
                .or_default();
            for batch in &partition.acknowledgement_batches {
                let types = batch
                    .acknowledge_types
                    .iter()
                    .map(|code| AckType::from_code(*code))
                    .collect::<Result<Vec<_>, _>>()?;
                batches.push(AckBatch {
                    first: batch.first_offset,
                    last: batch.last_offset,
                    types,
                });
            }
        }
    }
    for batches in acks.values_mut() {
        batches.sort_by_key(|batch| batch.first);
    }
    Ok(acks)
}

fn refused(error_code: i16, message: String) -> ResponseKind {
    ResponseKind::ShareAcknowledge(
        ShareAcknowledgeResponse::default()
            .with_error_code(error_code)
            .with_error_message(Some(StrBytes::from_string(message))),
    )
}
