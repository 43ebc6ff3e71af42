//! Recovery: torn tails, garbage, lost indexes, bad checkpoints, machine crashes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{DIR, batch, open, read_all, small_config};
use spool_log::LogError;
use spool_model::Offset;
use spool_store::{CrashMode, FaultyStore, LocalStore, Store};

fn local() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store = LocalStore::open(dir.path()).unwrap();
    (dir, Arc::new(store))
}

fn partition_file(root: &tempfile::TempDir, name: &str) -> PathBuf {
    root.path().join(DIR).join(name)
}

/// The partition's segment files, in offset order.
fn segment_files(root: &tempfile::TempDir) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(root.path().join(DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs
}

fn active_segment(root: &tempfile::TempDir) -> PathBuf {
    segment_files(root).pop().unwrap()
}

fn append_raw(path: &Path, bytes: &[u8]) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
}

/// Writes 25 batches of 2 records (offsets 0..50) and closes the log uncleanly
/// (synced, but the checkpoint written at open still says offset 0).
fn written_log(store: &Arc<dyn Store>) -> Vec<(Offset, Vec<u8>)> {
    let log = open(store.clone(), small_config());
    for i in 0..25 {
        log.append(&[&batch(2, 150, i)]).unwrap();
    }
    log.sync().unwrap();
    read_all(&log, Offset(0))
}

#[test]
fn garbage_after_the_last_batch_is_truncated() {
    let (root, store) = local();
    let before = written_log(&store);
    let segment = active_segment(&root);
    let clean_len = std::fs::metadata(&segment).unwrap().len();
    append_raw(&segment, &[0xAB; 777]);

    let log = open(store, small_config());
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), clean_len);
    assert_eq!(log.offsets().log_end, Offset(50));
    assert_eq!(read_all(&log, Offset(0)), before);
    let info = log.append(&[&batch(1, 10, 99)]).unwrap();
    assert_eq!(
        info.base_offset,
        Offset(50),
        "appends continue right after the last valid batch"
    );
    log.sync().unwrap();
    assert_eq!(read_all(&log, Offset(0)).len(), before.len() + 1);
}

#[test]
fn a_half_written_batch_is_truncated() {
    for cut in [1, 12, 60, 61, 200] {
        let (root, store) = local();
        let before = written_log(&store);
        let half = batch(3, 100, 7);
        append_raw(&active_segment(&root), &half[..cut.min(half.len() - 1)]);
        let log = open(store, small_config());
        assert_eq!(log.offsets().log_end, Offset(50), "cut at {cut}");
        assert_eq!(read_all(&log, Offset(0)), before);
    }
}

#[test]
fn a_batch_with_a_bad_crc_and_everything_after_it_is_dropped() {
    let (root, store) = local();
    written_log(&store);
    let segment = active_segment(&root);
    let mut bad = batch(2, 50, 1);
    spool_protocol::batch::patch_base_offset(&mut bad, Offset(50));
    let last = bad.len() - 1;
    bad[last] ^= 0xFF;
    let mut good = batch(2, 50, 1);
    spool_protocol::batch::patch_base_offset(&mut good, Offset(52));
    append_raw(&segment, &bad);
    append_raw(&segment, &good);
    let log = open(store, small_config());
    assert_eq!(log.offsets().log_end, Offset(50));
}

#[test]
fn a_torn_segment_in_the_middle_drops_the_segments_after_it() {
    for boundary in [false, true] {
        torn_middle_segment(boundary);
    }
}

fn torn_middle_segment(boundary: bool) {
    let (root, store) = local();
    written_log(&store);
    let logs = segment_files(&root);
    assert!(logs.len() >= 3, "{logs:?}");
    // Tear the second segment, as if its tail never reached the disk: once
    // mid-batch, once exactly on a batch boundary.
    let second = &logs[1];
    let len = std::fs::metadata(second).unwrap().len();
    let batch_len = batch(2, 150, 0).len() as u64;
    let cut = if boundary { batch_len * 3 } else { len / 2 + 7 };
    OpenOptions::new()
        .write(true)
        .open(second)
        .unwrap()
        .set_len(cut)
        .unwrap();
    // Make the checkpoint point before it, as after a crash.
    std::fs::remove_file(partition_file(&root, "checkpoint")).unwrap();

    let log = open(store, small_config());
    let remaining = segment_files(&root);
    assert_eq!(
        remaining.len(),
        2,
        "segments after the torn one are deleted: {remaining:?}"
    );
    let end = log.offsets().log_end;
    assert!(end > Offset(0) && end < Offset(50));
    let batches = read_all(&log, Offset(0));
    assert_eq!(batches.last().map(|(o, _)| o.plus(2)), Some(end));
    if boundary {
        assert_eq!(
            end,
            Offset(26),
            "the three whole batches of the torn segment stay"
        );
    }
}

