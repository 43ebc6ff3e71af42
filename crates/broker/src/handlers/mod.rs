//! One module per Kafka API. Each declares the API key and the version range it
//! implements ([`ApiDecl`]); [`APIS`] lists them, and ApiVersions answers from that
//! list, so what Spool advertises is exactly what it implements.

mod acl_filter;
mod add_offsets_to_txn;
mod add_partitions_to_txn;
mod alter_configs;
mod alter_share_group_offsets;
mod alter_user_scram_credentials;
mod api;
mod api_versions;
mod authorize;
mod client_quotas;
mod configs;
mod consumer_group_describe;
mod consumer_group_heartbeat;
mod create_acls;
mod create_partitions;
mod create_topics;
mod delete_acls;
mod delete_groups;
mod delete_records;
mod delete_share_group_offsets;
mod delete_topics;
mod describe_acls;
mod describe_configs;
mod describe_groups;
mod describe_share_group_offsets;
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
mod per_partition;
mod produce;
mod sasl_authenticate;
mod sasl_handshake;
mod share_acknowledge;
mod share_fetch;
mod share_group_describe;
mod share_group_heartbeat;
mod sync_group;
#[cfg(test)]
mod tests;
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
use crate::lanes::{self, Lanes};
use crate::response::{Reply, ResponseWriter};
use crate::shared::Shared;
use spool_security::quotas::{CONSUMER_BYTE_RATE, PRODUCER_BYTE_RATE, throttle_ms};
use spool_security::session::{Gate, Session};
use spool_share::session::ConnectionId;

/// The one declaration of every API Spool implements, in the order ApiVersions lists
/// them: each handler's [`ApiDecl`], and for the handlers of the common shape (the
/// decoded request, its [`RequestContext`], the broker) the request they take and the
/// function. It makes [`APIS`] and [`dispatch`]. The five without a function are
/// answered by [`handle`] itself: Produce and Fetch (quotas throttle them as they
/// go, and Produce may answer later), ApiVersions and the SASL pair (the session).
macro_rules! apis {
    ($($decl:path $(=> $request:ident : $handler:path)?),* $(,)?) => {
        /// Every API Spool implements.
        pub(crate) const APIS: &[ApiDecl] = &[$($decl),*];

        /// The answer of a handler of the common shape; the request back if its API
        /// has none.
        async fn dispatch(
            body: RequestKind,
            context: &RequestContext,
            shared: &Arc<Shared>,
        ) -> Result<ResponseKind, RequestKind> {
            match body {
                $($(RequestKind::$request(request) => Ok($handler(request, context, shared).await),)?)*
                other => Err(other),
            }
        }
    };
}

