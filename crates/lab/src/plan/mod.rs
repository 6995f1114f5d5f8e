//! The plan file (TOML): what to run, against what, and what counts as holding. Parsing checks
//! every value (durations, rates, protocols, SLO clauses, names that refer to each other) and
//! says where a bad one is: `plan.toml:12: load.rate: bad rate "fast" ...`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use attack::Protocol;

use crate::measure::metric::Metric;
use crate::measure::verdict::Clause;

/// A parsed, checked plan. Paths in it are resolved against the plan file's directory.
#[derive(Clone, Debug)]
pub struct Plan {
    pub name: String,
    pub question: String,
    pub origin: Option<OriginSpec>,
    pub targets: Vec<TargetSpec>,
    pub load: LoadSpec,
    pub variants: Vec<Variant>,
    pub slo: Vec<Clause>,
    pub capacity: Option<CapacitySpec>,
    pub hypotheses: Vec<Hypothesis>,
    /// A previous lab to compare this one with when it ends (`lab compare`).
    pub baseline: Option<Baseline>,
    /// `[history]`: where the lab is recorded, and the gate on its series.
    pub history: Option<HistorySpec>,
    /// How profiled targets are recorded (`[profile]`).
    pub profile: ::profile::ProfileSpec,
    /// Where the spans' receiver listens (`[traces] listen`), for targets the lab does not start
    /// (their collector is pointed there); a free loopback port when none is given.
    pub traces_listen: Option<std::net::SocketAddr>,
    /// Where loadlab's own client span of each traced request is exported (`[traces] export`,
    /// an OTLP/HTTP collector's URL), after each step.
    pub traces_export: Option<String>,
}

impl Plan {
    /// How many steps the plan expands to (every axis multiplied, times targets and repeats).
    pub fn step_count(&self) -> u128 {
        let l = &self.load;
        if l.rate.is_empty() && l.connections.is_empty() && l.speed.is_empty() {
            return 0;
        }
        let axis = |n: usize| n.max(1) as u128;
        axis(self.variants.len())
            * axis(l.protocol.len())
            * axis(l.requests_per_conn.len())
            * axis(l.streams.len())
            * axis(l.connections.len())
            * axis(l.rate.len())
            * axis(l.speed.len())
            * self.targets.len() as u128
            * u128::from(l.repeats)
    }
}

/// Lowercase letters, digits and dashes.
pub(crate) fn slug(s: &str) -> String {
    let mut out: String =
        s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    while out.contains("--") {
        out = out.replace("--", "-");
    }
    out.trim_matches('-').to_owned()
}

/// `[baseline]`: the previous lab's folder, the gates, the noise threshold.
#[derive(Clone, Debug)]
pub struct Baseline {
    pub path: PathBuf,
    pub fail_on: Vec<gate::Gate>,
    /// Changes within this (%) are `~`.
    pub threshold_pct: f64,
    /// The service's run-to-run spread (`lab calibrate`'s calibration.json or its folder).
    pub calibration: Option<PathBuf>,
}

/// `[history]`: the history a lab is recorded into (a file, resolved against the plan's folder,
/// or a `postgres://` URL; none: `--history` or `LOADLAB_HISTORY` say), and the gate judged on
/// its series when the lab ends.
#[derive(Clone, Debug, Default)]
pub struct HistorySpec {
    pub path: Option<String>,
    pub fail_on: Vec<gate::Gate>,
}

/// An origin simulator the lab embeds for the run (the upstream of the systems under test).
#[derive(Clone, Debug)]
pub struct OriginSpec {
    /// Where it listens (a port the targets' configurations name); `127.0.0.1:0` when not given.
    pub listen: Option<String>,
    pub recipe: Option<PathBuf>,
}

/// A system under test.
#[derive(Clone, Debug)]
pub struct TargetSpec {
    pub name: String,
    pub kind: TargetKind,
    /// Path requested on an embedded simulator (`/` by default); part of `url` otherwise.
    pub path: String,
    /// A Prometheus endpoint scraped every second, and the series charted.
    pub metrics: Option<String>,
    pub series: Vec<scrape::Selector>,
    /// Measured by what it exports (its CPU and memory at each step's edges), not by its
    /// processes here.
    pub measure: Option<scrape::Remote>,
    /// How the lab trusts an https target (`insecure`, `root_certs`), as `attack`'s flags.
    pub tls: attack::TlsOptions,
    /// Profiled while the steps run (`profile = true` or a pprof URL).
    pub profile: Option<::profile::Profiler>,
    /// Each request carries a W3C `traceparent` (`traces = true`), its trace id made from the
    /// step's key and the request's number.
    pub traces: bool,
}

