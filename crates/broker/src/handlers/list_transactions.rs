//! ListTransactions (key 66): the transactional ids this broker coordinates, filtered
//! by state, producer id and (v1) how long their transaction has been running. Tools
//! ask every broker and merge. v2's id pattern (a regular expression) is not built.

use std::sync::Arc;

use kafka_protocol::messages::list_transactions_response::TransactionState;
use kafka_protocol::messages::{
    ApiKey, ListTransactionsRequest, ListTransactionsResponse, ProducerId, ResponseKind,
    TransactionalId,
};
use kafka_protocol::protocol::StrBytes;
use spool_metadata::TxnState;

use super::api::{ApiDecl, RequestContext};
use crate::errors::txn_error_code;
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::ListTransactions,
    min: 0,
    max: 1,
};

/// State names Kafka's coordinator has that Spool's never takes: filtering by them
/// matches nothing, but they are not unknown.
const KAFKA_ONLY_STATES: [&str; 2] = ["PrepareEpochFence", "Dead"];

pub(crate) async fn handle(
    request: ListTransactionsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let records = match shared.transactions().transactions().await {
        Ok(records) => records,
        Err(error) => {
            return ResponseKind::ListTransactions(
                ListTransactionsResponse::default().with_error_code(txn_error_code(error, true)),
            );
        }
    };
    let unknown_filters: Vec<StrBytes> = request
        .state_filters
        .iter()
        .filter(|name| {
            TxnState::parse(name.as_str()).is_none() && !KAFKA_ONLY_STATES.contains(&name.as_str())
        })
        .cloned()
        .collect();
    let now = shared.clock().now_ms();
    let states = records
        .into_iter()
        .filter(|record| shared.transactions().owns(&record.transactional_id))
        // Those the principal may not describe are left out.
        .filter(|record| access.transactional_id(Operation::Describe, &record.transactional_id))
        .filter(|record| {
            request.state_filters.is_empty()
                || request
                    .state_filters
                    .iter()
                    .any(|name| name.as_str() == record.state.as_str())
        })
        .filter(|record| {
            request.producer_id_filters.is_empty()
                || request
                    .producer_id_filters
                    .contains(&ProducerId(record.producer_id))
        })
        .filter(|record| {
            request.duration_filter < 0
                || (record.state == TxnState::Ongoing
                    && record.started_ms >= 0
                    && now.saturating_sub(record.started_ms) >= request.duration_filter)
        })
        .map(|record| {
            TransactionState::default()
                .with_transactional_id(TransactionalId(StrBytes::from_string(
                    record.transactional_id,
                )))
                .with_producer_id(ProducerId(record.producer_id))
                .with_transaction_state(StrBytes::from_static_str(record.state.as_str()))
        })
        .collect();
    ResponseKind::ListTransactions(
        ListTransactionsResponse::default()
            .with_unknown_state_filters(unknown_filters)
            .with_transaction_states(states),
    )
}
