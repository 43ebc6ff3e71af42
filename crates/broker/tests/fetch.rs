//! Fetch over raw requests: stored batches come back byte for byte (from segment files
//! through `sendfile` and from the tail cache), budgets return whole batches, offsets
//! outside the log get `OFFSET_OUT_OF_RANGE`, and a waiting fetch is woken by new data.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use spool_testkit::{BatchBuilder, FetchAt, TestBroker};

const BIG: i32 = 64 << 20;

/// Splits fetched records into batches by their length field.
fn batches(records: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = records;
    while !rest.is_empty() {
        let len = i32::from_be_bytes(rest[8..12].try_into().unwrap());
        let (batch, tail) = rest.split_at(12 + usize::try_from(len).unwrap());
        out.push(batch);
        rest = tail;
    }
    out
}

fn at(partition: i32, offset: i64, max_bytes: i32) -> FetchAt {
    FetchAt {
        partition,
        offset,
        max_bytes,
    }
}

#[tokio::test]
async fn stored_batches_come_back_byte_for_byte_at_every_version() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("logs", 1).await, 0);
    // 40 batches of 64 KiB: more than the 1 MiB tail cache, so the first ones are
    // read from the segment file and sent with sendfile, the last from memory.
    let mut sent = Vec::new();
    for i in 0..40 {
        let batch = BatchBuilder::new()
            .timestamp(1000 + i)
            .values(16, 4096)
            .build();
        let (error, base) = client.produce("logs", 0, batch.clone()).await;
        assert_eq!((error, base), (0, i * 16));
        sent.push(batch);
    }
    for version in [4, 7, 11, 12] {
        let answer = client
            .fetch(version, "logs", &[at(0, 0, BIG)], 1, 0, BIG)
            .await;
        let partition = &answer[0];
        assert_eq!(partition.error_code, 0);
        assert_eq!(partition.high_watermark, 640);
        let records = partition.records.as_ref().unwrap();
        let got = batches(records);
        assert_eq!(got.len(), sent.len(), "v{version}");
        for (i, (got, sent)) in got.iter().zip(&sent).enumerate() {
            let base = i64::from_be_bytes(got[..8].try_into().unwrap());
            assert_eq!(base, i64::try_from(i).unwrap() * 16);
            assert!(got[8..] == sent[8..], "v{version}: batch {i} differs");
        }
    }
    // From the middle of the log: the answer starts at the batch holding the offset.
    let answer = client
        .fetch(12, "logs", &[at(0, 333, BIG)], 1, 0, BIG)
        .await;
    let got = batches(answer[0].records.as_ref().unwrap());
    assert_eq!(got.len(), 40 - 20);
    assert_eq!(i64::from_be_bytes(got[0][..8].try_into().unwrap()), 320);
}

#[tokio::test]
async fn budgets_return_whole_batches_and_the_first_batch_always() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("budget", 2).await, 0);
    for partition in 0..2 {
        for _ in 0..3 {
            let batch = BatchBuilder::new().values(4, 1000).build();
            assert_eq!(client.produce("budget", partition, batch).await.0, 0);
        }
    }
    // A partition budget of one byte still gets one whole batch.
    let answer = client.fetch(12, "budget", &[at(0, 0, 1)], 1, 0, BIG).await;
    assert_eq!(batches(answer[0].records.as_ref().unwrap()).len(), 1);
    // A response budget of one byte: the first partition gets one batch, the second
    // nothing (but its offsets).
    let answer = client
        .fetch(12, "budget", &[at(0, 0, BIG), at(1, 0, BIG)], 1, 0, 1)
        .await;
    assert_eq!(batches(answer[0].records.as_ref().unwrap()).len(), 1);
    assert_eq!(answer[1].records.as_deref(), Some(&[][..]));
    assert_eq!(answer[1].high_watermark, 12);
    // Budgets that end inside a batch stop before it.
    let one = i32::try_from(BatchBuilder::new().values(4, 1000).build().len()).unwrap();
    let answer = client
        .fetch(12, "budget", &[at(0, 0, 2 * one + one / 2)], 1, 0, BIG)
        .await;
    assert_eq!(batches(answer[0].records.as_ref().unwrap()).len(), 2);
}

