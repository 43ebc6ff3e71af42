//! The checks that refuse a whole request, before its handler runs: those of APIs
//! about one group, one transactional id or the cluster (Kafka's table, in
//! `docs/security.md`). Checks of APIs that name topics, groups or configs one by one
//! live in their handlers, which answer each with its own error.

use std::collections::BTreeSet;

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AddOffsetsToTxnResponse, AlterUserScramCredentialsResponse, ConsumerGroupHeartbeatResponse,
    DescribeUserScramCredentialsResponse, EndTxnResponse, HeartbeatResponse,
    InitProducerIdResponse, JoinGroupResponse, LeaveGroupResponse, ProducerId, RequestKind,
    ResponseKind, ShareAcknowledgeResponse, ShareFetchResponse, ShareGroupHeartbeatResponse,
    SyncGroupResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::api::RequestContext;
use crate::errors::code;
use spool_security::acl::Operation::{self, Alter, Describe, IdempotentWrite, Read, Write};

/// The answer to a request its principal may not make at all; `None` to handle it.
pub(crate) fn refusal(body: &RequestKind, context: &RequestContext) -> Option<ResponseKind> {
    let access = &context.access;
    let group = |id: &str| !access.group(Read, id);
    let group_denied = code::GROUP_AUTHORIZATION_FAILED;
    let txn_denied = code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    match body {
        RequestKind::JoinGroup(r) if group(&r.group_id) => Some(ResponseKind::JoinGroup(
            JoinGroupResponse::default().with_error_code(group_denied),
        )),
        RequestKind::SyncGroup(r) if group(&r.group_id) => Some(ResponseKind::SyncGroup(
            SyncGroupResponse::default().with_error_code(group_denied),
        )),
        RequestKind::Heartbeat(r) if group(&r.group_id) => Some(ResponseKind::Heartbeat(
            HeartbeatResponse::default().with_error_code(group_denied),
        )),
        RequestKind::LeaveGroup(r) if group(&r.group_id) => Some(ResponseKind::LeaveGroup(
            LeaveGroupResponse::default().with_error_code(group_denied),
        )),
        RequestKind::ConsumerGroupHeartbeat(r) if group(&r.group_id) => {
            Some(ResponseKind::ConsumerGroupHeartbeat(
                ConsumerGroupHeartbeatResponse::default().with_error_code(group_denied),
            ))
        }
        RequestKind::ShareGroupHeartbeat(r) if group(&r.group_id) => {
            Some(ResponseKind::ShareGroupHeartbeat(
                ShareGroupHeartbeatResponse::default().with_error_code(group_denied),
            ))
        }
        RequestKind::ShareFetch(r) if group(named(r.group_id.as_ref())) => Some(
            ResponseKind::ShareFetch(ShareFetchResponse::default().with_error_code(group_denied)),
        ),
        RequestKind::ShareAcknowledge(r) if group(named(r.group_id.as_ref())) => {
            Some(ResponseKind::ShareAcknowledge(
                ShareAcknowledgeResponse::default().with_error_code(group_denied),
            ))
        }
        RequestKind::InitProducerId(r) => {
            let error = match r.transactional_id.as_ref().filter(|id| !id.is_empty()) {
                Some(id) => (!access.transactional_id(Write, id)).then_some(txn_denied),
                // KIP-679: WRITE on any topic stands for IDEMPOTENT_WRITE.
                None => (!access.cluster(IdempotentWrite) && !access.topic_somewhere(Write))
                    .then_some(code::CLUSTER_AUTHORIZATION_FAILED),
            };
            error.map(|error| {
                ResponseKind::InitProducerId(
                    InitProducerIdResponse::default()
                        .with_error_code(error)
                        .with_producer_id(ProducerId(-1))
                        .with_producer_epoch(-1),
                )
            })
        }
        RequestKind::AddOffsetsToTxn(r) => {
            let error = if !access.transactional_id(Write, &r.transactional_id) {
                txn_denied
            } else if group(&r.group_id) {
                group_denied
            } else {
                return None;
            };
            Some(ResponseKind::AddOffsetsToTxn(
                AddOffsetsToTxnResponse::default().with_error_code(error),
            ))
        }
        RequestKind::EndTxn(r) if !access.transactional_id(Write, &r.transactional_id) => Some(
            ResponseKind::EndTxn(EndTxnResponse::default().with_error_code(txn_denied)),
        ),
        RequestKind::DescribeUserScramCredentials(_) if !access.cluster(Describe) => {
            Some(ResponseKind::DescribeUserScramCredentials(
                DescribeUserScramCredentialsResponse::default()
                    .with_error_code(code::CLUSTER_AUTHORIZATION_FAILED)
                    .with_error_message(Some(denied(context, Describe))),
            ))
        }
        RequestKind::AlterUserScramCredentials(r) if !access.cluster(Alter) => {
            let users: BTreeSet<String> = r
                .deletions
                .iter()
                .map(|d| d.name.to_string())
                .chain(r.upsertions.iter().map(|u| u.name.to_string()))
                .collect();
            let results = users
                .into_iter()
                .map(|user| {
                    AlterUserScramCredentialsResult::default()
                        .with_user(StrBytes::from_string(user))
                        .with_error_code(code::CLUSTER_AUTHORIZATION_FAILED)
                        .with_error_message(Some(denied(context, Alter)))
                })
                .collect();
            Some(ResponseKind::AlterUserScramCredentials(
                AlterUserScramCredentialsResponse::default().with_results(results),
            ))
        }
        _ => None,
    }
}

/// A nullable group id as a name (null as the empty one).
fn named(group_id: Option<&kafka_protocol::messages::GroupId>) -> &str {
    group_id.map_or("", |id| id.0.as_str())
}

fn denied(context: &RequestContext, operation: Operation) -> StrBytes {
    StrBytes::from_string(format!(
        "{} may not {operation:?} on the cluster",
        context.access.principal()
    ))
}
