//! All partition logs of one data directory, opened lazily, with the background work
//! that keeps them flushed, trimmed and checkpointed.
//!
//! Layout: `topics/<topic>/<partition>/` under the store's root. Opening the manager
//! only lists directories; a partition is opened (and recovered, if it needs it) the
//! first time it is asked for, so a data directory with 10,000 partitions opens in
//! the time it takes to list them.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::metrics::histogram::Histogram;
use spool_model::{Timestamp, TopicName, TopicPartition};
use spool_store::Store;

use crate::cleaner::CleanerSettings;
use crate::config::LogConfig;
use crate::error::{LogError, Result};
use crate::file_cache::FileCache;
use crate::partition::PartitionLog;

const TOPICS_DIR: &str = "topics";

/// Settings of the manager's background work.
#[derive(Debug, Clone)]
pub struct ManagerConfig {
    /// Settings for partitions of topics without their own.
    pub default_log: LogConfig,
    /// Open file handles kept by the shared cache.
    pub open_files_limit: usize,
    /// Threads running fsyncs for `FlushPolicy::Durable` partitions.
    pub flush_threads: usize,
    /// `log.retention.check.interval.ms`.
    pub retention_check_interval: Duration,
    /// How often changed checkpoints are written.
    pub checkpoint_interval: Duration,
    /// A partition unused for this long drops its indexes and tail cache.
    pub idle_release_after: Duration,
    /// `producer.id.expiration.ms`: an idempotent producer silent this long in a
    /// partition is forgotten there (checked with retention).
    pub producer_id_expiration: Duration,
    /// The log cleaner's settings; `None` when `log.cleaner.enable` is off.
    pub cleaner: Option<CleanerSettings>,
    /// `log.cleaner.backoff.ms`: the pause between the cleaner's rounds.
    pub cleaner_backoff: Duration,
    /// Observes how long each fsync round takes, in seconds (the broker's
    /// `/metrics`); `None` measures nothing.
    pub sync_timer: Option<Histogram>,
}

impl Default for ManagerConfig {
    fn default() -> Self {
        ManagerConfig {
            default_log: LogConfig::default(),
            open_files_limit: 1024,
            flush_threads: 2,
            retention_check_interval: Duration::from_secs(300),
            checkpoint_interval: Duration::from_secs(60),
            idle_release_after: Duration::from_secs(300),
            producer_id_expiration: Duration::from_secs(24 * 3600),
            cleaner: Some(CleanerSettings::default()),
            cleaner_backoff: Duration::from_secs(15),
            sync_timer: None,
        }
    }
}

