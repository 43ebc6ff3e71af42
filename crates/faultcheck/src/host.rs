//! The broker under test, and the ways it dies:
//!
//! - [`Mode::Kill`]: a `spool serve` child process, killed with SIGKILL. The page
//!   cache survives, as it does when only the process dies.
//! - [`Mode::Cluster`]: one of several such processes sharing storage, which may also
//!   be paused (SIGSTOP, then SIGCONT) or stopped cleanly (SIGTERM).
//! - [`Mode::Machine`]: a broker in this process on a [`FaultyStore`]. Its machine
//!   "crashes": every file operation of that broker fails from that instant, its tasks
//!   are dropped, and the store keeps what was synced, plus nothing, a torn prefix or
//!   garbage in place of the rest (`--crash drop|tear|garble`). The metadata database
//!   (topics, committed offsets) stays on the real disk under SQLite's own fsyncs.
//!
//! Either way the broker forms groups without `group.initial.rebalance.delay.ms`
//! (every life is short, and the group must re-form in each), gives consumer-protocol
//! members the classic members' session (6 s) and heartbeat (0.5 s), looks for
//! transactions past their timeout twice a second, and checks back undecided ones
//! twice a second for as long as it takes.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use spool_broker::{Broker, BrokerConfig};
use spool_store::{CrashMode, FaultyStore};

use crate::fence::{Fence, FencedStore};

/// The consumer protocol's session and heartbeat, as the classic members use them.
const CONSUMER_GROUP_SETTINGS: [&str; 4] = [
    "group.consumer.min.session.timeout.ms=1000",
    "group.consumer.session.timeout.ms=6000",
    "group.consumer.min.heartbeat.interval.ms=100",
    "group.consumer.heartbeat.interval.ms=500",
];
use crate::{CheckError, Crash, Mode};

/// How often the brokers look for transactions past their timeout: often, so that
/// what a killed client left open is aborted soon.
const TXN_TIMEOUT_CHECK: Duration = Duration::from_millis(500);

/// Check-back (`--check-back`): an undecided transaction is asked about again every
/// half second, and for longer than any writer takes to decide (a writer's call may
/// wait out a broker's death), so that only the writer's decision settles it.
const CHECK_BACK_SETTINGS: [&str; 2] = [
    "transaction.check.interval.ms=500",
    "transaction.check.max.attempts=1000",
];

/// How long a broker has to come up before the run fails.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// The broker's data directory's instance id (see the broker's `instance_id`).
const INSTANCE_FILE: &str = "instance";

#[derive(Debug)]
pub(crate) struct Host {
    address: SocketAddr,
    data_dir: PathBuf,
    kind: Kind,
}

/// Kill mode over shared storage: where partitions and metadata live, while every
/// life of the broker starts on an empty data directory.
#[derive(Debug, Clone)]
pub(crate) struct SharedStorage {
    pub(crate) storage_url: String,
    pub(crate) metadata_url: String,
    /// The broker's node id in the cluster, and `--set` settings for it.
    pub(crate) node_id: i32,
    pub(crate) settings: Vec<String>,
    /// Where its admin listener (`/metrics`) is; none by default.
    pub(crate) admin: Option<SocketAddr>,
}

#[derive(Debug)]
enum Kind {
    Process {
        binary: PathBuf,
        child: Option<Child>,
        shared: Option<SharedStorage>,
    },
    Machine {
        store: FaultyStore,
        crash: CrashMode,
        life: Option<Life>,
    },
}