#[derive(Clone, Debug)]
pub enum TargetKind {
    /// Something already running at `url` (optionally a process to sample: by its pid, with its
    /// descendants, or every process of a name, such as nginx's master and workers).
    Running { url: String, pid: Option<u32>, process: Option<String> },
    /// A command the lab starts before the steps, waits for, samples and stops after them.
    Command { url: String, start: Vec<String>, ready: Option<String>, dir: PathBuf },
    /// An origin simulator the lab embeds with this recipe, as the system under test.
    Simulator { recipe: PathBuf },
}

/// The load of every step; a field given as a list is an axis.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Open model when non-empty.
    pub rate: Vec<f64>,
    /// Closed model (without rate): connections sending back to back.
    pub connections: Vec<usize>,
    pub protocol: Vec<Protocol>,
    pub requests_per_conn: Vec<Option<u64>>,
    pub streams: Vec<usize>,
    pub duration: Duration,
    /// Sent but not counted, at the start of each step.
    pub warmup: Duration,
    pub repeats: u32,
    /// Quiet time between steps, for connections to drain.
    pub pause: Duration,
    pub method: String,
    pub headers: Vec<String>,
    pub body: Option<Vec<u8>>,
    /// Where the files that templates in headers, body and paths name are found: the plan's
    /// directory.
    pub template_dir: PathBuf,
    pub timeout: Duration,
    pub max_workers: Option<usize>,
    /// Open model: send the hits due within each tick together (as `attack --pace-tick`).
    pub pace_tick: Duration,
    /// Where loadlab and the targets it starts run: split on disjoint CPUs, or shared.
    pub placement: crate::plan::placement::Mode,
    /// An access log every step replays at its timing (`attack --replay`) ...
    pub replay: Option<PathBuf>,
    /// ... this many times faster (an axis).
    pub speed: Vec<f64>,
}

/// A named set of settings: another recipe for the embedded origin, other request settings.
#[derive(Clone, Debug, Default)]
pub struct Variant {
    pub name: String,
    pub recipe: Option<PathBuf>,
    pub method: Option<String>,
    pub headers: Vec<String>,
    pub body: Option<Vec<u8>>,
}

#[derive(Clone, Debug)]
pub struct CapacitySpec {
    pub start: f64,
    pub max: f64,
    /// Relative width at which the bisection stops (0.05 = 5%).
    pub precision: f64,
    pub probe: Duration,
}

/// A claim about two targets (or two variants) on one metric.
#[derive(Clone, Debug)]
pub struct Hypothesis {
    pub claim: String,
    pub metric: Metric,
    /// The one claimed better: lower (or higher) than `than`.
    pub subject: String,
    pub than: String,
    pub lower: bool,
    /// Also judged on the CPU per request of the functions whose names contain this
    /// (`where = "deflate"`), from the steps' profiles.
    pub function: Option<String>,
    /// Also judged on the self time of the span of this name in the slowest 1% of requests
    /// (`span = "db.query"`), from the spans of traced targets.
    pub span: Option<String>,
}

/// A bad plan: where and why (`plan.toml:12: load.rate: ...`; no line when the whole file is
/// at fault).
#[derive(Debug, thiserror::Error)]
pub struct PlanError {
    pub file: String,
    /// 1-based; 0 when no line is to blame.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            0 => write!(f, "{}: {}", self.file, self.message),
            n => write!(f, "{}:{n}: {}", self.file, self.message),
        }
    }
}

mod baseline;
mod build;
mod capacity;
pub(crate) mod gate;
mod history;
mod hypotheses;
mod load;
pub(crate) mod matrix;
pub(crate) mod measure;
pub(crate) mod placement;
mod ports;
mod profile;
mod quick;
pub(crate) use ports::fill_port;
#[cfg(test)]
use quick::QUICK_STEP;
mod raw;
mod replay;
mod targets;
mod variants;
use raw::*;

