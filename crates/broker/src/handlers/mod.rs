//! One module per Kafka API. Each declares the API key and the version range it
//! implements ([`ApiDecl`]); [`APIS`] lists them, and ApiVersions answers from that
//! list, so what Spool advertises is exactly what it implements.

mod acl_filter;
mod add_offsets_to_txn;
mod add_partitions_to_txn;
mod alter_configs;
mod alter_user_scram_credentials;
mod api;
mod api_versions;
mod authorize;
mod client_quotas;
mod configs;
mod create_acls;
mod create_partitions;
mod create_topics;
mod delete_acls;
mod delete_groups;
mod delete_records;
mod delete_topics;
mod describe_acls;
mod describe_configs;
mod describe_groups;
mod describe_transactions;
mod describe_user_scram_credentials;
mod end_txn;
mod fetch;
mod find_coordinator;
mod heartbeat;
mod init_producer_id;
mod join_group;
mod leave_group;
mod list_groups;
mod list_offsets;
mod list_transactions;
mod metadata;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod offset_for_leader_epoch;
mod produce;
mod sasl_authenticate;
mod sasl_handshake;
mod sync_group;
mod throttle;
mod txn_offset_commit;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseHeader, ResponseKind};
use kafka_protocol::protocol::Encodable;
use spool_protocol::request::{self, Envelope};

use self::api::{ApiDecl, RequestContext};
use crate::response::{Reply, ResponseWriter};
use crate::shared::Shared;
use spool_security::quotas::{CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, throttle_ms};
use spool_security::session::{Gate, Session};

/// Every API Spool implements.
pub(crate) const APIS: &[ApiDecl] = &[
    produce::API,
    fetch::API,
    list_offsets::API,
    metadata::API,
    api_versions::API,
    create_topics::API,
    delete_topics::API,
    delete_records::API,
    create_partitions::API,
    describe_configs::API,
    alter_configs::ALTER_API,
    alter_configs::INCREMENTAL_API,
    find_coordinator::API,
    join_group::API,
    sync_group::API,
    heartbeat::API,
    leave_group::API,
    offset_commit::API,
    offset_fetch::API,
    list_groups::API,
    describe_groups::API,
    delete_groups::API,
    offset_delete::API,
    init_producer_id::API,
    offset_for_leader_epoch::API,
    add_partitions_to_txn::API,
    add_offsets_to_txn::API,
    end_txn::API,
    txn_offset_commit::API,
    describe_transactions::API,
    list_transactions::API,
    sasl_handshake::API,
    sasl_authenticate::API,
    describe_user_scram_credentials::API,
    alter_user_scram_credentials::API,
    describe_acls::API,
    create_acls::API,
    delete_acls::API,
    client_quotas::DESCRIBE_API,
    client_quotas::ALTER_API,
];

fn declared(key: ApiKey) -> Option<&'static ApiDecl> {
    APIS.iter().find(|api| api.key == key)
}

