//! `loadlab attack`: turns flags into an `attack::AttackConfig` and runs it.

pub mod args;
mod load;
mod replay;

use std::io::{BufWriter, IsTerminal, Read, Write};
use std::sync::Arc;

use anyhow::Context;
use attack::{AttackConfig, Model, TargetDefaults};
use bytes::Bytes;
use results::LlrWriter;
use serde_json::json;

use crate::args::values::EncodeFormat;
use crate::progress::{Extent, Progress};
use crate::shutdown::{Second, Shutdown};
use crate::{bad, BadInput};
use args::AttackArgs;

fn targets(a: &AttackArgs) -> anyhow::Result<Vec<attack::Target>> {
    let mut defaults = TargetDefaults::default();
    for h in &a.request.headers {
        defaults.headers.push(attack::parse_header(h).map_err(|e| bad(format!("--header: {e}")))?);
    }
    if let Some(body) = a.request.body_bytes().map_err(bad)? {
        defaults.body = Some(Bytes::from(body));
    }
    // A replay's requests come from its log; its one target carries the --header lines.
    if a.load.replay.replay.is_some() {
        let url = a.load.replay.base_url.as_deref().unwrap_or_default();
        let url = attack::parse_url(url).map_err(|e| bad(format!("--base-url: {e}")))?;
        let mut t = attack::Target::new(Default::default(), url);
        t.headers = defaults.headers;
        return Ok(vec![t]);
    }
    if let Some(url) = &a.url {
        return attack::target_from_url(&a.request.method, url, "argument", &defaults)
            .map(|t| vec![t])
            .map_err(anyhow::Error::from);
    }
    let format = a.format;
    let (text, name) = match a.targets.as_deref() {
        None | Some("-") => {
            if std::io::stdin().is_terminal() {
                return Err(bad("no targets: give a URL, --targets FILE, or pipe targets to stdin"));
            }
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).context("reading targets from stdin")?;
            (s, "stdin".to_owned())
        }
        Some(path) => (std::fs::read_to_string(path).map_err(|e| bad(format!("{path}: {e}")))?, path.to_owned()),
    };
    attack::parse_targets(&text, format, &name, &defaults).map_err(anyhow::Error::from)
}

fn config(a: &AttackArgs) -> anyhow::Result<AttackConfig> {
    let mut config = AttackConfig::new(targets(a)?, a.load.model().map_err(bad)?);
    config.client = a.client.options();
    config.connections = a.load.connections;
    config.name = a.name.clone();
    config.workers = a.workers;
    config.max_workers = a.max_workers;
    config.pace_tick = a.pace_tick;
    config.pace_window = a.pace_window;
    config.seed = a.seed;
    config.requests_per_conn = a.requests_per_conn;
    // The attack's record, with the rate as given (a ramp is not in the schedule's record) and
    // the headers.
    let mut settings = config.settings_record();
    settings.extend(a.load.rate_as_given());
    if !a.request.headers.is_empty() {
        settings.insert("headers".into(), json!(a.request.headers));
    }
    config.settings = settings;
    Ok(config)
}

/// The run's trace key: from `--seed` when given, else from the run every shard shares, else a
/// new one.
fn trace_key(seed: u64, run: Option<&str>) -> results::trace::TraceKey {
    use std::hash::{Hash, Hasher};
    match (seed, run) {
        (0, None) => results::trace::TraceKey::random(),
        (seed, run) => {
            // A fixed hasher (not std's per-process keys): every worker reads the same key.
            let mut h = FixedHasher(0xcbf2_9ce4_8422_2325);
            seed.hash(&mut h);
            run.hash(&mut h);
            results::trace::TraceKey::from_seed(h.finish())
        }
    }
}

/// FNV-1a: the same on every machine and process.
struct FixedHasher(u64);

impl std::hash::Hasher for FixedHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// This worker's shard: `--shard I/N`, or `--shards N` with the index a Kubernetes Indexed Job
/// gives its pods.
fn shard(a: &AttackArgs) -> anyhow::Result<attack::Shard> {
    let index = std::env::var(fleet::SHARD_INDEX_VAR).ok();
    fleet::this_shard(a.shard.shard, a.shard.shards, index.as_deref()).map_err(bad)
}

