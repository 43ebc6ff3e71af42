//! The API versions Kafka 4.0 removed (KIP-896) and Kafka 3.9 still served, for the
//! clients of 2019–2022 that send them (sarama 1.2x, kafka-python with an old
//! `api_version`, …). `kafka-protocol` 0.18 decodes only what Kafka 4 serves; its
//! 0.15 release (`kafka-protocol-legacy` here) has Kafka 3.9's ranges. A request of a
//! removed version is decoded with 0.15, encoded again at the lowest version 0.18
//! decodes, and handled as that version; its response goes the other way. Only
//! what the older version lacks is converted by hand: message sets (Produce v0–v2
//! carry record formats v0/v1, Fetch v0–v3 clients read them: [`message_set`]),
//! ListOffsets v0's offset list, DescribeConfigs v0's `is_default`, and fields a
//! newer version added that the older encoder refuses to drop.
//!
//! [`message_set`]: crate::message_set

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::ApiKey;
use kafka_protocol_legacy::messages::{
    ApiKey as LegacyKey, FetchResponse, ListOffsetsResponse, ProduceRequest, ProduceResponse,
    RequestKind, ResponseKind,
};

use crate::message_set;

/// The APIs with versions Kafka 3.9 served below what the current crate decodes:
/// (API, Kafka 3.9's lowest version).
const BRIDGED: &[(ApiKey, i16)] = &[
    (ApiKey::Produce, 0),
    (ApiKey::Fetch, 0),
    (ApiKey::ListOffsets, 0),
    (ApiKey::OffsetCommit, 0),
    (ApiKey::OffsetFetch, 0),
    (ApiKey::OffsetForLeaderEpoch, 0),
    (ApiKey::CreateTopics, 0),
    (ApiKey::DeleteTopics, 0),
    (ApiKey::DescribeConfigs, 0),
    (ApiKey::CreateAcls, 0),
    (ApiKey::DescribeAcls, 0),
    (ApiKey::DeleteAcls, 0),
];

/// Why an old version's request or response could not be converted.
#[derive(Debug, thiserror::Error)]
#[error("{api:?} v{version}: {reason}")]
pub struct LegacyError {
    pub api: ApiKey,
    pub version: i16,
    pub reason: String,
}

/// Kafka 3.9's lowest version of `api` when the current crate does not decode it,
/// `None` for the APIs whose versions did not change.
#[must_use]
pub fn lowest_version(api: ApiKey) -> Option<i16> {
    BRIDGED
        .iter()
        .find(|(key, _)| *key == api)
        .map(|(_, lowest)| *lowest)
}

/// The version a request of `api` at `version` is handled as: `version` itself, or
/// for a version the current crate does not decode, its lowest.
#[must_use]
pub fn handled_as(api: ApiKey, version: i16) -> i16 {
    version.max(api.valid_versions().min)
}

/// Whether `version` of `api` goes through the older crate.
#[must_use]
pub fn is_bridged(api: ApiKey, version: i16) -> bool {
    lowest_version(api).is_some() && version < api.valid_versions().min
}

/// A request body of an old `version`, as the version it is handled as
/// ([`handled_as`]): a Produce's message sets become v2 batches (a set that does
/// not convert is passed on as it is, for the append to refuse as corrupt).
pub fn request_up(api: ApiKey, version: i16, body: &Bytes) -> Result<Bytes, LegacyError> {
    let failed = failure(api, version);
    let key = legacy_key(api, version)?;
    let mut buf = body.clone();
    let mut request =
        RequestKind::decode(key, &mut buf, version).map_err(|e| failed(e.to_string()))?;
    match &mut request {
        RequestKind::Produce(produce) => up_convert(produce),
        // What only the old version has: a commit's own time (v1; Kafka 2.1 took
        // retention from the broker), ListOffsets v0's count of offsets wanted (one
        // is answered, as Kafka 3.9 did for the latest and earliest).
        RequestKind::OffsetCommit(commit) => {
            for partition in commit.topics.iter_mut().flat_map(|t| &mut t.partitions) {
                partition.commit_timestamp = -1;
            }
        }
        RequestKind::ListOffsets(list) => {
            for partition in list.topics.iter_mut().flat_map(|t| &mut t.partitions) {
                partition.max_num_offsets = 1;
            }
        }
        _ => {}
    }
    let mut out = BytesMut::new();
    request
        .encode(&mut out, handled_as(api, version))
        .map_err(|e| failed(e.to_string()))?;
    Ok(out.freeze())
}

