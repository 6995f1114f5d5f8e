//! The `lab` subcommands' arguments.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::args::client::{ProtocolArgs, RequestArgs, TlsArgs};
use crate::args::commit::CommitArgs;
use crate::args::gate::CompareGateArgs;
use crate::args::live::LiveArgs;
use crate::args::values::{positive_duration, share};

#[derive(Subcommand, Debug)]
pub enum LabCommand {
    /// Run a plan (TOML) and write report.md, lab.json, steps/ and samples/ to --out.
    /// Exit 0 when every SLO held, 3 when one failed, 4 when a verdict could not be reached
    /// (the generator could not send, a target died), 2 for a bad plan, 1 when a target would
    /// not start, 130/143 when stopped by SIGINT/SIGTERM (the reports say what ran).
    Run(LabRunArgs),
    /// Search the highest rate a URL holds an SLO at (exponential, then bisection).
    Capacity(LabCapacityArgs),
    /// What changed between two labs: every cell and metric old against new, with its 95%
    /// interval and a verdict; writes compare.md, compare.html and compare.json. Exit 3 when a
    /// --fail-on gate breaks, 2 for bad input.
    Compare(LabCompareArgs),
    /// Measure a service's run-to-run spread: run a plan N times (each a lab of its own, its
    /// targets started afresh) or read labs of one build already run, and write
    /// calibration.json: per cell and metric, the change two labs of this build stay under in
    /// 95% of pairs. `lab compare --calibration` and `[baseline] calibration` hold verdicts to
    /// it. Exit 2 for bad input, 130/143 when stopped (the labs run so far stay).
    Calibrate(LabCalibrateArgs),
    /// Does this branch make it slower? Builds BASE and HEAD (any git revisions) in worktrees
    /// of their own and labs them in pairs, one lab of each build, in ABBA order, each lab
    /// starting its build afresh; judges head against base per load point by a paired test
    /// with a 1% false-alarm rate over the run; writes ab.md, ab.json, the labs and the build
    /// logs to --out. Exit 0 no change past the gates, 3 worse past one, 4 could not tell (a
    /// target died, too few steps counted), 1 a build failed, 2 bad input, 130/143 stopped.
    Ab(LabAbArgs),
}

#[derive(Args, Debug)]
pub struct LabAbArgs {
    /// The plan (inside the git repository; each build runs the plan its commit holds).
    pub plan: PathBuf,
    /// The base: the commit the change is measured from (a branch, a tag, a hash).
    pub base: String,
    /// The head: the commit under review.
    pub head: String,
    /// The build, run with sh in each commit's worktree: `go build -o svc .`, `make` (none: a
    /// service that runs from its source).
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,
    /// How long a build may take: past it, its whole process group is stopped (exit 1).
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::args::values::positive_duration)]
    pub build_timeout: Duration,
    /// Lab both builds with the plan as it is in the working tree (copied into each worktree).
    #[arg(long)]
    pub plan_from_working_tree: bool,
    /// Pairs of labs: a number (judged once, at the end), or auto: looks at 3, 5, 8, 12, 20
    /// pairs, stopping once every gated cell is decided.
    #[arg(long, default_value = "auto", value_name = "N|auto")]
    pub repeats: String,
    /// With --repeats auto, the most pairs to run.
    #[arg(long, default_value_t = 20, value_name = "N", value_parser = clap::value_parser!(u32).range(3..=1000))]
    pub most_repeats: u32,
    /// Exit 0, not 4, when the run ends with gated cells undecided (neither worse nor shown
    /// within their gates); the last line says so either way.
    #[arg(long)]
    pub undecided_ok: bool,
    /// The gates head is held to, e.g. 'p99>+5%,throughput<-3%' (metrics: throughput, p50, p99,
    /// success, target_cpu, generator_cpu); default: p50>+5%,target_cpu>+5% (p99 is shown, not
    /// gated: its pairs spread too widely on a shared machine for 20 pairs to decide it).
    #[arg(long, value_name = "GATES")]
    pub fail_on: Option<String>,
    /// Where ab.md, ab.json, the labs and the build logs go (default: ab-DATE-TIME).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Each lab's charts (PNG) and report.html too; by default each lab writes report.md
    /// without charts and lab.json, about 45 KB a lab, for a CI artifact (ab.md is the report).
    #[arg(long)]
    pub lab_charts: bool,
    /// Run a pair's two labs one after the other (ABBA order). By default, where every target
    /// is a command the plan starts and both plans run the same steps, a pair's labs run at
    /// once and in step, both builds' targets on the same CPUs and loadlab on the others, so the
    /// machine's slow spells fall on both builds alike.
    #[arg(long)]
    pub one_at_a_time: bool,
    /// Record every lab into this history with its commit, tagged ab=BASE..HEAD and off the
    /// branch's line (an SQLite file or a postgres:// URL).
    #[arg(long, value_name = "FILE|URL")]
    pub history: Option<String>,
    /// The branch the labs are recorded with.
    #[arg(long)]
    pub branch: Option<String>,
    /// A free tag, KEY=VALUE (repeatable), recorded with each lab.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
}

#[derive(Args, Debug)]
pub struct LabCalibrateArgs {
    /// A plan to run --runs times, or the folders of 3 or more labs of one build.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// How many labs to run from a plan (at least 3; more labs see a service's modes more surely).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(3..=100))]
    pub runs: u32,
    /// Where the labs and calibration.json go (default: a new lab-calibrate-PLAN-... folder;
    /// with lab folders given, the current folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub guard: LabGuardArgs,
}

