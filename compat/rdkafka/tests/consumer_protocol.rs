//! librdkafka 2.12 (through the `rdkafka` crate) with `group.protocol=consumer`
//! (KIP-848): the broker assigns partitions through ConsumerGroupHeartbeat.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use spool_testkit::TestBroker;

const TIMEOUT: Duration = Duration::from_secs(10);

fn config(broker: &TestBroker) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", broker.addr().to_string());
    config
}

async fn create_topic(broker: &TestBroker, name: &str, partitions: i32) {
    let admin: AdminClient<DefaultClientContext> = config(broker).create().unwrap();
    let topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    let results = admin
        .create_topics([&topic], &AdminOptions::new())
        .await
        .unwrap();
    assert!(results[0].is_ok(), "{results:?}");
}

async fn produce(broker: &TestBroker, topic: &str, partitions: i32, count: usize, from: usize) {
    let producer: FutureProducer = config(broker).create().unwrap();
    for n in from..from + count {
        let value = format!("record-{n}");
        let partition = i32::try_from(n).unwrap() % partitions;
        producer
            .send(
                FutureRecord::<(), _>::to(topic)
                    .payload(&value)
                    .partition(partition),
                TIMEOUT,
            )
            .await
            .unwrap();
    }
}

fn member(broker: &TestBroker, group: &str) -> BaseConsumer {
    config(broker)
        .set("group.id", group)
        .set("group.protocol", "consumer")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap()
}

/// Polls every consumer until `done` says so (or the deadline passes), committing
/// each record read; the values each read.
fn poll_until(
    consumers: &[&BaseConsumer],
    seconds: u64,
    done: impl Fn(&[Vec<String>]) -> bool,
) -> Vec<Vec<String>> {
    let mut read = vec![Vec::new(); consumers.len()];
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done(&read) {
        assert!(Instant::now() < deadline, "gave up: read {read:?}");
        for (consumer, out) in consumers.iter().zip(read.iter_mut()) {
            if let Some(message) = consumer.poll(Duration::from_millis(100)) {
                let message = message.unwrap();
                let value = String::from_utf8(message.payload().unwrap().to_vec()).unwrap();
                // Committed by the member that read it, whichever member owns its
                // partition later.
                commit(consumer, &message);
                out.push(value);
            }
        }
    }
    read
}

