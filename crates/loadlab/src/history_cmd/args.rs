//! The `history` subcommands' arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use crate::args::commit::CommitArgs;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HistoryArgs {
    #[command(subcommand)]
    pub command: Option<HistoryCommand>,
    /// With no subcommand: list the series (as `history show` selects them).
    #[command(flatten)]
    pub list: HistoryShowArgs,
}

#[derive(Subcommand, Debug)]
pub enum HistoryCommand {
    /// Add lab folders already on disk (their lab.json) to the history.
    Add(HistoryAddArgs),
    /// Each series as a table over commits with its change points; --json, --csv (Otava's
    /// layout), or --out DIR for history.html and history.md.
    Show(HistoryShowArgs),
    /// Judge a lab (default: the newest) against the current level of each of its series, and
    /// every confirmed change for the worse nobody accepted. Exit 3 when a gated metric is worse
    /// past its threshold and beyond the series' noise (or carries such a regression), 4 when a
    /// series is too short to tell, 0 otherwise.
    Check(HistoryCheckArgs),
    /// Accept the change that began at COMMIT (it was meant: a feature that costs CPU), so that
    /// `history check` stops failing on it; the history keeps who accepted it and why.
    Accept(HistoryAcceptArgs),
    /// Find the first commit at the bad level between --good and --bad: each commit tried is
    /// built (--build) in a git worktree of its own and labbed with PLAN from there, recorded in
    /// the history, and judged against the labs of the two ends. Exit 0 when a commit is named,
    /// 4 when the ends do not differ (or skips leave a range), 2 for bad input, 1 when the good
    /// or bad commit itself does not build or start.
    Bisect(HistoryBisectArgs),
}

/// Which history.
#[derive(Args, Debug, Default)]
pub struct HistoryAt {
    /// The history: an SQLite file (created on first use) or a postgres:// URL.
    #[arg(long, env = "LOADLAB_HISTORY", value_name = "FILE|URL")]
    pub history: Option<String>,
}

/// Which series.
#[derive(Args, Debug, Default)]
pub struct SeriesArgs {
    /// Only this plan's series (its name).
    #[arg(long)]
    pub plan: Option<String>,
    /// Only this target's.
    #[arg(long)]
    pub target: Option<String>,
    /// Only this metric (throughput, p50, p90, p99, success, target_cpu, generator_cpu, or
    /// fn: for the profiled functions).
    #[arg(long)]
    pub metric: Option<String>,
    /// Only this load point: its rate (400) or its words (400/s http2).
    #[arg(long)]
    pub load: Option<String>,
    /// Only labs of this branch.
    #[arg(long)]
    pub branch: Option<String>,
    /// Put labs of different machines (and loadlab measurements) in one series.
    #[arg(long)]
    pub any_machine: bool,
    /// Every lab, those off the line too: a bisect's, and reruns of commits the line has passed
    /// (by default a series is its line: each new commit as it came, and reruns of the newest).
    #[arg(long)]
    pub off_line: bool,
}

/// How change points are found (Apache Otava's method and defaults, but for --min-points).
#[derive(Args, Debug)]
pub struct ChangeArgs {
    /// Labs per sliding window.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(2..))]
    pub window: u64,
    /// The t-test's p-value a change must reach.
    #[arg(long, default_value_t = 0.001, value_parser = crate::args::values::finite)]
    pub max_pvalue: f64,
    /// Changes smaller than this are ignored (e.g. 2%).
    #[arg(long, default_value = "0%", value_parser = crate::args::values::share)]
    pub min_change: f64,
    /// Labs needed on each side of a change to confirm it.
    #[arg(long, default_value_t = stats::change_points::MIN_POINTS as u64, value_parser = clap::value_parser!(u64).range(1..))]
    pub min_points: u64,
}

impl Default for ChangeArgs {
    fn default() -> ChangeArgs {
        ChangeArgs {
            window: 50,
            max_pvalue: 0.001,
            min_change: 0.0,
            min_points: stats::change_points::MIN_POINTS as u64,
        }
    }
}

#[derive(Args, Debug, Default)]
pub struct HistoryShowArgs {
    #[command(flatten)]
    pub at: HistoryAt,
    #[command(flatten)]
    pub series: SeriesArgs,
    #[command(flatten)]
    pub changes: ChangeArgs,
    /// Print the series and change points as JSON.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the series as CSV in the layout Apache Otava reads (time, commit, a column each).
    #[arg(long)]
    pub csv: bool,
    /// Also write history.html (what changed first, then every series over its commits) and
    /// history.md (for a CI summary: what changed and each plan's last check) to this folder.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// history.md also lists every series' labs, not only the overview.
    #[arg(long, requires = "out")]
    pub all: bool,
}