#[tokio::test]
async fn only_the_first_batch_of_a_response_may_exceed_its_budget() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("wide", 3).await, 0);
    // Two 900 KiB batches in partitions 1 and 2; partition 0 stays empty.
    for partition in 1..3 {
        let batch = BatchBuilder::new().values(1, 900 << 10).build();
        assert_eq!(client.produce("wide", partition, batch).await.0, 0);
    }
    let all = [at(0, 0, BIG), at(1, 0, BIG), at(2, 0, BIG)];
    // About 1 MB for the whole response: the first partition with data (1) gets its
    // batch, the next (2) nothing, though its own budget would allow it.
    let answer = client.fetch(12, "wide", &all, 1, 0, 1_000_000).await;
    assert_eq!(answer[0].records.as_deref(), Some(&[][..]));
    assert_eq!(batches(answer[1].records.as_ref().unwrap()).len(), 1);
    assert_eq!(answer[2].records.as_deref(), Some(&[][..]));
    assert_eq!(answer[2].high_watermark, 1, "offsets still reported");
    // A response budget smaller than one batch still returns the first one.
    let answer = client.fetch(12, "wide", &all[1..], 1, 0, 1000).await;
    assert_eq!(batches(answer[0].records.as_ref().unwrap()).len(), 1);
    assert_eq!(answer[1].records.as_deref(), Some(&[][..]));
    // Room for both: both come back.
    let answer = client.fetch(12, "wide", &all, 1, 0, 2_000_000).await;
    assert_eq!(batches(answer[1].records.as_ref().unwrap()).len(), 1);
    assert_eq!(batches(answer[2].records.as_ref().unwrap()).len(), 1);
}

#[tokio::test]
async fn offsets_outside_the_log_and_unknown_partitions_get_their_errors() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("small", 1).await, 0);
    let batch = BatchBuilder::new().values(5, 10).build();
    assert_eq!(client.produce("small", 0, batch).await.0, 0);

    let answer = client.fetch(12, "small", &[at(0, 6, BIG)], 1, 0, BIG).await;
    assert_eq!(answer[0].error_code, 1, "OFFSET_OUT_OF_RANGE");
    assert_eq!(answer[0].high_watermark, 5);
    assert_eq!(
        answer[0].records.as_deref(),
        Some(&[][..]),
        "empty, not null"
    );
    let answer = client.fetch(4, "small", &[at(0, -1, BIG)], 1, 0, BIG).await;
    assert_eq!(answer[0].error_code, 1);
    // At the high watermark: no error, no records.
    let answer = client.fetch(12, "small", &[at(0, 5, BIG)], 1, 0, BIG).await;
    assert_eq!(answer[0].error_code, 0);
    assert_eq!(answer[0].records.as_deref(), Some(&[][..]));

    let answer = client.fetch(12, "small", &[at(3, 0, BIG)], 1, 0, BIG).await;
    assert_eq!(answer[0].error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    let answer = client
        .fetch(11, "nowhere", &[at(0, 0, BIG)], 1, 0, BIG)
        .await;
    assert_eq!(answer[0].error_code, 3);
}

#[tokio::test]
async fn a_waiting_fetch_is_woken_by_new_data_and_otherwise_times_out() {
    let broker = TestBroker::start().await;
    let mut producer = broker.client().await;
    assert_eq!(producer.create_topic("wake", 1).await, 0);

    let mut consumer = broker.client().await;
    let started = Instant::now();
    let empty = consumer
        .fetch(12, "wake", &[at(0, 0, BIG)], 1, 300, BIG)
        .await;
    assert_eq!(empty[0].records.as_deref(), Some(&[][..]));
    assert!(started.elapsed() >= Duration::from_millis(250), "it waited");

    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        let answer = consumer
            .fetch(12, "wake", &[at(0, 0, BIG)], 1, 20_000, BIG)
            .await;
        (answer, started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let batch = BatchBuilder::new().values(2, 10).build();
    assert_eq!(producer.produce("wake", 0, batch).await.0, 0);
    let (answer, waited) = waiting.await.unwrap();
    assert_eq!(batches(answer[0].records.as_ref().unwrap()).len(), 1);
    assert!(
        waited < Duration::from_secs(15),
        "woken by the data, not the timer"
    );
}
