//! InitProducerId (key 22): an id and epoch for an idempotent producer, or, with a
//! transactional id, from the transaction coordinator (which fences the id's older
//! producers and aborts a transaction they left open).

use std::sync::Arc;

use kafka_protocol::messages::{
    ApiKey, InitProducerIdRequest, InitProducerIdResponse, ProducerId, ResponseKind,
};

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, knows_producer_fenced, txn_error_code};
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::InitProducerId,
    min: 0,
    max: 5,
};

pub(crate) async fn handle(
    request: InitProducerIdRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let shared = Arc::clone(shared);
    let failed = |error| {
        ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_error_code(error)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
        )
    };
    let current = (version >= 3 && request.producer_id.0 >= 0)
        .then_some((request.producer_id.0, request.producer_epoch));
    let answer = |(id, epoch)| {
        ResponseKind::InitProducerId(
            InitProducerIdResponse::default()
                .with_producer_id(ProducerId(id))
                .with_producer_epoch(epoch),
        )
    };
    if let Some(transactional_id) = request
        .transactional_id
        .as_ref()
        .filter(|id| !id.0.is_empty())
    {
        return match shared
            .transactions()
            .init_producer_id(
                transactional_id.0.as_str(),
                request.transaction_timeout_ms,
                current,
            )
            .await
        {
            Ok(initialised) => answer(initialised),
            Err(error) => failed(txn_error_code(
                error,
                knows_producer_fenced(ApiKey::InitProducerId, version),
            )),
        };
    }
    match shared.producer_ids().init(current).await {
        Ok(initialised) => answer(initialised),
        Err(error) => {
            tracing::error!(%error, "allocating producer ids failed");
            failed(code::COORDINATOR_NOT_AVAILABLE)
        }
    }
}
