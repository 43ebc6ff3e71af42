//! EndTxn (key 26): commit or abort the producer's transaction. Answered once the
//! markers are written into every partition of it (or, when other brokers are slow to
//! write theirs, once the decision is stored: the producer's next requests wait with
//! `CONCURRENT_TRANSACTIONS` until it completes). v4 differs from v3 only in allowing
//! `TRANSACTION_ABORTABLE`; v5 is KIP-890's transactions v2, not built.

use std::sync::Arc;

use kafka_protocol::messages::{ApiKey, EndTxnRequest, EndTxnResponse, ResponseKind};

use super::api::{ApiDecl, RequestContext};
use crate::errors::{knows_producer_fenced, txn_result_code};
use crate::shared::Shared;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::EndTxn,
    min: 0,
    max: 4,
};

pub(crate) async fn handle(
    request: EndTxnRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let version = context.version;
    let shared = Arc::clone(shared);
    let outcome = shared
        .transactions()
        .end(
            request.transactional_id.0.as_str(),
            request.producer_id.0,
            request.producer_epoch,
            request.committed,
        )
        .await;
    ResponseKind::EndTxn(EndTxnResponse::default().with_error_code(txn_result_code(
        outcome,
        knows_producer_fenced(ApiKey::EndTxn, version),
    )))
}
