//! Where each request a client sends Databus goes: answered here (ApiVersions,
//! FindCoordinator, Metadata from the upstream's with Databus as the one broker),
//! merged (Produce, [`crate::produce`]), split by leader ([`crate::split`]), to the
//! coordinator of its group or transactional id, to every broker (ListGroups), or to
//! any broker (admin requests; a BROKER config resource to that broker).

use std::sync::Arc;

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsResponse, ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsResponse, OffsetFetchRequest, OffsetFetchResponse, RequestKind, ResponseKind,
};

use kafka_protocol::protocol::StrBytes;

use crate::Bus;
use crate::naming;
use crate::split;
use crate::upstream::{BrokerId, UpstreamError};

/// A group's coordinator is asked for by key type 0, a transactional id's by 1.
const GROUP: i8 = 0;
const TRANSACTION: i8 = 1;
/// Codes that say a coordinator moved (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
/// COORDINATOR_LOAD_IN_PROGRESS).
const COORDINATOR_MOVED: [i16; 3] = [16, 15, 14];
/// Kafka's BROKER config resource type.
const BROKER_RESOURCE: i8 = 4;

/// The APIs Databus serves: the upstream's versions of them.
const SERVED: &[ApiKey] = &[
    ApiKey::Produce,
    ApiKey::Fetch,
    ApiKey::ListOffsets,
    ApiKey::Metadata,
    ApiKey::OffsetCommit,
    ApiKey::OffsetFetch,
    ApiKey::FindCoordinator,
    ApiKey::JoinGroup,
    ApiKey::Heartbeat,
    ApiKey::LeaveGroup,
    ApiKey::SyncGroup,
    ApiKey::DescribeGroups,
    ApiKey::ListGroups,
    ApiKey::ApiVersions,
    ApiKey::CreateTopics,
    ApiKey::DeleteTopics,
    ApiKey::DeleteRecords,
    ApiKey::InitProducerId,
    ApiKey::OffsetForLeaderEpoch,
    ApiKey::AddPartitionsToTxn,
    ApiKey::AddOffsetsToTxn,
    ApiKey::EndTxn,
    ApiKey::TxnOffsetCommit,
    ApiKey::DescribeConfigs,
    ApiKey::AlterConfigs,
    ApiKey::DeleteGroups,
    ApiKey::CreatePartitions,
    ApiKey::IncrementalAlterConfigs,
    ApiKey::OffsetDelete,
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
];