pub fn run(a: AttackArgs) -> anyhow::Result<()> {
    let mut config = config(&a)?;
    config.shard = shard(&a)?;
    if a.shard.barrier.is_some() && config.shard.is_whole() {
        return Err(bad("--barrier needs --shard or --shards"));
    }
    config.start_at = a.shard.start_at;
    if let (Some(at), false) = (a.shard.start_at, config.shard.is_whole()) {
        // Shards started together by --start-at are one run: the time names it.
        let ns = at.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        config.run = Some(format!("at-{ns}"));
    }
    if a.shard.collect && a.output == "-" {
        return Err(bad("--collect needs --output FILE: each worker's file is what it sends to worker 0"));
    }
    if a.output == "-" && std::io::stdout().is_terminal() && a.output_format == EncodeFormat::Llr {
        return Err(bad(
            "refusing to write binary results to a terminal: give --output FILE, or pipe into `loadlab report`",
        ));
    }
    // The file is made when sending starts (after the barrier): a worker that never started
    // leaves no empty file for `report` to trip on.
    let output = a.output.clone();
    let open = move || -> anyhow::Result<Box<dyn Write + Send>> {
        Ok(if output == "-" {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::fs::File::create(&output).map_err(|e| bad(format!("--output {output}: {e}")))?)
        })
    };
    let export = a
        .otlp_export
        .as_deref()
        .map(spans::ExportTarget::new)
        .transpose()
        .map_err(|e| bad(format!("--otlp-export: {e}")))?;
    let shutdown = Shutdown::watch("stopping, waiting for the requests in flight", Second::Exit)?;
    let stop = shutdown.stop();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let result = runtime.block_on(async move {
        // A progress bar only where a person watches.
        let progress = std::io::stderr().is_terminal().then(|| {
            let extent = match &config.model {
                Model::Open { schedule } => Extent::Time(schedule.duration()),
                Model::Replay(spec) => Extent::Time(spec.limit.or(spec.to).unwrap_or_default()),
                Model::Closed { duration: Some(d), .. } => Extent::Time(*d),
                Model::Closed { requests, .. } => Extent::Requests(requests.unwrap_or(0)),
            };
            let cap = match &config.model {
                Model::Open { .. } | Model::Replay(_) => Some(config.in_flight_cap() as u64),
                Model::Closed { .. } => None,
            };
            Progress::new(extent, Arc::clone(&config.gauges), cap)
        });
        let title = if a.name.is_empty() { "loadlab attack".to_owned() } else { a.name.clone() };
        let serving = crate::live_view::start(&a.live, &title).await?;
        let mut gathering = None;
        if let Some(addr) = &a.shard.barrier {
            let start = fleet::barrier::meet(addr, config.shard, a.shard.barrier_timeout).await?;
            config.start_at = Some(start.at);
            config.run = Some(start.run.clone());
            if a.shard.collect {
                gathering = Some(fleet::gather::Gathering::start(
                    start,
                    config.shard,
                    std::path::Path::new(&a.output),
                    on_file(serving.as_ref(), config.shard.count),
                ));
            }
        }
        if a.traces || export.is_some() {
            config.trace = Some(trace_key(a.seed, config.run.as_deref()));
        }
        let client_spans = export.map(|t| spans::ClientSpans::new(t, spans::Pace::Live));
        let exported = client_spans.as_ref().map(spans::ClientSpans::outcome);
        let out = BufWriter::with_capacity(1 << 16, open()?);
        // vegeta's own formats, so `loadlab attack ... | vegeta report` works as it does after
        // `vegeta attack`.
        let file: Box<dyn results::Consumer + Send> = match a.output_format {
            EncodeFormat::Llr => Box::new(LlrWriter::new(out)),
            EncodeFormat::Json => Box::new(results::interop::JsonExporter::new(out)),
            EncodeFormat::Csv => Box::new(results::interop::CsvExporter::new(out)),
        };
        let watch = serving.as_ref().map(|s| s.live.consumer(Some(Arc::clone(&config.gauges))));
        let shard = config.shard;
        let result = attack::run(config, (file, progress, watch, client_spans), stop.clone()).await;
        if let Some(e) = exported {
            eprintln!("loadlab: {}", e.lock().unwrap_or_else(std::sync::PoisonError::into_inner).line());
        }
        let gathered = match (gathering, &result, &a.shard.barrier) {
            (Some(g), Ok(_), Some(addr)) => g.finish(addr, shard, a.shard.barrier_timeout).await,
            _ => Ok(()),
        };
        if let Some(s) = serving {
            s.finish(&stop).await;
        }
        match result {
            Ok(summary) => {
                if let Some(r) = &summary.replay {
                    tell_replay(r);
                }
                gathered
            }
            Err(attack::AttackError::Config(e)) => Err(anyhow::Error::new(BadInput(e))),
            Err(e) => Err(e.into()),
        }
    });
    shutdown.outcome(result)
}