#[derive(Args, Debug)]
pub struct HistoryAddArgs {
    /// Lab folders (or their lab.json).
    #[arg(required = true)]
    pub labs: Vec<PathBuf>,
    #[command(flatten)]
    pub at: HistoryAt,
    /// Say what the labs were of, over what they recorded.
    #[command(flatten)]
    pub commit: CommitArgs,
}

#[derive(Args, Debug)]
pub struct HistoryCheckArgs {
    /// The lab to judge (its folder, added first if it is not in the history yet); default: the
    /// newest lab in the history.
    pub lab: Option<PathBuf>,
    #[command(flatten)]
    pub at: HistoryAt,
    /// The gates, e.g. 'p99>+5%,throughput<-3%' (metrics: throughput, p50, p90, p99, success,
    /// target_cpu, generator_cpu); default: p50>+5%,p99>+5%,target_cpu>+5%.
    #[arg(long, value_name = "GATES")]
    pub fail_on: Option<String>,
    /// Judge across machines.
    #[arg(long)]
    pub any_machine: bool,
    /// The check as JSON on stdout (each series' verdict, value, level, p, what it was held
    /// to, warnings), beside the text on stderr.
    #[arg(long)]
    pub json: bool,
    /// Exit with this code when the check passes with a warning (a lab alone beyond its level,
    /// a change not yet confirmed), for a CI job to rerun the lab: e.g. 5.
    #[arg(long, value_name = "CODE", value_parser = clap::value_parser!(u8).range(5..=125))]
    pub warning_exit: Option<u8>,
    /// A new series not judged yet (its first labs) exits 4 instead of 0.
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub changes: ChangeArgs,
}

#[derive(Args, Debug)]
pub struct HistoryAcceptArgs {
    /// The commit the change began at, as `history check` names it (4 or more characters).
    pub commit: String,
    #[command(flatten)]
    pub at: HistoryAt,
    /// Why the change is accepted, kept in the history and shown beside the change.
    #[arg(long)]
    pub reason: String,
    /// Only this plan's series (default: every plan's).
    #[arg(long)]
    pub plan: Option<String>,
    /// Only this metric's series, e.g. target_cpu (default: every metric's).
    #[arg(long)]
    pub metric: Option<String>,
    /// Who accepts (default: GITHUB_ACTOR, GITLAB_USER_LOGIN or USER).
    #[arg(long)]
    pub by: Option<String>,
}

#[derive(Args, Debug)]
pub struct HistoryBisectArgs {
    /// The plan (inside the git repository; run from each commit's worktree).
    pub plan: PathBuf,
    /// A commit at the good level (anything git accepts).
    #[arg(long)]
    pub good: String,
    /// A later commit at the bad level.
    #[arg(long)]
    pub bad: String,
    /// The build, run with sh in each commit's worktree: `go build -o svc .`, `make` (none: a
    /// service that runs from its source).
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,
    /// Lab every commit with the plan as it is in the working tree (copied into each commit's
    /// worktree); a commit whose tree holds no plan is labbed with it anyway, and says so.
    #[arg(long)]
    pub plan_from_working_tree: bool,
    /// How long a build may take: past it, the build's whole process group is stopped and the
    /// commit skipped as one that does not build.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::args::values::positive_duration)]
    pub build_timeout: std::time::Duration,
    #[command(flatten)]
    pub at: HistoryAt,
    /// Judge on this metric (default: whichever of p50, p90, p99, target_cpu moved most).
    #[arg(long)]
    pub metric: Option<String>,
    /// Judge at this load point: its rate (400) or its words.
    #[arg(long)]
    pub load: Option<String>,
    /// Go into merged branches: every commit in topological order, not only the first-parent
    /// line.
    #[arg(long)]
    pub no_first_parent: bool,
    /// The most labs to run (labs already in the history are reused free).
    #[arg(long, value_name = "N")]
    pub max_labs: Option<usize>,
    /// Where the labs, build logs and bisect.md go (default: bisect-DATE-TIME).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Each lab as --quick runs it.
    #[arg(long)]
    pub quick: bool,
    /// The branch the labs are recorded with.
    #[arg(long)]
    pub branch: Option<String>,
    /// A free tag, KEY=VALUE (repeatable), recorded with each lab.
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
}