/// One life of the in-process broker: its runtime lives on its own thread until told
/// to die.
#[derive(Debug)]
struct Life {
    fence: Fence,
    die: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl Host {
    /// A host for `mode` on a free loopback port; nothing runs until [`Host::start`].
    pub(crate) fn new(
        mode: Mode,
        crash: Crash,
        data_dir: &Path,
        binary: PathBuf,
        seed: u64,
        shared: Option<SharedStorage>,
    ) -> Result<Host, CheckError> {
        std::fs::create_dir_all(data_dir).map_err(CheckError::io("create", data_dir))?;
        let address = free_port()?;
        let kind = match mode {
            Mode::Kill | Mode::Cluster => Kind::Process {
                binary,
                child: None,
                shared,
            },
            Mode::Machine => Kind::Machine {
                store: FaultyStore::new(seed),
                crash: match crash {
                    Crash::Drop => CrashMode::DropUnsynced,
                    Crash::Tear => CrashMode::TearUnsynced,
                    Crash::Garble => CrashMode::GarbleUnsynced,
                },
                life: None,
            },
        };
        Ok(Host {
            address,
            data_dir: data_dir.to_path_buf(),
            kind,
        })
    }

    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// Starts the broker and waits until it accepts connections.
    pub(crate) fn start(&mut self) -> Result<(), CheckError> {
        let deadline = Instant::now() + START_TIMEOUT;
        match &mut self.kind {
            Kind::Process {
                binary,
                child,
                shared,
            } => {
                let log = self.data_dir.join("broker.log");
                let broker_dir = self.data_dir.join("broker");
                let mut shared_args = Vec::new();
                let mut admin = "off".to_owned();
                if let Some(shared) = shared {
                    // Nothing of the last life's data directory is kept but its
                    // instance id: the same machine back after a crash takes its
                    // node id back at once (a new instance waits for the lease).
                    if broker_dir.exists() {
                        let instance = std::fs::read(broker_dir.join(INSTANCE_FILE)).ok();
                        std::fs::remove_dir_all(&broker_dir)
                            .map_err(CheckError::io("empty", &broker_dir))?;
                        if let Some(instance) = instance {
                            std::fs::create_dir_all(&broker_dir)
                                .and_then(|()| {
                                    std::fs::write(broker_dir.join(INSTANCE_FILE), instance)
                                })
                                .map_err(CheckError::io("keep the instance id in", &broker_dir))?;
                        }
                    }
                    shared_args = vec![
                        "--storage-url".to_owned(),
                        shared.storage_url.clone(),
                        "--metadata-url".to_owned(),
                        shared.metadata_url.clone(),
                        "--node-id".to_owned(),
                        shared.node_id.to_string(),
                    ];
                    for setting in &shared.settings {
                        shared_args.extend(["--set".to_owned(), setting.clone()]);
                    }
                    if let Some(address) = shared.admin {
                        admin = address.to_string();
                    }
                }
                let open_log = || {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(&log)
                        .map_err(CheckError::io("open", &log))
                };
                // Where this life's lines start: it is up once it printed its start
                // line there (its listener is bound before it joins the cluster, which
                // may still fail).
                let log_start = std::fs::metadata(&log).map_or(0, |m| m.len());
                let spawned = Command::new(&*binary)
                    .arg("serve")
                    .arg("--listen")
                    .arg(self.address.to_string())
                    .arg("--data-dir")
                    .arg(&broker_dir)
                    .arg("--admin-listen")
                    .arg(&admin)
                    .args(&shared_args)
                    .arg("--set")
                    .arg("group.initial.rebalance.delay.ms=0")
                    .args(CONSUMER_GROUP_SETTINGS.iter().flat_map(|s| ["--set", s]))
                    .arg("--set")
                    .arg(format!(
                        "transaction.abort.timed.out.transaction.cleanup.interval.ms={}",
                        TXN_TIMEOUT_CHECK.as_millis()
                    ))
                    .args(CHECK_BACK_SETTINGS.iter().flat_map(|s| ["--set", s]))
                    .stdin(Stdio::null())
                    .stdout(open_log()?)
                    .stderr(open_log()?)
                    .spawn()
                    .map_err(CheckError::io("start", binary))?;
                *child = Some(spawned);
                wait_until_started(&log, log_start, deadline, || {
                    child
                        .as_mut()
                        .and_then(|c| c.try_wait().ok().flatten())
                        .map(|status| {
                            format!("the broker exited with {status}; see {}", log.display())
                        })
                })
            }
            Kind::Machine { store, life, .. } => {
                let mut config = BrokerConfig {
                    listen: self.address,
                    data_dir: self.data_dir.join("broker"),
                    ..BrokerConfig::default()
                };
                config.groups.initial_rebalance_delay = Duration::ZERO;
                for setting in CONSUMER_GROUP_SETTINGS {
                    let (name, value) = setting.split_once('=').unwrap_or_default();
                    config.set(name, value).map_err(CheckError::Invalid)?;
                }
                config.transactions.timeout_check_interval = TXN_TIMEOUT_CHECK;
                for setting in CHECK_BACK_SETTINGS {
                    let (name, value) = setting.split_once('=').unwrap_or_default();
                    config.set(name, value).map_err(CheckError::Invalid)?;
                }
                let started = loop {
                    // The listener of the previous life closes as its runtime winds down,
                    // which may take a moment.
                    match start_in_process(config.clone(), store) {
                        Ok(started) => break started,
                        Err(_) if Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        Err(error) => return Err(error),
                    }
                };
                *life = Some(started);
                Ok(())
            }
        }
    }

    /// Kills the broker: SIGKILL, or a crash of its machine.
    pub(crate) fn crash(&mut self) -> Result<(), CheckError> {
        match &mut self.kind {
            Kind::Process { child, .. } => {
                if let Some(mut child) = child.take() {
                    let _ = child.kill();
                    child
                        .wait()
                        .map_err(CheckError::io("wait for", Path::new("the broker")))?;
                }
            }
            Kind::Machine { store, crash, life } => {
                if let Some(life) = life.take() {
                    life.fence.cut();
                    let _ = life.die.send(());
                    let _ = life.thread.join();
                    store.crash(*crash);
                }
            }
        }
        Ok(())
    }
}

impl Host {
    /// Sends `signal` (`STOP`, `CONT`, `TERM`) to the broker process; nothing in
    /// machine mode or when it is not running.
    fn signal(&self, signal: &str) -> Result<(), CheckError> {
        let Kind::Process {
            child: Some(child), ..
        } = &self.kind
        else {
            return Ok(());
        };
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .map_err(CheckError::io("run", Path::new("kill")))?;
        if status.success() {
            Ok(())
        } else {
            Err(CheckError::Broker(format!(
                "kill -{signal} failed: {status}"
            )))
        }
    }

