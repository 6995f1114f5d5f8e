//! One step: one attack on the attack library, in-process, its records going at once to the
//! step's results file, its numbers and its chart data (no file is read back).

use std::io::BufWriter;
use std::path::Path;

use attack::{AttackConfig, ClientOptions, Model, Schedule, Target, TargetDefaults};
use report::chart::{ChartBuilder, RunSeries};
use results::LlrWriter;
use tokio_util::sync::CancellationToken;

use crate::measure::numbers::{Numbers, StepConsumer};
use crate::plan::matrix::Point;
use crate::plan::{LoadSpec, Variant};

/// What a step left.
pub(crate) struct StepRun {
    pub numbers: Numbers,
    pub warmup_requests: u64,
    /// The run's chart series (latency over time, per second, HDR curve).
    pub series: Option<RunSeries>,
    /// vegeta's text report of the counted requests.
    pub text: String,
    /// The counted requests by second, for intervals within the run.
    pub windows: Vec<crate::measure::windows::Window>,
}

/// Why a step could not run (a bad setting, an unwritable file): a failed request is never this.
#[derive(Debug, thiserror::Error)]
#[error("step {step}: {message}")]
pub struct StepError {
    pub step: String,
    pub message: String,
}

/// The attack of a step at `url`.
pub fn config(
    name: &str,
    url: &str,
    point: &Point,
    load: &LoadSpec,
    variant: Option<&Variant>,
    length: std::time::Duration,
    tls: &attack::TlsOptions,
) -> Result<AttackConfig, String> {
    // HTTP/3 is always encrypted: an http URL's host and port are asked over QUIC, where an
    // embedded origin serves it (the port number over UDP) and Alt-Svc would point.
    let h3_url;
    let url = match url.strip_prefix("http://") {
        Some(rest) if point.protocol == attack::Protocol::Http3 => {
            h3_url = format!("https://{rest}");
            h3_url.as_str()
        }
        _ => url,
    };
    let mut defaults = TargetDefaults { template_dir: load.template_dir.clone(), ..TargetDefaults::default() };
    let headers = load.headers.iter().chain(variant.map(|v| v.headers.iter()).into_iter().flatten());
    for h in headers {
        defaults.headers.push(attack::parse_header(h)?);
    }
    defaults.body = variant.and_then(|v| v.body.clone()).or_else(|| load.body.clone()).map(bytes::Bytes::from);
    let method = variant.and_then(|v| v.method.clone()).unwrap_or_else(|| load.method.clone());
    let targets: Vec<Target> = vec![attack::target_from_url(&method, url, name, &defaults).map_err(|e| e.to_string())?];
    let model = match (point.speed, point.rate) {
        // A replay step lasts as long as any step: the log from its start, again and again if
        // it is shorter than the step at that speed.
        (Some(speed), _) => {
            let log = load.replay.clone().ok_or("a replay speed without load.replay")?;
            let mut spec = attack::ReplaySpec::new(log, attack::parse_url(url)?);
            spec.speed = speed;
            spec.loops = REPLAY_LOOPS;
            spec.limit = Some(length);
            Model::Replay(spec)
        }
        (None, Some(rate)) => Model::Open { schedule: Schedule::constant(rate, length) },
        (None, None) if point.connections.is_some() => {
            Model::Closed { streams: point.streams, requests: None, duration: Some(length) }
        }
        (None, None) => return Err("a step needs a rate or connections".into()),
    };
    let mut c = AttackConfig::new(targets, model);
    c.client =
        ClientOptions { protocol: point.protocol, timeout: load.timeout, tls: tls.clone(), ..Default::default() };
    c.connections = point.connections;
    c.name = name.to_owned();
    c.max_workers = load.max_workers;
    c.requests_per_conn = point.requests_per_conn;
    if point.rate.is_some() {
        c.pace_tick = load.pace_tick;
    }
    // The attack's record, and the part of it a lab does not count.
    c.settings = c.settings_record();
    c.settings.insert("warmup".into(), results::duration::go_string(load.warmup.as_nanos() as u64).into());
    Ok(c)
}

