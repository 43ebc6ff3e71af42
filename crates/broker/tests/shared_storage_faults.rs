//! Shared-storage mode under faults, as a property test against a model: random
//! sequences of produces (idempotent with retries, or plain; one at a time or
//! pipelined), object-store faults (a PUT that fails, a PUT whose answer is lost, slow
//! PUTs), metadata-store faults (a commit that fails, a commit whose answer is lost, a
//! store that is down for a while) and restarts on an empty data directory. Then a
//! broker on an empty data directory reads everything back, and:
//!
//! - every acknowledged record is there, once, at the offset it was acknowledged at;
//! - no record is there twice (plain produces are not retried; idempotent retries are
//!   recognised);
//! - a record whose produce failed is there at most once;
//! - a failed produce is answered with a retriable error, and the broker recovers by
//!   itself: an idempotent retry succeeds within a few attempts.
//!
//! `PROPTEST_CASES` sets the number of runs (16 by default).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::Decodable;
use kafka_protocol::records::RecordBatchDecoder;
use object_store::memory::InMemory;
use proptest::prelude::*;
use spool_broker::{MetadataStore, MetadataUrl, ObjectStorage};
use spool_metadata::FaultyMetadata;
use spool_objects::FaultyObjectStore;
use spool_testkit::{BatchBuilder, FetchAt, RawClient, TestBroker, TestRecord, produce_request};

const PARTITIONS: i32 = 3;
const KAFKA_STORAGE_ERROR: i16 = 56;
const NOT_LEADER_OR_FOLLOWER: i16 = 6;
const REQUEST_TIMED_OUT: i16 = 7;
const PRODUCER: i64 = 77;

#[derive(Debug, Clone)]
enum Op {
    Produce {
        partition: i32,
        records: usize,
        idempotent: bool,
    },
    /// Plain produces to every partition, sent without waiting for answers.
    Pipelined {
        records: usize,
    },
    FailNextPut,
    LoseNextPutAnswer,
    SlowPuts(bool),
    FailNextCommit,
    LoseNextCommitAnswer,
    /// The metadata store is down for the next produce, then comes back.
    MetadataDown,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..PARTITIONS, 1..4usize, any::<bool>()).prop_map(|(partition, records, idempotent)| {
            Op::Produce { partition, records, idempotent }
        }),
        2 => (1..3usize).prop_map(|records| Op::Pipelined { records }),
        1 => Just(Op::FailNextPut),
        1 => Just(Op::LoseNextPutAnswer),
        1 => any::<bool>().prop_map(Op::SlowPuts),
        1 => Just(Op::FailNextCommit),
        1 => Just(Op::LoseNextCommitAnswer),
        1 => Just(Op::MetadataDown),
        1 => Just(Op::Restart),
    ]
}

/// What the clients were told, per partition.
#[derive(Debug, Default)]
struct Model {
    /// Acknowledged values at their acknowledged offsets.
    acked: HashMap<i32, Vec<(i64, String)>>,
    /// Values whose produce failed: in the log at most once.
    maybe: Vec<String>,
    next_sequence: HashMap<i32, i32>,
    next_value: usize,
    /// Produce attempts answered with an error (so the faults were met).
    refused: usize,
}

impl Model {
    fn values(&mut self, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| {
                self.next_value += 1;
                format!("v{}", self.next_value)
            })
            .collect()
    }

    fn ack(&mut self, partition: i32, base: i64, values: Vec<String>) {
        let acked = self.acked.entry(partition).or_default();
        for (i, value) in values.into_iter().enumerate() {
            acked.push((base + i64::try_from(i).unwrap(), value));
        }
    }
}

fn batch(values: &[String], producer: Option<i32>) -> Vec<u8> {
    let mut builder = BatchBuilder::new().timestamp(1_000);
    if let Some(sequence) = producer {
        builder = builder.producer(PRODUCER, 0, sequence);
    }
    for value in values {
        builder = builder.record(TestRecord::value(value.clone()));
    }
    builder.build()
}

struct World {
    objects: Arc<FaultyObjectStore>,
    metadata: Arc<FaultyMetadata>,
    _dir: tempfile::TempDir,
}

