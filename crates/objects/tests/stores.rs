//! The object stores Spool runs on, held to what the shared-storage mode relies on:
//! whole-object PUTs, ranged GETs, listing by prefix, deletes, and create-only PUTs
//! (refused when the name exists; atomic only on stores that promise it). Runs on
//! the in-memory store, on the fault-injecting wrapper without faults, and on a real
//! S3 API server when `SPOOL_TEST_S3_URL` names a bucket there (`scripts/test` starts
//! moto and sets it, with `SPOOL_REQUIRE_S3=1` making its absence a failure). Then the
//! faults themselves.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::memory::InMemory;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use spool_objects::{FaultyObjectStore, ObjectStorage, StorageUrl};

/// Every store to test, each under a prefix of its own.
fn stores() -> Vec<(&'static str, ObjectStorage)> {
    let run = uuid::Uuid::new_v4().simple().to_string();
    let prefix = object_store::path::Path::from(run.as_str());
    let mut stores = vec![
        (
            "memory",
            ObjectStorage::new(Arc::new(InMemory::new()), prefix.clone()),
        ),
        (
            "faulty memory",
            ObjectStorage::new(
                Arc::new(FaultyObjectStore::new(Arc::new(InMemory::new()))),
                prefix,
            ),
        ),
    ];
    match std::env::var("SPOOL_TEST_S3_URL") {
        Ok(url) => {
            let base = StorageUrl::parse(&format!("{url}/{run}")).unwrap();
            stores.push(("s3", base.open().unwrap()));
        }
        Err(_) if std::env::var("SPOOL_REQUIRE_S3").as_deref() == Ok("1") => {
            panic!("SPOOL_REQUIRE_S3=1 but SPOOL_TEST_S3_URL is not set")
        }
        Err(_) => eprintln!("SPOOL_TEST_S3_URL not set: the S3 store is skipped"),
    }
    stores
}

#[tokio::test]
async fn objects_are_put_read_by_range_listed_and_deleted() {
    for (label, storage) in stores() {
        let store = &storage.store;
        let wal = storage.path("wal/00000001");
        let body = Bytes::from((0..=255u8).cycle().take(10_000).collect::<Vec<u8>>());
        store
            .put(&wal, PutPayload::from(body.clone()))
            .await
            .unwrap();
        let whole = store.get(&wal).await.unwrap().bytes().await.unwrap();
        assert_eq!(whole, body, "{label}");
        let range = store.get_range(&wal, 1000..1100).await.unwrap();
        assert_eq!(range, body.slice(1000..1100), "{label}: a ranged GET");
        assert_eq!(store.head(&wal).await.unwrap().size, 10_000, "{label}");

        store
            .put(
                &storage.path("wal/00000002"),
                PutPayload::from_static(b"two"),
            )
            .await
            .unwrap();
        store
            .put(&storage.path("segments/x"), PutPayload::from_static(b"x"))
            .await
            .unwrap();
        let mut listed: Vec<String> = store
            .list(Some(&storage.path("wal")))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .unwrap();
        listed.sort();
        assert_eq!(
            listed,
            vec![
                storage.path("wal/00000001").to_string(),
                storage.path("wal/00000002").to_string()
            ],
            "{label}: listed by prefix"
        );

        store.delete(&wal).await.unwrap();
        assert!(
            matches!(
                store.get(&wal).await,
                Err(object_store::Error::NotFound { .. })
            ),
            "{label}: deleted"
        );
    }
}

#[tokio::test]
async fn a_create_only_put_is_refused_when_the_name_exists() {
    for (label, storage) in stores() {
        let name = storage.path("wal/never-reused");
        let create = || PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        storage
            .store
            .put_opts(&name, PutPayload::from_static(b"first"), create())
            .await
            .unwrap();
        let again = storage
            .store
            .put_opts(&name, PutPayload::from_static(b"second"), create())
            .await;
        assert!(
            matches!(again, Err(object_store::Error::AlreadyExists { .. })),
            "{label}: {again:?}"
        );
        let kept = storage
            .store
            .get(&name)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(kept.as_ref(), b"first", "{label}");
    }
}

#[tokio::test]
async fn faults_fail_puts_lose_their_answers_slow_them_and_fail_gets() {
    let memory = Arc::new(InMemory::new());
    let faulty = FaultyObjectStore::new(memory.clone());
    let name = object_store::path::Path::from("wal/1");

    faulty.fail_next_puts(1);
    assert!(
        faulty
            .put(&name, PutPayload::from_static(b"a"))
            .await
            .is_err()
    );
    assert!(
        memory.get(&name).await.is_err(),
        "a failed PUT writes nothing"
    );

    faulty.lose_next_put_answers(1);
    assert!(
        faulty
            .put(&name, PutPayload::from_static(b"b"))
            .await
            .is_err()
    );
    let written = memory.get(&name).await.unwrap().bytes().await.unwrap();
    assert_eq!(written.as_ref(), b"b", "a lost answer: the object is there");

    faulty.delay_puts(Duration::from_millis(200));
    let started = Instant::now();
    faulty
        .put(&name, PutPayload::from_static(b"c"))
        .await
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "a slow PUT"
    );
    faulty.heal();

    faulty.fail_next_gets(1);
    assert!(faulty.get(&name).await.is_err());
    assert!(faulty.get(&name).await.is_ok(), "only the next GET");
    let counts = faulty.counts();
    assert_eq!((counts.puts, counts.put_bytes, counts.gets), (3, 3, 2));
}

/// `storage.s3.*` settings override the environment: an endpoint where nothing
/// listens makes writes fail; the server's own endpoint, given as a setting, works.
#[tokio::test]
async fn s3_options_override_the_environment() {
    let (Ok(url), Ok(endpoint)) = (
        std::env::var("SPOOL_TEST_S3_URL"),
        std::env::var("AWS_ENDPOINT_URL"),
    ) else {
        eprintln!("SPOOL_TEST_S3_URL or AWS_ENDPOINT_URL not set: skipped");
        return;
    };
    let base = StorageUrl::parse(&format!("{url}/options")).unwrap();
    let nowhere = spool_objects::S3Options {
        endpoint: Some("http://127.0.0.1:9".to_owned()),
        region: None,
        allow_http: Some(true),
    };
    let wrong = base.open_with(&nowhere).unwrap();
    // It fails, or keeps retrying (object_store retries refused connections).
    let put = tokio::time::timeout(
        Duration::from_secs(5),
        wrong
            .store
            .put(&wrong.path("x"), PutPayload::from(Bytes::from_static(b"x"))),
    )
    .await;
    assert!(
        !matches!(put, Ok(Ok(_))),
        "a PUT to a closed port succeeded"
    );
    let right = base
        .open_with(&spool_objects::S3Options {
            endpoint: Some(endpoint),
            region: Some("us-east-1".to_owned()),
            allow_http: Some(true),
        })
        .unwrap();
    right
        .store
        .put(&right.path("x"), PutPayload::from(Bytes::from_static(b"x")))
        .await
        .unwrap();
}
