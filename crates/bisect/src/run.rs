//! A bisect from start to end: the two levels labbed (where the history has too few), the series
//! that moved most between them chosen, then commits built and labbed in worktrees of their own
//! as the search asks, every lab recorded in the history as `lab run --history` records it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_core::future::LocalBoxFuture;

use history::{show, Filter, History, Key, Query};
use stats::describe::centre;
use tokio_util::sync::CancellationToken;

use builds::{Commit, Repo, Worktree};

mod build;
use crate::judge::{Levels, Verdict, LEVEL_LABS, MOST_LABS};
use crate::search::{Answer, Search, State};

/// What to bisect, as the command line gives it.
#[derive(Clone, Debug)]
pub struct Request {
    pub plan: PathBuf,
    pub good: String,
    pub bad: String,
    /// Run in each commit's worktree (`sh -c`), in a process group of its own; none: nothing
    /// to build (a service run from source).
    pub build: Option<String>,
    /// Lab every commit with the working tree's plan (copied into its worktree), not the plan
    /// the commit holds; a commit that holds none is labbed with it anyway.
    pub plan_from_working_tree: bool,
    /// How long a build may take before its group is stopped and its commit skipped.
    pub build_timeout: std::time::Duration,
    pub history: String,
    /// Where the labs, build logs and bisect.md go.
    pub out: PathBuf,
    /// Every commit in topological order, not only the first-parent line.
    pub merged: bool,
    pub metric: Option<String>,
    pub load: Option<String>,
    /// The most labs to run (labs already in the history are free).
    pub max_labs: Option<usize>,
    pub branch: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub quick: bool,
}

/// Why a bisect could not be done.
#[derive(Debug)]
pub enum Failure {
    /// Bad input: not a repository, a revision git does not know, good not before bad (exit 2).
    Input(String),
    /// The good or the bad commit itself did not build or start, or the history failed (exit 1).
    Endpoint(String),
}

/// One commit's part in the bisect.
#[derive(Clone, Debug)]
pub struct Tried {
    pub commit: Commit,
    /// What the bisect knows of it (`good`/`bad` for the two ends).
    pub state: State,
    /// Its labs' values of the chosen series, in order.
    pub values: Vec<f64>,
    /// Of those, labs the history held already.
    pub reused: usize,
    /// The lab folders this bisect made for it.
    pub labs: Vec<PathBuf>,
    /// The build's time and log, when it was built.
    pub build: Option<(Duration, PathBuf)>,
}

/// How a bisect ended.
#[derive(Clone, Debug)]
pub enum Ending {
    /// The first commit at the bad level, and the change from good to bad.
    Named { first: usize, change: Change },
    /// Skipped commits leave these in doubt.
    Range(Vec<usize>),
    /// The good and bad levels do not differ beyond their noise: nothing to look for.
    NoDifference(String),
    /// `--max-labs` ran out with these commits still in doubt.
    OutOfLabs(Vec<usize>),
    /// A signal stopped it.
    Stopped,
}

/// The change in the chosen series: every lab judged good against every lab judged bad.
#[derive(Clone, Debug)]
pub struct Change {
    pub metric: String,
    pub good: f64,
    pub bad: f64,
    pub pct: f64,
    pub interval_pct: Option<(f64, f64)>,
}

/// The whole of it, for the last line and bisect.md.
#[derive(Debug)]
pub struct Report {
    pub good: Tried,
    pub bad: Tried,
    /// The commits after good up to bad, oldest first.
    pub range: Vec<Tried>,
    /// The series judged on, and why it was chosen.
    pub series: Option<(Key, String)>,
    pub ending: Ending,
    pub labs_run: usize,
    pub merged: bool,
    pub build: Option<String>,
}

/// Tokens a signal cancels: the first stops after the current step (and ends the bisect), the
/// second abandons the step.
#[derive(Clone, Default)]
pub struct Signals {
    pub stop: CancellationToken,
    pub abort: CancellationToken,
}