/// Decodes, dispatches and encodes one request from `peer`.
pub(crate) async fn handle(
    frame: Bytes,
    peer: SocketAddr,
    session: &mut Session,
    shared: Arc<Shared>,
) -> Reply {
    let started = Instant::now();
    let envelope = match request::decode_header(frame) {
        Ok(envelope) => envelope,
        Err(error) => {
            tracing::warn!(%error, "closing connection: undecodable request header");
            return Reply::Close;
        }
    };
    let (key, version) = (envelope.api_key, envelope.version);
    if let Gate::Close(reason) = session.gate(key, Instant::now()) {
        tracing::info!(%peer, api = ?key, reason, "closing connection");
        return Reply::Close;
    }
    let Some(api) = declared(key) else {
        tracing::warn!(api = ?key, version, "closing connection: API not implemented");
        return Reply::Close;
    };
    if !(api.min..=api.max).contains(&version) {
        if key == ApiKey::ApiVersions {
            // Kafka answers an ApiVersions it cannot read with a v0 response naming
            // the versions it supports, so the client can retry with one of them.
            return encode(&envelope, 0, &api_versions::unsupported_version(APIS));
        }
        tracing::warn!(api = ?key, version, "closing connection: unsupported version");
        return Reply::Close;
    }
    let metrics = shared.metrics.clone();
    if let Some(metrics) = &metrics {
        metrics.request(key, version);
    }
    let body = match request::decode_body(&envelope) {
        Ok(body) => body,
        Err(error) => {
            tracing::warn!(%error, "closing connection: malformed request");
            return Reply::Close;
        }
    };
    let context = RequestContext {
        client_id: envelope
            .header
            .client_id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        client_host: format!("/{}", peer.ip()),
        listener: session.listener.name.clone(),
        access: shared
            .authorizer
            .access(session.principal(), peer.ip().to_canonical()),
    };
    if let Some(response) = authorize::refusal(&body, &context) {
        if let Some(metrics) = &metrics {
            metrics.response_errors(key, &response);
            metrics.answered(key, started);
        }
        return encode(&envelope, version, &response);
    }
    // What the quotas need once a handler has taken `shared`.
    let after = shared.clone();
    let response = match body {
        RequestKind::ApiVersions(_) => api_versions::handle(APIS),
        RequestKind::Metadata(request) => {
            metadata::handle(request, version, &context, shared).await
        }
        RequestKind::SaslHandshake(request) => sasl_handshake::handle(&request, version, session),
        RequestKind::SaslAuthenticate(request) => {
            let (response, failed) = sasl_authenticate::handle(request, session, &shared).await;
            if failed {
                // Kafka's pause before a failed client may try again, then the close.
                tokio::time::sleep(session.listener.failed_delay).await;
                return match encode(&envelope, version, &response) {
                    Reply::Send(response) => Reply::SendAndClose(response),
                    other => other,
                };
            }
            response
        }
        RequestKind::CreateTopics(request) => {
            create_topics::handle(request, version, &context.access, shared).await
        }
        RequestKind::Produce(request) => {
            let bytes: usize = request
                .topic_data
                .iter()
                .flat_map(|topic| &topic.partition_data)
                .filter_map(|partition| partition.records.as_ref())
                .map(Bytes::len)
                .sum();
            #[allow(clippy::cast_precision_loss)] // far below 2^52 bytes
            let bytes = bytes as f64;
            let charged = throttle::charge(&shared, &context, PRODUCER_BYTE_RATE, bytes);
            let appended =
                produce::append(request, &context.access, &context.listener, shared.clone()).await;
            let throttle = charged.max(throttle::charge_time(&shared, &context, started.elapsed()));
            // KIP-219 from v6.
            let late = throttle::mute_or_delay(session, throttle, version >= 6);
            return Reply::Later(Box::pin(async move {
                let mut answer = appended.answer().await;
                if let Some(response) = &mut answer {
                    throttle::set_throttle_time(response, throttle);
                }
                throttle::hold_back(late).await;
                if let Some(metrics) = &metrics {
                    if let Some(response) = &answer {
                        metrics.response_errors(key, response);
                    }
                    metrics.answered(key, started);
                }
                match answer {
                    Some(response) => encode(&envelope, version, &response),
                    None => Reply::Nothing,
                }
            }));
        }
        RequestKind::Fetch(request) => {
            // As Kafka: a consumer already over its byte rate gets an empty answer
            // with the time it is throttled, and nothing is read for it.
            let owed = throttle::owed(&shared, &context, CONSUMER_BYTE_RATE);
            let mut body = if owed.is_zero() {
                fetch::handle(
                    request,
                    version,
                    &context.access,
                    &context.listener,
                    shared.clone(),
                )
                .await
            } else {
                fetch::FetchBody::default()
            };
            #[allow(clippy::cast_precision_loss)] // far below 2^52 bytes
            let bytes = body.bytes() as f64;
            let throttle = throttle::charge(&shared, &context, CONSUMER_BYTE_RATE, bytes)
                .max(owed)
                .max(throttle::charge_time(&shared, &context, body.busy));
            body.throttle_time_ms = throttle_ms(throttle);
            // KIP-219 from v8.
            throttle::hold_back(throttle::mute_or_delay(session, throttle, version >= 8)).await;
            if let Some(metrics) = &metrics {
                body.count(metrics);
                metrics.answered(key, started);
            }
            return encode_fetch(&envelope, version, &body);
        }
        RequestKind::ListOffsets(request) => {
            list_offsets::handle(request, version, &context.access, shared).await
        }
        RequestKind::DeleteTopics(request) => {
            delete_topics::handle(request, version, &context.access, shared).await
        }
        RequestKind::DeleteRecords(request) => {
            delete_records::handle(request, &context.access, shared).await
        }
        RequestKind::CreatePartitions(request) => {
            create_partitions::handle(request, &context.access, shared).await
        }
        RequestKind::DescribeConfigs(request) => {
            describe_configs::handle(request, version, &context.access, &shared)
        }
        RequestKind::AlterConfigs(request) => {
            alter_configs::alter(request, &context.access, shared).await
        }
        RequestKind::IncrementalAlterConfigs(request) => {
            alter_configs::incremental(request, &context.access, shared).await
        }
        RequestKind::FindCoordinator(request) => {
            find_coordinator::handle(request, version, &context, &shared)
        }
        RequestKind::JoinGroup(request) => {
            join_group::handle(request, version, &context, shared).await
        }
        RequestKind::SyncGroup(request) => sync_group::handle(request, version, shared).await,
        RequestKind::Heartbeat(request) => heartbeat::handle(&request, &shared),
        RequestKind::LeaveGroup(request) => leave_group::handle(request, version, &shared),
        RequestKind::OffsetCommit(request) => {
            offset_commit::handle(request, &context.access, shared).await
        }
        RequestKind::OffsetFetch(request) => {
            offset_fetch::handle(request, version, &context.access, &shared).await
        }
        RequestKind::ListGroups(request) => {
            list_groups::handle(&request, version, &context.access, &shared)
        }
        RequestKind::DescribeGroups(request) => {
            describe_groups::handle(request, version, &context.access, &shared)
        }
        RequestKind::DeleteGroups(request) => {
            delete_groups::handle(request, &context.access, shared).await
        }
        RequestKind::OffsetDelete(request) => {
            offset_delete::handle(request, &context.access, shared).await
        }
        RequestKind::OffsetForLeaderEpoch(request) => {
            offset_for_leader_epoch::handle(request, version, &context.access, shared).await
        }
        RequestKind::InitProducerId(request) => {
            init_producer_id::handle(request, version, shared).await
        }
        RequestKind::AddPartitionsToTxn(request) => {
            add_partitions_to_txn::handle(request, version, &context.access, shared).await
        }
        RequestKind::AddOffsetsToTxn(request) => {
            add_offsets_to_txn::handle(request, version, shared).await
        }
        RequestKind::EndTxn(request) => end_txn::handle(request, version, shared).await,
        RequestKind::TxnOffsetCommit(request) => {
            txn_offset_commit::handle(request, version, &context.access, shared).await
        }
        RequestKind::DescribeTransactions(request) => {
            describe_transactions::handle(request, &context.access, shared).await
        }
        RequestKind::ListTransactions(request) => {
            list_transactions::handle(request, &context.access, shared).await
        }
        RequestKind::DescribeUserScramCredentials(request) => {
            describe_user_scram_credentials::handle(request, shared).await
        }
        RequestKind::AlterUserScramCredentials(request) => {
            alter_user_scram_credentials::handle(request, shared).await
        }
        RequestKind::DescribeAcls(request) => describe_acls::handle(&request, &context, &shared),
        RequestKind::CreateAcls(request) => create_acls::handle(request, &context, shared).await,
        RequestKind::DeleteAcls(request) => delete_acls::handle(request, &context, shared).await,
        RequestKind::DescribeClientQuotas(request) => {
            client_quotas::describe(&request, &context, &shared)
        }
        RequestKind::AlterClientQuotas(request) => {
            client_quotas::alter(request, &context, shared).await
        }
        other => {
            tracing::warn!(request = ?std::mem::discriminant(&other), "no handler");
            return Reply::Close;
        }
    };
    let took = if throttle::waits(key) {
        Duration::ZERO
    } else {
        started.elapsed()
    };
    let throttle = throttle::charge_time(&after, &context, took);
    let mut response = response;
    if !throttle.is_zero() {
        throttle::set_throttle_time(&mut response, throttle);
        session.mute(throttle);
    }
    if let Some(metrics) = &metrics {
        metrics.response_errors(key, &response);
        metrics.answered(key, started);
    }
    encode(&envelope, version, &response)
}