apis! {
    produce::API,
    fetch::API,
    list_offsets::API => ListOffsets: list_offsets::handle,
    metadata::API => Metadata: metadata::handle,
    api_versions::API,
    create_topics::API => CreateTopics: create_topics::handle,
    delete_topics::API => DeleteTopics: delete_topics::handle,
    delete_records::API => DeleteRecords: delete_records::handle,
    create_partitions::API => CreatePartitions: create_partitions::handle,
    describe_configs::API => DescribeConfigs: describe_configs::handle,
    alter_configs::ALTER_API => AlterConfigs: alter_configs::alter,
    alter_configs::INCREMENTAL_API => IncrementalAlterConfigs: alter_configs::incremental,
    find_coordinator::API => FindCoordinator: find_coordinator::handle,
    join_group::API => JoinGroup: join_group::handle,
    sync_group::API => SyncGroup: sync_group::handle,
    heartbeat::API => Heartbeat: heartbeat::handle,
    leave_group::API => LeaveGroup: leave_group::handle,
    offset_commit::API => OffsetCommit: offset_commit::handle,
    offset_fetch::API => OffsetFetch: offset_fetch::handle,
    list_groups::API => ListGroups: list_groups::handle,
    describe_groups::API => DescribeGroups: describe_groups::handle,
    delete_groups::API => DeleteGroups: delete_groups::handle,
    offset_delete::API => OffsetDelete: offset_delete::handle,
    init_producer_id::API => InitProducerId: init_producer_id::handle,
    offset_for_leader_epoch::API => OffsetForLeaderEpoch: offset_for_leader_epoch::handle,
    add_partitions_to_txn::API => AddPartitionsToTxn: add_partitions_to_txn::handle,
    add_offsets_to_txn::API => AddOffsetsToTxn: add_offsets_to_txn::handle,
    end_txn::API => EndTxn: end_txn::handle,
    txn_offset_commit::API => TxnOffsetCommit: txn_offset_commit::handle,
    describe_transactions::API => DescribeTransactions: describe_transactions::handle,
    list_transactions::API => ListTransactions: list_transactions::handle,
    sasl_handshake::API,
    sasl_authenticate::API,
    describe_user_scram_credentials::API => DescribeUserScramCredentials: describe_user_scram_credentials::handle,
    alter_user_scram_credentials::API => AlterUserScramCredentials: alter_user_scram_credentials::handle,
    describe_acls::API => DescribeAcls: describe_acls::handle,
    create_acls::API => CreateAcls: create_acls::handle,
    delete_acls::API => DeleteAcls: delete_acls::handle,
    client_quotas::DESCRIBE_API => DescribeClientQuotas: client_quotas::describe,
    client_quotas::ALTER_API => AlterClientQuotas: client_quotas::alter,
    consumer_group_heartbeat::API => ConsumerGroupHeartbeat: consumer_group_heartbeat::handle,
    consumer_group_describe::API => ConsumerGroupDescribe: consumer_group_describe::handle,
    share_group_heartbeat::API => ShareGroupHeartbeat: share_group_heartbeat::handle,
    share_group_describe::API => ShareGroupDescribe: share_group_describe::handle,
    describe_share_group_offsets::API => DescribeShareGroupOffsets: describe_share_group_offsets::handle,
    alter_share_group_offsets::API => AlterShareGroupOffsets: alter_share_group_offsets::handle,
    delete_share_group_offsets::API => DeleteShareGroupOffsets: delete_share_group_offsets::handle,
    share_fetch::API => ShareFetch: share_fetch::handle,
    share_acknowledge::API => ShareAcknowledge: share_acknowledge::handle,
}

fn declared(key: ApiKey) -> Option<&'static ApiDecl> {
    APIS.iter().find(|api| api.key == key)
}

