//! Heartbeat (key 12): keeps a member's session alive; `REBALANCE_IN_PROGRESS` tells
//! it to rejoin.

use std::sync::Arc;

use kafka_protocol::messages::{ApiKey, HeartbeatRequest, HeartbeatResponse, ResponseKind};

use super::api::{ApiDecl, RequestContext};
use crate::errors::group_result_code;
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::Heartbeat,
    min: 0,
    max: 4,
};

pub(crate) async fn handle(
    request: HeartbeatRequest,
    _context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let request = &request;
    let outcome = shared.groups().heartbeat(
        request.group_id.0.as_str(),
        request.member_id.as_str(),
        request.group_instance_id.as_ref().map(|id| id.as_str()),
        request.generation_id,
    );
    ResponseKind::Heartbeat(
        HeartbeatResponse::default().with_error_code(group_result_code(outcome)),
    )
}
