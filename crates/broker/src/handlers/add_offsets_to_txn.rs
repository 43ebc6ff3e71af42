//! AddOffsetsToTxn (key 25): the producer's transaction will commit offsets of a
//! group (TxnOffsetCommit to the group's coordinator follows). v4 differs from v3 only
//! in allowing `TRANSACTION_ABORTABLE`, which Spool never answers.

use std::sync::Arc;

use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, ApiKey, ResponseKind,
};

use super::api::{ApiDecl, RequestContext};
use crate::errors::{knows_producer_fenced, txn_result_code};
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::AddOffsetsToTxn,
    min: 0,
    max: 4,
};

pub(crate) async fn handle(
    request: AddOffsetsToTxnRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let shared = Arc::clone(shared);
    let outcome = shared
        .transactions()
        .add_offsets(
            request.transactional_id.0.as_str(),
            request.producer_id.0,
            request.producer_epoch,
            request.group_id.0.as_str(),
        )
        .await;
    ResponseKind::AddOffsetsToTxn(AddOffsetsToTxnResponse::default().with_error_code(
        txn_result_code(
            outcome,
            knows_producer_fenced(ApiKey::AddOffsetsToTxn, version),
        ),
    ))
}
