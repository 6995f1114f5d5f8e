//! Profiles of a process under load: where its CPU goes, per request. A process tree is
//! recorded with linux-perf (`perf`), or a pprof endpoint read over HTTP (`pprof`), over a
//! window (`session`: a lab step's measured part, after its warm-up). Each profile becomes
//! folded stacks, a flame graph and a table of functions in µs of CPU per request (`folded`,
//! `flame`); two profiles become a differential (`diff`, `folded::changes`). `process` is the
//! one way a child the lab started is stopped (perf here, the lab's targets there).

pub mod diff;
pub mod flame;
pub mod folded;
pub mod perf;
pub mod pprof;
pub mod process;
pub mod session;

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use folded::{Folded, FunctionCost};
pub use perf::PerfOptions;
use results::duration::show_us;

/// How a target is profiled.
#[derive(Clone, Debug, PartialEq)]
pub enum Profiler {
    /// linux-perf on the target's process tree (a started command, a running `pid`), or on
    /// every process of this name.
    Perf { process: Option<String> },
    /// A pprof CPU profile endpoint (`http://host:port/debug/pprof/profile`).
    Pprof { url: String },
}

/// The plan's `[profile]`: how every profiled target is recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileSpec {
    pub perf: PerfOptions,
    /// Every repeat of a step is profiled, not only the first.
    pub all_repeats: bool,
    /// Functions shown per profile.
    pub top: usize,
}

impl Default for ProfileSpec {
    fn default() -> ProfileSpec {
        ProfileSpec { perf: PerfOptions::default(), all_repeats: false, top: 15 }
    }
}

/// A step's profile, as lab.json keeps it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StepProfile {
    /// `perf` or `pprof`.
    pub source: String,
    /// The folded stacks and the flame graph, relative to the lab's folder.
    pub folded: String,
    pub svg: String,
    /// Samples taken, and the stacks' weight in all (CPU nanoseconds: perf's periods of its
    /// cpu-clock samples, pprof's cpu values).
    pub samples: u64,
    pub weight: u64,
    /// CPU seconds of the profiled processes over the window (what the samples stand for), and
    /// the successful requests the step counted in it: the one denominator of CPU per request
    /// (`Metric::cpu_per_request`).
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub cpu_s: f64,
    pub requests: u64,
    /// µs of CPU per successful request in all.
    #[serde(deserialize_with = "results::nan::nan_is_null")]
    pub us_per_request: f64,
    /// The functions with most CPU of their own.
    pub top: Vec<FunctionCost>,
    /// What a reader should know: a process that exited, symbols missing, samples dropped.
    pub notes: Vec<String>,
    /// The weight of the stacks through each function a hypothesis names (`where`), by the
    /// name as written.
    #[serde(default)]
    pub matched: std::collections::BTreeMap<String, u64>,
}

impl StepProfile {
    /// A step's profile in one line: `perf, 412 samples: 310µs of CPU per request; most in deflate_slow 38.1µs (41%), ...`.
    pub fn line(&self) -> String {
        let p = self;
        let top: Vec<String> = p
            .top
            .iter()
            .filter(|f| f.self_share > 0.0)
            .take(3)
            .map(|f| format!("{} {} ({:.0}%)", f.name, show_us(f.self_us), f.self_share * 100.0))
            .collect();
        let mut s = format!(
            "profile ({}, {} samples): {} of CPU per request; most in {}",
            p.source,
            p.samples,
            show_us(p.us_per_request),
            if top.is_empty() { "nothing".into() } else { top.join(", ") }
        );
        for n in &p.notes {
            s += &format!(" [{n}]");
        }
        s
    }

    /// µs of CPU per request that one unit of weight stands for.
    pub fn us_per_weight(&self) -> f64 {
        if self.weight == 0 {
            0.0
        } else {
            self.us_per_request / self.weight as f64
        }
    }

