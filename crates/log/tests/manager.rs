//! The log manager: lazy opening, bounded open files, small idle partitions,
//! background group commit, interval flush, clean shutdown.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::batch;
use spool_log::{FlushPolicy, LogConfig, LogManager, ManagerConfig};
use spool_model::{Offset, TopicName, TopicPartition};
use spool_store::{MemoryStore, Store};

fn partition(topic: &str, id: i32) -> TopicPartition {
    TopicPartition::new(TopicName::new(topic).unwrap(), id)
}

#[test]
fn ten_thousand_partitions_open_lazily_with_bounded_files_and_small_idle_footprint() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let config = ManagerConfig {
        open_files_limit: 256,
        ..ManagerConfig::default()
    };
    {
        let manager = LogManager::open(store.clone(), config.clone()).unwrap();
        for topic in 0..100 {
            for id in 0..100 {
                let log = manager
                    .create_partition(&partition(&format!("topic-{topic}"), id))
                    .unwrap();
                log.append(&[&batch(1, 20, 1)]).unwrap();
                assert!(manager.files().open_count() <= 256);
            }
        }
        manager.shutdown().unwrap();
    }
    let manager = LogManager::open(store, config).unwrap();
    assert_eq!(manager.partitions().len(), 10_000);
    assert_eq!(
        manager.files().open_count(),
        0,
        "opening the manager opens no partition"
    );

    let mut footprints = Vec::new();
    for tp in manager.partitions() {
        let log = manager.partition(&tp).unwrap().unwrap();
        assert_eq!(log.offsets().log_end, Offset(1), "{tp}");
        assert_eq!(
            log.read(Offset(0), 1024).unwrap().len(),
            batch(1, 20, 1).len() as u64
        );
        assert!(manager.files().open_count() <= 256);
        log.release_memory();
        footprints.push(log.memory_footprint());
    }
    let largest = footprints.iter().max().unwrap();
    assert!(*largest < 2048, "an idle partition holds {largest} bytes");
}

#[test]
fn appends_become_durable_through_the_background_flusher() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let manager = LogManager::open(store, ManagerConfig::default()).unwrap();
    let log = manager.create_partition(&partition("orders", 0)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut writers = Vec::new();
        for i in 0..8 {
            let log = log.clone();
            writers.push(tokio::task::spawn_blocking(move || {
                let info = log.append(&[&batch(2, 50, i)]).unwrap();
                info.next_offset()
            }));
        }
        for writer in writers {
            let next = writer.await.unwrap();
            tokio::time::timeout(Duration::from_secs(5), log.wait_durable(next))
                .await
                .unwrap()
                .unwrap();
        }
    });
    let offsets = log.offsets();
    assert_eq!(
        (offsets.durable, offsets.high_watermark),
        (Offset(16), Offset(16))
    );
}

#[test]
fn interval_policy_flushes_after_flush_ms_and_after_flush_messages() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let manager = LogManager::open(store, ManagerConfig::default()).unwrap();
    let by_time = partition("by-time", 0);
    let by_count = partition("by-count", 0);
    let time_config = LogConfig {
        flush: FlushPolicy::Interval {
            ms: Some(100),
            messages: None,
        },
        ..LogConfig::default()
    };
    let count_config = LogConfig {
        flush: FlushPolicy::Interval {
            ms: None,
            messages: Some(10),
        },
        ..LogConfig::default()
    };
    manager
        .set_topic_config(&by_time.topic, time_config)
        .unwrap();
    manager
        .set_topic_config(&by_count.topic, count_config)
        .unwrap();
    let timed = manager.create_partition(&by_time).unwrap();
    let counted = manager.create_partition(&by_count).unwrap();

    timed.append(&[&batch(1, 10, 1)]).unwrap();
    assert_eq!(timed.offsets().durable, Offset(0));
    wait_until(|| timed.offsets().durable == Offset(1));

    counted.append(&[&batch(9, 10, 1)]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        counted.offsets().durable,
        Offset(0),
        "9 records are below flush.messages"
    );
    counted.append(&[&batch(1, 10, 1)]).unwrap();
    wait_until(|| counted.offsets().durable == Offset(10));
}

