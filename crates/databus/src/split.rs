//! Requests whose partitions go to their leaders (Fetch, ListOffsets,
//! OffsetForLeaderEpoch, DeleteRecords, and Produce from idempotent and
//! transactional producers): split by leader, sent side by side, the answers joined
//! into one. A partition whose leader is not known (after one refresh) goes to any
//! broker, which answers it with the upstream's own error; an answer saying a leader
//! moved refreshes the metadata for the client's retry. Leaders the answers name
//! (KIP-951) are left out: the client's one broker is Databus.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use kafka_protocol::messages::{
    ApiKey, DeleteRecordsRequest, DeleteRecordsResponse, FetchRequest, FetchResponse,
    ListOffsetsRequest, ListOffsetsResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse, ProduceRequest, ProduceResponse, RequestKind, ResponseKind,
};
use kafka_protocol::protocol::StrBytes;
use tokio::task::JoinSet;

use crate::Bus;
use crate::upstream::{BrokerId, UpstreamError};

/// Error codes that say a partition's leader is elsewhere now.
const LEADER_MOVED: [i16; 4] = [
    6,  // NOT_LEADER_OR_FOLLOWER
    5,  // LEADER_NOT_AVAILABLE
    74, // FENCED_LEADER_EPOCH
    3,  // UNKNOWN_TOPIC_OR_PARTITION
];

/// A topic as a request names it: by name, or (Fetch v13+) by id.
type TopicKey = String;

/// What one split request type needs: its partitions, a copy with some of them, the
/// answers joined, and whether an answer says a leader moved.
pub(crate) trait ByLeader: Sized + Send + 'static {
    type Answer: Send + 'static;
    const KEY: ApiKey;
    fn partitions(&self) -> Vec<(TopicKey, i32)>;
    fn subset(&self, keep: &HashSet<(TopicKey, i32)>) -> Self;
    fn into_kind(self) -> RequestKind;
    fn answer_of(kind: ResponseKind) -> Option<Self::Answer>;
    fn join(answers: Vec<Self::Answer>) -> Self::Answer;
    fn leader_moved(answer: &Self::Answer) -> bool;
}

/// Sends `request`'s partitions to their leaders and joins the answers.
async fn split<R: ByLeader + Clone>(
    bus: &Arc<Bus>,
    request: R,
    version: i16,
    names: &BTreeMap<TopicKey, String>,
    client: Option<&StrBytes>,
) -> Result<R::Answer, UpstreamError> {
    let mut by_leader: BTreeMap<BrokerId, HashSet<(TopicKey, i32)>> = BTreeMap::new();
    for (topic, partition) in request.partitions() {
        let name = names.get(&topic).unwrap_or(&topic);
        let leader = match bus.upstream.leader(name, partition).await {
            Some(leader) => leader,
            None => bus
                .upstream
                .any_broker()
                .ok_or_else(|| UpstreamError::Unreachable("no upstream broker known".into()))?,
        };
        by_leader
            .entry(leader)
            .or_default()
            .insert((topic, partition));
    }
    if by_leader.is_empty()
        && let Some(any) = bus.upstream.any_broker()
    {
        by_leader.insert(any, HashSet::new());
    }
    let mut calls = JoinSet::new();
    for (leader, keep) in by_leader {
        let part = request.subset(&keep).into_kind();
        let (bus, client) = (bus.clone(), client.cloned());
        calls.spawn(async move {
            (bus.upstream)
                .call_as(leader, R::KEY, &part, version, client.as_ref())
                .await
        });
    }
    let mut answers = Vec::new();
    while let Some(done) = calls.join_next().await {
        let answer = done.map_err(|e| UpstreamError::Failed(e.to_string()))??;
        answers
            .push(R::answer_of(answer).ok_or_else(|| {
                UpstreamError::Failed(format!("{:?} answered otherwise", R::KEY))
            })?);
    }
    let joined = R::join(answers);
    if R::leader_moved(&joined) {
        bus.upstream.refresh().await;
    }
    Ok(joined)
}

