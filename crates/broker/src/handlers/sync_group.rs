//! SyncGroup (key 14): the leader sends the assignment, every member gets its part.

use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, ResponseKind, SyncGroupRequest, SyncGroupResponse};
use kafka_protocol::protocol::StrBytes;
use spool_coordinator::SyncRequest;

use super::api::{ApiDecl, RequestContext};
use crate::errors::group_error_code;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::SyncGroup,
    min: 0,
    max: 5,
};

pub(crate) async fn handle(
    request: SyncGroupRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let shared = Arc::clone(shared);
    let sync = SyncRequest {
        group_id: request.group_id.0.to_string(),
        generation: request.generation_id,
        member_id: request.member_id.to_string(),
        group_instance_id: request.group_instance_id.map(|id| id.to_string()),
        protocol_type: request.protocol_type.map(|t| t.to_string()),
        protocol_name: request.protocol_name.map(|n| n.to_string()),
        assignments: request
            .assignments
            .into_iter()
            // Copied: a slice would keep the whole request buffer alive.
            .map(|a| {
                (
                    a.member_id.to_string(),
                    Bytes::copy_from_slice(&a.assignment),
                )
            })
            .collect(),
    };
    let response = match shared.groups().sync(sync, shared.topics()).await {
        Ok(synced) => {
            let response = SyncGroupResponse::default().with_assignment(synced.assignment);
            if version >= 5 {
                response
                    .with_protocol_type(synced.protocol_type.map(StrBytes::from_string))
                    .with_protocol_name(synced.protocol_name.map(StrBytes::from_string))
            } else {
                response
            }
        }
        Err(error) => SyncGroupResponse::default().with_error_code(group_error_code(error)),
    };
    ResponseKind::SyncGroup(response)
}
