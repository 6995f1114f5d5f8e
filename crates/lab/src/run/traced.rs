//! A lab's traced targets (`traces = true`): the OTLP receiver the lab runs while it lasts, the
//! variables a started target's OpenTelemetry SDK reads to send there, and each traced step's
//! spans, awaited at its end and read as where its tail's time went.

use std::path::Path;
use std::time::{Duration, Instant};

use results::trace::TraceKey;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// How long a step's end waits for its spans at most: batch exporters send every few seconds
/// (every 0.2 s with [`BATCH_DELAY_MS`], which a started target is given).
pub(crate) const MOST_WAIT: Duration = Duration::from_secs(10);

/// With no new span for this long (and some still missing), the rest are not coming.
pub(crate) const QUIET: Duration = Duration::from_millis(1500);

/// The batch span processor's delay a started target is given (`OTEL_BSP_SCHEDULE_DELAY`, ms;
/// the SDKs' default is 5,000): its spans reach the lab within a step's pause.
pub(crate) const BATCH_DELAY_MS: u32 = 200;

/// The receiver, while the lab runs.
pub(crate) struct Tracing {
    receiver: spans::Receiver,
    /// Where each traced step's client spans go after it (`[traces] export`).
    export: Option<spans::ExportTarget>,
}

/// What a traced step's spans said.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StepTraces {
    /// The slowest 1% of its counted requests against its median ones, by span name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<spans::Tail>,
    /// Requests of either group whose spans never came, when some did not, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// How long the step's end waited for them, s.
    pub waited_s: f64,
    /// What the receiver had been sent by then, over the lab so far.
    #[serde(default)]
    pub receiver: spans::Counts,
    /// The step's client spans, when the plan exports them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exported: Option<spans::Exported>,
}

impl StepTraces {
    /// The step's spans in one line: `spans: the slowest 1% db.query 40.15ms of 42.39ms (95%),
    /// median db.query 2.16ms of 4.29ms (50%)`, and what did not come.
    pub fn line(&self) -> String {
        let show = results::duration::show_us;
        let lead = |g: &spans::Group| match g.names.first() {
            Some(n) if g.with_spans > 0 => format!(
                "{} {} of {} ({:.0}%)",
                n.name,
                show(n.self_us),
                show(g.latency_us),
                100.0 * n.self_us / g.latency_us.max(1e-9)
            ),
            _ => "no spans".to_owned(),
        };
        let mut line = match &self.tail {
            Some(t) => format!("spans: the slowest 1% {}, median {}", lead(&t.slowest), lead(&t.median)),
            None => "spans: no counted requests".to_owned(),
        };
        if let Some(m) = &self.missing {
            line.push_str(&format!("; {m}"));
        }
        if let Some(e) = &self.exported {
            line.push_str(&format!("; {}", e.line()));
        }
        line
    }
}

impl Tracing {
    /// The receiver, when a target of `plan` is traced.
    pub(crate) async fn start_for(plan: &crate::Plan) -> std::io::Result<Option<Tracing>> {
        if !plan.targets.iter().any(|t| t.traces) {
            return Ok(None);
        }
        let receiver = match plan.traces_listen {
            Some(addr) => spans::Receiver::start_on(addr).await.map_err(|e| {
                std::io::Error::new(e.kind(), format!("could not listen on {addr} (traces.listen): {e}"))
            })?,
            None => spans::Receiver::start().await?,
        };
        let export = plan
            .traces_export
            .as_deref()
            .map(spans::ExportTarget::new)
            .transpose()
            .map_err(|e| std::io::Error::other(format!("traces.export: {e}")))?;
        Ok(Some(Tracing { receiver, export }))
    }

    /// Where spans are received (`http://ADDR/v1/traces`).
    pub(crate) fn endpoint(&self) -> String {
        self.receiver.traces_endpoint()
    }