/// Decodes, dispatches and encodes one request from `peer`.
pub(crate) async fn handle(
    frame: Bytes,
    peer: SocketAddr,
    connection: ConnectionId,
    session: &mut Session,
    shared: Arc<Shared>,
) -> Reply {
    let started = Instant::now();
    let mut envelope = match request::decode_header(frame) {
        Ok(envelope) => envelope,
        Err(error) => {
            tracing::warn!(%error, "closing connection: undecodable request header");
            return Reply::Close;
        }
    };
    let key = envelope.api_key;
    if let Gate::Close(reason) = session.gate(key, Instant::now()) {
        tracing::info!(%peer, api = ?key, reason, "closing connection");
        return Reply::Close;
    }
    let Some(api) = declared(key) else {
        tracing::warn!(api = ?key, version = envelope.version, "closing connection: API not implemented");
        return Reply::Close;
    };
    if !(api.min..=api.max).contains(&envelope.version) {
        if key == ApiKey::ApiVersions {
            // Kafka answers an ApiVersions it cannot read with a v0 response naming
            // the versions it supports, so the client can retry with one of them.
            return encode(&envelope, 0, &api_versions::unsupported_version(APIS));
        }
        tracing::warn!(api = ?key, version = envelope.version, "closing connection: unsupported version");
        return Reply::Close;
    }
    // A version Kafka 4 removed is handled as the lowest one it kept.
    if let Err(error) = request::bridge(&mut envelope) {
        tracing::warn!(%error, "closing connection: malformed request");
        return Reply::Close;
    }
    let version = envelope.version;
    let metrics = shared.metrics().cloned();
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
        version,
        client_id: envelope
            .header
            .client_id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default(),
        client_host: format!("/{}", peer.ip()),
        listener: session.listener.name.clone(),
        connection,
        access: shared
            .authorizer()
            .access(session.principal(), peer.ip().to_canonical()),
    };
    if let Some(response) = authorize::refusal(&body, &context) {
        if let Some(metrics) = &metrics {
            metrics.response_errors(key, &response);
            metrics.answered(key, started);
        }
        return encode(&envelope, version, &response);
    }
    let response = match body {
        RequestKind::ApiVersions(_) => api_versions::handle(APIS),
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
            let lane = Lanes::lane_of(&shared.current_config(), &context.client_id).map(Arc::from);
            let appended = produce::append(
                request,
                &context.access,
                &context.listener,
                lane,
                shared.clone(),
            )
            .await;
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
                fetch::handle(request, &context, shared.clone()).await
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
        mut body => {
            // A lane client's groups are its group's part in the lane.
            let config = shared.current_config();
            let lane = Lanes::lane_of(&config, &context.client_id);
            if let Some(lane) = lane {
                lanes::groups::enter(&mut body, lane);
            }
            match dispatch(body, &context, &shared).await {
                Ok(mut response) => {
                    if let Some(lane) = lane {
                        lanes::groups::leave(&mut response, lane);
                    }
                    response
                }
                Err(other) => {
                    tracing::warn!(request = ?std::mem::discriminant(&other), "no handler");
                    return Reply::Close;
                }
            }
        }
    };
    let took = if throttle::waits(key) {
        Duration::ZERO
    } else {
        started.elapsed()
    };
    let throttle = throttle::charge_time(&shared, &context, took);
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
    respond(envelope, version, |writer| {
        response
            .encode(writer.buffer(), version)
            .map_err(|e| e.to_string())
    })
}

/// Frames a Fetch response, whose records stay in the segment files until sent.
fn encode_fetch(envelope: &Envelope, version: i16, body: &fetch::FetchBody) -> Reply {
    respond(envelope, version, |writer| {
        body.encode(version, writer).map_err(|e| e.to_string())
    })
}

/// What `body` writes, framed; a request the bridge took up from a removed version
/// is answered in that version ([`encode_older`]).
fn respond(
    envelope: &Envelope,
    version: i16,
    body: impl FnOnce(&mut ResponseWriter) -> Result<(), String>,
) -> Reply {
    if envelope.client_version == envelope.version {
        frame(envelope, version, body)
    } else {
        encode_older(envelope, body)
    }
}

/// A response to a request of a version Kafka 4 removed: encoded at the version it
/// was handled as, read whole (records out of their files), converted for the
/// client's version (`spool_protocol::legacy`), then framed.
fn encode_older(
    envelope: &Envelope,
    body: impl FnOnce(&mut ResponseWriter) -> Result<(), String>,
) -> Reply {
    let api = envelope.api_key;
    let mut writer = ResponseWriter::new();
    let encoded = body(&mut writer).and_then(|()| {
        let whole = writer
            .finish()
            .ok_or("response too large for a frame")?
            .to_vec()
            .map_err(|e| e.to_string())?;
        // The size prefix goes; what follows is the body.
        let handled = bytes::Bytes::copy_from_slice(whole.get(4..).unwrap_or_default());
        spool_protocol::legacy::response_down(api, envelope.client_version, &handled)
            .map_err(|e| e.to_string())
    });
    match encoded {
        Ok(older) => frame(envelope, envelope.client_version, |writer| {
            writer.buffer().extend_from_slice(&older);
            Ok(())
        }),
        Err(error) => {
            tracing::error!(?api, version = envelope.client_version, %error, "cannot convert a response for an older version; closing connection");
            Reply::Close
        }
    }
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