#[test]
fn missing_or_damaged_indexes_are_rebuilt() {
    let (root, store) = local();
    let before = written_log(&store);
    let index_files: Vec<PathBuf> = std::fs::read_dir(root.path().join(DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e == "index" || e == "timeindex")
        })
        .collect();
    assert!(index_files.len() >= 6);
    for (i, path) in index_files.iter().enumerate() {
        if i % 2 == 0 {
            std::fs::remove_file(path).unwrap();
        } else {
            std::fs::write(path, [0x5A; 37]).unwrap();
        }
    }
    let log = open(store, small_config());
    assert_eq!(read_all(&log, Offset(0)), before);
    for offset in 0..50 {
        let read = log.read(Offset(offset), 1).unwrap().to_vec().unwrap();
        let header = spool_model::RecordBatchHeader::parse(&read).unwrap();
        assert!(header.base_offset <= Offset(offset) && header.next_offset() > Offset(offset));
    }
    assert_eq!(
        log.offset_for_timestamp(spool_model::Timestamp(20))
            .unwrap()
            .map(|f| f.0),
        Some(Offset(40))
    );
    // Closed segments' indexes are rebuilt on first use and written back whole.
    for path in &index_files {
        let len = std::fs::metadata(path).unwrap().len();
        let entry = if path.extension().unwrap() == "index" {
            8
        } else {
            12
        };
        assert!(
            len > 0 && len % entry == 0,
            "{} has {len} bytes",
            path.display()
        );
    }
}

#[test]
fn a_checkpoint_pointing_past_the_end_falls_back_to_a_full_scan() {
    let (root, store) = local();
    let before = written_log(&store);
    {
        let log = open(store.clone(), small_config());
        log.close().unwrap(); // checkpoint now at offset 50, end of the active segment
    }
    // Lose the tail of the active segment behind the checkpoint's back.
    let segment = active_segment(&root);
    let len = std::fs::metadata(&segment).unwrap().len();
    OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(len - 100)
        .unwrap();
    let log = open(store, small_config());
    let end = log.offsets().log_end;
    assert!(
        end < Offset(50),
        "the lost batch is gone, not served: {end}"
    );
    let kept = read_all(&log, Offset(0));
    assert_eq!(kept[..], before[..kept.len()]);
}

#[test]
fn data_before_the_checkpoint_is_trusted_without_a_scan() {
    let (root, store) = local();
    written_log(&store);
    open(store.clone(), small_config()).close().unwrap();
    // Damage a byte of the first segment's last batch value: a full scan would cut
    // the log there; trusting the checkpoint leaves it alone (the CRC is checked by
    // the consumer, as in Kafka).
    let first = root.path().join(DIR).join(format!("{:020}.log", 0));
    let len = std::fs::metadata(&first).unwrap().len();
    let mut bytes = std::fs::read(&first).unwrap();
    bytes[usize::try_from(len).unwrap() - 1] ^= 1;
    std::fs::write(&first, bytes).unwrap();
    let log = open(store, small_config());
    assert_eq!(log.offsets().log_end, Offset(50));
}

#[test]
fn a_leftover_checkpoint_temp_file_is_removed() {
    let (root, store) = local();
    written_log(&store);
    std::fs::write(partition_file(&root, "checkpoint.tmp"), b"half").unwrap();
    let _log = open(store, small_config());
    assert!(!partition_file(&root, "checkpoint.tmp").exists());
}

#[test]
fn a_machine_crash_keeps_every_synced_batch_and_nothing_invented() {
    for (seed, mode) in [
        (1, CrashMode::DropUnsynced),
        (2, CrashMode::TearUnsynced),
        (3, CrashMode::GarbleUnsynced),
    ] {
        for round in 0..10 {
            let faulty = FaultyStore::new(seed * 100 + round);
            let store: Arc<dyn Store> = Arc::new(faulty.clone());
            let log = open(store.clone(), small_config());
            let mut durable = Vec::new();
            for i in 0..12 {
                log.append(&[&batch(2, 120, i)]).unwrap();
            }
            log.sync().unwrap();
            durable.extend(read_all(&log, Offset(0)));
            for i in 0..7 {
                log.append(&[&batch(1, 90, 100 + i)]).unwrap();
            }
            faulty.crash(mode);
            drop(log);
            let log = open(store, small_config());
            let after = read_all(&log, Offset(0));
            assert!(after.len() >= durable.len(), "{mode:?} lost synced data");
            assert_eq!(after[..durable.len()], durable[..], "{mode:?}");
            for (i, (offset, bytes)) in after[durable.len()..].iter().enumerate() {
                assert_eq!(*offset, Offset(24 + i as i64));
                assert_eq!(
                    *bytes,
                    batch(1, 90, 100 + i as i64),
                    "{mode:?}: only whole, written batches survive"
                );
            }
        }
    }
}

