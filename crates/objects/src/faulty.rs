//! An object store that fails on purpose, wrapping any other (tests wrap
//! `object_store`'s in-memory store): PUTs that fail, PUTs that succeed but whose
//! answer is lost, slow PUTs, failing GETs. It also counts requests and bytes, as the
//! benchmarks and tests read them.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// A store with faults on demand. Clones share the faults and the counts.
#[derive(Debug, Clone)]
pub struct FaultyObjectStore {
    inner: Arc<dyn ObjectStore>,
    faults: Arc<Faults>,
}

#[derive(Debug, Default)]
struct Faults {
    /// PUTs still to fail before writing anything.
    failing_puts: AtomicU64,
    /// PUTs still to be written and then answered with an error.
    lost_put_answers: AtomicU64,
    /// How long each PUT waits before it is made, in ms.
    put_delay_ms: AtomicU64,
    /// GETs still to fail.
    failing_gets: AtomicU64,
    /// How long each GET waits before it is made, in ms.
    get_delay_ms: AtomicU64,
    puts: AtomicU64,
    put_bytes: AtomicU64,
    gets: AtomicU64,
}

/// Requests made through the store (failed ones included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectCounts {
    pub puts: u64,
    pub put_bytes: u64,
    pub gets: u64,
}

/// Takes one from `counter` if it is not zero.
fn take_one(counter: &AtomicU64) -> bool {
    counter
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

fn injected(what: &str) -> object_store::Error {
    object_store::Error::Generic {
        store: "faulty",
        source: format!("injected {what}").into(),
    }
}

impl FaultyObjectStore {
    #[must_use]
    pub fn new(inner: Arc<dyn ObjectStore>) -> FaultyObjectStore {
        FaultyObjectStore {
            inner,
            faults: Arc::new(Faults::default()),
        }
    }

    /// The next `n` PUTs fail without writing anything.
    pub fn fail_next_puts(&self, n: u64) {
        self.faults.failing_puts.store(n, Ordering::SeqCst);
    }

    /// The next `n` PUTs are written, then answered with an error (the answer lost on
    /// the way back).
    pub fn lose_next_put_answers(&self, n: u64) {
        self.faults.lost_put_answers.store(n, Ordering::SeqCst);
    }

    /// Every PUT waits `delay` before it is made.
    pub fn delay_puts(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.faults.put_delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Every GET waits `delay` before it is made.
    pub fn delay_gets(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.faults.get_delay_ms.store(ms, Ordering::SeqCst);
    }

    /// The next `n` GETs fail.
    pub fn fail_next_gets(&self, n: u64) {
        self.faults.failing_gets.store(n, Ordering::SeqCst);
    }

    /// No more faults.
    pub fn heal(&self) {
        self.faults.failing_puts.store(0, Ordering::SeqCst);
        self.faults.lost_put_answers.store(0, Ordering::SeqCst);
        self.faults.put_delay_ms.store(0, Ordering::SeqCst);
        self.faults.failing_gets.store(0, Ordering::SeqCst);
        self.faults.get_delay_ms.store(0, Ordering::SeqCst);
    }

    #[must_use]
    pub fn counts(&self) -> ObjectCounts {
        ObjectCounts {
            puts: self.faults.puts.load(Ordering::SeqCst),
            put_bytes: self.faults.put_bytes.load(Ordering::SeqCst),
            gets: self.faults.gets.load(Ordering::SeqCst),
        }
    }

    /// What every PUT goes through first: the count, the delay, a failure.
    async fn before_put(&self, bytes: u64) -> Result<()> {
        self.faults.puts.fetch_add(1, Ordering::SeqCst);
        self.faults.put_bytes.fetch_add(bytes, Ordering::SeqCst);
        let delay = self.faults.put_delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if take_one(&self.faults.failing_puts) {
            return Err(injected("PUT failure"));
        }
        Ok(())
    }
}

impl fmt::Display for FaultyObjectStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faulty({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FaultyObjectStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.before_put(payload.content_length() as u64).await?;
        let result = self.inner.put_opts(location, payload, opts).await?;
        if take_one(&self.faults.lost_put_answers) {
            return Err(injected("loss of a PUT's answer"));
        }
        Ok(result)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.before_put(0).await?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        self.faults.gets.fetch_add(1, Ordering::SeqCst);
        let delay = self.faults.get_delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if take_one(&self.faults.failing_gets) {
            return Err(injected("GET failure"));
        }
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}