/// A response body encoded at the version the request was handled as, for the old
/// `version` the client sent.
pub fn response_down(api: ApiKey, version: i16, body: &Bytes) -> Result<Bytes, LegacyError> {
    let failed = failure(api, version);
    let key = legacy_key(api, version)?;
    let mut buf = body.clone();
    let mut response = ResponseKind::decode(key, &mut buf, handled_as(api, version))
        .map_err(|e| failed(e.to_string()))?;
    match &mut response {
        ResponseKind::Produce(produce) => clear_produce(produce),
        ResponseKind::Fetch(fetch) => down_convert(fetch, version).map_err(&failed)?,
        ResponseKind::ListOffsets(list) if version == 0 => old_style_offsets(list),
        ResponseKind::DescribeConfigs(describe) if version == 0 => {
            for result in &mut describe.results {
                for config in &mut result.configs {
                    // v0 says whether a value is the default; v1 where it comes from.
                    config.is_default = config.config_source == 5;
                    config.synonyms.clear();
                }
            }
        }
        _ => {}
    }
    let mut out = BytesMut::new();
    response
        .encode(&mut out, version)
        .map_err(|e| failed(e.to_string()))?;
    Ok(out.freeze())
}

fn failure(api: ApiKey, version: i16) -> impl Fn(String) -> LegacyError {
    move |reason| LegacyError {
        api,
        version,
        reason,
    }
}

/// `api` as the older crate names it.
fn legacy_key(api: ApiKey, version: i16) -> Result<LegacyKey, LegacyError> {
    LegacyKey::try_from(api as i16).map_err(|()| failure(api, version)("unknown API".into()))
}

fn up_convert(produce: &mut ProduceRequest) {
    for partition in produce
        .topic_data
        .iter_mut()
        .flat_map(|topic| &mut topic.partition_data)
    {
        if let Some(records) = &partition.records
            && let Ok(batch) = message_set::to_batch(records)
        {
            partition.records = Some(Bytes::from(batch));
        }
    }
}

/// What Produce v3+ answers that v0–v2 have no place for.
fn clear_produce(produce: &mut ProduceResponse) {
    produce.node_endpoints.clear();
    for partition in produce
        .responses
        .iter_mut()
        .flat_map(|topic| &mut topic.partition_responses)
    {
        partition.record_errors.clear();
        partition.error_message = None;
        partition.log_start_offset = -1;
        partition.current_leader = Default::default();
    }
}

/// Fetch v0–v3: records as message sets (format v0 for Fetch v0–v1, v1 for
/// v2–v3), and none of what v4+ added.
fn down_convert(fetch: &mut FetchResponse, version: i16) -> Result<(), String> {
    let magic = if version < 2 { 0 } else { 1 };
    fetch.session_id = 0;
    fetch.error_code = 0;
    fetch.node_endpoints.clear();
    for partition in fetch
        .responses
        .iter_mut()
        .flat_map(|topic| &mut topic.partitions)
    {
        if let Some(records) = &partition.records {
            let set = message_set::from_batches(records, magic).map_err(|e| e.to_string())?;
            partition.records = Some(Bytes::from(set));
        }
        partition.last_stable_offset = -1;
        partition.log_start_offset = -1;
        partition.aborted_transactions = None;
        partition.preferred_read_replica = (-1).into();
        partition.diverging_epoch = Default::default();
        partition.current_leader = Default::default();
        partition.snapshot_id = Default::default();
    }
    Ok(())
}

/// ListOffsets v0 answers a list of offsets (the one found) instead of an offset
/// and its timestamp.
fn old_style_offsets(list: &mut ListOffsetsResponse) {
    for partition in list
        .topics
        .iter_mut()
        .flat_map(|topic| &mut topic.partitions)
    {
        partition.old_style_offsets = if partition.offset >= 0 {
            vec![partition.offset]
        } else {
            Vec::new()
        };
        partition.offset = -1;
        partition.timestamp = -1;
        partition.leader_epoch = -1;
    }
}

#[cfg(test)]
mod tests;
