//! The machine's own ceilings, measured the same way in every run so that the
//! broker's numbers can be read against them: sequential write bandwidth with and
//! without fsync, fsync latency, and loopback TCP bandwidth.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::BenchError;

/// Creates (or empties) the file a measurement writes.
fn create_empty(path: &Path) -> Result<fs::File, BenchError> {
    OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(path)
        .map_err(BenchError::io("create the test file"))
}

/// One sequential-write measurement.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RawWrite {
    pub mb_per_s: f64,
    /// Mean time of one `fdatasync` (0 without fsync).
    pub fsync_micros: f64,
}

/// Writes `bytes` sequentially to a new file at `path` in `chunk`-byte writes, each
/// followed by `fdatasync` when `fsync` is set; the file is removed afterwards.
pub fn raw_write(
    path: &Path,
    chunk: usize,
    bytes: u64,
    fsync: bool,
) -> Result<RawWrite, BenchError> {
    let mut file = create_empty(path)?;
    let buffer = vec![0xA5u8; chunk.max(1)];
    let mut fsync_time = Duration::ZERO;
    let mut fsyncs = 0u32;
    let started = Instant::now();
    let mut written = 0u64;
    while written < bytes {
        file.write_all(&buffer).map_err(BenchError::io("write"))?;
        written += buffer.len() as u64;
        if fsync {
            let before = Instant::now();
            file.sync_data().map_err(BenchError::io("fsync"))?;
            fsync_time += before.elapsed();
            fsyncs += 1;
        }
    }
    let elapsed = started.elapsed();
    drop(file);
    fs::remove_file(path).map_err(BenchError::io("remove the test file"))?;
    Ok(RawWrite {
        mb_per_s: mb_per_s(written, elapsed),
        fsync_micros: fsync_time.as_secs_f64() * 1e6 / f64::from(fsyncs.max(1)),
    })
}

/// Megabytes (10^6) per second.
#[must_use]
pub fn mb_per_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64().max(1e-9)
}

/// One thread writes `bytes` over loopback TCP in 1 MiB writes, another reads them.
pub fn loopback_mb_s(bytes: u64) -> Result<f64, BenchError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(BenchError::io("listen"))?;
    let addr = listener.local_addr().map_err(BenchError::io("listen"))?;
    let writer = std::thread::spawn(move || -> std::io::Result<()> {
        let mut stream = TcpStream::connect(addr)?;
        let buffer = vec![7u8; 1 << 20];
        let mut sent = 0;
        while sent < bytes {
            stream.write_all(&buffer)?;
            sent += buffer.len() as u64;
        }
        Ok(())
    });
    let (mut stream, _) = listener.accept().map_err(BenchError::io("accept"))?;
    let mut buffer = vec![0u8; 1 << 20];
    let mut received = 0u64;
    let started = Instant::now();
    loop {
        match stream.read(&mut buffer).map_err(BenchError::io("read"))? {
            0 => break,
            n => received += n as u64,
        }
    }
    let elapsed = started.elapsed();
    writer
        .join()
        .map_err(|_| BenchError::Stalled("the loopback writer panicked".into()))?
        .map_err(BenchError::io("write to loopback"))?;
    Ok(mb_per_s(received, elapsed))
}

/// `fdatasync` latency of small appends: p50 and p99 in microseconds over `count`.
pub fn fsync_latency(path: &Path, count: usize) -> Result<(f64, f64), BenchError> {
    let mut file = create_empty(path)?;
    let block = [0x5Au8; 4096];
    let mut times = Vec::with_capacity(count);
    for _ in 0..count.max(1) {
        file.write_all(&block).map_err(BenchError::io("write"))?;
        let before = Instant::now();
        file.sync_data().map_err(BenchError::io("fsync"))?;
        times.push(before.elapsed().as_secs_f64() * 1e6);
    }
    drop(file);
    fs::remove_file(path).map_err(BenchError::io("remove the test file"))?;
    times.sort_by(f64::total_cmp);
    // Nearest rank: the value below which `percent` of the measurements lie.
    let at = |percent: usize| {
        let index = (times.len() - 1) * percent / 100;
        times.get(index).copied().unwrap_or(0.0)
    };
    Ok((at(50), at(99)))
}

/// The machine's limits, as `spool bench limits` reports them.
#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    pub dir: String,
    pub bytes: u64,
    pub chunk_bytes: usize,
    pub write_no_fsync_mb_s: f64,
    pub write_fsync_mb_s: f64,
    pub fsync_p50_us: f64,
    pub fsync_p99_us: f64,
    pub loopback_mb_s: f64,
}

/// Measures every limit: writes of `bytes` in `chunk`-byte pieces under `dir`.
pub fn measure(dir: &Path, bytes: u64, chunk: usize) -> Result<Limits, BenchError> {
    fs::create_dir_all(dir).map_err(BenchError::io("create the test directory"))?;
    let path = dir.join("spool-bench-limits");
    let buffered = raw_write(&path, chunk, bytes, false)?;
    let synced = raw_write(&path, chunk, bytes, true)?;
    let (fsync_p50_us, fsync_p99_us) = fsync_latency(&path, 200)?;
    let loopback = loopback_mb_s(bytes.max(64 << 20))?;
    Ok(Limits {
        dir: dir.display().to_string(),
        bytes,
        chunk_bytes: chunk,
        write_no_fsync_mb_s: buffered.mb_per_s,
        write_fsync_mb_s: synced.mb_per_s,
        fsync_p50_us,
        fsync_p99_us,
        loopback_mb_s: loopback,
    })
}

impl Limits {
    #[must_use]
    pub fn to_text(&self) -> String {
        [
            format!(
                "disk under {}, {} MiB written in {} KiB writes:",
                self.dir,
                self.bytes >> 20,
                self.chunk_bytes >> 10
            ),
            format!(
                "  sequential write, no fsync      {:>9.1} MB/s",
                self.write_no_fsync_mb_s
            ),
            format!(
                "  sequential write, fsync each    {:>9.1} MB/s",
                self.write_fsync_mb_s
            ),
            format!(
                "  fsync of a 4 KiB append         p50 {:.0} µs, p99 {:.0} µs",
                self.fsync_p50_us, self.fsync_p99_us
            ),
            format!(
                "loopback TCP                      {:>9.1} MB/s",
                self.loopback_mb_s
            ),
        ]
        .join("\n")
    }
}