    /// The folded stacks, read from the lab's folder `dir`.
    pub fn read_folded(&self, dir: &Path) -> Result<Folded, String> {
        let path = dir.join(&self.folded);
        std::fs::read_to_string(&path).map(|t| Folded::parse(&t)).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// What a profiler gave for one window, before the step's requests are known.
pub struct Raw {
    pub source: &'static str,
    pub folded: Folded,
    pub samples: u64,
    pub cpu_s: f64,
    pub notes: Vec<String>,
}

/// Profiles `how` (a target whose processes are `pids`) from `warmup` after now until `done`
/// is cancelled (perf) or for `length` (pprof, whose endpoint sets the window itself);
/// `perf_pid` is told perf's process id once it runs.
#[allow(clippy::too_many_arguments)]
pub async fn record(
    how: Profiler,
    pids: Vec<u32>,
    spec: ProfileSpec,
    data: std::path::PathBuf,
    warmup: Duration,
    length: Duration,
    done: CancellationToken,
    perf_pid: std::sync::Arc<std::sync::atomic::AtomicU32>,
) -> Result<Raw, String> {
    tokio::select! {
        _ = tokio::time::sleep(warmup) => {}
        _ = done.cancelled() => return Err("the step ended before its warm-up did".into()),
    }
    match how {
        Profiler::Pprof { url } => {
            let t = pprof::take(&url, length).await?;
            Ok(Raw { source: "pprof", folded: t.folded, samples: t.samples, cpu_s: t.cpu_s, notes: t.notes })
        }
        Profiler::Perf { process } => {
            let pids = match &process {
                Some(name) => perf::named(name),
                None => pids.iter().flat_map(|p| perf::tree(*p)).collect(),
            };
            if pids.is_empty() {
                return Err(match process {
                    Some(name) => format!("no process named {name:?} is running"),
                    None => "the target has no process to profile (give it a pid, or start it from the plan)".into(),
                });
            }
            let rec = {
                let (pids, data, opts) = (pids.clone(), data.clone(), spec.perf.clone());
                tokio::task::spawn_blocking(move || {
                    perf::start(&opts, &pids, &data).map(|r| (r, perf::cpu_seconds(&pids)))
                })
                .await
                .map_err(|e| e.to_string())??
            };
            perf_pid.store(rec.0.pid(), std::sync::atomic::Ordering::Release);
            // perf's own --max-size is checked only as its buffers flush; the file is watched
            // here too, and perf stopped once it is past the bound.
            let limit = spec.perf.max_size_kib * 1024;
            let mut cut_at = None;
            let began = std::time::Instant::now();
            loop {
                tokio::select! {
                    _ = done.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {
                        if std::fs::metadata(&data).is_ok_and(|m| m.len() > limit) {
                            cut_at = Some(began.elapsed());
                            break;
                        }
                    }
                }
            }
            tokio::task::spawn_blocking(move || {
                let (rec, cpu_from) = rec;
                let ticks_s = perf::cpu_seconds(&pids) - cpu_from;
                let mut t = rec.stop()?;
                let _ = std::fs::remove_file(&data);
                if let Some(at) = cut_at {
                    t.notes.retain(|n| !n.starts_with("perf.data reached"));
                    t.notes.push(format!(
                        "perf.data reached its limit of {} KiB {:.1} s into the window: samples after that were not taken (profile.max_size)",
                        limit / 1024,
                        at.as_secs_f64()
                    ));
                }
                // The periods' sum is the CPU time the samples stand for, finer than /proc's
                // 10 ms ticks; the ticks stand in where perf saw nothing.
                let sampled_s = t.folded.total() as f64 / 1e9;
                let cpu_s = if sampled_s > 0.0 { sampled_s } else { ticks_s };
                Ok(Raw { source: "perf", folded: t.folded, samples: t.samples, cpu_s, notes: t.notes })
            })
            .await
            .map_err(|e| e.to_string())?
        }
    }
}

/// The profile of a window that served `requests`, its folded stacks and flame graph written
/// into `dir` as `stem.folded` and `stem.svg` (named relative to the lab's folder by `rel`).
#[allow(clippy::too_many_arguments)]
pub fn finish(
    raw: Raw,
    requests: u64,
    spec: &ProfileSpec,
    patterns: &[String],
    dir: &Path,
    rel: &str,
    stem: &str,
    title: &str,
) -> std::io::Result<StepProfile> {
    let weight = raw.folded.total();
    let us_per_request = if requests == 0 { f64::NAN } else { raw.cpu_s * 1e6 / requests as f64 };
    let us_per_weight = if weight == 0 || requests == 0 { 0.0 } else { us_per_request / weight as f64 };
    std::fs::create_dir_all(dir).map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    results::files::put(&dir.join(format!("{stem}.folded")), raw.folded.text().as_bytes())?;
    results::files::put(&dir.join(format!("{stem}.svg")), &flame::svg(&raw.folded, us_per_weight, title)?)?;
    let mut notes = raw.notes;
    if raw.samples == 0 {
        notes.push("no samples: the process used no CPU in the window, or was not running".into());
    }
    Ok(StepProfile {
        source: raw.source.to_owned(),
        folded: format!("{rel}/{stem}.folded"),
        svg: format!("{rel}/{stem}.svg"),
        samples: raw.samples,
        weight,
        cpu_s: raw.cpu_s,
        requests,
        us_per_request,
        top: folded::top(&raw.folded, us_per_weight, spec.top),
        notes,
        matched: patterns.iter().map(|p| (p.clone(), raw.folded.through(p))).collect(),
    })
}