/// Default length of a step, and of a capacity probe.
pub(crate) const DEFAULT_DURATION: Duration = Duration::from_secs(30);
/// Default quiet time between steps.
pub(crate) const DEFAULT_PAUSE: Duration = Duration::from_secs(2);

/// The largest plan file read: plans are a few kilobytes; a bound keeps a runaway file (a list
/// of millions of rates) from taking the machine's memory.
pub(crate) const MAX_PLAN_BYTES: u64 = 1 << 20;
/// The largest `body_file` read.
pub(crate) const MAX_BODY_BYTES: u64 = 64 << 20;
/// The most steps a plan may expand to.
pub(crate) const MAX_STEPS: usize = 100_000;

/// Reads `path`, refusing more than `max` bytes.
fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(max + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("larger than the limit of {} KiB", max >> 10));
    }
    Ok(bytes)
}

/// Reads and checks the plan at `path`; the files it names must exist. Relative paths in it
/// are relative to the plan's folder, however the plan was named (`plan.toml`, `./plan.toml`).
pub fn load(path: &Path) -> Result<Plan, PlanError> {
    let bad = |message: String| PlanError { file: path.display().to_string(), line: 0, message };
    let bytes = read_bounded(path, MAX_PLAN_BYTES).map_err(bad)?;
    let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    parse_with(&text, &path.display().to_string(), &dir, true)
}

/// Parses plan text; `file` names it in errors, `dir` resolves relative paths. Files the plan
/// names are not looked at (see [`load`]).
pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Plan, PlanError> {
    parse_with(text, file, dir, false)
}

fn parse_with(text: &str, file: &str, dir: &Path, files_exist: bool) -> Result<Plan, PlanError> {
    let doc = Doc { text, file, files_exist };
    let raw: RawPlan = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| doc.line_at(s.start));
        let field = e.span().and_then(|s| doc.field_at(s.start));
        let message = e.message().trim().lines().map(str::trim).collect::<Vec<_>>().join("; ");
        let message = match field {
            Some(f) if !message.contains(&f) => format!("{f}: {message}"),
            _ => message,
        };
        PlanError { file: file.to_owned(), line, message }
    })?;
    doc.check(raw, dir)
}

/// The plan's text, to point errors at lines.
struct Doc<'a> {
    text: &'a str,
    file: &'a str,
    /// Check that the files the plan names exist.
    files_exist: bool,
}

