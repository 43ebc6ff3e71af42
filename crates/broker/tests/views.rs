//! View topics through the broker: a view returns exactly its source's matching
//! records at the source's offsets, every response batch ends on a record and the
//! batches cover the offsets without holes up to the high watermark (so that every
//! client moves past gaps), the tag index spares reading batches a second time,
//! writes are refused, offsets and ListOffsets are the source's, and deleting the
//! source deletes its views. Real clients read views in `compat/test_views.py` and
//! `compat/js/views.test.mjs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use spool_model::CompressionCodec;
use spool_protocol::batch::BatchFrames;
use spool_protocol::internal::{Kind, kind_of};
use spool_protocol::keyed::BatchRecords;
use spool_protocol::recompress::recompress;
use spool_testkit::{BatchBuilder, FetchAt, RawClient, TestBroker, TestRecord, http_get};

const INVALID_TOPIC_EXCEPTION: i16 = 17;
const INVALID_PARTITIONS: i16 = 37;
const INVALID_CONFIG: i16 = 40;

fn record(value: &str, tag: Option<&str>, region: Option<&str>) -> TestRecord {
    let mut record = TestRecord::value(value.as_bytes().to_vec());
    for (name, header) in [("spool.tag", tag), ("region", region)] {
        if let Some(header) = header {
            record
                .headers
                .push((name.to_owned(), Some(header.as_bytes().to_vec())));
        }
    }
    record
}

/// A batch of records `(value, tag, region)`, compressed with `codec`.
fn batch(records: &[(&str, Option<&str>, Option<&str>)], codec: CompressionCodec) -> Vec<u8> {
    let mut builder = BatchBuilder::new();
    for (value, tag, region) in records {
        builder = builder.record(record(value, *tag, *region));
    }
    let plain = builder.build();
    recompress(&plain, codec, None, 1 << 20)
        .unwrap()
        .unwrap_or(plain)
}

/// What a fetch of `topic` from `offset` returned: the records (offset, value), and
/// where the batches ended, after checking that each batch ends on a record and that
/// the batches cover their offsets without holes.
async fn fetch(
    client: &mut RawClient,
    topic: &str,
    offset: i64,
    max_bytes: i32,
) -> (Vec<(i64, String)>, i64) {
    let answer = client
        .fetch(
            12,
            topic,
            &[FetchAt {
                partition: 0,
                offset,
                max_bytes,
            }],
            0,
            0,
            max_bytes,
        )
        .await;
    let partition = &answer[0];
    assert_eq!(partition.error_code, 0, "fetch {topic} from {offset}");
    let bytes = partition.records.clone().unwrap_or_default();
    let mut records = Vec::new();
    let mut next: Option<i64> = None;
    for frame in BatchFrames::new(&bytes) {
        let (header, batch) = frame.unwrap();
        if let Some(next) = next {
            assert_eq!(
                header.base_offset.0, next,
                "the batches of {topic} leave no hole"
            );
        }
        next = Some(header.last_offset().0 + 1);
        if header.is_control() {
            if header.producer_id.0 == -1 {
                assert_eq!(kind_of(batch), Some(Kind::Skip), "a gap is a skip marker");
            }
            continue;
        }
        let read = BatchRecords::read(batch, 1 << 20).unwrap();
        let batch_records = read.records().unwrap();
        assert_eq!(
            batch_records.last().unwrap().offset_delta,
            i64::from(header.last_offset_delta),
            "a batch of {topic} ends on a record"
        );
        for r in batch_records {
            let offset = header.base_offset.0 + r.offset_delta;
            records.push((
                offset,
                String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
            ));
        }
    }
    (records, next.unwrap_or(offset))
}

/// Every record of a view from `offset` on, fetched as a client would: from where
/// each response ended.
async fn read_all(
    client: &mut RawClient,
    topic: &str,
    mut offset: i64,
    end: i64,
    max_bytes: i32,
) -> Vec<(i64, String)> {
    let mut all = Vec::new();
    while offset < end {
        let (records, next) = fetch(client, topic, offset, max_bytes).await;
        assert!(next > offset, "a fetch of {topic} from {offset} moves on");
        all.extend(records.into_iter().filter(|(o, _)| *o >= offset));
        offset = next;
    }
    all
}

async fn metric(broker: &TestBroker, line: &str) -> u64 {
    let body = http_get(broker.admin_addr().unwrap(), "/metrics")
        .await
        .body;
    body.lines()
        .find_map(|l| l.strip_prefix(line)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line} in {body}"))
}

