//! FindCoordinator (key 10): the broker coordinating a group — this one in embedded
//! mode, the cluster's choice in shared-storage mode (`crate::cluster`) — and the
//! broker coordinating a transactional id, chosen the same way. Batched keys (v4+)
//! get one answer each. A key needs DESCRIBE on its group or transactional id.

use std::sync::Arc;

use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{
    ApiKey, BrokerId, FindCoordinatorRequest, FindCoordinatorResponse, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::errors::code;
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::FindCoordinator,
    min: 0,
    max: 6,
};

/// FindCoordinator key types.
const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;

/// One key's answer.
struct Found {
    error: i16,
    message: Option<StrBytes>,
    node: BrokerId,
    host: StrBytes,
    port: i32,
}

impl Found {
    fn refused(error: i16, message: &'static str) -> Found {
        Found {
            error,
            message: Some(StrBytes::from_static_str(message)),
            node: BrokerId(-1),
            host: StrBytes::default(),
            port: -1,
        }
    }
}

fn find(key_type: i8, key: &str, context: &RequestContext, shared: &Shared) -> Found {
    let listener = context.listener.as_str();
    let access = &context.access;
    match key_type {
        GROUP if !access.group(Operation::Describe, key) => {
            return Found::refused(
                code::GROUP_AUTHORIZATION_FAILED,
                "not authorized to describe the group",
            );
        }
        TRANSACTION if !access.transactional_id(Operation::Describe, key) => {
            return Found::refused(
                code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                "not authorized to describe the transactional id",
            );
        }
        GROUP | TRANSACTION => {}
        _ => return Found::refused(code::INVALID_REQUEST, "unknown coordinator key type"),
    }
    let node = shared.started_config().node_id;
    let Some(view) = shared.cluster() else {
        let (host, port) = shared.advertised_on(listener);
        return Found {
            error: code::NONE,
            message: None,
            node: BrokerId(node),
            host: StrBytes::from_string(host),
            port,
        };
    };
    match view.coordinator_of(key) {
        // This broker: its endpoint on the request's listener.
        Some(broker) if broker.node_id == node => {
            let (host, port) = shared.advertised_on(listener);
            Found {
                error: code::NONE,
                message: None,
                node: BrokerId(node),
                host: StrBytes::from_string(host),
                port,
            }
        }
        // Another: its endpoint on the same listener, if it has one.
        Some(broker) => match broker.on_listener(listener) {
            Some(broker) => Found {
                error: code::NONE,
                message: None,
                node: BrokerId(broker.node_id),
                host: StrBytes::from_string(broker.host),
                port: broker.port,
            },
            None => Found::refused(
                code::COORDINATOR_NOT_AVAILABLE,
                "the coordinator has no endpoint on this listener",
            ),
        },
        None => Found::refused(
            code::COORDINATOR_NOT_AVAILABLE,
            "no live broker is known to coordinate",
        ),
    }
}

pub(crate) async fn handle(
    request: FindCoordinatorRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let response = if version >= 4 {
        let coordinators = request
            .coordinator_keys
            .into_iter()
            .map(|key| {
                let found = find(request.key_type, key.as_str(), context, shared);
                Coordinator::default()
                    .with_key(key)
                    .with_node_id(found.node)
                    .with_host(found.host)
                    .with_port(found.port)
                    .with_error_code(found.error)
                    .with_error_message(found.message)
            })
            .collect();
        FindCoordinatorResponse::default().with_coordinators(coordinators)
    } else {
        let found = find(request.key_type, request.key.as_str(), context, shared);
        let response = FindCoordinatorResponse::default()
            .with_error_code(found.error)
            .with_node_id(found.node)
            .with_host(found.host)
            .with_port(found.port);
        if version >= 1 {
            response.with_error_message(found.message)
        } else {
            response
        }
    };
    ResponseKind::FindCoordinator(response)
}