/// A replay step loops over its log until the step's length (which bounds it).
pub(crate) const REPLAY_LOOPS: u32 = 1_000_000;

/// Runs the step: the attack, the first `warmup` of it sent but not counted.
pub(crate) async fn run(
    id: &str,
    config: AttackConfig,
    warmup: std::time::Duration,
    file: &Path,
    charts: bool,
    watch: Option<Box<dyn results::Consumer + Send>>,
    stop: CancellationToken,
) -> Result<StepRun, StepError> {
    run_watched(id, config, warmup, file, charts, watch, (), stop).await.map(|(run, ())| run)
}

/// [`run`], with `extra` fed the records too and handed back (capacity's probes watch with it
/// whether to stop early).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_watched<E: results::Consumer + Send + 'static>(
    id: &str,
    config: AttackConfig,
    warmup: std::time::Duration,
    file: &Path,
    charts: bool,
    watch: Option<Box<dyn results::Consumer + Send>>,
    extra: E,
    stop: CancellationToken,
) -> Result<(StepRun, E), StepError> {
    let bad = |message: String| StepError { step: id.to_owned(), message };
    let f = std::fs::File::create(file).map_err(|e| bad(format!("{}: {e}", file.display())))?;
    let mut builder = ChartBuilder::new(id);
    builder.source(id);
    let consumer = (
        LlrWriter::new(BufWriter::with_capacity(1 << 16, f)),
        StepConsumer::new(warmup),
        charts.then_some(builder),
        (watch, extra),
    );
    let summary = attack::run(config, consumer, stop).await.map_err(|e| bad(e.to_string()))?;
    let (_, stats, builder, (_, extra)) = summary.consumer;
    let mut text = Vec::new();
    // The report's connections include those opened in the warm-up, when most are opened.
    let mut shown = stats.counted.clone();
    shown.connections += stats.warmup_connections;
    report::write_text(&shown, &mut text).map_err(|e| bad(e.to_string()))?;
    let run = StepRun {
        text: String::from_utf8_lossy(&text).into_owned(),
        numbers: stats.numbers(),
        warmup_requests: stats.warmup_requests,
        windows: stats.windows.windows(),
        series: builder.and_then(|b| b.finish().runs.into_iter().next()),
    };
    Ok((run, extra))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_plans_pace_tick_reaches_its_open_steps() {
        let text = "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[load]\nrate = 100\npace_tick = \"10ms\"\n";
        let plan = crate::plan::parse(text, "plan.toml", std::path::Path::new(".")).unwrap();
        let point = Point {
            variant: None,
            rate: Some(100.0),
            speed: None,
            connections: None,
            protocol: attack::Protocol::Http1,
            requests_per_conn: None,
            streams: 1,
        };
        let c =
            config("s", "http://127.0.0.1:1/", &point, &plan.load, None, Duration::from_secs(1), &Default::default())
                .unwrap();
        assert!(matches!(c.model, Model::Open { .. }));
        assert_eq!(c.pace_tick, Duration::from_millis(10));
        // Connections in the open model: over HTTP/1.1 they bound the requests in flight, as
        // `attack --connections` does; over h2c they are shared.
        let four = Point { connections: Some(4), ..point.clone() };
        let c =
            config("s", "http://127.0.0.1:1/", &four, &plan.load, None, Duration::from_secs(1), &Default::default())
                .unwrap();
        assert_eq!((c.in_flight_cap(), c.shared_connections()), (4, 1));
        let h2c = Point { protocol: attack::Protocol::H2c, ..four };
        let c = config("s", "http://127.0.0.1:1/", &h2c, &plan.load, None, Duration::from_secs(1), &Default::default())
            .unwrap();
        assert_eq!((c.in_flight_cap(), c.shared_connections()), (attack::DEFAULT_MAX_WORKERS, 4));
    }
}