/// Commits past `message`, again while the member's epoch is moving
/// (`STALE_MEMBER_EPOCH`: librdkafka does not retry a manual commit itself).
fn commit(consumer: &BaseConsumer, message: &rdkafka::message::BorrowedMessage<'_>) {
    let mut attempts = 0;
    while let Err(error) = consumer.commit_message(message, CommitMode::Sync) {
        attempts += 1;
        assert!(attempts < 50, "commit failed: {error}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn assigned(consumer: &BaseConsumer) -> BTreeSet<i32> {
    consumer
        .assignment()
        .unwrap()
        .elements()
        .iter()
        .map(|tp| tp.partition())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_members_share_the_partitions_and_a_new_one_resumes_from_their_commits() {
    let broker = TestBroker::start().await;
    create_topic(&broker, "kip848", 4).await;
    produce(&broker, "kip848", 4, 40, 0).await;

    let first = member(&broker, "kip848-group");
    first.subscribe(&["kip848"]).unwrap();
    let second = member(&broker, "kip848-group");
    second.subscribe(&["kip848"]).unwrap();
    let read = poll_until(&[&first, &second], 60, |read| {
        read.iter().map(Vec::len).sum::<usize>() >= 40
    });
    let all: BTreeSet<&String> = read.iter().flatten().collect();
    assert_eq!(all.len(), 40, "every record once: {read:?}");

    // Both end up with two partitions each, none shared.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let _ = first.poll(Duration::from_millis(100));
        let _ = second.poll(Duration::from_millis(100));
        let (a, b) = (assigned(&first), assigned(&second));
        if a.len() == 2 && b.len() == 2 && a.is_disjoint(&b) {
            break;
        }
        assert!(Instant::now() < deadline, "assignments {a:?} and {b:?}");
    }
    first.unsubscribe();
    second.unsubscribe();
    drop(first);
    drop(second);

    produce(&broker, "kip848", 4, 8, 40).await;
    let third = member(&broker, "kip848-group");
    third.subscribe(&["kip848"]).unwrap();
    let read = poll_until(&[&third], 60, |read| read[0].len() >= 8);
    let expected: BTreeSet<String> = (40..48).map(|n| format!("record-{n}")).collect();
    let got: BTreeSet<String> = read[0].iter().cloned().collect();
    assert_eq!(got, expected, "resumed at the committed offsets");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_regex_subscription_picks_up_a_topic_created_later() {
    let broker = TestBroker::start().await;
    create_topic(&broker, "orders-eu", 1).await;
    produce(&broker, "orders-eu", 1, 3, 0).await;

    let consumer = member(&broker, "regex-group");
    consumer.subscribe(&["^orders-.*"]).unwrap();
    poll_until(&[&consumer], 60, |read| read[0].len() >= 3);

    create_topic(&broker, "orders-us", 2).await;
    produce(&broker, "orders-us", 2, 4, 100).await;
    let read = poll_until(&[&consumer], 60, |read| read[0].len() >= 4);
    let got: BTreeSet<String> = read[0].iter().cloned().collect();
    let expected: BTreeSet<String> = (100..104).map(|n| format!("record-{n}")).collect();
    assert_eq!(got, expected);
}

fn classic_member(broker: &TestBroker, group: &str) -> BaseConsumer {
    config(broker)
        .set("group.id", group)
        .set("partition.assignment.strategy", "cooperative-sticky")
        .set("session.timeout.ms", "6000")
        .set("heartbeat.interval.ms", "500")
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap()
}

/// Polls `consumers` until their assignments are disjoint, cover `partitions` and
/// `ready` holds of them.
fn settle(
    consumers: &[&BaseConsumer],
    partitions: usize,
    ready: impl Fn(&[BTreeSet<i32>]) -> bool,
) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for consumer in consumers {
            let _ = consumer.poll(Duration::from_millis(50));
        }
        let held: Vec<BTreeSet<i32>> = consumers.iter().map(|c| assigned(c)).collect();
        let union: BTreeSet<i32> = held.iter().flatten().copied().collect();
        let total: usize = held.iter().map(BTreeSet::len).sum();
        if union.len() == partitions && total == partitions && ready(&held) {
            return;
        }
        assert!(Instant::now() < deadline, "assignments {held:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_classic_group_is_migrated_to_the_consumer_protocol_and_back() {
    let broker = TestBroker::start_with(&[("group.initial.rebalance.delay.ms", "0")]).await;
    create_topic(&broker, "migrating", 4).await;
    let classic = classic_member(&broker, "migrating-group");
    classic.subscribe(&["migrating"]).unwrap();
    settle(&[&classic], 4, |_| true);

    // A consumer-protocol member joins: the classic member gives half up.
    let upgraded = member(&broker, "migrating-group");
    upgraded.subscribe(&["migrating"]).unwrap();
    settle(&[&classic, &upgraded], 4, |held| {
        held.iter().all(|h| h.len() == 2)
    });
    produce(&broker, "migrating", 4, 20, 0).await;
    let read = poll_until(&[&classic, &upgraded], 60, |read| {
        read.iter().map(Vec::len).sum::<usize>() >= 20
    });
    assert!(read.iter().all(|r| !r.is_empty()), "both consume: {read:?}");

    // It leaves: the group is classic again, and the classic member takes all.
    upgraded.unsubscribe();
    drop(upgraded);
    settle(&[&classic], 4, |_| true);
    produce(&broker, "migrating", 4, 8, 20).await;
    let read = poll_until(&[&classic], 60, |read| read[0].len() >= 8);
    let got: BTreeSet<String> = read[0].iter().cloned().collect();
    let expected: BTreeSet<String> = (20..28).map(|n| format!("record-{n}")).collect();
    assert_eq!(got, expected);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_static_member_comes_back_to_its_partitions() {
    let broker = TestBroker::start_with(&[
        ("group.consumer.min.session.timeout.ms", "1000"),
        ("group.consumer.session.timeout.ms", "20000"),
        ("group.consumer.min.heartbeat.interval.ms", "100"),
        ("group.consumer.heartbeat.interval.ms", "300"),
    ])
    .await;
    create_topic(&broker, "static", 4).await;
    let static_member = |instance: &str| -> BaseConsumer {
        config(&broker)
            .set("group.id", "static-group")
            .set("group.protocol", "consumer")
            .set("group.instance.id", instance)
            .set("auto.offset.reset", "earliest")
            .set("enable.auto.commit", "false")
            .create()
            .unwrap()
    };
    let (a, b) = (static_member("a"), static_member("b"));
    a.subscribe(&["static"]).unwrap();
    b.subscribe(&["static"]).unwrap();
    settle(&[&a, &b], 4, |held| held.iter().all(|h| h.len() == 2));
    let had = assigned(&a);
    // `a` closes (a static member leaves for a while: epoch -2) and comes back
    // under the same instance id: the same partitions, b unmoved.
    drop(a);
    let b_had = assigned(&b);
    let a = static_member("a");
    a.subscribe(&["static"]).unwrap();
    settle(&[&a, &b], 4, |held| held.iter().all(|h| h.len() == 2));
    assert_eq!(assigned(&a), had);
    assert_eq!(assigned(&b), b_had);
}
