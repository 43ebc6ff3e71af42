//! `--check-back`: the transactional writers' transactions are checked back (the
//! broker asks their application before it aborts an open one). The application here
//! is the run itself: each writer notes what it decided for its open transaction —
//! commit only once every record of it was delivered, as an application commits its
//! database transaction only after its message was written — and an HTTP checker
//! answers the broker from those notes: COMMIT or ROLLBACK as decided, UNKNOWN while
//! the writer has not decided yet (the broker asks again; the run sets the attempts
//! high enough that a writer always decides first). A writer has one transaction open
//! at a time, decides it before it begins the next, and a new producer of its id
//! settles the open one before it may begin: the note of its id is the note of the
//! transaction asked about.
//!
//! The checks then hold the broker to the notes: a transaction decided to commit is
//! committed however its client call ended, one decided otherwise never is.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use spool_metadata::{MetadataUrl, TxnCheckerRecord};

use crate::CheckError;

/// The transactional ids the checker answers for: the writers'.
pub(crate) const PREFIX: &str = "faultcheck-writer-";

/// The most bytes of a check read.
const CHECK_MAX: usize = 1 << 20;

/// What a writer decided for its open transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Not decided yet.
    Open,
    Commit,
    Rollback,
}

/// The writers' notes, by transactional id, and the checks answered.
#[derive(Debug, Default)]
pub(crate) struct Decisions {
    by_id: Mutex<HashMap<String, Decision>>,
    pub(crate) checks: AtomicU64,
}

impl Decisions {
    pub(crate) fn note(&self, transactional_id: &str, decision: Decision) {
        self.by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(transactional_id.to_owned(), decision);
    }

    fn answer(&self, transactional_id: &str) -> &'static str {
        self.checks.fetch_add(1, Ordering::Relaxed);
        let decided = self
            .by_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(transactional_id)
            .copied();
        match decided {
            Some(Decision::Commit) => "COMMIT",
            Some(Decision::Rollback) => "ROLLBACK",
            Some(Decision::Open) | None => "UNKNOWN",
        }
    }
}

/// The HTTP checker, until dropped.
#[derive(Debug)]
pub(crate) struct Checker {
    pub(crate) url: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Checker {
    pub(crate) fn start(decisions: Arc<Decisions>) -> Result<Checker, CheckError> {
        let here = std::path::Path::new("127.0.0.1:0");
        let listener = TcpListener::bind("127.0.0.1:0").map_err(CheckError::io("bind", here))?;
        listener
            .set_nonblocking(true)
            .map_err(CheckError::io("configure", here))?;
        let address = listener
            .local_addr()
            .map_err(CheckError::io("address", here))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => serve(stream, &decisions),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(Checker {
            url: format!("http://{address}/check"),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Answers one check (one request per connection).
fn serve(mut stream: TcpStream, decisions: &Decisions) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let Some(body) = read_request(&mut stream) else {
        return;
    };
    let id = serde_json::from_slice::<serde_json::Value>(&body)
        .ok()
        .and_then(|check| check["transactional_id"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let answer = decisions.answer(&id);
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    let _ = stream.write_all(reply.as_bytes());
}

/// The body of an HTTP request with a `Content-Length`.
fn read_request(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chunk = [0_u8; 4096];
    loop {
        if let Some(end) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&bytes[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .and_then(|value| value.trim().parse().ok())?;
            let body_start = end + 4;
            while bytes.len() < body_start + length {
                let read = stream.read(&mut chunk).ok().filter(|n| *n > 0)?;
                bytes.extend_from_slice(chunk.get(..read)?);
            }
            return bytes
                .get(body_start..body_start + length)
                .map(<[u8]>::to_vec);
        }
        if bytes.len() > CHECK_MAX {
            return None;
        }
        let read = stream.read(&mut chunk).ok().filter(|n| *n > 0)?;
        bytes.extend_from_slice(chunk.get(..read)?);
    }
}

/// Adds the checker of the writers' ids to the metadata store at `url`.
pub(crate) fn register(url: &str, checker: &Checker) -> Result<(), CheckError> {
    let parsed = MetadataUrl::parse(url).map_err(CheckError::Invalid)?;
    let record = TxnCheckerRecord {
        prefix: PREFIX.to_owned(),
        url: checker.url.clone(),
        headers: Vec::new(),
        timeout_ms: 5_000,
        ca_pem: None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CheckError::io(
            "start a runtime for",
            std::path::Path::new("the store"),
        ))?;
    runtime
        .block_on(async {
            let store = spool_metadata::open(&parsed).await?;
            store.put_txn_checker(&record).await
        })
        .map_err(|error| CheckError::Broker(format!("adding the transaction checker: {error}")))
}