/// The partitions of one store.
#[derive(Debug)]
pub struct LogManager {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

#[derive(Debug)]
struct Shared {
    files: Arc<FileCache>,
    config: ManagerConfig,
    slots: RwLock<HashMap<TopicPartition, Arc<Slot>>>,
    topic_configs: RwLock<HashMap<TopicName, LogConfig>>,
    flush_queue: Mutex<VecDeque<Weak<PartitionLog>>>,
    flush_ready: Condvar,
    stopping: AtomicBool,
    /// Wakes the maintenance thread early on shutdown.
    stop_signal: (Mutex<()>, Condvar),
}

/// One partition, opened on first use.
#[derive(Debug, Default)]
struct Slot {
    log: Mutex<Option<Arc<PartitionLog>>>,
    /// Set, under the `log` lock, when the partition is deleted: a caller that found
    /// the slot just before must not reopen (and so recreate) it.
    deleted: AtomicBool,
}

impl LogManager {
    /// Discovers the partitions in `store` (without opening them) and starts the
    /// flush and maintenance threads.
    pub fn open(store: Arc<dyn Store>, config: ManagerConfig) -> Result<LogManager> {
        config.default_log.validate()?;
        let files = Arc::new(FileCache::new(store.clone(), config.open_files_limit));
        let mut slots = HashMap::new();
        let root = PathBuf::from(TOPICS_DIR);
        store
            .create_dir_all(&root)
            .map_err(LogError::io("create directory", &root))?;
        // The directory's name lives in the store's root: without this, a machine crash
        // soon after the first start could lose every partition, synced data and all.
        let store_root = Path::new("");
        store
            .sync_dir(store_root)
            .map_err(LogError::io("fsync directory", store_root))?;
        let mut removed_empty = false;
        for topic in store.list_dir(&root).map_err(LogError::io("list", &root))? {
            let Ok(name) = TopicName::new(topic.name.clone()) else {
                continue;
            };
            let topic_dir = root.join(&topic.name);
            let entries = store
                .list_dir(&topic_dir)
                .map_err(LogError::io("list", &topic_dir))?;
            if entries.is_empty() {
                // A deletion cut after its last partition and before the topic's
                // directory (`delete_partition`), or a creation cut before its first
                // partition: nothing in it, and nothing else would ever remove it.
                tracing::info!(topic = %topic.name, "removing an empty topic directory");
                store
                    .remove_dir_all(&topic_dir)
                    .map_err(LogError::io("delete", &topic_dir))?;
                removed_empty = true;
                continue;
            }
            for partition in entries {
                if let Ok(id) = partition.name.parse::<i32>() {
                    slots.insert(
                        TopicPartition::new(name.clone(), id),
                        Arc::new(Slot::default()),
                    );
                }
            }
        }
        if removed_empty {
            store
                .sync_dir(&root)
                .map_err(LogError::io("fsync directory", &root))?;
        }
        tracing::info!(partitions = slots.len(), "log manager found partitions");
        let shared = Arc::new(Shared {
            files,
            config,
            slots: RwLock::new(slots),
            topic_configs: RwLock::new(HashMap::new()),
            flush_queue: Mutex::new(VecDeque::new()),
            flush_ready: Condvar::new(),
            stopping: AtomicBool::new(false),
            stop_signal: (Mutex::new(()), Condvar::new()),
        });
        let mut threads = Vec::new();
        for n in 0..shared.config.flush_threads.max(1) {
            let shared = shared.clone();
            threads.push(spawn(format!("spool-flush-{n}"), move || {
                shared.run_flusher()
            })?);
        }
        let maintenance = shared.clone();
        threads.push(spawn("spool-log-maintenance".into(), move || {
            maintenance.run_maintenance()
        })?);
        if let Some(settings) = shared.config.cleaner {
            let cleaner = shared.clone();
            threads.push(spawn("spool-log-cleaner".into(), move || {
                cleaner.run_cleaner(settings)
            })?);
        }
        Ok(LogManager {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// The shared file-handle cache (for its open count).
    #[must_use]
    pub fn files(&self) -> &Arc<FileCache> {
        &self.shared.files
    }

    /// Every known partition, opened or not.
    #[must_use]
    pub fn partitions(&self) -> Vec<TopicPartition> {
        let mut all: Vec<_> = read(&self.shared.slots).keys().cloned().collect();
        all.sort();
        all
    }

    /// The partitions opened so far (opening one reads its files: metrics look only
    /// at these).
    #[must_use]
    pub fn opened(&self) -> Vec<(TopicPartition, Arc<PartitionLog>)> {
        read(&self.shared.slots)
            .iter()
            .filter_map(|(partition, slot)| Some((partition.clone(), lock(&slot.log).clone()?)))
            .collect()
    }

    /// Partitions waiting for a flusher to fsync them.
    #[must_use]
    pub fn flush_queue_len(&self) -> usize {
        lock(&self.shared.flush_queue).len()
    }

    /// Sets the log settings of a topic's partitions, including those already open.
    pub fn set_topic_config(&self, topic: &TopicName, config: LogConfig) -> Result<()> {
        config.validate()?;
        for (partition, slot) in read(&self.shared.slots).iter() {
            if &partition.topic == topic
                && let Some(log) = lock(&slot.log).as_ref()
            {
                log.set_config(config.clone())?;
            }
        }
        write(&self.shared.topic_configs).insert(topic.clone(), config);
        Ok(())
    }

    /// The partition's log, opening and recovering it on first use; `None` if the
    /// partition does not exist.
    pub fn partition(&self, partition: &TopicPartition) -> Result<Option<Arc<PartitionLog>>> {
        self.shared.partition(partition)
    }

    /// The partition's log if it is open already: no file is read or created, so an
    /// async task may ask (a shared-storage tail is always open while it serves).
    pub fn opened_partition(&self, partition: &TopicPartition) -> Option<Arc<PartitionLog>> {
        let slot = read(&self.shared.slots).get(partition).cloned()?;
        let log = lock(&slot.log);
        if slot.deleted.load(Ordering::SeqCst) {
            return None;
        }
        log.clone()
    }

    /// Creates a new, empty partition.
    pub fn create_partition(&self, partition: &TopicPartition) -> Result<Arc<PartitionLog>> {
        let slot = {
            let mut slots = write(&self.shared.slots);
            if slots.contains_key(partition) {
                return Err(LogError::PartitionExists(partition.to_string()));
            }
            let slot = Arc::new(Slot::default());
            slots.insert(partition.clone(), slot.clone());
            slot
        };
        let mut log = lock(&slot.log);
        let opened = self.shared.open_log(partition).inspect_err(|_| {
            write(&self.shared.slots).remove(partition);
        })?;
        *log = Some(opened.clone());
        Ok(opened)
    }

    /// Opens the partition as the tail of a shared-storage partition starting at
    /// `start` (see [`PartitionLog::open_tail`]), replacing the log it had here: that
    /// one is fenced, and its files removed.
    pub fn open_tail(
        &self,
        partition: &TopicPartition,
        start: crate::TailStart,
    ) -> Result<Arc<PartitionLog>> {
        let slot = write(&self.shared.slots)
            .entry(partition.clone())
            .or_default()
            .clone();
        let mut log = lock(&slot.log);
        if let Some(old) = log.take() {
            old.fence();
        }
        let opened = self.shared.open_log_with(partition, |files, dir, config| {
            PartitionLog::open_tail(files, dir, config, start)
        })?;
        slot.deleted.store(false, Ordering::SeqCst);
        *log = Some(opened.clone());
        Ok(opened)
    }

    /// Deletes a partition and all its files.
    pub fn delete_partition(&self, partition: &TopicPartition) -> Result<()> {
        let slot = write(&self.shared.slots)
            .remove(partition)
            .ok_or_else(|| LogError::UnknownPartition(partition.to_string()))?;
        let dir = partition_dir(partition);
        {
            let mut open = lock(&slot.log);
            slot.deleted.store(true, Ordering::SeqCst);
            // Whoever still holds the log (a request, the flusher) must not write
            // into files that a new partition of the same name may reuse.
            if let Some(log) = open.take() {
                log.fence();
            }
        }
        self.shared.files.forget_dir(&dir);
        let store = self.shared.files.store();
        store
            .remove_dir_all(&dir)
            .map_err(LogError::io("delete", &dir))?;
        let topics = PathBuf::from(TOPICS_DIR);
        let topic_dir = topics.join(partition.topic.as_str());
        if store
            .list_dir(&topic_dir)
            .is_ok_and(|entries| entries.is_empty())
        {
            store
                .remove_dir_all(&topic_dir)
                .map_err(LogError::io("delete", &topic_dir))?;
            store
                .sync_dir(&topics)
                .map_err(LogError::io("fsync directory", &topics))?;
        } else {
            store
                .sync_dir(&topic_dir)
                .map_err(LogError::io("fsync directory", &topic_dir))?;
        }
        Ok(())
    }

    /// Stops the background threads, then syncs and checkpoints every open partition
    /// so the next start needs no recovery scan.
    pub fn shutdown(&self) -> Result<()> {
        {
            // Set under the locks the threads check the flag under: a thread between
            // its check and its wait would otherwise sleep through the wake-up.
            let _queue = lock(&self.shared.flush_queue);
            let _signal = lock(&self.shared.stop_signal.0);
            self.shared.stopping.store(true, Ordering::SeqCst);
        }
        self.shared.flush_ready.notify_all();
        self.shared.stop_signal.1.notify_all();
        for thread in lock(&self.threads).drain(..) {
            let _ = thread.join();
        }
        let mut first_error = None;
        for log in self.shared.open_logs() {
            if let Err(error) = log.close() {
                tracing::error!(dir = %log.dir().display(), %error, "closing partition failed");
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for LogManager {
    fn drop(&mut self) {
        if !lock(&self.threads).is_empty() {
            let _ = self.shutdown();
        }
    }
}

impl Shared {
    fn partition(
        self: &Arc<Self>,
        partition: &TopicPartition,
    ) -> Result<Option<Arc<PartitionLog>>> {
        let Some(slot) = read(&self.slots).get(partition).cloned() else {
            return Ok(None);
        };
        let mut log = lock(&slot.log);
        if slot.deleted.load(Ordering::SeqCst) {
            return Ok(None);
        }
        if let Some(log) = log.as_ref() {
            return Ok(Some(log.clone()));
        }
        let opened = self.open_log(partition)?;
        *log = Some(opened.clone());
        Ok(Some(opened))
    }

    /// The log cleaner: every `cleaner_backoff`, a pass over each partition of the
    /// compacted topics (opening those not open yet), until none is due.
    fn run_cleaner(self: &Arc<Self>, settings: CleanerSettings) {
        loop {
            {
                let guard = lock(&self.stop_signal.0);
                // Checked under the lock that shutdown sets it under: no lost wake-up.
                if self.stopping.load(Ordering::SeqCst) {
                    return;
                }
                let _ = self
                    .stop_signal
                    .1
                    .wait_timeout(guard, self.config.cleaner_backoff);
            }
            let compacted: Vec<TopicPartition> = {
                let configs = read(&self.topic_configs);
                read(&self.slots)
                    .keys()
                    .filter(|p| configs.get(&p.topic).is_some_and(|c| c.cleanup.compact))
                    .cloned()
                    .collect()
            };
            for partition in compacted {
                if self.stopping.load(Ordering::SeqCst) {
                    return;
                }
                let log = match self.partition(&partition) {
                    Ok(Some(log)) => log,
                    Ok(None) => continue,
                    Err(error) => {
                        tracing::error!(%partition, %error, "the cleaner cannot open the partition");
                        continue;
                    }
                };
                if let Err(error) = log.clean(Timestamp::now(), &settings, &self.stopping) {
                    tracing::error!(%partition, %error, "cleaning failed");
                }
            }
        }
    }

    fn open_log(self: &Arc<Self>, partition: &TopicPartition) -> Result<Arc<PartitionLog>> {
        self.open_log_with(partition, PartitionLog::open)
    }

    /// Opens a partition's log with `open` (given the files, its directory and its
    /// settings) and hooks it to the flushers.
    fn open_log_with(
        self: &Arc<Self>,
        partition: &TopicPartition,
        open: impl FnOnce(Arc<FileCache>, PathBuf, LogConfig) -> Result<PartitionLog>,
    ) -> Result<Arc<PartitionLog>> {
        let config = read(&self.topic_configs)
            .get(&partition.topic)
            .cloned()
            .unwrap_or_else(|| self.config.default_log.clone());
        let started = Instant::now();
        let log = Arc::new(open(self.files.clone(), partition_dir(partition), config)?);
        tracing::debug!(%partition, elapsed = ?started.elapsed(), "opened partition");
        if let Some(timer) = &self.config.sync_timer {
            log.set_sync_timer(timer.clone());
        }
        let weak = Arc::downgrade(&log);
        let shared = Arc::downgrade(self);
        log.set_flush_hook(Box::new(move || {
            let (Some(shared), Some(log)) = (shared.upgrade(), weak.upgrade()) else {
                return;
            };
            if !log.flush_queued.swap(true, Ordering::SeqCst) {
                lock(&shared.flush_queue).push_back(Arc::downgrade(&log));
                shared.flush_ready.notify_one();
            }
        }));
        Ok(log)
    }

    fn open_logs(&self) -> Vec<Arc<PartitionLog>> {
        read(&self.slots)
            .values()
            .filter_map(|slot| lock(&slot.log).clone())
            .collect()
    }

    fn run_flusher(&self) {
        loop {
            let next = {
                let mut queue = lock(&self.flush_queue);
                loop {
                    if self.stopping.load(Ordering::SeqCst) {
                        return;
                    }
                    if let Some(next) = queue.pop_front() {
                        break next;
                    }
                    queue = self
                        .flush_ready
                        .wait(queue)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            };
            let Some(log) = next.upgrade() else { continue };
            // Cleared before syncing, so appends made during the sync queue another.
            log.flush_queued.store(false, Ordering::SeqCst);
            if let Err(error) = log.sync() {
                tracing::error!(dir = %log.dir().display(), %error, "background flush failed");
            }
        }
    }

    fn run_maintenance(&self) {
        let tick = Duration::from_millis(50);
        let mut last_retention = Instant::now();
        let mut last_checkpoint = Instant::now();
        while !self.stopping.load(Ordering::SeqCst) {
            {
                let guard = lock(&self.stop_signal.0);
                let _ = self.stop_signal.1.wait_timeout(guard, tick);
            }
            if self.stopping.load(Ordering::SeqCst) {
                return;
            }
            let logs = self.open_logs();
            for log in &logs {
                if log.interval_flush_due()
                    && let Err(error) = log.sync()
                {
                    tracing::error!(dir = %log.dir().display(), %error, "interval flush failed");
                }
            }
            if last_retention.elapsed() >= self.config.retention_check_interval {
                last_retention = Instant::now();
                let expiration = i64::try_from(self.config.producer_id_expiration.as_millis())
                    .unwrap_or(i64::MAX);
                let producers_before = Timestamp(Timestamp::now().0.saturating_sub(expiration));
                for log in &logs {
                    if let Err(error) = log.enforce_retention(Timestamp::now()) {
                        tracing::error!(dir = %log.dir().display(), %error, "retention failed");
                    }
                    log.expire_producers(producers_before);
                }
            }
            if last_checkpoint.elapsed() >= self.config.checkpoint_interval {
                last_checkpoint = Instant::now();
                for log in &logs {
                    if let Err(error) = log.write_checkpoint() {
                        tracing::error!(dir = %log.dir().display(), %error, "checkpoint failed");
                    }
                    if log.idle_for() >= self.config.idle_release_after {
                        log.release_memory();
                    }
                }
            }
        }
    }
}

/// `topics/<topic>/<partition>`.
#[must_use]
pub(crate) fn partition_dir(partition: &TopicPartition) -> PathBuf {
    PathBuf::from(TOPICS_DIR)
        .join(partition.topic.as_str())
        .join(partition.partition.0.to_string())
}

fn spawn(name: String, body: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.clone())
        .spawn(body)
        .map_err(LogError::io("spawn thread", name))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