    /// What a traced target the lab starts is given, unless the lab's own environment sets it:
    /// where to send its spans, over OTLP/HTTP protobuf, under its name, without waiting 5 s a
    /// batch.
    pub(crate) fn env(&self, service: &str) -> Vec<(String, String)> {
        let wanted = [
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", self.receiver.traces_endpoint()),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf".to_owned()),
            ("OTEL_TRACES_EXPORTER", "otlp".to_owned()),
            ("OTEL_SERVICE_NAME", service.to_owned()),
            ("OTEL_BSP_SCHEDULE_DELAY", BATCH_DELAY_MS.to_string()),
        ];
        wanted.into_iter().filter(|(k, _)| std::env::var_os(k).is_none()).map(|(k, v)| (k.to_owned(), v)).collect()
    }

    /// Spans of `key`'s requests are kept from now on.
    pub(crate) fn register(&self, key: TraceKey) {
        self.receiver.collector.register(key);
    }

    /// The step's counted requests (from its results file, past `warmup_us`), its spans awaited
    /// until every request of its two groups has some, or none came for [`QUIET`], or
    /// [`MOST_WAIT`] passed; then where its tail's time went.
    pub(crate) async fn after_step(
        &self,
        key: TraceKey,
        file: &Path,
        warmup_us: u64,
        stop: &CancellationToken,
    ) -> StepTraces {
        let requests = match counted(file, warmup_us) {
            Ok(r) => r,
            Err(e) => {
                return StepTraces {
                    missing: Some(format!("its results file could not be read: {e}")),
                    ..Default::default()
                }
            }
        };
        let collector = &self.receiver.collector;
        let (slowest, median) = spans::groups(&requests);
        let wanted: Vec<u64> = slowest.iter().chain(&median).copied().collect();
        let began = Instant::now();
        loop {
            let (have, last) = collector.arrived(key, &wanted);
            let quiet = last.unwrap_or(began).elapsed() >= QUIET && began.elapsed() >= QUIET;
            if have == wanted.len() || quiet || began.elapsed() >= MOST_WAIT || stop.is_cancelled() {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = stop.cancelled() => break,
            }
        }
        let waited_s = began.elapsed().as_secs_f64();
        let tail = spans::tail(&requests, key, collector);
        let missing = tail.as_ref().and_then(|t| {
            let (s, m) = (&t.slowest, &t.median);
            (s.with_spans < s.requests || m.with_spans < m.requests).then(|| {
                format!(
                    "no spans came for {} of the {} slowest and {} of the {} median requests within {waited_s:.1} s",
                    s.requests - s.with_spans,
                    s.requests,
                    m.requests - m.with_spans,
                    m.requests
                )
            })
        });
        let exported = match &self.export {
            Some(to) => Some(export(to.clone(), file.to_owned()).await),
            None => None,
        };
        StepTraces { tail, missing, waited_s, receiver: collector.counts(), exported }
    }
}

/// The step's client spans, from its results file (after the load: the export never competes
/// with it), to the plan's collector.
async fn export(to: spans::ExportTarget, file: std::path::PathBuf) -> spans::Exported {
    let url = to.shown();
    let sent = tokio::task::spawn_blocking(move || {
        let mut client_spans = spans::ClientSpans::new(to, spans::Pace::AfterLoad);
        let outcome = client_spans.outcome();
        let f = std::fs::File::open(&file).map_err(|e| e.to_string())?;
        let mut reader = results::Reader::new(std::io::BufReader::new(f), file.display().to_string());
        results::feed(&mut reader, &mut client_spans).map_err(|e| e.to_string())?;
        drop(client_spans);
        let exported = outcome.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        Ok::<_, String>(exported)
    })
    .await;
    match sent {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => spans::Exported {
            url,
            error: Some(format!("its results file could not be read: {e}")),
            ..Default::default()
        },
        Err(e) => spans::Exported { url, error: Some(e.to_string()), ..Default::default() },
    }
}

/// The requests of a step's results file past its warm-up: number and latency, µs.
fn counted(file: &Path, warmup_us: u64) -> Result<Vec<(u64, u64)>, String> {
    let f = std::fs::File::open(file).map_err(|e| e.to_string())?;
    let mut reader = results::Reader::new(std::io::BufReader::new(f), file.display().to_string());
    let mut out = Vec::new();
    while let Some(item) = reader.next().map_err(|e| e.to_string())? {
        if let results::Item::Record(r) = item {
            if r.scheduled_us >= warmup_us {
                out.push((r.seq, r.latency_us));
            }
        }
    }
    Ok(out)
}