impl Doc<'_> {
    fn line_at(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].matches('\n').count() + 1
    }

    /// `table.key` of the `key = value` line at `offset`.
    fn field_at(&self, offset: usize) -> Option<String> {
        let start = self.text[..offset.min(self.text.len())].rfind('\n').map_or(0, |i| i + 1);
        let line = self.text[start..].lines().next()?;
        let key = line.split_once('=')?.0.trim();
        let table = self.text[..start].lines().rev().find_map(|l| {
            l.trim().strip_prefix('[').map(|t| t.trim_start_matches('[').trim_end_matches(']').to_owned())
        });
        Some(match table {
            Some(t) => format!("{t}.{key}"),
            None => key.to_owned(),
        })
    }

    /// The line where `field` (`load.rate`, `targets.c5`, `slo.p99`) is written, else 0.
    fn line_of(&self, field: &str) -> usize {
        let (table, key) = field.rsplit_once('.').unwrap_or(("", field));
        let mut in_table = table.is_empty();
        for (i, line) in self.text.lines().enumerate() {
            let l = line.trim();
            if let Some(t) = l.strip_prefix('[') {
                let t = t.trim_start_matches('[').trim_end_matches(']').trim();
                if t == field {
                    return i + 1;
                }
                in_table = t == table;
                continue;
            }
            if in_table && l.split_once('=').is_some_and(|(k, _)| k.trim().trim_matches('"') == key) {
                return i + 1;
            }
        }
        0
    }

    fn err(&self, field: &str, message: impl std::fmt::Display) -> PlanError {
        PlanError { file: self.file.to_owned(), line: self.line_of(field), message: format!("{field}: {message}") }
    }

    /// `dir/name`, which must be a readable file when the plan is loaded from disk.
    fn file(&self, field: &str, dir: &Path, name: &str) -> Result<PathBuf, PlanError> {
        let path = dir.join(name);
        if self.files_exist {
            if let Err(e) = std::fs::File::open(&path) {
                return Err(self.err(field, format!("{name}: {e}")));
            }
        }
        Ok(path)
    }

    /// An axis's values must differ once read: `rate = [30, "30/s", "1800/m"]` is one load point
    /// three times, whose steps would share one id and one results file.
    fn distinct<T: PartialEq>(&self, field: &str, values: &[T], show: impl Fn(&T) -> String) -> Result<(), PlanError> {
        for (i, v) in values.iter().enumerate() {
            if values[..i].contains(v) {
                return Err(
                    self.err(field, format!("{} is given twice (after units are read): give each value once", show(v)))
                );
            }
        }
        Ok(())
    }

    fn duration(&self, field: &str, v: Option<&String>, default: Duration) -> Result<Duration, PlanError> {
        match v {
            None => Ok(default),
            Some(s) => results::duration::parse(s).map_err(|e| self.err(field, e)),
        }
    }

    fn positive(&self, field: &str, v: i64, max: i64) -> Result<u64, PlanError> {
        if v < 1 || v > max {
            return Err(self.err(field, format!("{v} is out of range (1 to {max})")));
        }
        Ok(v as u64)
    }

    fn rate(&self, field: &str, v: &NumOrText) -> Result<f64, PlanError> {
        let r = match v {
            NumOrText::Int(n) => *n as f64,
            NumOrText::Float(f) => *f,
            NumOrText::Text(t) => t.parse::<attack::Rate>().map_err(|e| self.err(field, e))?.0,
        };
        attack::check_rate(r).map_err(|e| self.err(field, e))
    }

    fn check(&self, raw: RawPlan, dir: &Path) -> Result<Plan, PlanError> {
        let origin = match raw.origin {
            Some(o) => Some(OriginSpec {
                listen: o.listen,
                recipe: o.recipe.as_deref().map(|r| self.file("origin.recipe", dir, r)).transpose()?,
            }),
            None => None,
        };
        if raw.targets.is_empty() {
            return Err(PlanError {
                file: self.file.into(),
                line: 0,
                message: "no [targets.NAME] table: a plan needs a system to test".into(),
            });
        }
        let targets = self.targets(raw.targets, dir)?;
        let load = self.load(raw.load.unwrap_or_else(empty_load), dir, raw.capacity.is_some())?;
        let variants = self.variants(raw.variants, dir)?;
        let mut slo = Vec::new();
        for (key, value) in raw.slo {
            let field = format!("slo.{key}");
            let text = match value {
                toml::Value::String(s) => s,
                other => return Err(self.err(&field, format!("{other} is not a clause like \"< 1s\" or \">= 99.9%\""))),
            };
            slo.push(Clause::parse(&key, &text).map_err(|e| self.err(&field, e))?);
        }
        // With a replay the search is of its speed: from 1x to 256x unless given.
        let capacity = raw.capacity.map(|c| self.capacity(c, load.replay.is_some())).transpose()?;
        let hypotheses = self.hypotheses(raw.hypotheses, &targets, &variants)?;
        let baseline = raw.baseline.map(|b| self.baseline(b, dir)).transpose()?;
        let history = raw.history.map(|h| self.history(h, dir)).transpose()?;
        let plan = Plan {
            name: raw.name,
            question: raw.question,
            origin,
            targets,
            load,
            variants,
            slo,
            capacity,
            hypotheses,
            baseline,
            history,
            profile: raw.profile.map(|p| self.profile_spec(p)).transpose()?.unwrap_or_default(),
            traces_listen: None,
            traces_export: None,
        };
        let (traces_listen, traces_export) = match raw.traces {
            Some(t) => self.traces(t, &plan)?,
            None => (None, None),
        };
        let plan = Plan { traces_listen, traces_export, ..plan };
        let steps = plan.step_count();
        if steps > MAX_STEPS as u128 {
            return Err(self
                .err("load", format!("the plan expands to {steps} steps, more than {MAX_STEPS}: shorten its lists")));
        }
        Ok(plan)
    }

    /// The line of the `n`th `[[table]]` header.
    fn nth_table_line(&self, header: &str, n: usize) -> usize {
        self.text.lines().enumerate().filter(|(_, l)| l.trim().starts_with(header)).nth(n).map_or(0, |(i, _)| i + 1)
    }
}

#[cfg(test)]
mod tests;