/// Frames a response: size, header (at the API's header version), body.
fn encode(envelope: &Envelope, version: i16, response: &ResponseKind) -> Reply {
    frame(envelope, version, |writer| {
        response
            .encode(writer.buffer(), version)
            .map_err(|e| e.to_string())
    })
}

/// Frames a Fetch response, whose records stay in the segment files until sent.
fn encode_fetch(envelope: &Envelope, version: i16, body: &fetch::FetchBody) -> Reply {
    frame(envelope, version, |writer| {
        body.encode(version, writer).map_err(|e| e.to_string())
    })
}

/// The response header, then what `body` writes, framed; closes the connection if
/// the response cannot be encoded.
fn frame(
    envelope: &Envelope,
    version: i16,
    body: impl FnOnce(&mut ResponseWriter) -> Result<(), String>,
) -> Reply {
    let api = envelope.api_key;
    let header = ResponseHeader::default().with_correlation_id(envelope.header.correlation_id);
    let mut writer = ResponseWriter::new();
    let encoded = header
        .encode(writer.buffer(), api.response_header_version(version))
        .map_err(|e| e.to_string())
        .and_then(|()| body(&mut writer));
    if let Err(error) = encoded {
        tracing::error!(?api, version, %error, "cannot encode response; closing connection");
        return Reply::Close;
    }
    match writer.finish() {
        Some(response) => Reply::Send(response),
        None => {
            tracing::error!(
                ?api,
                version,
                "response too large for a frame; closing connection"
            );
            Reply::Close
        }
    }
}