struct Bisect<'a> {
    req: &'a Request,
    repo: Repo,
    /// The plan's path inside the repository.
    plan_in_repo: PathBuf,
    /// The plan in the working tree.
    working_plan: PathBuf,
    history: History,
    machine: String,
    plan_name: Option<String>,
    /// The plan as checked out, for its name and how long a lab takes.
    plan: Option<lab::Plan>,
    labs_run: usize,
    /// Series that moved between the ends with loadlab's own CPU (the machine's move), in words.
    machine_moves: Vec<String>,
    signals: &'a Signals,
    say: &'a dyn Fn(&str),
}

/// Bisects as `req` asks, saying what it does through `say`.
pub fn bisect<'a>(
    req: &'a Request,
    signals: &'a Signals,
    say: &'a dyn Fn(&str),
) -> LocalBoxFuture<'a, Result<Report, Failure>> {
    Box::pin(run(req, signals, say))
}

async fn run(req: &Request, signals: &Signals, say: &dyn Fn(&str)) -> Result<Report, Failure> {
    let plan = std::path::absolute(&req.plan).map_err(|e| Failure::Input(format!("{}: {e}", req.plan.display())))?;
    if !plan.is_file() {
        return Err(Failure::Input(format!("{}: no such plan", req.plan.display())));
    }
    let repo = Repo::holding(&plan).map_err(Failure::Input)?;
    let root = std::fs::canonicalize(&repo.root).map_err(|e| Failure::Input(e.to_string()))?;
    let plan_in_repo = std::fs::canonicalize(&plan)
        .ok()
        .and_then(|p| p.strip_prefix(&root).ok().map(Path::to_path_buf))
        .ok_or_else(|| Failure::Input(format!("{}: not inside {}", req.plan.display(), root.display())))?;
    let good = repo.resolve(&req.good).map_err(|e| Failure::Input(format!("--good {e}")))?;
    let bad = repo.resolve(&req.bad).map_err(|e| Failure::Input(format!("--bad {e}")))?;
    if good == bad {
        return Err(Failure::Input("--good and --bad are the same commit".into()));
    }
    if !repo.is_ancestor(&good, &bad) {
        return Err(Failure::Input(format!("--good {} is not an ancestor of --bad {}", req.good, req.bad)));
    }
    let commits = repo.range(&good, &bad, req.merged).map_err(Failure::Input)?;
    let (good, bad) = (repo.commit(&good).map_err(Failure::Input)?, repo.commit(&bad).map_err(Failure::Input)?);
    if commits.last().map(|c| &c.hash) != Some(&bad.hash) {
        return Err(Failure::Input(format!("--bad {} is not on the line from --good", req.bad)));
    }
    let history = History::open(&req.history).await.map_err(|e| Failure::Input(e.to_string()))?;
    std::fs::create_dir_all(&req.out).map_err(|e| Failure::Input(format!("--out {}: {e}", req.out.display())))?;
    let mut b = Bisect {
        req,
        repo: Repo { root },
        plan_in_repo,
        working_plan: plan.clone(),
        history,
        machine: lab::Machine::here().fingerprint(),
        // The plan's name finds the labs the history holds already (a plan that does not load
        // here, as checked out, is named by its first lab).
        plan_name: None,
        plan: lab::load_plan(&plan).ok(),
        labs_run: 0,
        machine_moves: Vec::new(),
        signals,
        say,
    };
    let line = if req.merged { "every commit, in topological order" } else { "the first-parent line" };
    let tries = (commits.len() as f64).log2().ceil().max(1.0) as usize;
    // A lab is its steps and a few seconds to start and stop its targets.
    let per_lab = b.plan.as_ref().map(|p| lab::preview(p).estimate.as_secs_f64() + 3.0);
    let labs = 2 * LEVEL_LABS + 2 * tries;
    let time = per_lab.map_or_else(String::new, |s| format!(", about {:.0} min of labs", labs as f64 * s / 60.0));
    say(&format!(
        "bisect: {} commits after {} (good) up to {} (bad), {line}: {LEVEL_LABS} labs of each end, then about {tries} \
         commits to build and lab (1-2 labs each when the change is clear, up to {MOST_LABS}): about {labs} labs{time}, \
         plus the builds (timed as they go)",
        commits.len(),
        good.short(),
        bad.short(),
    ));
    b.plan_name = b.plan.as_ref().map(|p| p.name.clone());
    b.run(good, bad, commits).await
}

