//! The schema registry under load (`spool bench registry`): with `subjects` subjects
//! registered, how many lookups by id (the consumer's path: a deserializer meeting an
//! id) and register-or-get calls (the producer's path: a serializer's first record of
//! a schema) a registry answers per second, with `concurrency` clients each waiting
//! for its answer, and their latencies. Also the client the produce benchmark frames
//! values with (`--schema-registry`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::BenchError;
use crate::recorder::{LatencySummary, Recorder, Throughput};

/// Confluent's media type.
const MEDIA_TYPE: &str = "application/vnd.schemaregistry.v1+json";

#[derive(Debug, Clone, clap::Args)]
pub struct RegistryBench {
    /// The registry (a broker's `schema.registry.listen`).
    #[arg(long, default_value = "http://127.0.0.1:8081")]
    pub registry_url: String,
    /// Subjects registered before measuring (one schema each).
    #[arg(long, default_value_t = 10_000)]
    pub subjects: usize,
    /// Clients, each with a connection of its own (kept alive), each waiting for its
    /// answer.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// Seconds each measured phase runs.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Keep the subjects after the run (else they are deleted, permanently).
    #[arg(long)]
    pub keep_subjects: bool,
}

/// One phase's calls: how many per second, how long each took.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseReport {
    pub name: &'static str,
    pub throughput: Throughput,
    pub latency: Option<LatencySummary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RegistryReport {
    pub subjects: usize,
    pub concurrency: usize,
    pub phases: Vec<PhaseReport>,
}

impl RegistryReport {
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "schema registry, {} subjects, {} clients\n",
            self.subjects, self.concurrency
        );
        for phase in &self.phases {
            let latency = phase.latency.as_ref().map_or_else(String::new, |l| {
                format!(
                    "  p50 {:.2} ms  p99 {:.2} ms  p99.9 {:.2} ms  max {:.2} ms",
                    l.p50, l.p99, l.p999, l.max
                )
            });
            text.push_str(&format!(
                "{:<28} {:>10.0} calls/s ({} calls, {} errors){latency}\n",
                phase.name,
                phase.throughput.msg_per_s,
                phase.throughput.messages,
                phase.throughput.errors
            ));
        }
        text
    }
}

/// A blocking client of the registry's REST API, with a connection of its own.
pub(crate) struct RegistryClient {
    agent: ureq::Agent,
    base: String,
}

impl RegistryClient {
    pub(crate) fn new(base: &str) -> RegistryClient {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .http_status_as_error(false)
            .build()
            .new_agent();
        RegistryClient {
            agent,
            base: base.trim_end_matches('/').to_owned(),
        }
    }

    /// Registers `schema` (Avro) under `subject`: its id.
    pub(crate) fn register(&self, subject: &str, schema: &str) -> Result<i32, BenchError> {
        let body = serde_json::json!({ "schema": schema }).to_string();
        let answer = self.call(
            |agent, url| agent.post(url).content_type(MEDIA_TYPE).send(body.as_str()),
            &format!("/subjects/{subject}/versions"),
        )?;
        answer["id"]
            .as_i64()
            .and_then(|id| i32::try_from(id).ok())
            .ok_or_else(|| BenchError::Failed(format!("the registry answered {answer}")))
    }

    fn lookup(&self, id: i32) -> Result<(), BenchError> {
        self.call(
            |agent, url| agent.get(url).call(),
            &format!("/schemas/ids/{id}"),
        )
        .map(|_| ())
    }

    fn delete(&self, subject: &str, permanent: bool) -> Result<(), BenchError> {
        let path = format!("/subjects/{subject}?permanent={permanent}");
        self.call(|agent, url| agent.delete(url).call(), &path)
            .map(|_| ())
    }

    fn call(
        &self,
        request: impl FnOnce(
            &ureq::Agent,
            &str,
        ) -> Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        path: &str,
    ) -> Result<serde_json::Value, BenchError> {
        let url = format!("{}{path}", self.base);
        let failed = |what: String| BenchError::Failed(format!("{url}: {what}"));
        let mut response = request(&self.agent, &url).map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|e| failed(e.to_string()))?;
        if !status.is_success() {
            return Err(failed(format!("{status}: {text}")));
        }
        serde_json::from_str(&text).map_err(|e| failed(e.to_string()))
    }
}