/// What a replay read, on stderr: its requests, and the lines it skipped (the first quoted).
fn tell_replay(r: &attack::ReplayStats) {
    let (format, unit) = r.format.map_or(("file", "line"), |f| (f.name(), f.unit()));
    eprintln!("loadlab: replayed {} requests from {} {unit}s of {format}, {} skipped", r.requests, r.lines, r.skipped);
    for s in &r.first_skipped {
        eprintln!("  {} {}: {}: {}", s.unit, s.line, s.why, s.text);
    }
    if r.skipped > r.first_skipped.len() as u64 {
        eprintln!("  ... and {} more", r.skipped - r.first_skipped.len() as u64);
    }
}

/// What a received file is handed to: the live view's shelf, when it serves one.
fn on_file(serving: Option<&crate::live_view::Serving>, workers: u64) -> fleet::gather::OnFile {
    match serving {
        Some(s) => {
            s.live.shelf.expect(usize::try_from(workers).unwrap_or(usize::MAX));
            let live = Arc::clone(&s.live);
            Arc::new(move |name, path| live.shelf.offer(name, path.to_path_buf()))
        }
        None => Arc::new(|_, _| {}),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use attack::{AttackConfig, Protocol};
    use clap::Parser;
    use lab::LoadSpec;
    use lab::Point;

    use super::args::AttackArgs;

    /// `loadlab attack`'s line, as its own parser reads it.
    #[derive(clap::Parser)]
    struct AttackLine {
        #[command(flatten)]
        args: AttackArgs,
    }

    /// What an attack does with its settings, and the record of them: all of its config but its
    /// name and the warm-up a lab adds to the record.
    fn shape(mut c: AttackConfig) -> String {
        c.name.clear();
        c.settings.remove("warmup");
        format!("{c:?}, in flight at most {}, sharing {} connections", c.in_flight_cap(), c.shared_connections())
    }

    fn from_attack(flags: &str) -> AttackConfig {
        let url = if flags.contains("--replay") { "" } else { "http://127.0.0.1:1/x" };
        let line = format!("loadlab attack {url} --timeout 5s -o /dev/null {flags}");
        let line =
            if flags.contains("--replay") { line } else { line.replace("-o /dev/null", "-o /dev/null --duration 2s") };
        let line = line.replacen("loadlab attack", "loadlab-attack", 1);
        super::config(&AttackLine::try_parse_from(line.split_whitespace()).unwrap().args).unwrap()
    }

    fn from_lab(point: Point, pace_tick: Duration) -> AttackConfig {
        let replay = point.speed.map(|_| std::path::PathBuf::from("monday.log"));
        let load = LoadSpec {
            replay,
            duration: Duration::from_secs(2),
            warmup: Duration::ZERO,
            pause: Duration::ZERO,
            timeout: Duration::from_secs(5),
            pace_tick,
            ..LoadSpec::default()
        };
        lab::step_config(
            "step",
            "http://127.0.0.1:1/x",
            &point,
            &load,
            None,
            Duration::from_secs(2),
            &Default::default(),
        )
        .unwrap()
    }

    fn point(rate: Option<f64>, connections: Option<usize>, protocol: Protocol, streams: usize) -> Point {
        Point { variant: None, rate, speed: None, connections, protocol, requests_per_conn: None, streams }
    }

    #[test]
    fn attack_and_a_lab_step_make_the_same_attack_of_the_same_settings() {
        let cases = [
            ("--rate 100 --connections 4", point(Some(100.0), Some(4), Protocol::Http1, 1), Duration::ZERO),
            ("--rate 100", point(Some(100.0), None, Protocol::Http1, 1), Duration::ZERO),
            ("--rate 100 --connections 2 --h2c", point(Some(100.0), Some(2), Protocol::H2c, 1), Duration::ZERO),
            ("--rate 3000 --pace-tick 1ms", point(Some(3000.0), None, Protocol::Http1, 1), Duration::from_millis(1)),
            ("--connections 4", point(None, Some(4), Protocol::Http1, 1), Duration::ZERO),
            ("--connections 2 --streams 8 --h2c", point(None, Some(2), Protocol::H2c, 8), Duration::ZERO),
            (
                "--replay monday.log --base-url http://127.0.0.1:1/x --speed 3 --duration 2s --loop 1000000",
                Point { speed: Some(3.0), ..point(None, None, Protocol::Http1, 1) },
                Duration::ZERO,
            ),
        ];
        for (flags, point, tick) in cases {
            assert_eq!(shape(from_attack(flags)), shape(from_lab(point, tick)), "{flags}");
        }
    }
}