#[test]
fn segments_recovered_after_a_crash_keep_their_max_timestamps_for_retention() {
    // 1 KiB segments of three 300-byte batches, with no index entry inside them: the
    // only record of each segment's newest timestamp is the entry written when it
    // is sealed, here by recovery.
    let config = spool_log::LogConfig {
        segment_bytes: 1024,
        retention_ms: Some(1000),
        ..small_config()
    };
    let config = spool_log::LogConfig {
        index_interval_bytes: 4096,
        ..config
    };
    let (_root, store) = local();
    let now = 10_000_000;
    {
        let log = open(store.clone(), config.clone());
        for i in 0..12 {
            let timestamp = if i < 9 { now - 60_000 } else { now };
            log.append(&[&batch(1, 240, timestamp)]).unwrap();
        }
        log.sync().unwrap();
        // Dropped without close: the next open recovers by scanning.
    }
    drop(open(store.clone(), config.clone()));
    let log = open(store, config);
    let deleted = log.enforce_retention(spool_model::Timestamp(now)).unwrap();
    assert_eq!(deleted, 3, "the three all-old segments go");
    assert_eq!(log.offsets().log_start, Offset(9));
}

#[test]
fn a_panic_mid_append_poisons_the_partition_until_it_is_reopened() {
    let store = Arc::new(FaultyStore::new(3));
    let log = common::open(store.clone(), common::small_config());
    let first = common::batch(3, 100, 1000);
    log.append(&[&first]).unwrap();
    log.sync().unwrap();
    store.panic_on_next_write();
    let second = common::batch(2, 100, 2000);
    let panicked =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| log.append(&[&second])));
    assert!(panicked.is_err(), "the injected panic happened");
    // Poisoned: reads and writes refused, not carried on from a half-changed state.
    assert!(matches!(
        log.append(&[&second]),
        Err(LogError::Failed { .. })
    ));
    assert!(matches!(
        log.read(Offset(0), 1 << 20),
        Err(LogError::Failed { .. })
    ));
    drop(log);
    // Reopened (as at the next start), it recovers what is on disk and serves again.
    let log = common::open(store, common::small_config());
    assert_eq!(
        common::read_all(&log, Offset(0))[0].1,
        common::unpatched(&first)
    );
    assert_eq!(log.append(&[&second]).unwrap().base_offset, Offset(3));
}

#[test]
fn the_leader_epoch_history_survives_a_crash_and_drops_epochs_past_the_recovered_end() {
    for (seed, mode) in [
        (1, CrashMode::DropUnsynced),
        (2, CrashMode::TearUnsynced),
        (3, CrashMode::GarbleUnsynced),
    ] {
        let faulty = FaultyStore::new(seed);
        let store: Arc<dyn Store> = Arc::new(faulty.clone());
        let log = open(store.clone(), small_config());
        let mut epoch_of_batch = Vec::new();
        for (epoch, batches) in [(0, 5), (1, 3)] {
            log.become_leader(epoch).unwrap();
            for i in 0..batches {
                log.append(&[&batch(2, 50, i)]).unwrap();
                epoch_of_batch.push(epoch);
            }
            log.sync().unwrap();
        }
        log.become_leader(2).unwrap();
        for i in 0..4 {
            log.append(&[&batch(2, 50, i)]).unwrap();
        }
        // Epoch 3 begins at 24, past everything synced.
        log.become_leader(3).unwrap();
        faulty.crash(mode);
        drop(log);

        let log = open(store, small_config());
        let end = log.offsets().log_end;
        assert!(end >= Offset(16), "{mode:?}: synced batches kept");
        let history: Vec<(i32, i64)> = log
            .leader_epoch_history()
            .iter()
            .map(|entry| (entry.epoch, entry.start.0))
            .collect();
        let mut expected = vec![(0, 0), (1, 10), (2, 16)];
        if end >= Offset(24) {
            expected.push((3, 24));
        }
        assert_eq!(history, expected, "{mode:?}: log end {end}");
        assert_eq!(log.end_offset_for_epoch(0).unwrap(), (0, Offset(10)));
        assert_eq!(log.end_offset_for_epoch(1).unwrap(), (1, Offset(16)));
        let stamped: Vec<i32> = read_all(&log, Offset(0))
            .iter()
            .take(epoch_of_batch.len())
            .map(|(_, bytes)| i32::from_be_bytes(bytes[12..16].try_into().unwrap()))
            .collect();
        assert_eq!(
            stamped, epoch_of_batch,
            "{mode:?}: each batch carries its epoch"
        );
        // The next epoch begins at the recovered end.
        log.become_leader(4).unwrap();
        let epoch_2_ends = if end >= Offset(24) { Offset(24) } else { end };
        assert_eq!(log.end_offset_for_epoch(2).unwrap(), (2, epoch_2_ends));
        assert_eq!(log.end_offset_for_epoch(4).unwrap(), (4, end));
    }
}