#[test]
fn shutdown_syncs_and_checkpoints_so_a_restart_finds_everything() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let tp = partition("events", 3);
    {
        let manager = LogManager::open(store.clone(), ManagerConfig::default()).unwrap();
        let config = LogConfig {
            flush: FlushPolicy::Interval {
                ms: None,
                messages: None,
            },
            ..LogConfig::default()
        };
        manager.set_topic_config(&tp.topic, config).unwrap();
        let log = manager.create_partition(&tp).unwrap();
        log.append(&[&batch(5, 10, 1)]).unwrap();
        assert_eq!(log.offsets().durable, Offset(0));
        manager.shutdown().unwrap();
        assert_eq!(log.offsets().durable, Offset(5));
    }
    let manager = LogManager::open(store, ManagerConfig::default()).unwrap();
    assert_eq!(
        manager.partition(&tp).unwrap().unwrap().offsets().log_end,
        Offset(5)
    );
    assert!(
        manager
            .partition(&partition("events", 4))
            .unwrap()
            .is_none()
    );
    manager.delete_partition(&tp).unwrap();
    assert!(manager.partition(&tp).unwrap().is_none());
    assert!(manager.partitions().is_empty());
}

fn wait_until(condition: impl Fn() -> bool) {
    for _ in 0..200 {
        if condition() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("condition not met within 5 s");
}

#[test]
fn idle_partitions_release_their_memory_in_the_background() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let config = ManagerConfig {
        checkpoint_interval: Duration::from_millis(50),
        idle_release_after: Duration::from_millis(100),
        ..ManagerConfig::default()
    };
    let manager = LogManager::open(store, config).unwrap();
    let log = manager.create_partition(&partition("quiet", 0)).unwrap();
    log.append(&[&batch(100, 100, 1)]).unwrap();
    log.sync().unwrap();
    assert!(
        log.memory_footprint() > 10_000,
        "the tail cache holds the batch"
    );
    wait_until(|| log.memory_footprint() < 2048);
}

#[test]
fn a_deleted_partition_is_fenced_and_not_reopened() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let manager = LogManager::open(store.clone(), ManagerConfig::default()).unwrap();
    let tp = partition("doomed", 0);
    let held = manager.create_partition(&tp).unwrap();
    held.append(&[&batch(1, 10, 1)]).unwrap();
    manager.delete_partition(&tp).unwrap();
    assert!(matches!(
        held.append(&[&batch(1, 10, 2)]),
        Err(spool_log::LogError::Failed { .. })
    ));
    assert!(manager.partition(&tp).unwrap().is_none());
    assert!(!store.exists(std::path::Path::new("topics/doomed")));
}

/// Found by `spool faultcheck --mode machine`: the `topics` directory was created at
/// the store's root without syncing the root, so a machine crash could take every
/// partition with it, synced data and all.
#[test]
fn synced_data_of_a_new_store_survives_a_machine_crash() {
    let store = spool_store::FaultyStore::new(3);
    let shared: Arc<dyn Store> = Arc::new(store.clone());
    let manager = LogManager::open(shared.clone(), ManagerConfig::default()).unwrap();
    let log = manager.create_partition(&partition("events", 0)).unwrap();
    log.append(&[&batch(3, 20, 1)]).unwrap();
    log.sync().unwrap();
    // The machine dies: the manager's shutdown on the way out can write nothing.
    store.fail_after(0);
    drop(log);
    drop(manager);
    store.crash(spool_store::CrashMode::DropUnsynced);

    let manager = LogManager::open(shared, ManagerConfig::default()).unwrap();
    let log = manager
        .partition(&partition("events", 0))
        .unwrap()
        .expect("the partition survives");
    assert_eq!(log.offsets().log_end, Offset(3));
}

/// Found by the `log_recovery` fuzz target: `shutdown` set the stop flag and woke the
/// flush threads without holding their queue's lock, so a thread between its check of
/// the flag and its wait slept through the wake-up, and `shutdown` waited for it
/// forever.
#[test]
fn shutdown_never_waits_forever_for_a_flush_thread() {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..3000 {
            let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
            let manager = LogManager::open(store, ManagerConfig::default()).unwrap();
            manager.shutdown().unwrap();
        }
        let _ = done_tx.send(());
    });
    done_rx
        .recv_timeout(Duration::from_secs(120))
        .expect("3000 opens and shutdowns finish");
}

#[test]
fn an_empty_topic_directory_left_by_a_cut_deletion_is_removed_at_open() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    {
        let manager = LogManager::open(store.clone(), ManagerConfig::default()).unwrap();
        manager.create_partition(&partition("kept", 0)).unwrap();
        manager.shutdown().unwrap();
    }
    // What a crash between a deleted topic's last partition and its directory leaves.
    store
        .create_dir_all(std::path::Path::new("topics/doomed"))
        .unwrap();
    let manager = LogManager::open(store.clone(), ManagerConfig::default()).unwrap();
    let topics: Vec<String> = store
        .list_dir(std::path::Path::new("topics"))
        .unwrap()
        .into_iter()
        .map(|entry| entry.name)
        .collect();
    assert_eq!(topics, vec!["kept".to_owned()]);
    assert_eq!(manager.partitions(), vec![partition("kept", 0)]);
}
