//! ListOffsets over raw requests: earliest, latest, by timestamp, the largest
//! timestamp (v7) and the earliest local offset (v8), at every version that has them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use spool_testkit::{BatchBuilder, TestBroker, TestRecord};

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;

#[tokio::test]
async fn offsets_by_special_and_real_timestamps() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("times", 1).await, 0);
    // Batch i holds offsets 2i and 2i+1 at 1000 + 100 i and +1 ms; batch 3's second
    // record is the newest of all (9000), batch 4 comes later but is older.
    for i in 0..5i64 {
        let newest = if i == 3 { 9000 - 1300 } else { 1 };
        let batch = BatchBuilder::new()
            .timestamp(1000 + 100 * i)
            .record(TestRecord::value("a"))
            .record(TestRecord {
                timestamp_delta: newest,
                ..TestRecord::value("b")
            })
            .build();
        assert_eq!(client.produce("times", 0, batch).await, (0, 2 * i));
    }

    for version in 1..=8 {
        let at = |offset: i64, timestamp: i64| (0i16, offset, timestamp);
        let mut ask = async |t: i64| {
            let answer = client.list_offset(version, "times", 0, t).await;
            (answer.error_code, answer.offset, answer.timestamp)
        };
        assert_eq!(ask(EARLIEST).await, at(0, -1), "v{version}");
        assert_eq!(ask(LATEST).await, at(10, -1), "v{version}");
        assert_eq!(ask(0).await, at(0, 1000), "v{version}");
        assert_eq!(ask(1001).await, at(1, 1001), "v{version}");
        assert_eq!(ask(1150).await, at(4, 1200), "v{version}");
        assert_eq!(ask(1401).await, at(7, 9000), "v{version}");
        assert_eq!(ask(9001).await, at(-1, -1), "v{version}: none that new");
        if version >= 7 {
            assert_eq!(ask(MAX_TIMESTAMP).await, at(7, 9000), "v{version}");
        }
        if version >= 8 {
            assert_eq!(ask(EARLIEST_LOCAL).await, at(0, -1), "v{version}");
        }
    }

    let unknown = client.list_offset(8, "times", 5, LATEST).await;
    assert_eq!(unknown.error_code, 3, "UNKNOWN_TOPIC_OR_PARTITION");
    let unknown = client.list_offset(8, "nowhere", 0, LATEST).await;
    assert_eq!(unknown.error_code, 3);
}

#[tokio::test]
async fn an_empty_partition_has_no_max_timestamp() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("empty", 1).await, 0);
    let answer = client.list_offset(7, "empty", 0, MAX_TIMESTAMP).await;
    assert_eq!(
        (answer.error_code, answer.offset, answer.timestamp),
        (0, -1, -1)
    );
    let answer = client.list_offset(7, "empty", 0, LATEST).await;
    assert_eq!((answer.error_code, answer.offset), (0, 0));
}