/// The schema of bench subject `index`: a record of its own.
fn schema_of(run: &str, index: usize) -> String {
    serde_json::json!({
        "type": "record",
        "name": format!("Bench{index}"),
        "namespace": format!("spool.bench.r{run}"),
        "fields": [{"name": "id", "type": "long"}, {"name": "payload", "type": "bytes"}],
    })
    .to_string()
}

pub fn run(settings: &RegistryBench) -> Result<RegistryReport, BenchError> {
    if settings.subjects == 0 || settings.concurrency == 0 || settings.duration <= 0.0 {
        return Err(BenchError::Invalid(
            "--subjects, --concurrency and --duration must be positive".to_owned(),
        ));
    }
    let run_id = uuid::Uuid::new_v4().simple().to_string();
    let run_id: Arc<str> = Arc::from(run_id.get(..8).unwrap_or(&run_id));
    let subject = {
        let run_id = run_id.clone();
        move |index: usize| format!("spool-bench-{run_id}-{index}-value")
    };
    let mut phases = Vec::new();
    // Registering new schemas: each client takes every concurrency-th subject.
    let ids: Vec<std::sync::Mutex<i32>> = (0..settings.subjects)
        .map(|_| std::sync::Mutex::new(0))
        .collect();
    let ids = Arc::new(ids);
    let started = Instant::now();
    let recorder = Arc::new(Recorder::new());
    std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for worker in 0..settings.concurrency {
            let (client, recorder, ids, subject, run_id) = (
                RegistryClient::new(&settings.registry_url),
                recorder.clone(),
                ids.clone(),
                subject.clone(),
                run_id.clone(),
            );
            handles.push(scope.spawn(move || -> Result<(), BenchError> {
                for index in (worker..settings.subjects).step_by(settings.concurrency) {
                    let began = Instant::now();
                    let id = client.register(&subject(index), &schema_of(&run_id, index))?;
                    recorder.measure(0, Some(began.elapsed()));
                    if let Ok(mut slot) = ids[index].lock() {
                        *slot = id;
                    }
                }
                Ok(())
            }));
        }
        handles.into_iter().try_for_each(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| Err(BenchError::Failed("a client panicked".to_owned())))
        })
    })?;
    phases.push(PhaseReport {
        name: "register (new schemas)",
        throughput: recorder.throughput(started.elapsed()),
        latency: recorder.latency(),
    });
    let ids: Vec<i32> = ids
        .iter()
        .map(|slot| slot.lock().map_or(0, |id| *id))
        .collect();
    let duration = Duration::from_secs_f64(settings.duration);
    phases.push(measure(
        "lookup by id",
        settings,
        duration,
        |client, rng| {
            let id = ids[rng.usize(..ids.len())];
            client.lookup(id)
        },
    )?);
    phases.push(measure(
        "register-or-get (known)",
        settings,
        duration,
        |client, rng| {
            let index = rng.usize(..settings.subjects);
            client
                .register(&subject(index), &schema_of(&run_id, index))
                .map(|_| ())
        },
    )?);
    if !settings.keep_subjects {
        std::thread::scope(|scope| {
            for worker in 0..settings.concurrency {
                let (client, subject) =
                    (RegistryClient::new(&settings.registry_url), subject.clone());
                scope.spawn(move || {
                    for index in (worker..settings.subjects).step_by(settings.concurrency) {
                        let _ = client.delete(&subject(index), false);
                        let _ = client.delete(&subject(index), true);
                    }
                });
            }
        });
    }
    Ok(RegistryReport {
        subjects: settings.subjects,
        concurrency: settings.concurrency,
        phases,
    })
}

/// Runs `call` from `concurrency` clients for `duration`: calls per second and their
/// latencies.
fn measure(
    name: &'static str,
    settings: &RegistryBench,
    duration: Duration,
    call: impl Fn(&RegistryClient, &mut fastrand::Rng) -> Result<(), BenchError> + Sync,
) -> Result<PhaseReport, BenchError> {
    let recorder = Recorder::new();
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..settings.concurrency {
            let client = RegistryClient::new(&settings.registry_url);
            let (recorder, stop, call) = (&recorder, &stop, &call);
            scope.spawn(move || {
                let mut rng = fastrand::Rng::new();
                while !stop.load(Ordering::Relaxed) {
                    let began = Instant::now();
                    match call(&client, &mut rng) {
                        Ok(()) => recorder.measure(0, Some(began.elapsed())),
                        Err(_) => recorder.failed(),
                    }
                    if started.elapsed() >= duration {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    Ok(PhaseReport {
        name,
        throughput: recorder.throughput(started.elapsed()),
        latency: recorder.latency(),
    })
}