#[tokio::test]
async fn a_view_shows_exactly_the_matching_records_at_the_sources_offsets() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("orders", 1).await, 0);
    let none = CompressionCodec::None;
    let zstd = CompressionCodec::Zstd;
    // 0-2: all A; 3-5: no match; 6-9: mixed, compressed, ending on a non-match;
    // 10-11: untagged; 12-13: mixed, ending on a match.
    for records in [
        batch(
            &[
                ("a0", Some("A"), Some("eu")),
                ("a1", Some("A"), None),
                ("a2", Some("A"), Some("us")),
            ],
            none,
        ),
        batch(
            &[
                ("c3", Some("C"), None),
                ("c4", Some("C"), None),
                ("d5", Some("D"), Some("eu")),
            ],
            zstd,
        ),
        batch(
            &[
                ("b6", Some("B"), Some("eu")),
                ("c7", Some("C"), None),
                ("a8", Some("A"), None),
                ("c9", Some("C"), Some("eu")),
            ],
            zstd,
        ),
        batch(&[("u10", None, Some("eu")), ("u11", None, None)], none),
        batch(
            &[("c12", Some("C"), None), ("b13", Some("B"), Some("eu"))],
            none,
        ),
    ] {
        assert_eq!(client.produce("orders", 0, records).await.0, 0);
    }
    assert_eq!(
        client
            .create_topic_with(
                "ab",
                -1,
                &[("view.source.topic", "orders"), ("view.filter", "A || B")]
            )
            .await,
        0
    );
    assert_eq!(
        client
            .create_topic_with(
                "eu",
                1,
                &[
                    ("view.source.topic", "orders"),
                    ("view.filter.sql", "region = 'eu'")
                ]
            )
            .await,
        0
    );
    let expected_ab: Vec<(i64, String)> = [
        (0, "a0"),
        (1, "a1"),
        (2, "a2"),
        (6, "b6"),
        (8, "a8"),
        (13, "b13"),
    ]
    .into_iter()
    .map(|(o, v)| (o, v.to_owned()))
    .collect();
    let (ab, end) = fetch(&mut client, "ab", 0, 1 << 20).await;
    assert_eq!(ab, expected_ab);
    assert_eq!(
        end, 14,
        "the response covers the source up to its high watermark"
    );
    let (eu, end) = fetch(&mut client, "eu", 0, 1 << 20).await;
    let eu: Vec<i64> = eu.into_iter().map(|(o, _)| o).collect();
    assert_eq!(eu, vec![0, 5, 6, 9, 10, 13]);
    assert_eq!(end, 14);

    // From every offset, and in responses too small for more than a batch, the view
    // reads on to the end with the same records.
    for from in 0..14 {
        let tail = read_all(&mut client, "ab", from, 14, 1).await;
        let expected: Vec<_> = expected_ab
            .iter()
            .filter(|(o, _)| *o >= from)
            .cloned()
            .collect();
        assert_eq!(tail, expected, "from {from}");
    }

    // The tag index decided the all-A, no-match and untagged batches the second
    // time: only the mixed batches (6-9, 12-13) were read again.
    let inflated = metric(&broker, r#"spool_view_batches_inflated_total{topic="ab"}"#).await;
    let _ = fetch(&mut client, "ab", 0, 1 << 20).await;
    let again = metric(&broker, r#"spool_view_batches_inflated_total{topic="ab"}"#).await;
    assert_eq!(
        again - inflated,
        2,
        "batches 6-9 and 12-13 are read, the others are not"
    );
    assert!(
        metric(
            &broker,
            r#"spool_view_batches_total{topic="ab",outcome="sent"}"#
        )
        .await
            > 0
    );

    // Offsets and times are the source's.
    for timestamp in [-1, -2] {
        let view = client.list_offset(7, "ab", 0, timestamp).await;
        let source = client.list_offset(7, "orders", 0, timestamp).await;
        assert_eq!((view.error_code, view.offset), (0, source.offset));
    }
}

#[tokio::test]
async fn views_refuse_writes_and_bad_definitions_and_go_with_their_source() {
    let broker = TestBroker::start().await;
    let mut client = broker.client().await;
    assert_eq!(client.create_topic("src", 2).await, 0);
    let view = [("view.source.topic", "src"), ("view.filter", "A")];
    assert_eq!(client.create_topic_with("v", -1, &view).await, 0);
    let records = batch(&[("x", Some("A"), None)], CompressionCodec::None);
    assert_eq!(
        client.produce("v", 0, records.clone()).await.0,
        INVALID_TOPIC_EXCEPTION
    );
    assert_eq!(client.produce("src", 1, records).await.0, 0);
    let at = FetchAt {
        partition: 1,
        offset: 0,
        max_bytes: 1 << 20,
    };
    let answer = client.fetch(12, "v", &[at], 0, 0, 1 << 20).await;
    let seen = answer[0].records.clone().unwrap_or_default();
    assert!(
        !seen.is_empty(),
        "partition 1 of the view is partition 1 of its source"
    );

    for (configs, code) in [
        (vec![("view.source.topic", "missing")], INVALID_CONFIG),
        (vec![("view.source.topic", "v")], INVALID_CONFIG),
        (
            vec![
                ("view.source.topic", "src"),
                ("view.filter.sql", "region >"),
            ],
            INVALID_CONFIG,
        ),
        (
            vec![("view.source.topic", "src"), ("view.filter", "A ||")],
            INVALID_CONFIG,
        ),
        (vec![("view.filter", "A")], INVALID_CONFIG),
        (
            vec![
                ("view.source.topic", "src"),
                ("delivery.delay.enable", "true"),
            ],
            INVALID_CONFIG,
        ),
    ] {
        assert_eq!(
            client.create_topic_with("bad", -1, &configs).await,
            code,
            "{configs:?}"
        );
    }
    assert_eq!(
        client.create_topic_with("bad", 5, &view).await,
        INVALID_PARTITIONS,
        "a view has its source's partitions"
    );
    assert_eq!(
        client
            .set_config(2, "v", "view.source.topic", "other")
            .await,
        INVALID_CONFIG,
        "a view's source is set at creation only"
    );
    assert_eq!(
        client.set_config(2, "v", "view.filter", "B").await,
        0,
        "its filter may change"
    );

    assert_eq!(client.delete_topic("src").await, 0);
    let topics = http_get(broker.admin_addr().unwrap(), "/api/topics")
        .await
        .body;
    assert!(
        !topics.contains("\"v\""),
        "the view went with its source: {topics}"
    );
}
