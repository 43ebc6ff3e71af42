//! Produce (key 0): authorize, hand each partition's batches to the partitions' write
//! side (`partitions::write`: validated once per batch, appended with one write), and
//! answer per `acks`: 0 not at all, 1 once written, -1 (all) once durable.
//!
//! Two phases: [`append`] runs in request order on the connection's worker, so that
//! two requests' batches for one partition land in the order they were sent;
//! [`Appended::answer`] waits for durability, and the connection runs it while it
//! goes on with the next requests (answers still leave in request order). A client
//! with several produce requests in flight thus shares one fsync, or one object
//! upload in shared-storage mode, instead of waiting for each in turn.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::{
    ApiKey, BrokerId, ProduceRequest, ProduceResponse, ResponseKind, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use spool_log::AppendInfo;
use spool_metadata::BrokerRecord;
use spool_protocol::batch::BatchFrames;

use super::api::ApiDecl;
use super::per_partition::per_partition;
use crate::errors::{self, code};
use crate::lanes;
use crate::leader_hint::LeaderHint;
use crate::mirror::awaits_settling;
use crate::partitions::PartitionHandle;
use crate::partitions::write::Refusal;
use crate::shared::Shared;
use crate::topics::{self, Topic};
use spool_security::acl::Operation;
use spool_security::authorizer::Access;
use spool_shared_storage::SharedStorage;

pub(crate) const API: ApiDecl = ApiDecl {
    key: ApiKey::Produce,
    // Below v3: Kafka 3.9's versions, converted (spool_protocol::legacy).
    min: 0,
    // v10 (KIP-951): a refusal names the partition's leader. v11 is KIP-890's
    // transactions, not built yet.
    max: 10,
};

/// One partition's part of the request, validated and appended or refused.
struct PartitionOutcome {
    index: i32,
    result: Result<(PartitionHandle, AppendInfo), Refused>,
}

/// Why a partition's batches were refused, and with `NOT_LEADER_OR_FOLLOWER` the
/// broker that leads the partition (KIP-951).
#[derive(Debug)]
struct Refused {
    refusal: Refusal,
    leader: Option<LeaderHint>,
}

impl From<Refusal> for Refused {
    fn from(refusal: Refusal) -> Refused {
        Refused {
            refusal,
            leader: None,
        }
    }
}

impl From<i16> for Refused {
    fn from(code: i16) -> Refused {
        Refusal::from(code).into()
    }
}

/// A partition's batches to append: everything the blocking append needs.
struct Appending {
    index: i32,
    records: bytes::Bytes,
    topic: Arc<Topic>,
}

/// Per topic, each partition's index and its append or the error found up front.
type Plan = Vec<(TopicName, Vec<(i32, Result<Appending, i16>)>)>;

/// Why a partition of no known topic is refused: the name is not one Kafka allows or
/// is `__consumer_offsets` (read-only, as Kafka refuses clients' appends to internal
/// topics), or no such topic exists (yet).
fn unknown_topic_code(name: &str) -> i16 {
    if topics::is_illegal_name(name) || name == crate::consumer_offsets::NAME {
        code::INVALID_TOPIC_EXCEPTION
    } else {
        code::UNKNOWN_TOPIC_OR_PARTITION
    }
}

/// `None` for `acks=0`: no response at all.
/// Appended batches, waiting to be answered.
pub(crate) struct Appended {
    acks: i16,
    timeout: Duration,
    topics: Vec<(TopicName, Vec<PartitionOutcome>)>,
    /// The brokers named as leaders of refused partitions, with their addresses.
    leaders: Vec<BrokerRecord>,
    /// Shared-storage mode: where to ask why a write did not become durable.
    storage: Option<Arc<SharedStorage>>,
}

