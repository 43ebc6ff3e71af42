//! DescribeTransactions (key 65): each transactional id's producer, state, timeout,
//! start time and partitions, for tools (`kafka-transactions.sh describe`). An id
//! another broker coordinates gets `NOT_COORDINATOR`; an unknown one
//! `TRANSACTIONAL_ID_NOT_FOUND`.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::describe_transactions_response::{TopicData, TransactionState};
use kafka_protocol::messages::{
    ApiKey, DescribeTransactionsRequest, DescribeTransactionsResponse, ProducerId, ResponseKind,
    TopicName,
};
use kafka_protocol::protocol::StrBytes;

use super::api::{ApiDecl, RequestContext};
use crate::errors::{code, txn_error_code};
use crate::shared::Shared;
use spool_security::acl::Operation;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::DescribeTransactions,
    min: 0,
    max: 0,
};

pub(crate) async fn handle(
    request: DescribeTransactionsRequest,
    context: &RequestContext,
    shared: &Arc<Shared>,
) -> ResponseKind {
    let access = &context.access;
    let shared = Arc::clone(shared);
    let mut states = Vec::with_capacity(request.transactional_ids.len());
    for id in request.transactional_ids {
        let state = TransactionState::default().with_transactional_id(id.clone());
        if !access.transactional_id(Operation::Describe, id.0.as_str()) {
            states.push(state.with_error_code(code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED));
            continue;
        }
        let state = match shared.transactions().describe(id.0.as_str()).await {
            Err(error) => state.with_error_code(txn_error_code(error, true)),
            Ok(None) => state.with_error_code(code::TRANSACTIONAL_ID_NOT_FOUND),
            Ok(Some(record)) => {
                let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                for (topic_id, partition) in &record.partitions {
                    // Topics the principal may not describe are left out.
                    if let Some(topic) = shared
                        .topics()
                        .by_id(*topic_id)
                        .filter(|t| access.topic(Operation::Describe, t.record.name.as_str()))
                    {
                        topics
                            .entry(topic.record.name.to_string())
                            .or_default()
                            .push(*partition);
                    }
                }
                state
                    .with_transaction_state(StrBytes::from_static_str(record.state.as_str()))
                    .with_transaction_timeout_ms(record.timeout_ms)
                    .with_transaction_start_time_ms(record.started_ms)
                    .with_producer_id(ProducerId(record.producer_id))
                    .with_producer_epoch(record.producer_epoch)
                    .with_topics(
                        topics
                            .into_iter()
                            .map(|(name, partitions)| {
                                TopicData::default()
                                    .with_topic(TopicName(StrBytes::from_string(name)))
                                    .with_partitions(partitions)
                            })
                            .collect(),
                    )
            }
        };
        states.push(state);
    }
    ResponseKind::DescribeTransactions(
        DescribeTransactionsResponse::default().with_transaction_states(states),
    )
}
