//! What each fuzz target checks, as plain functions that the targets in
//! `fuzz_targets/` call.
//!
//! Beyond "no panic", each states a property: a batch that validates is exactly the
//! bytes given; a log recovered from arbitrary bytes holds only whole batches that pass
//! validation, at increasing offsets, up to its high watermark.
//!
//! Memory is capped: an allocation that would take the process past
//! [`MEMORY_LIMIT`] fails and aborts the run, which libFuzzer reports with the input.
//! That is how a count read from the input sizing a buffer shows up (libFuzzer's own
//! `-malloc_limit_mb` needs a sanitizer runtime, which these builds do without).

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use spool_log::{LogManager, ManagerConfig};
use spool_model::{TopicName, TopicPartition};
use spool_protocol::batch::{self, BatchFrames, BatchRules};
use spool_protocol::{frame, message_set, records, request};
use spool_store::{MemoryStore, OpenMode, Store};

/// What the whole process may hold.
pub const MEMORY_LIMIT: usize = 512 << 20;

#[global_allocator]
static ALLOCATOR: cap::Cap<std::alloc::System> = cap::Cap::new(std::alloc::System, MEMORY_LIMIT);

/// The largest frame the fuzzed broker would accept.
const FRAME_LIMIT: usize = 1 << 20;

/// A request frame (what follows the 4-byte length) through header and body decoding,
/// as the broker takes it: a version Kafka 4 removed is first converted by the bridge
/// (`request::bridge`, through the older `kafka-protocol`); every API key and version
/// comes from the bytes. The same bytes also go through the frame-length check, read
/// as a length prefix.
pub fn request_decoding(data: &[u8]) {
    let _ = frame::check_frame(data, FRAME_LIMIT);
    let _ = request::correlation_id(data);
    if let Ok(mut envelope) = request::decode_header(Bytes::copy_from_slice(data)) {
        if request::bridge(&mut envelope).is_ok() {
            let _ = request::decode_body(&envelope);
        }
    }
}

/// Record-batch validation under both rule sets, the walks over batches that the
/// produce path and the timestamp lookup make, and the conversions of old clients'
/// message sets (formats v0/v1) to a batch and back.
pub fn batch_validation(data: &[u8]) {
    let _ = message_set::to_batch(data);
    for magic in [0, 1] {
        let _ = message_set::from_batches(data, magic);
    }
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
        let bytes = log
            .read(next, 1 << 20)
            .map_err(|e| e.to_string())
            .and_then(|read| read.to_vec().map_err(|e| e.to_string()));
        let bytes = match bytes {
            Ok(bytes) if !bytes.is_empty() => bytes,
            // Below the high watermark of a log recovered by a scan, data must be there.
            other => {
                assert!(
                    !scanned_whole,
                    "no data at {next:?} below {offsets:?}: {other:?}"
                );
                return;
            }
        };
        let mut first = true;
        for frame in BatchFrames::new(&bytes) {
            let (header, batch) = match frame {
                Ok(frame) => frame,
                Err(error) if scanned_whole => panic!("recovered log holds a bad frame: {error}"),
                Err(_) => return,
            };
            if scanned_whole && let Err(error) = batch::validate_batch(batch, BatchRules::Stored) {
                panic!("recovered log holds an invalid batch: {error}");
            }
            // The first batch of a read holds `next` or starts after it; later ones
            // follow without overlapping.
            let in_order = header.last_offset() >= next && (first || header.base_offset >= next);
            if !in_order {
                assert!(
                    !scanned_whole,
                    "batch {:?}..={:?} read at {next:?}",
                    header.base_offset,
                    header.last_offset()
                );
                return;
            }
            first = false;
            next = header.next_offset();
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

/// What a client sends before it is authenticated, through each SASL mechanism's
/// checks: the first byte picks PLAIN, SCRAM (client-first NUL client-final) or
/// OAUTHBEARER (the client response, then its token against a key set, unsecured
/// tokens allowed so that their claims are read too). Beyond "no panic": what passes
/// is what the mechanism allows.
pub fn sasl_exchange(data: &[u8]) {
    use spool_sasl::{jwt, oauth, plain, scram};
    let Some((&mode, message)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            if let Ok(login) = plain::parse(message) {
                assert!(!login.user.is_empty() && login.user.len() <= plain::FIELD_MAX);
                assert_eq!(message.iter().filter(|byte| **byte == 0).count(), 2);
            }
        }
        1 => {
            let mut parts = message.splitn(2, |byte| *byte == 0);
            let first = parts.next().unwrap_or_default();
            let Ok(first) = scram::parse_client_first(first) else {
                return;
            };
            assert!(!first.user.is_empty());
            let (exchange, challenge) = scram::ServerExchange::start(first, scram_credential());
            assert!(challenge.starts_with(b"r="));
            if let Some(last) = parts.next() {
                // The server nonce is random: a final message found by the fuzzer
                // cannot name it, so it must fail.
                assert!(exchange.finish(last).is_err());
            }
        }
        _ => {
            let Ok(response) = oauth::parse_client_response(message) else {
                return;
            };
            assert!(!response.token.is_empty() && response.token.len() <= oauth::TOKEN_MAX);
            let (keys, rules) = token_checks();
            if let Ok(verified) = jwt::verify(&response.token, keys, rules, 0) {
                assert!(!verified.principal.is_empty());
                assert!(response.token.ends_with('.'), "only unsecured tokens pass");
            }
        }
    }
}

/// A credential made once (its PBKDF2 is slow).
fn scram_credential() -> spool_sasl::scram::Credential {
    use spool_sasl::scram::{Credential, MIN_ITERATIONS, Mechanism};
    static CREDENTIAL: std::sync::OnceLock<Credential> = std::sync::OnceLock::new();
    CREDENTIAL
        .get_or_init(|| Credential::new(Mechanism::Sha256, b"secret", MIN_ITERATIONS))
        .clone()
}

/// A key set of one key made for the run, and rules that take unsecured tokens.
fn token_checks() -> &'static (jsonwebtoken::jwk::JwkSet, spool_sasl::jwt::TokenRules) {
    use spool_testkit::tokens::{SigningKey, key_set_json};
    static CHECKS: std::sync::OnceLock<(jsonwebtoken::jwk::JwkSet, spool_sasl::jwt::TokenRules)> =
        std::sync::OnceLock::new();
    CHECKS.get_or_init(|| {
        let json = key_set_json(&[&SigningKey::ec("fuzz")]);
        let keys = spool_sasl::jwt::parse_key_set(json.as_bytes())
            .unwrap_or_else(|error| unreachable!("{error}"));
        let rules = spool_sasl::jwt::TokenRules {
            allow_unsecured: true,
            ..spool_sasl::jwt::TokenRules::default()
        };
        (keys, rules)
    })
}