/// The first phase: appends every partition's batches.
/// `lane`: the producer's lane (its `client.id` names one), whose header its records
/// get where they lack it.
pub(crate) async fn append(
    request: ProduceRequest,
    access: &Access,
    listener: &str,
    lane: Option<Arc<str>>,
    shared: Arc<Shared>,
) -> Appended {
    let acks = request.acks;
    // CVE-2018-17196: what the batches are decides, not what the request claims.
    let transactional_refused = access.enforced()
        && carries_transactional_batches(&request)
        && !request
            .transactional_id
            .as_ref()
            .is_some_and(|id| access.transactional_id(Operation::Write, id));
    // What each partition gets: an error found up front, or an append.
    let mut planned: Plan = Vec::with_capacity(request.topic_data.len());
    for topic_data in request.topic_data {
        let topic = shared.topics().get(topic_data.name.0.as_str());
        let denied = if transactional_refused {
            Some(code::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        } else {
            (!access.topic(Operation::Write, topic_data.name.0.as_str()))
                .then_some(code::TOPIC_AUTHORIZATION_FAILED)
        };
        let partitions = topic_data
            .partition_data
            .into_iter()
            .map(|partition| {
                let index = partition.index;
                let plan = if let Some(denied) = denied {
                    Err(denied)
                } else if !matches!(acks, -1..=1) {
                    Err(code::INVALID_REQUIRED_ACKS)
                } else {
                    match topic.as_ref().filter(|t| t.has_partition(index)) {
                        None => Err(unknown_topic_code(topic_data.name.0.as_str())),
                        // A failed-over mirror partition not yet settled here:
                        // retriable, the producer sends again (within a second, as a
                        // rule).
                        Some(topic) if awaits_settling(&shared, topic, index) => {
                            Err(code::NOT_ENOUGH_REPLICAS)
                        }
                        Some(topic) => Ok(Appending {
                            index,
                            records: partition.records.unwrap_or_default(),
                            topic: topic.clone(),
                        }),
                    }
                };
                (index, plan)
            })
            .collect();
        planned.push((topic_data.name, partitions));
    }
    // Every partition of the request is validated and appended in one blocking task.
    let appends = |_: &TopicName, plan: &Result<Appending, i16>| {
        plan.as_ref().ok().map(|appending| appending.topic.clone())
    };
    let topics = per_partition(
        &shared,
        planned,
        appends,
        move |shared, name: &TopicName, index, plan| {
            Ok(plan
                .map_err(Refused::from)
                .and_then(|work| {
                    let metrics = shared.metrics().map(Arc::as_ref);
                    let now = shared.clock().timestamp();
                    let Appending {
                        index,
                        mut records,
                        topic,
                    } = work;
                    if let Some(lane) = &lane {
                        let (stamped, changed) = lanes::stamp::stamped(records, lane);
                        records = stamped;
                        if changed > 0 {
                            shared
                                .lanes()
                                .note_stamped(topic.record.name.as_str(), lane);
                        }
                    }
                    (shared.partitions())
                        .append_produced(
                            topic,
                            index,
                            &records,
                            now,
                            metrics,
                            Some(shared.schema_ids()),
                        )
                        .map_err(Refused::from)
                })
                .map_err(|mut refused| {
                    if refused.refusal.code == code::NOT_LEADER_OR_FOLLOWER {
                        refused.leader = shared
                            .topics()
                            .get(name.0.as_str())
                            .and_then(|topic| shared.leader_hint(&topic, index));
                    }
                    refused
                }))
        },
    )
    .await
    .into_iter()
    .map(|(name, answers)| {
        let outcomes = answers
            .into_iter()
            .map(|(index, answer)| PartitionOutcome {
                index,
                // An interrupted task may or may not have written the batches: its
                // code is retriable, so an idempotent producer sends them again.
                result: answer.unwrap_or_else(|code| Err(Refused::from(code))),
            })
            .collect::<Vec<_>>();
        (name, outcomes)
    })
    .collect::<Vec<_>>();
    let hinted = topics
        .iter()
        .flat_map(|(_, outcomes)| outcomes)
        .filter_map(|outcome| {
            outcome
                .result
                .as_ref()
                .err()
                .and_then(|refused| refused.leader)
                .map(|hint| hint.leader)
        });
    let leaders = shared.hinted_brokers(hinted, listener);
    Appended {
        acks,
        timeout: Duration::from_millis(u64::try_from(request.timeout_ms.max(0)).unwrap_or(0)),
        topics,
        leaders,
        storage: shared.storage().cloned(),
    }
}

/// Whether any batch of the request is transactional (a header read per batch).
fn carries_transactional_batches(request: &ProduceRequest) -> bool {
    request
        .topic_data
        .iter()
        .flat_map(|topic| &topic.partition_data)
        .filter_map(|partition| partition.records.as_ref())
        .any(|records| {
            BatchFrames::new(records)
                .map_while(Result::ok)
                .any(|(header, _)| header.is_transactional())
        })
}

impl Appended {
    /// The second phase: waits (with acks=all) until the batches are durable; `None`
    /// for acks=0, which is not answered.
    pub(crate) async fn answer(self) -> Option<ResponseKind> {
        if self.acks == 0 {
            return None;
        }
        answer(self).await
    }
}

async fn answer(appended: Appended) -> Option<ResponseKind> {
    let Appended {
        acks,
        timeout,
        topics,
        leaders,
        storage,
    } = appended;
    // Why a write did not become durable, when the object store said why.
    let not_durable = |code: i16| {
        let failure = storage.as_ref().and_then(|storage| storage.write_failure());
        let message =
            failure.map(|why| format!("not durable: writing to object storage failed: {why}"));
        (code, message)
    };
    let mut responses = Vec::with_capacity(topics.len());
    for (name, outcomes) in topics {
        let mut partitions = Vec::with_capacity(outcomes.len());
        for outcome in outcomes {
            let response = PartitionProduceResponse::default().with_index(outcome.index);
            let response = match outcome.result {
                Err(Refused { refusal, leader }) => response
                    .with_current_leader(leader.map_or_else(Default::default, |hint| {
                        LeaderIdAndEpoch::default()
                            .with_leader_id(BrokerId(hint.leader))
                            .with_leader_epoch(hint.epoch)
                    }))
                    .with_error_code(refusal.code)
                    .with_base_offset(-1)
                    .with_error_message(refusal.message.map(StrBytes::from_string))
                    .with_record_errors(
                        refusal
                            .record_errors
                            .into_iter()
                            .map(|(index, message)| {
                                BatchIndexAndErrorMessage::default()
                                    .with_batch_index(index)
                                    .with_batch_index_error_message(Some(StrBytes::from_string(
                                        message,
                                    )))
                            })
                            .collect(),
                    ),
                Ok((partition, info)) => {
                    let (durable, message) = if acks == -1 {
                        let written = partition.log.wait_durable(info.next_offset());
                        match tokio::time::timeout(timeout, written).await {
                            Ok(Ok(())) => (code::NONE, None),
                            Ok(Err(error)) => not_durable(errors::log_error_code(&error)),
                            Err(_) => not_durable(code::REQUEST_TIMED_OUT),
                        }
                    } else {
                        (code::NONE, None)
                    };
                    response
                        .with_error_code(durable)
                        .with_error_message(message.map(StrBytes::from_string))
                        .with_base_offset(info.base_offset.0)
                        .with_log_append_time_ms(info.log_append_time.map_or(-1, |t| t.0))
                        .with_log_start_offset(partition.log_start().0)
                }
            };
            partitions.push(response);
        }
        responses.push(
            TopicProduceResponse::default()
                .with_name(name)
                .with_partition_responses(partitions),
        );
    }
    // Encoded from v10 on (KIP-951); earlier versions leave them out.
    let endpoints = leaders
        .into_iter()
        .map(|broker| {
            NodeEndpoint::default()
                .with_node_id(BrokerId(broker.node_id))
                .with_host(StrBytes::from_string(broker.host))
                .with_port(broker.port)
                .with_rack(broker.rack.map(StrBytes::from_string))
        })
        .collect();
    Some(ResponseKind::Produce(
        ProduceResponse::default()
            .with_responses(responses)
            .with_node_endpoints(endpoints),
    ))
}
