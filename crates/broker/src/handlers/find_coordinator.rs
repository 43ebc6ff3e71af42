//! FindCoordinator (key 10): this broker coordinates every group (one node). Batched
//! keys (v4+) get one answer each. Transaction coordinators do not exist yet.

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{
    ApiKey, BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::ApiDecl;
use crate::errors::code;
use crate::server::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::FindCoordinator,
    min: 0,
    max: 6,
};

/// FindCoordinator key types.
const GROUP: i8 = 0;

pub(crate) fn handle(
    request: FindCoordinatorRequest,
    version: i16,
    shared: &Shared,
) -> ResponseKind {
    let (host, port) = &shared.advertised;
    let node = BrokerId(shared.started_config().node_id);
    let refusal = (request.key_type != GROUP).then(|| {
        StrBytes::from_static_str("transactions are not supported yet: only group coordinators")
    });
    let error = if refusal.is_some() {
        code::COORDINATOR_NOT_AVAILABLE
    } else {
        code::NONE
    };
    let (node, host, port) = if refusal.is_some() {
        (BrokerId(-1), StrBytes::default(), -1)
    } else {
        (node, StrBytes::from_string(host.clone()), *port)
    };
    let response = if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(|key| {
                Coordinator::default()
                    .with_key(key)
                    .with_node_id(node)
                    .with_host(host.clone())
                    .with_port(port)
                    .with_error_code(error)
                    .with_error_message(refusal.clone())
            })
            .collect();
        FindCoordinatorResponse::default().with_coordinators(coordinators)
    } else {
        let response = FindCoordinatorResponse::default()
            .with_error_code(error)
            .with_node_id(node)
            .with_host(host)
            .with_port(port);
        if version >= 1 {
            response.with_error_message(refusal)
        } else {
            response
        }
    };
    ResponseKind::FindCoordinator(response)
}
