//! InitProducerId (key 22): an id and epoch for an idempotent producer. Transactional
//! producers are refused until transactions exist.

use std::sync::Arc;

use kafka_protocol::messages::{
    ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProducerId, ResponseKind,
};

use super::ApiDecl;
use crate::errors::code;
use crate::server::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::InitProducerId,
    min: 0,
    max: 5,
};

pub(crate) async fn handle(
    request: InitProducerIdRequest,
    version: i16,
    shared: Arc<Shared>,
) -> ResponseKind {
    let failed = |error| {
        ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(error)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        )
    };
    if request
        .transactional_id
        .as_ref()
        .is_some_and(|id| !id.0.is_empty())
    {
        tracing::info!("refusing a transactional producer: transactions are not supported yet");
        return failed(code::COORDINATOR_NOT_AVAILABLE);
    }
    let current = (version >= 3 && request.producer_id.0 >= 0)
        .then_some((request.producer_id.0, request.producer_epoch));
    match shared.producer_ids.init(current).await {
        Ok((id, epoch)) => ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(epoch),
        ),
        Err(error) => {
            tracing::error!(%error, "allocating producer ids failed");
            failed(code::COORDINATOR_NOT_AVAILABLE)
        }
    }
}