impl Bisect<'_> {
    async fn run(&mut self, good: Commit, bad: Commit, commits: Vec<Commit>) -> Result<Report, Failure> {
        let tried = |commit: Commit, state: State| Tried {
            commit,
            state,
            values: Vec::new(),
            reused: 0,
            labs: Vec::new(),
            build: None,
        };
        let mut ends = [tried(good, State::Good), tried(bad, State::Bad)];
        self.levels(&mut ends, LEVEL_LABS).await?;
        let mut chosen = self.choose(&ends).await?;
        // Ends that differ by less than a clear margin get more labs each before anything is
        // judged between them: on a noisy service, 5 labs can make a chance difference look real.
        if chosen.as_ref().is_none_or(|(_, _, l)| l.separation() < WEAK_SEPARATION) && !self.signals.stop.is_cancelled()
        {
            (self.say)(&format!(
                "bisect: the ends are close or noisy: labbing each up to {MOST_LEVEL_LABS} times before judging between them"
            ));
            self.levels(&mut ends, MOST_LEVEL_LABS).await?;
            chosen = self.choose(&ends).await?;
        }
        if self.signals.stop.is_cancelled() {
            return Ok(self.report(ends, Vec::new(), None, Ending::Stopped));
        }
        let range: Vec<Tried> = commits.into_iter().map(|c| tried(c, State::Untested)).collect();
        let Some((key, why, levels)) = chosen else {
            let why = self.no_difference(&ends).await?;
            return Ok(self.report(ends, range, None, Ending::NoDifference(why)));
        };
        if levels.separation() < MIN_SEPARATION {
            let why = format!(
                "the good and bad levels of {} differ ({why}) but by only {:.1} spreads of their labs: too \
                 close to tell commits apart (at least {MIN_SEPARATION:.0} needed)",
                key.text(),
                levels.separation()
            );
            return Ok(self.report(ends, range, None, Ending::NoDifference(why)));
        }
        (self.say)(&format!("bisect: judged on {}: {why}", key.text()));
        let apart = levels.separation();
        if apart < WEAK_SEPARATION {
            (self.say)(&format!(
                "bisect: warning: the levels are only {apart:.1} spreads apart: expect up to {MOST_LABS} labs a commit \
                 and perhaps a range rather than one commit (simulated, 15 commits at +5% with 3% noise: the right \
                 one named 27% of the time, a wrong one 5%)"
            ));
        }
        ends[0].values.clone_from(&levels.good);
        ends[1].values.clone_from(&levels.bad);
        let mut range = range;
        let last = range.len() - 1;
        range[last].values.clone_from(&levels.bad);
        let mut search = Search::new(range.len());
        let ending = loop {
            if self.signals.stop.is_cancelled() {
                break Ending::Stopped;
            }
            let Some(i) = search.next() else {
                break match search.answer() {
                    Answer::First(first) => Ending::Named { first, change: self.change(&key, &levels, &ends, &range) },
                    Answer::Range(r) => Ending::Range(r),
                };
            };
            if self.req.max_labs.is_some_and(|most| self.labs_run >= most) {
                break Ending::OutOfLabs((0..range.len()).filter(|&j| search.states[j] == State::Untested).collect());
            }
            search.states[i] = self.judge(&mut range[i], &key, &levels).await?;
            range[i].state = search.states[i].clone();
            let word = match &range[i].state {
                State::Good => "good".to_owned(),
                State::Bad => "bad".to_owned(),
                State::Skipped(why) => format!("skipped: {why}"),
                State::Untested => "untested".to_owned(),
            };
            let left = search.left();
            (self.say)(&format!(
                "bisect: {} {}: {word}; {left} commit{} left to try",
                range[i].commit.short(),
                range[i].commit.subject,
                if left == 1 { "" } else { "s" }
            ));
        };
        Ok(self.report(ends, range, Some((key, why)), ending))
    }

    fn report(
        &self,
        [good, bad]: [Tried; 2],
        range: Vec<Tried>,
        series: Option<(Key, String)>,
        ending: Ending,
    ) -> Report {
        Report {
            good,
            bad,
            range,
            series,
            ending,
            labs_run: self.labs_run,
            merged: self.req.merged,
            build: self.req.build.clone(),
        }
    }

    /// Labs the two ends, taking turns, until the history holds `labs` of each: a
    /// machine that drifts (a neighbour, the clock's frequency) moves both levels alike rather
    /// than one. A build that fails, or an end none of whose labs count, ends the bisect (exit 1).
    async fn levels(&mut self, ends: &mut [Tried; 2], labs: usize) -> Result<(), Failure> {
        let mut have = [0; 2];
        for (i, end) in ends.iter_mut().enumerate() {
            have[i] = self.counted_labs(&end.commit.hash).await?;
            end.reused = have[i];
        }
        let mut trees: [Option<Worktree>; 2] = [None, None];
        let mut uncounted = [0; 2];
        while have.iter().any(|h| *h < labs) && !self.signals.stop.is_cancelled() {
            for i in 0..2 {
                if have[i] >= labs || self.signals.stop.is_cancelled() {
                    continue;
                }
                if trees[i].is_none() {
                    trees[i] = Some(self.build(&mut ends[i]).await.map_err(Failure::Endpoint)?);
                }
                let Some(tree) = trees[i].as_ref() else { unreachable!("built above") };
                if self.lab(&mut ends[i], tree).await.map_err(Failure::Endpoint)? {
                    have[i] += 1;
                    continue;
                }
                // A lab that counted no step (a busy machine held the generator back) is run
                // again; an end none of whose labs count cannot be a level.
                uncounted[i] += 1;
                let last = ends[i].labs.last().map_or_else(String::new, |l| l.display().to_string());
                if uncounted[i] >= MOST_LABS {
                    return Err(Failure::Endpoint(format!(
                        "{} ({}): {} of its labs counted no step (the last: {last})",
                        ends[i].commit.short(),
                        ends[i].commit.subject,
                        uncounted[i],
                    )));
                }
                (self.say)(&format!("bisect: that lab counted no step (see {last}): it is run again"));
            }
        }
        Ok(())
    }

    /// The plan's labs on this machine, each with its commit.
    async fn stored(&self) -> Result<Vec<history::Stored>, Failure> {
        let filter = Filter { plan: self.plan_name.clone(), machine: Some(self.machine.clone()), ..Default::default() };
        self.history.labs_where(&filter).await.map_err(|e| Failure::Endpoint(e.to_string()))
    }

    /// The labs of `hash` that counted a step.
    async fn counted_labs(&mut self, hash: &str) -> Result<usize, Failure> {
        if self.plan_name.is_none() {
            return Ok(0);
        }
        let stored = self.stored().await?;
        Ok(stored
            .iter()
            .filter(|(_, e)| e.commit.as_deref() == Some(hash) && e.steps.iter().any(|s| s.not_counted.is_none()))
            .count())
    }

    /// The series that moved most between the ends (of those asked for), with why, and its
    /// levels; none when no series moved beyond its noise.
    async fn choose(&mut self, ends: &[Tried; 2]) -> Result<Option<(Key, String, Levels)>, Failure> {
        let stored = self.stored().await?;
        let query =
            Query { plan: self.plan_name.clone(), load: self.req.load.clone(), off_line: true, ..Default::default() };
        let mut best: Option<(f64, Key, String, Levels)> = None;
        self.machine_moves.clear();
        for s in history::series(&stored, &query, &Default::default()) {
            let asked = match &self.req.metric {
                Some(m) => s.key.metric == *m,
                None => CHOSEN_FROM.contains(&s.key.metric.as_str()),
            };
            if !asked {
                continue;
            }
            let of = |hash: &str| -> Vec<f64> {
                s.points.iter().filter(|p| p.commit.as_deref() == Some(hash)).map(|p| p.value).collect()
            };
            let levels = Levels { good: of(&ends[0].commit.hash), bad: of(&ends[1].commit.hash) };
            if levels.good.len() < 2 || levels.bad.len() < 2 {
                continue;
            }
            let c = stats::welch::welch(&levels.bad, &levels.good);
            let moved = c.ratio.ln().abs();
            let beyond = c.p.is_some_and(|p| p <= CHOICE_P) && c.ci.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0);
            // A move loadlab's own CPU made alike is the machine's: no commit brought it.
            let ends_of = |hash: &str| -> Vec<(f64, Option<f64>)> {
                s.points.iter().filter(|p| p.commit.as_deref() == Some(hash)).map(|p| (p.value, p.own_cpu)).collect()
            };
            let (good, bad) = (ends_of(&ends[0].commit.hash), ends_of(&ends[1].commit.hash));
            if beyond && history::machine_explains(&s.key.metric, &good, &bad, CHOICE_P) {
                self.machine_moves.push(format!("{} {:+.1}%", s.key.metric, (c.ratio - 1.0) * 100.0));
                continue;
            }
            if beyond && best.as_ref().is_none_or(|b| moved > b.0) {
                let why = format!(
                    "{} -> {} ({:+.1}%, p = {:.1e}), the largest move of {} between the ends",
                    show(&s.key.metric, centre(&levels.good)),
                    show(&s.key.metric, centre(&levels.bad)),
                    (c.ratio - 1.0) * 100.0,
                    c.p.unwrap_or(f64::NAN),
                    self.req.metric.as_deref().map_or_else(|| CHOSEN_FROM.join(", "), str::to_owned),
                );
                best = Some((moved, s.key.clone(), why, levels));
            }
        }
        Ok(best.map(|(_, k, why, l)| (k, why, l)))
    }

    /// Why no series will do, for exit 4.
    async fn no_difference(&mut self, ends: &[Tried; 2]) -> Result<String, Failure> {
        let asked = self.req.metric.as_deref().map_or_else(|| CHOSEN_FROM.join(", "), str::to_owned);
        self.machine_moves.dedup();
        let machine = if self.machine_moves.is_empty() {
            String::new()
        } else {
            format!(
                "; {} moved, but with loadlab's own CPU per request: the machine changed between their labs, not a \
                 commit (relab both ends on one machine)",
                self.machine_moves.join(", ")
            )
        };
        Ok(format!(
            "the good ({}) and bad ({}) levels do not differ beyond their noise in {asked}{} (Welch's test on \
             {LEVEL_LABS}+ labs each, p <= {CHOICE_P}){machine}",
            ends[0].commit.short(),
            ends[1].commit.short(),
            self.req.load.as_deref().map_or_else(String::new, |l| format!(" at load {l}")),
        ))
    }

    /// Labs `t` until its labs decide (at most [`MOST_LABS`], counting those the history holds).
    async fn judge(&mut self, t: &mut Tried, key: &Key, levels: &Levels) -> Result<State, Failure> {
        t.values = self.values(&t.commit.hash, key).await?;
        t.reused = t.values.len();
        let mut tree: Option<Worktree> = None;
        let mut tries = t.values.len();
        loop {
            match levels.judge(&t.values) {
                Verdict::Good => return Ok(State::Good),
                Verdict::Bad => return Ok(State::Bad),
                Verdict::Undecided if tries >= MOST_LABS => {
                    return Ok(State::Skipped(format!("{tries} labs could not tell (between the levels)")));
                }
                Verdict::Undecided => {}
            }
            if self.signals.stop.is_cancelled() || self.req.max_labs.is_some_and(|m| self.labs_run >= m) {
                return Ok(State::Untested);
            }
            if tree.is_none() {
                match self.build(t).await {
                    Ok(built) => tree = Some(built),
                    Err(why) => return Ok(State::Skipped(why)),
                }
            }
            let Some(built) = tree.as_ref() else { unreachable!("built above") };
            match self.lab(t, built).await {
                Ok(_) => {}
                Err(why) => return Ok(State::Skipped(why)),
            }
            tries += 1;
            t.values = self.values(&t.commit.hash, key).await?;
        }
    }

    /// The values of `key`'s series at `hash`, in lab order.
    async fn values(&mut self, hash: &str, key: &Key) -> Result<Vec<f64>, Failure> {
        let stored = self.stored().await?;
        let query = Query {
            plan: Some(key.plan.clone()),
            metric: Some(key.metric.clone()),
            off_line: true,
            ..Default::default()
        };
        Ok(history::series(&stored, &query, &Default::default())
            .into_iter()
            .find(|s| s.key == *key)
            .map(|s| s.points.iter().filter(|p| p.commit.as_deref() == Some(hash)).map(|p| p.value).collect())
            .unwrap_or_default())
    }

    /// Runs the plan in `tree` once and records the lab; whether it counted a step, or why it
    /// could not run.
    async fn lab(&mut self, t: &mut Tried, tree: &Worktree) -> Result<bool, String> {
        let (in_tree, absent) =
            builds::plan_in_tree(tree, &self.plan_in_repo, &self.working_plan, self.req.plan_from_working_tree)?;
        if absent && !self.req.plan_from_working_tree {
            (self.say)(&format!(
                "bisect: {} holds no {}: labbed with the working tree's",
                t.commit.short(),
                self.plan_in_repo.display()
            ));
        }
        let plan = lab::load_plan(&in_tree).map_err(|e| e.to_string())?;
        self.plan_name.get_or_insert_with(|| plan.name.clone());
        let out = self.req.out.join(format!("{}-{}", t.commit.short(), t.labs.len() + 1));
        let mut opts = lab::RunOptions::new(out.clone());
        opts.quick = self.req.quick;
        (opts.stop, opts.abort) = (self.signals.stop.clone(), self.signals.abort.clone());
        // Tagged as a bisect's, so that the history keeps its labs of older commits off the
        // line (`history::on_line`): a bisect cannot rewrite the line it was asked about.
        let mut tags = self.req.tags.clone();
        tags.insert(history::BISECT_TAG.to_owned(), format!("{}..{}", self.req.good, self.req.bad));
        let given = lab::Given { commit: Some(t.commit.hash.clone()), branch: self.req.branch.clone(), tags };
        let folder = tree.path.join(&self.plan_in_repo);
        opts.provenance = Some(lab::Provenance::gather(&given, folder.parent().unwrap_or(&tree.path)));
        let say = self.say;
        let watch = move |e: &lab::Event<'_>| {
            if let lab::Event::Finished { index, of, id, line, .. } = e {
                say(&format!("  [{}/{of}] {id}: {line}", index + 1));
            }
        };
        (self.say)(&format!("bisect: lab {} of {} ({})", t.labs.len() + 1, t.commit.short(), t.commit.subject));
        let done = lab::run(&plan, &opts, &watch).await.map_err(|e| format!("its lab did not run: {e}"))?;
        lab::write_reports(&done, &out).map_err(|e| e.to_string())?;
        self.labs_run += 1;
        t.labs.push(out.clone());
        let how = history::Recording::default();
        history::record(&mut self.history, &done, &out, &how).await.map_err(|e| e.to_string())?;
        if let Some(death) = done.deaths.first() {
            return Err(format!("its target died: {}", death.text()));
        }
        Ok(done.steps.iter().any(|s| s.not_counted().is_none()))
    }

    /// Every lab judged good against every lab judged bad, in the chosen series.
    fn change(&self, key: &Key, levels: &Levels, ends: &[Tried; 2], range: &[Tried]) -> Change {
        let side = |state: State, level: &[f64]| -> Vec<f64> {
            let mut v = level.to_vec();
            for t in range.iter().filter(|t| t.state == state && t.commit.hash != ends[1].commit.hash) {
                v.extend(&t.values);
            }
            v
        };
        let (good, bad) = (side(State::Good, &levels.good), side(State::Bad, &levels.bad));
        let c = stats::welch::welch(&bad, &good);
        Change {
            metric: key.metric.clone(),
            good: centre(&good),
            bad: centre(&bad),
            pct: (c.ratio - 1.0) * 100.0,
            interval_pct: c.ci.map(|(lo, hi)| ((lo - 1.0) * 100.0, (hi - 1.0) * 100.0)),
        }
    }
}

/// The metrics a bisect chooses its series from by default: how slow, and how much CPU.
pub const CHOSEN_FROM: [&str; 4] = ["p50", "p90", "p99", "target_cpu"];

/// Levels closer than this many spreads are weak evidence: the ends are labbed up to
/// [`MOST_LEVEL_LABS`] times each, and a warning is said before the search.
pub(crate) const WEAK_SEPARATION: f64 = 3.0;

/// Levels closer than this many spreads (after the extra labs) are not bisected: exit 4.
pub(crate) const MIN_SEPARATION: f64 = 2.0;

/// The most labs each end is given when its levels are close.
pub(crate) const MOST_LEVEL_LABS: usize = 10;

/// The p-value the ends must differ by (Welch's test on logarithms) for a series to be chosen.
pub const CHOICE_P: f64 = 0.01;
