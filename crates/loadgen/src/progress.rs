//! The live progress line on stderr: elapsed time and the current rate, once a
//! second. indicatif hides it when stderr is not a terminal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use crate::recorder::Recorder;

#[derive(Debug)]
pub(crate) struct Progress {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Shows `phase` with the rates of the given recorders (name, recorder).
    pub(crate) fn start(
        phase: &'static str,
        message_size: usize,
        recorders: Vec<(&'static str, Arc<Recorder>)>,
    ) -> Progress {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let bar = ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {elapsed:>4} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            let mut last: Vec<u64> = recorders.iter().map(|_| 0).collect();
            let mut last_time = Instant::now();
            while !stopping.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                if last_time.elapsed() < Duration::from_secs(1) {
                    bar.tick();
                    continue;
                }
                let seconds = last_time.elapsed().as_secs_f64();
                last_time = Instant::now();
                let mut parts = vec![phase.to_string()];
                for ((name, recorder), previous) in recorders.iter().zip(last.iter_mut()) {
                    let seen = recorder.seen.load(Ordering::Relaxed);
                    let rate = (seen - *previous) as f64 / seconds;
                    *previous = seen;
                    parts.push(format!(
                        "{name} {rate:>10.0} msg/s {:>8.1} MB/s",
                        rate * message_size as f64 / 1e6
                    ));
                }
                bar.set_message(parts.join("  "));
            }
            bar.finish_and_clear();
        });
        Progress {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