impl World {
    async fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let url = MetadataUrl::Sqlite(dir.path().join("catalogue.db"));
        let store: Arc<dyn MetadataStore> = spool_metadata::open(&url).await.unwrap();
        World {
            objects: Arc::new(FaultyObjectStore::new(Arc::new(InMemory::new()))),
            metadata: Arc::new(FaultyMetadata::new(store)),
            _dir: dir,
        }
    }

    async fn broker(&self) -> TestBroker {
        let objects = ObjectStorage::new(self.objects.clone(), "spool".into());
        TestBroker::start_shared_on(
            tempfile::tempdir().unwrap(),
            objects,
            self.metadata.clone(),
            &[
                ("storage.flush.ms", "2"),
                ("storage.uploads.in.flight", "3"),
            ],
        )
        .await
    }
}

/// Runs `ops` and checks the log against the model; returns the model.
async fn run(ops: Vec<Op>) -> Model {
    let world = World::new().await;
    let mut broker = world.broker().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("t", PARTITIONS).await, 0);
    let mut model = Model::default();
    for op in ops {
        match op {
            Op::Produce {
                partition,
                records,
                idempotent,
            } => {
                let values = model.values(records);
                if idempotent {
                    let sequence = *model.next_sequence.entry(partition).or_default();
                    let (base, refused) = produce_until_acked(
                        &mut client,
                        &world.metadata,
                        partition,
                        &values,
                        sequence,
                    )
                    .await;
                    model.refused += refused;
                    model.ack(partition, base, values);
                    *model.next_sequence.entry(partition).or_default() +=
                        i32::try_from(records).unwrap();
                } else {
                    match client.produce("t", partition, batch(&values, None)).await {
                        (0, base) => model.ack(partition, base, values),
                        (code, _) => {
                            assert_retriable(code);
                            model.refused += 1;
                            model.maybe.extend(values);
                        }
                    }
                }
                world.metadata.set_down(false);
            }
            Op::Pipelined { records } => {
                let mut sent = Vec::new();
                for partition in 0..PARTITIONS {
                    let values = model.values(records);
                    let request = produce_request("t", partition, batch(&values, None));
                    sent.push((client.send(&request, 9).await, partition, values));
                }
                for (correlation, partition, values) in sent {
                    let (code, base) = read_produce_answer(&mut client, correlation).await;
                    if code == 0 {
                        model.ack(partition, base, values);
                    } else {
                        assert_retriable(code);
                        model.refused += 1;
                        model.maybe.extend(values);
                    }
                }
                world.metadata.set_down(false);
            }
            Op::FailNextPut => world.objects.fail_next_puts(1),
            Op::LoseNextPutAnswer => world.objects.lose_next_put_answers(1),
            Op::SlowPuts(slow) => {
                world
                    .objects
                    .delay_puts(Duration::from_millis(if slow { 30 } else { 0 }))
            }
            Op::FailNextCommit => world.metadata.fail_next_commits(1),
            Op::LoseNextCommitAnswer => world.metadata.lose_next_commit_answers(1),
            Op::MetadataDown => world.metadata.set_down(true),
            Op::Restart => {
                world.metadata.set_down(false);
                drop(client);
                drop(broker.stop().await);
                broker = world.broker().await;
                client = broker.client().await;
            }
        }
    }
    world.objects.heal();
    world.metadata.set_down(false);
    drop(client);
    drop(broker.stop().await);
    let broker = world.broker().await;
    let mut client = broker.client().await;
    check(&mut client, &model).await;
    model
}

/// Produces an idempotent batch, retrying it (same sequence) on retriable errors as a
/// client does; returns its base offset and how many attempts were refused.
async fn produce_until_acked(
    client: &mut RawClient,
    metadata: &FaultyMetadata,
    partition: i32,
    values: &[String],
    sequence: i32,
) -> (i64, usize) {
    for attempt in 0..6 {
        match client
            .produce("t", partition, batch(values, Some(sequence)))
            .await
        {
            (0, base) => return (base, usize::try_from(attempt).unwrap()),
            (code, _) => {
                assert_retriable(code);
                // The store that was down comes back for the retry.
                metadata.set_down(false);
                tokio::time::sleep(Duration::from_millis(5 * attempt)).await;
            }
        }
    }
    panic!("an idempotent produce kept failing: the broker did not recover");
}

fn assert_retriable(code: i16) {
    assert!(
        matches!(
            code,
            KAFKA_STORAGE_ERROR | NOT_LEADER_OR_FOLLOWER | REQUEST_TIMED_OUT
        ),
        "a failed produce must be retriable, got {code}"
    );
}

async fn read_produce_answer(client: &mut RawClient, correlation: i32) -> (i16, i64) {
    let mut frame = client.read_frame().await.expect("an answer");
    let header = ResponseHeader::decode(&mut frame, 1).unwrap();
    assert_eq!(header.correlation_id, correlation);
    let response = kafka_protocol::messages::ProduceResponse::decode(&mut frame, 9).unwrap();
    let answer = &response.responses[0].partition_responses[0];
    (answer.error_code, answer.base_offset)
}