    /// Pauses the broker process (SIGSTOP): it holds its connections and believes
    /// what it believed, while its lease runs out.
    pub(crate) fn pause(&self) -> Result<(), CheckError> {
        self.signal("STOP")
    }

    /// Lets a paused broker process run again (SIGCONT).
    pub(crate) fn resume(&self) -> Result<(), CheckError> {
        self.signal("CONT")
    }

    /// Stops the broker process cleanly (SIGTERM) and waits for it to exit (killing it
    /// after [`START_TIMEOUT`]).
    pub(crate) fn terminate(&mut self) -> Result<(), CheckError> {
        self.signal("TERM")?;
        let Kind::Process { child, .. } = &mut self.kind else {
            return Ok(());
        };
        let deadline = Instant::now() + START_TIMEOUT;
        while let Some(running) = child.as_mut() {
            if running.try_wait().ok().flatten().is_some() {
                *child = None;
                break;
            }
            if Instant::now() > deadline {
                return self.crash();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(())
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.crash();
    }
}

/// Starts a broker on `store` in a runtime of its own thread; returns once it listens.
fn start_in_process(config: BrokerConfig, store: &FaultyStore) -> Result<Life, CheckError> {
    let fence = Fence::default();
    let fenced = Arc::new(FencedStore::new(Arc::new(store.clone()), fence.clone()));
    let (ready_tx, ready_rx) = mpsc::channel();
    let (die, dead) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("faultcheck-broker".to_owned())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = ready_tx.send(Err(error.to_string()));
                    return;
                }
            };
            match runtime.block_on(Broker::builder(config).log_store(fenced).start()) {
                // The broker is never shut down: its machine crashes.
                Ok(broker) => {
                    let _ = ready_tx.send(Ok(()));
                    let _ = dead.recv();
                    drop(broker);
                }
                Err(error) => {
                    let _ = ready_tx.send(Err(error.to_string()));
                }
            }
            // Waits for the tasks to be dropped (the listener with them), so the next
            // life can bind the port; blocking work of this life fails at the fence.
            runtime.shutdown_timeout(Duration::from_secs(10));
        })
        .map_err(CheckError::io("spawn", Path::new("the broker thread")))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(Life { fence, die, thread }),
        Ok(Err(message)) => {
            let _ = thread.join();
            Err(CheckError::Broker(message))
        }
        Err(_) => Err(CheckError::Broker("the broker thread died".to_owned())),
    }
}

pub(crate) fn free_port() -> Result<SocketAddr, CheckError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(CheckError::io("bind", Path::new("127.0.0.1:0")))?;
    listener
        .local_addr()
        .map_err(CheckError::io("bind", Path::new("127.0.0.1:0")))
}

/// The line `spool serve` prints once it serves (see the CLI's `serve`).
const START_LINE: &str = "spool listening on ";

/// Waits until the broker's log shows its start line after `offset`, failing when it
/// `exited` or the deadline passes first.
fn wait_until_started(
    log: &Path,
    offset: u64,
    deadline: Instant,
    mut exited: impl FnMut() -> Option<String>,
) -> Result<(), CheckError> {
    loop {
        if printed_since(log, offset, START_LINE) {
            return Ok(());
        }
        if let Some(message) = exited() {
            return Err(CheckError::Broker(message));
        }
        if Instant::now() > deadline {
            return Err(CheckError::Broker(format!(
                "the broker did not start within {START_TIMEOUT:?}; see {}",
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `text` is in the file at `path` past `offset`.
fn printed_since(path: &Path, offset: u64, text: &str) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut since = Vec::new();
    let read = std::fs::File::open(path).and_then(|mut file| {
        file.seek(SeekFrom::Start(offset))?;
        file.read_to_end(&mut since)
    });
    read.is_ok() && String::from_utf8_lossy(&since).contains(text)
}