#[derive(Args, Debug)]
pub struct LabCompareArgs {
    /// The old lab: its output folder, or its lab.json.
    pub old: PathBuf,
    /// The new lab: its output folder, or its lab.json.
    pub new: PathBuf,
    #[command(flatten)]
    pub gate: CompareGateArgs,
    /// Hold every change to this service's run-to-run spread, measured by `lab calibrate`
    /// (its calibration.json, or the folder holding it).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Where compare.md, compare.html and compare.json go (default: the new lab's folder).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct LabRunArgs {
    /// The plan file.
    pub plan: PathBuf,
    /// Output directory (default: a new one per run, lab-PLAN-YYYYMMDD-HHMMSS).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Shorten every step (2 s) and probe, for a quick check of a plan.
    #[arg(long)]
    pub quick: bool,
    /// Repeats of every step, in place of the plan's (3 or more to gate a comparison on).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeats: Option<u32>,
    /// Where loadlab and the targets it starts run, in place of the plan's `placement`: split
    /// (disjoint CPUs, on a machine of two or more) or shared (wherever the scheduler puts them,
    /// the default).
    #[arg(long, value_name = "split|shared")]
    pub placement: Option<String>,
    /// Export loadlab's own client span of each traced request over OTLP/HTTP to this collector
    /// after each step, in place of the plan's `[traces] export`.
    #[arg(long, value_name = "URL")]
    pub otlp_export: Option<String>,
    #[command(flatten)]
    pub guard: LabGuardArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Record the lab into this history (an SQLite file, created on first use, or a
    /// postgres:// URL); default: the plan's [history] path, else LOADLAB_HISTORY.
    #[arg(long, value_name = "FILE|URL")]
    pub history: Option<String>,
    #[command(flatten)]
    pub commit: CommitArgs,
}

/// What keeps a lab from running away or writing over a previous one.
#[derive(Args, Debug)]
pub struct LabGuardArgs {
    /// Refuse a plan estimated to run longer than this.
    #[arg(long, default_value = "24h", value_parser = positive_duration, value_name = "DURATION")]
    pub max_time: Duration,
    /// Write into --out even when it holds a previous lab (its results are replaced).
    #[arg(long)]
    pub force: bool,
}

#[derive(Args, Debug)]
pub struct LabCapacityArgs {
    /// The URL to search.
    pub url: String,
    /// SLO clauses, comma-separated: p99<500ms,success>=99.9%
    #[arg(long)]
    pub slo: String,
    /// First rate probed (N, N/s, N/m).
    #[arg(long, default_value = "100", value_parser = one_rate)]
    pub start: f64,
    /// Highest rate probed.
    #[arg(long, default_value = "50000", value_parser = one_rate)]
    pub max: f64,
    /// Stop when the bounds are this close (e.g. 5%).
    #[arg(long, default_value = "5%", value_parser = share)]
    pub precision: f64,
    /// Length of each probe.
    #[arg(long, default_value = "10s", value_parser = positive_duration)]
    pub probe: Duration,
    /// What the probes send (`-H 'Accept-Encoding: gzip'`, `--method POST --body order.json`),
    /// as for `attack`.
    #[command(flatten)]
    pub request: RequestArgs,
    /// The protocol of the probes, as for `attack`.
    #[command(flatten)]
    pub protocol: ProtocolArgs,
    /// Request timeout, connect to last body byte.
    #[arg(long, default_value = "30s", value_parser = positive_duration)]
    pub timeout: Duration,
    /// How the probes trust an https target, as for `attack`.
    #[command(flatten)]
    pub tls: TlsArgs,
    /// A target on another machine, measured by what it exports.
    #[command(flatten)]
    pub measure: Box<MeasureArgs>,
    /// Output directory (default: a new one per run, lab-capacity-YYYYMMDD-HHMMSS).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub guard: LabGuardArgs,
    #[command(flatten)]
    pub live: LiveArgs,
}

/// A target measured where it runs, as a plan's `[targets.NAME.measure]`.
#[derive(Args, Debug, Clone, Default)]
pub struct MeasureArgs {
    /// The target's exporter (http://HOST:9256/metrics): its CPU and memory, each second.
    #[arg(long, conflicts_with = "measure_prometheus")]
    pub measure_metrics: Option<String>,
    /// A Prometheus server that scrapes the target (http://HOST:9090).
    #[arg(long)]
    pub measure_prometheus: Option<String>,
    /// A counter of the target's CPU seconds (default process_cpu_seconds_total).
    #[arg(long)]
    pub measure_cpu: Option<String>,
    /// A gauge of its resident bytes (default process_resident_memory_bytes with no --measure-cpu).
    #[arg(long)]
    pub measure_memory: Option<String>,
    /// The node_exporter of its host (http://HOST:9100/metrics).
    #[arg(long)]
    pub measure_host: Option<String>,
}

impl MeasureArgs {
    /// The measurement asked for, none without an exporter or a server.
    pub fn remote(&self, tls: attack::TlsOptions) -> Result<Option<scrape::Remote>, String> {
        if self.measure_metrics.is_none() && self.measure_prometheus.is_none() {
            let stray = [&self.measure_cpu, &self.measure_memory, &self.measure_host].iter().any(|o| o.is_some());
            return match stray {
                true => Err(
                    "--measure-cpu, --measure-memory and --measure-host need --measure-metrics or --measure-prometheus"
                        .into(),
                ),
                false => Ok(None),
            };
        }
        lab::measure_remote(
            self.measure_metrics.clone(),
            self.measure_prometheus.clone(),
            self.measure_cpu.as_deref(),
            self.measure_memory.as_deref(),
            self.measure_host.clone(),
            tls,
        )
        .map(Some)
    }
}

/// One rate: `N`, `N/s` or `N/m`.
fn one_rate(s: &str) -> Result<f64, String> {
    s.parse::<attack::Rate>().map(|r| r.0).map_err(|e| e.to_string())
}