/// ApiVersions: the upstream's versions of what Databus serves and can read.
pub(crate) fn api_versions(bus: &Bus) -> ApiVersionsResponse {
    let api_keys = bus
        .upstream
        .versions()
        .iter()
        .filter(|(key, _, _)| {
            SERVED.iter().any(|served| *served as i16 == *key)
                && spool_protocol::wire_guard::shapes::shape_of(*key).is_some()
        })
        .map(|&(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect();
    ApiVersionsResponse::default().with_api_keys(api_keys)
}

/// The answer to `request` (API `key` at `version`), from upstream or from here.
pub(crate) async fn answer(
    bus: &Arc<Bus>,
    key: ApiKey,
    request: RequestKind,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<ResponseKind, UpstreamError> {
    Ok(match request {
        RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(api_versions(bus)),
        RequestKind::FindCoordinator(request) => {
            ResponseKind::FindCoordinator(naming::coordinator(&request, version, &bus.me))
        }
        RequestKind::Metadata(request) => {
            let answer = any(bus, key, &RequestKind::Metadata(request), version, client).await?;
            match answer {
                ResponseKind::Metadata(answer) => {
                    ResponseKind::Metadata(naming::metadata(answer, &bus.me))
                }
                other => other,
            }
        }
        // Idempotent and transactional producers' requests, sent as they came.
        RequestKind::Produce(request) => {
            ResponseKind::Produce(split::produce(bus, request, version, client).await?)
        }
        RequestKind::Fetch(request) => {
            ResponseKind::Fetch(split::fetch(bus, request, version, client).await?)
        }
        RequestKind::ListOffsets(request) => {
            ResponseKind::ListOffsets(split::to_leaders(bus, request, version, client).await?)
        }
        RequestKind::OffsetForLeaderEpoch(request) => ResponseKind::OffsetForLeaderEpoch(
            split::to_leaders(bus, request, version, client).await?,
        ),
        RequestKind::DeleteRecords(request) => {
            ResponseKind::DeleteRecords(split::to_leaders(bus, request, version, client).await?)
        }
        RequestKind::ListGroups(request) => {
            let mut joined = ListGroupsResponse::default();
            for broker in bus.upstream.all_brokers() {
                let part = RequestKind::ListGroups(request.clone());
                if let ResponseKind::ListGroups(answer) = bus
                    .upstream
                    .call_as(broker, key, &part, version, client)
                    .await?
                {
                    joined.groups.extend(answer.groups);
                    joined.throttle_time_ms = joined.throttle_time_ms.max(answer.throttle_time_ms);
                }
            }
            ResponseKind::ListGroups(joined)
        }
        RequestKind::DescribeGroups(request) => {
            ResponseKind::DescribeGroups(describe_groups(bus, request, version, client).await?)
        }
        RequestKind::DeleteGroups(request) => {
            ResponseKind::DeleteGroups(delete_groups(bus, request, version, client).await?)
        }
        RequestKind::ConsumerGroupDescribe(request) => ResponseKind::ConsumerGroupDescribe(
            consumer_group_describe(bus, request, version, client).await?,
        ),
        RequestKind::OffsetFetch(request) if request.groups.len() > 1 => {
            ResponseKind::OffsetFetch(offset_fetch_groups(bus, request, version, client).await?)
        }
        request => match target(&request) {
            Target::Coordinator(key_type, id) => {
                coordinated_call(bus, key, &request, version, key_type, &id, client).await?
            }
            Target::Broker(broker) => {
                bus.upstream
                    .call_as(broker, key, &request, version, client)
                    .await?
            }
            Target::Any => any(bus, key, &request, version, client).await?,
        },
    })
}

/// Where a request of one destination goes.
enum Target {
    /// The coordinator of a group (key type 0) or transactional id (1).
    Coordinator(i8, String),
    Broker(BrokerId),
    Any,
}

/// The destination of a request that goes to one broker.
fn target(request: &RequestKind) -> Target {
    let group = |id: &str| Target::Coordinator(GROUP, id.to_owned());
    let transaction = |id: &str| Target::Coordinator(TRANSACTION, id.to_owned());
    match request {
        RequestKind::JoinGroup(r) => group(&r.group_id.0),
        RequestKind::SyncGroup(r) => group(&r.group_id.0),
        RequestKind::Heartbeat(r) => group(&r.group_id.0),
        RequestKind::LeaveGroup(r) => group(&r.group_id.0),
        RequestKind::OffsetCommit(r) => group(&r.group_id.0),
        RequestKind::OffsetDelete(r) => group(&r.group_id.0),
        RequestKind::TxnOffsetCommit(r) => group(&r.group_id.0),
        RequestKind::ConsumerGroupHeartbeat(r) => group(&r.group_id.0),
        RequestKind::OffsetFetch(r) => match r.groups.first() {
            Some(one) => group(&one.group_id.0),
            None => group(&r.group_id.0),
        },
        RequestKind::InitProducerId(r) => match &r.transactional_id {
            Some(id) => transaction(&id.0),
            None => Target::Any,
        },
        RequestKind::AddPartitionsToTxn(r) => transaction(&r.v3_and_below_transactional_id.0),
        RequestKind::AddOffsetsToTxn(r) => transaction(&r.transactional_id.0),
        RequestKind::EndTxn(r) => transaction(&r.transactional_id.0),
        RequestKind::DescribeConfigs(r) => broker_resource(
            r.resources
                .iter()
                .map(|r| (r.resource_type, r.resource_name.as_str())),
        ),
        RequestKind::AlterConfigs(r) => broker_resource(
            r.resources
                .iter()
                .map(|r| (r.resource_type, r.resource_name.as_str())),
        ),
        RequestKind::IncrementalAlterConfigs(r) => broker_resource(
            r.resources
                .iter()
                .map(|r| (r.resource_type, r.resource_name.as_str())),
        ),
        _ => Target::Any,
    }
}

/// A config request naming one broker by id goes to that broker (it describes its
/// own settings), any other to any broker.
fn broker_resource<'a>(mut resources: impl Iterator<Item = (i8, &'a str)>) -> Target {
    match resources.next() {
        Some((BROKER_RESOURCE, name)) => {
            name.parse::<BrokerId>().map_or(Target::Any, Target::Broker)
        }
        _ => Target::Any,
    }
}

/// To any broker.
async fn any(
    bus: &Arc<Bus>,
    key: ApiKey,
    request: &RequestKind,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<ResponseKind, UpstreamError> {
    let broker = bus
        .upstream
        .any_broker()
        .ok_or_else(|| UpstreamError::Unreachable("no upstream broker known".into()))?;
    bus.upstream
        .call_as(broker, key, request, version, client)
        .await
}

/// To the coordinator of `id`; an answer saying it moved makes the next request
/// ask again.
async fn coordinated_call(
    bus: &Arc<Bus>,
    key: ApiKey,
    request: &RequestKind,
    version: i16,
    key_type: i8,
    id: &str,
    client: Option<&StrBytes>,
) -> Result<ResponseKind, UpstreamError> {
    let coordinator = bus.upstream.coordinator(key_type, id).await?;
    let answer = bus
        .upstream
        .call_as(coordinator, key, request, version, client)
        .await;
    if answer.as_ref().map_or(true, coordinator_moved) {
        bus.upstream.forget_coordinator(key_type, id);
    }
    answer
}

/// Whether `answer` says its coordinator is elsewhere now.
fn coordinator_moved(answer: &ResponseKind) -> bool {
    let code = match answer {
        ResponseKind::JoinGroup(a) => a.error_code,
        ResponseKind::SyncGroup(a) => a.error_code,
        ResponseKind::Heartbeat(a) => a.error_code,
        ResponseKind::LeaveGroup(a) => a.error_code,
        ResponseKind::OffsetFetch(a) => a
            .groups
            .first()
            .map_or(a.error_code, |group| group.error_code),
        ResponseKind::ConsumerGroupHeartbeat(a) => a.error_code,
        ResponseKind::InitProducerId(a) => a.error_code,
        ResponseKind::AddOffsetsToTxn(a) => a.error_code,
        ResponseKind::EndTxn(a) => a.error_code,
        ResponseKind::OffsetCommit(a) => a
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| p.error_code)
            .find(|code| *code != 0)
            .unwrap_or(0),
        ResponseKind::TxnOffsetCommit(a) => a
            .topics
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| p.error_code)
            .find(|code| *code != 0)
            .unwrap_or(0),
        ResponseKind::AddPartitionsToTxn(a) => a
            .results_by_topic_v3_and_below
            .iter()
            .flat_map(|t| &t.results_by_partition)
            .map(|p| p.partition_error_code)
            .find(|code| *code != 0)
            .unwrap_or(0),
        _ => 0,
    };
    COORDINATOR_MOVED.contains(&code)
}

