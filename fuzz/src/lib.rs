//! What each fuzz target checks, as plain functions that the targets in
//! `fuzz_targets/` call.
//!
//! Beyond "no panic", each states a property: a batch that validates is exactly the
//! bytes given; a log recovered from arbitrary bytes holds only whole batches that pass
//! validation, at consecutive offsets.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use spool_log::{LogManager, ManagerConfig};
use spool_model::{Offset, TopicName, TopicPartition};
use spool_protocol::batch::{self, BatchFrames, BatchRules};
use spool_protocol::{frame, records, request};
use spool_store::{MemoryStore, OpenMode, Store};

/// The largest frame the fuzzed broker would accept.
const FRAME_LIMIT: usize = 1 << 20;

/// A request frame (what follows the 4-byte length) through header and body decoding,
/// as the connection does it: every API key and version comes from the bytes.
pub fn request_decoding(data: &[u8]) {
    let _ = frame::check_frame(data, FRAME_LIMIT);
    let _ = request::correlation_id(data);
    if let Ok(envelope) = request::decode_header(Bytes::copy_from_slice(data)) {
        let _ = request::decode_body(&envelope);
    }
}

/// Record-batch validation under both rule sets, and the walks over batches that the
/// produce path and the timestamp lookup make.
pub fn batch_validation(data: &[u8]) {
    for rules in [BatchRules::Produce, BatchRules::Stored] {
        if let Ok(header) = batch::validate_batch(data, rules) {
            assert_eq!(
                header.total_len(),
                data.len(),
                "a valid batch is the whole input"
            );
            assert!(batch::validate_crc(data, &header).is_ok());
        }
    }
    let mut covered = 0;
    for frame in BatchFrames::new(data) {
        match frame {
            Ok((header, bytes)) => {
                assert_eq!(header.total_len(), bytes.len());
                covered += bytes.len();
                let _ = batch::validate_crc(bytes, &header);
                let _ = records::record_stamps(bytes);
            }
            Err(_) => break,
        }
    }
    assert!(covered <= data.len());
}

/// A partition whose segment file holds `data` (after an optional checkpoint file, when
/// the first two bytes give its length), opened as after a crash, then read whole.
/// Without a checkpoint, recovery must keep only whole, valid batches; with one, the
/// log trusts what the checkpoint says was durable (as Kafka trusts its recovery
/// point), so only the absence of panics and the offset invariants are checked.
pub fn log_recovery(data: &[u8]) {
    let (checkpoint, segment) = split_checkpoint(data);
    let scanned_whole = checkpoint.is_none();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let partition =
        TopicPartition::new(TopicName::new("fuzz").unwrap_or_else(|_| unreachable!()), 0);
    let dir = {
        let Ok(manager) = LogManager::open(store.clone(), manager_config()) else {
            return;
        };
        let Ok(log) = manager.create_partition(&partition) else {
            return;
        };
        let dir = log.dir().to_path_buf();
        drop(log);
        let _ = manager.shutdown();
        dir
    };
    let Some(segment_path) = first_segment(store.as_ref(), &dir) else {
        return;
    };
    overwrite(store.as_ref(), &segment_path, segment);
    let checkpoint_path = dir.join("checkpoint");
    let _ = store.remove_file(&checkpoint_path);
    if let Some(checkpoint) = checkpoint {
        overwrite(store.as_ref(), &checkpoint_path, checkpoint);
    }

    let Ok(manager) = LogManager::open(store, manager_config()) else {
        return;
    };
    let Ok(Some(log)) = manager.partition(&partition) else {
        return;
    };
    let offsets = log.offsets();
    assert!(offsets.log_start <= offsets.high_watermark);
    assert!(offsets.high_watermark <= offsets.log_end);
    let mut next = offsets.log_start;
    while next < offsets.high_watermark {
        let Ok(read) = log.read(next, 1 << 20) else {
            return;
        };
        let Ok(bytes) = read.to_vec() else {
            return;
        };
        if bytes.is_empty() {
            break;
        }
        for frame in BatchFrames::new(&bytes) {
            let (header, batch) = match frame {
                Ok(frame) => frame,
                Err(error) if scanned_whole => panic!("recovered log holds a bad frame: {error}"),
                Err(_) => return,
            };
            if scanned_whole && let Err(error) = batch::validate_batch(batch, BatchRules::Stored) {
                panic!("recovered log holds an invalid batch: {error}");
            }
            if header.last_offset() < next {
                assert!(
                    !scanned_whole,
                    "batch ending at {:?} read at {next:?}",
                    header.last_offset()
                );
                return;
            }
            next = Offset(header.last_offset().0 + 1);
        }
    }
}

/// One flush thread: each run opens two managers, and threads are most of its cost.
fn manager_config() -> ManagerConfig {
    ManagerConfig {
        flush_threads: 1,
        ..ManagerConfig::default()
    }
}

fn split_checkpoint(data: &[u8]) -> (Option<&[u8]>, &[u8]) {
    let Some((length, rest)) = data.split_first_chunk::<2>() else {
        return (None, data);
    };
    let length = usize::from(u16::from_be_bytes(*length));
    if length == 0 || length > rest.len() {
        return (None, rest);
    }
    let (checkpoint, segment) = rest.split_at(length);
    (Some(checkpoint), segment)
}

fn first_segment(store: &dyn Store, dir: &Path) -> Option<std::path::PathBuf> {
    let entries = store.list_dir(dir).ok()?;
    entries
        .iter()
        .find(|entry| entry.name.ends_with(".log"))
        .map(|entry| dir.join(&entry.name))
}

fn overwrite(store: &dyn Store, path: &Path, bytes: &[u8]) {
    if let Ok(file) = store.open(path, OpenMode::Create) {
        let _ = file.set_len(0);
        let _ = file.write_at(bytes, 0);
        let _ = file.sync();
    }
}