/// Reads every partition from offset 0 and checks the log against the model.
async fn check(client: &mut RawClient, model: &Model) {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for partition in 0..PARTITIONS {
        let log = read_partition(client, partition).await;
        for (_, value) in &log {
            *seen.entry(value.clone()).or_default() += 1;
        }
        let at: HashMap<i64, &String> = log.iter().map(|(o, v)| (*o, v)).collect();
        for (offset, value) in model.acked.get(&partition).into_iter().flatten() {
            assert_eq!(
                at.get(offset).copied(),
                Some(value),
                "partition {partition}: acknowledged {value} at {offset} is not there"
            );
        }
    }
    for (value, count) in &seen {
        assert_eq!(*count, 1, "{value} is in the log {count} times");
    }
    let acked = model.acked.values().flatten().count();
    let maybe_present = model.maybe.iter().filter(|v| seen.contains_key(*v)).count();
    assert_eq!(seen.len(), acked + maybe_present, "values nobody sent");
}

async fn read_partition(client: &mut RawClient, partition: i32) -> Vec<(i64, String)> {
    let mut offset = 0;
    let mut log = Vec::new();
    loop {
        let at = FetchAt {
            partition,
            offset,
            max_bytes: 1 << 20,
        };
        let answer = client.fetch(12, "t", &[at], 0, 0, 1 << 20).await;
        assert_eq!(answer[0].error_code, 0);
        let high_watermark = answer[0].high_watermark;
        let mut records: Bytes = answer[0].records.clone().unwrap_or_default();
        if records.is_empty() {
            assert_eq!(
                offset, high_watermark,
                "partition {partition}: a gap at {offset}"
            );
            return log;
        }
        for batch in RecordBatchDecoder::decode_all(&mut records).unwrap() {
            for record in batch.records {
                if record.offset >= offset {
                    let value = record.value.unwrap_or_default();
                    log.push((record.offset, String::from_utf8(value.to_vec()).unwrap()));
                    offset = record.offset + 1;
                }
            }
        }
        if offset >= high_watermark {
            return log;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(16),
        ..ProptestConfig::default()
    })]

    #[test]
    fn nothing_acknowledged_is_lost_and_nothing_is_written_twice(
        ops in proptest::collection::vec(op(), 1..30)
    ) {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(run(ops));
    }
}

fn run_now(ops: Vec<Op>) -> Model {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(ops))
}

fn produce(partition: i32, idempotent: bool) -> Op {
    Op::Produce {
        partition,
        records: 2,
        idempotent,
    }
}

/// Each fault is met: the produce after it is refused, its retry is written once.
#[test]
fn each_fault_refuses_one_attempt_and_the_retry_is_written_once() {
    for fault in [
        Op::FailNextPut,
        Op::LoseNextPutAnswer,
        Op::FailNextCommit,
        Op::LoseNextCommitAnswer,
        Op::MetadataDown,
    ] {
        let model = run_now(vec![
            produce(0, true),
            fault.clone(),
            produce(0, true),
            produce(0, true),
        ]);
        assert_eq!(model.refused, 1, "{fault:?}");
        assert_eq!(model.acked[&0].len(), 6, "{fault:?}");
    }
}

/// A plain produce whose commit answer was lost is refused, yet it is in the log
/// (once): the check accepts it as a value that may be there.
#[test]
fn a_plain_produce_with_a_lost_commit_answer_is_refused_but_may_be_there() {
    let model = run_now(vec![
        Op::LoseNextCommitAnswer,
        produce(1, false),
        produce(1, false),
    ]);
    assert_eq!(model.refused, 1);
    assert_eq!(model.maybe.len(), 2);
    assert_eq!(
        model.acked[&1][0].0, 2,
        "the refused batch took offsets 0 and 1"
    );
}

#[test]
fn the_model_sees_a_lost_acknowledged_write() {
    // The checker itself can fail: a model with a write the log does not hold.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let failed = runtime.block_on(async {
        let world = World::new().await;
        let broker = world.broker().await;
        let mut client = broker.client().await;
        assert_eq!(client.create_topic("t", PARTITIONS).await, 0);
        let mut model = Model::default();
        model.ack(0, 0, vec!["never-written".to_owned()]);
        tokio::spawn(async move { check(&mut client, &model).await })
            .await
            .is_err()
    });
    assert!(failed, "the check must fail for a write that is not there");
}