/// Requests naming one group each, each to its group's coordinator; the answers in
/// their order.
async fn one_group_each(
    bus: &Arc<Bus>,
    key: ApiKey,
    version: i16,
    client: Option<&StrBytes>,
    requests: Vec<(String, RequestKind)>,
) -> Result<Vec<ResponseKind>, UpstreamError> {
    let mut answers = Vec::with_capacity(requests.len());
    for (group, request) in requests {
        answers.push(coordinated_call(bus, key, &request, version, GROUP, &group, client).await?);
    }
    Ok(answers)
}

/// DescribeGroups, one group at a time to its coordinator.
async fn describe_groups(
    bus: &Arc<Bus>,
    request: DescribeGroupsRequest,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<DescribeGroupsResponse, UpstreamError> {
    let requests = (request.groups.iter())
        .map(|group| {
            let one = request.clone().with_groups(vec![group.clone()]);
            (group.0.to_string(), RequestKind::DescribeGroups(one))
        })
        .collect();
    let mut joined = DescribeGroupsResponse::default();
    for answer in one_group_each(bus, ApiKey::DescribeGroups, version, client, requests).await? {
        if let ResponseKind::DescribeGroups(answer) = answer {
            joined.groups.extend(answer.groups);
        }
    }
    Ok(joined)
}

/// DeleteGroups, one group at a time to its coordinator.
async fn delete_groups(
    bus: &Arc<Bus>,
    request: DeleteGroupsRequest,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<DeleteGroupsResponse, UpstreamError> {
    let requests = (request.groups_names.iter())
        .map(|group| {
            let one = request.clone().with_groups_names(vec![group.clone()]);
            (group.0.to_string(), RequestKind::DeleteGroups(one))
        })
        .collect();
    let mut joined = DeleteGroupsResponse::default();
    for answer in one_group_each(bus, ApiKey::DeleteGroups, version, client, requests).await? {
        if let ResponseKind::DeleteGroups(answer) = answer {
            joined.results.extend(answer.results);
        }
    }
    Ok(joined)
}

/// ConsumerGroupDescribe, one group at a time to its coordinator.
async fn consumer_group_describe(
    bus: &Arc<Bus>,
    request: ConsumerGroupDescribeRequest,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<ConsumerGroupDescribeResponse, UpstreamError> {
    let requests = (request.group_ids.iter())
        .map(|group| {
            let one = request.clone().with_group_ids(vec![group.clone()]);
            (group.0.to_string(), RequestKind::ConsumerGroupDescribe(one))
        })
        .collect();
    let key = ApiKey::ConsumerGroupDescribe;
    let mut joined = ConsumerGroupDescribeResponse::default();
    for answer in one_group_each(bus, key, version, client, requests).await? {
        if let ResponseKind::ConsumerGroupDescribe(answer) = answer {
            joined.groups.extend(answer.groups);
        }
    }
    Ok(joined)
}

/// OffsetFetch of several groups (v8+), one group at a time to its coordinator.
async fn offset_fetch_groups(
    bus: &Arc<Bus>,
    request: OffsetFetchRequest,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<OffsetFetchResponse, UpstreamError> {
    let requests = (request.groups.iter())
        .map(|group| {
            let one = request.clone().with_groups(vec![group.clone()]);
            (group.group_id.0.to_string(), RequestKind::OffsetFetch(one))
        })
        .collect();
    let mut joined = OffsetFetchResponse::default();
    for answer in one_group_each(bus, ApiKey::OffsetFetch, version, client, requests).await? {
        if let ResponseKind::OffsetFetch(answer) = answer {
            joined.groups.extend(answer.groups);
        }
    }
    Ok(joined)
}