/// Implements [`ByLeader`] for a request of topics with partitions, and its answer
/// of topics with partitions.
macro_rules! by_leader {
    (
        $request:ty, $key:ident, topics: $topics:ident, name: |$t:ident| $name:expr,
        partitions: $parts:ident . $pid:ident,
        $answer:ty, answers: $atopics:ident, answer_name: |$at:ident| $aname:expr,
        answer_partitions: $aparts:ident . $aerror:ident
    ) => {
        impl ByLeader for $request {
            type Answer = $answer;
            const KEY: ApiKey = ApiKey::$key;

            fn partitions(&self) -> Vec<(TopicKey, i32)> {
                self.$topics
                    .iter()
                    .flat_map(|$t| {
                        let name: TopicKey = $name;
                        $t.$parts.iter().map(move |p| (name.clone(), p.$pid))
                    })
                    .collect()
            }

            fn subset(&self, keep: &HashSet<(TopicKey, i32)>) -> Self {
                let mut part = self.clone();
                part.$topics = self
                    .$topics
                    .iter()
                    .filter_map(|$t| {
                        let name: TopicKey = $name;
                        let mut topic = $t.clone();
                        topic
                            .$parts
                            .retain(|p| keep.contains(&(name.clone(), p.$pid)));
                        (!topic.$parts.is_empty()).then_some(topic)
                    })
                    .collect();
                part
            }

            fn into_kind(self) -> RequestKind {
                RequestKind::$key(self)
            }

            fn answer_of(kind: ResponseKind) -> Option<$answer> {
                match kind {
                    ResponseKind::$key(answer) => Some(answer),
                    _ => None,
                }
            }

            fn join(answers: Vec<$answer>) -> $answer {
                let mut answers = answers.into_iter();
                let mut joined = answers.next().unwrap_or_default();
                for answer in answers {
                    for topic in answer.$atopics {
                        let same = {
                            let $at = &topic;
                            let name: TopicKey = $aname;
                            joined.$atopics.iter().position(|$at| {
                                let other: TopicKey = $aname;
                                other == name
                            })
                        };
                        match same {
                            Some(index) => {
                                if let Some(into) = joined.$atopics.get_mut(index) {
                                    into.$aparts.extend(topic.$aparts);
                                }
                            }
                            None => joined.$atopics.push(topic),
                        }
                    }
                }
                joined
            }

            fn leader_moved(answer: &$answer) -> bool {
                answer
                    .$atopics
                    .iter()
                    .flat_map(|t| &t.$aparts)
                    .any(|p| LEADER_MOVED.contains(&p.$aerror))
            }
        }
    };
}

by_leader!(
    FetchRequest, Fetch, topics: topics, name: |t| fetch_key(&t.topic.0, t.topic_id),
    partitions: partitions.partition,
    FetchResponse, answers: responses, answer_name: |t| fetch_key(&t.topic.0, t.topic_id),
    answer_partitions: partitions.error_code
);
by_leader!(
    ListOffsetsRequest, ListOffsets, topics: topics, name: |t| t.name.0.to_string(),
    partitions: partitions.partition_index,
    ListOffsetsResponse, answers: topics, answer_name: |t| t.name.0.to_string(),
    answer_partitions: partitions.error_code
);
by_leader!(
    OffsetForLeaderEpochRequest, OffsetForLeaderEpoch, topics: topics,
    name: |t| t.topic.0.to_string(), partitions: partitions.partition,
    OffsetForLeaderEpochResponse, answers: topics, answer_name: |t| t.topic.0.to_string(),
    answer_partitions: partitions.error_code
);
by_leader!(
    DeleteRecordsRequest, DeleteRecords, topics: topics, name: |t| t.name.0.to_string(),
    partitions: partitions.partition_index,
    DeleteRecordsResponse, answers: topics, answer_name: |t| t.name.0.to_string(),
    answer_partitions: partitions.error_code
);
by_leader!(
    ProduceRequest, Produce, topics: topic_data, name: |t| t.name.0.to_string(),
    partitions: partition_data.index,
    ProduceResponse, answers: responses, answer_name: |t| t.name.0.to_string(),
    answer_partitions: partition_responses.error_code
);

/// A Fetch topic's key: its id from v13 (a nil id before), else its name.
fn fetch_key(name: &str, id: uuid::Uuid) -> TopicKey {
    if id.is_nil() {
        name.to_owned()
    } else {
        id.to_string()
    }
}

/// A Fetch: sessionless (Databus keeps no fetch sessions: KIP-227 lets a broker
/// answer session 0), split by leader.
pub(crate) async fn fetch(
    bus: &Arc<Bus>,
    mut request: FetchRequest,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<FetchResponse, UpstreamError> {
    request.session_id = 0;
    request.session_epoch = -1;
    request.forgotten_topics_data = Vec::new();
    let mut names = BTreeMap::new();
    for topic in &request.topics {
        if !topic.topic_id.is_nil()
            && let Some(name) = bus.upstream.topic_name(topic.topic_id).await
        {
            names.insert(topic.topic_id.to_string(), name);
        }
    }
    let mut answer = split(bus, request, version, &names, client).await?;
    answer.session_id = 0;
    answer.node_endpoints = Vec::new();
    for partition in answer.responses.iter_mut().flat_map(|t| &mut t.partitions) {
        partition.current_leader = Default::default();
        partition.preferred_read_replica = kafka_protocol::messages::BrokerId(-1);
    }
    Ok(answer)
}

/// A request of topics by name (ListOffsets, OffsetForLeaderEpoch, DeleteRecords),
/// its partitions to their leaders.
pub(crate) async fn to_leaders<R: ByLeader + Clone>(
    bus: &Arc<Bus>,
    request: R,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<R::Answer, UpstreamError> {
    split(bus, request, version, &BTreeMap::new(), client).await
}

/// A produce request sent as it came (idempotent or transactional batches, whose
/// sequences must reach the leader as the producer numbered them), split by leader.
pub(crate) async fn produce(
    bus: &Arc<Bus>,
    request: ProduceRequest,
    version: i16,
    client: Option<&StrBytes>,
) -> Result<ProduceResponse, UpstreamError> {
    let mut answer = split(bus, request, version, &BTreeMap::new(), client).await?;
    answer.node_endpoints = Vec::new();
    for partition in answer
        .responses
        .iter_mut()
        .flat_map(|t| &mut t.partition_responses)
    {
        partition.current_leader = Default::default();
    }
    Ok(answer)
}
