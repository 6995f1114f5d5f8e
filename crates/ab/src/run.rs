//! `lab ab` from start to end: both commits built in worktrees of their own, then pairs of labs,
//! one of each build, each lab starting its build's targets afresh and stopping them, so that
//! every pair sees a new process of each. Where it can (`duet`), a pair's two labs run at once
//! and in step, the targets of both builds on the same CPUs, so that the machine's moment falls
//! on both; else one after the other in ABBA order (base-head, head-base, ...) so that a drift
//! of the machine falls on both. After each look the cells are judged (`judge`); the run stops
//! when every gated cell is decided, one is worse past its gate, or the limit is reached.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use builds::{Commit, Repo};
use futures_core::future::LocalBoxFuture;
use lab::Gate;
use tokio_util::sync::CancellationToken;

use crate::duet::Pairing;
use crate::judge::{self, CellPairs, Look, ALPHA};
use ready::{prepare, Ready};

mod ready;

/// How many pairs of labs to run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Repeats {
    /// Exactly this many, judged once at the end with the whole false-alarm rate.
    Fixed(usize),
    /// Looks at 3, 5, 8, 12, 20... pairs up to `most`, stopping once every gated cell is decided.
    Auto { most: usize },
}

/// What to compare, as the command line gives it.
#[derive(Clone, Debug)]
pub struct Request {
    pub plan: PathBuf,
    pub base: String,
    pub head: String,
    /// Run in each commit's worktree (`sh -c`); none: a service run from its source.
    pub build: Option<String>,
    pub build_timeout: Duration,
    /// Both builds labbed with the working tree's plan (copied into each worktree).
    pub plan_from_working_tree: bool,
    pub repeats: Repeats,
    pub gates: Vec<Gate>,
    /// Record every lab here, with its commit, off the line.
    pub history: Option<String>,
    pub branch: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub out: PathBuf,
    /// Each lab's charts and report.html too (by default a lab writes report.md without charts
    /// and lab.json: ab.md is the run's report).
    pub lab_charts: bool,
    /// A pair's labs one after the other even where they could run at once.
    pub one_at_a_time: bool,
}

/// Why it could not be done.
#[derive(Debug)]
pub enum Failure {
    /// Bad input: not a repository, a revision git does not know, a plan that cannot be
    /// compared (exit 2).
    Input(String),
    /// A build failed (its log named), or a lab or the history failed (exit 1).
    Failed(String),
}

/// Tokens a signal cancels: the first stops after the current step (and ends the run), the
/// second abandons the step.
#[derive(Clone, Default)]
pub struct Signals {
    pub stop: CancellationToken,
    pub abort: CancellationToken,
}

/// Base or head.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Which {
    Base,
    Head,
}

impl Which {
    pub fn name(self) -> &'static str {
        match self {
            Which::Base => "base",
            Which::Head => "head",
        }
    }
}

/// The side of pair `i` that runs first: base in even pairs, head in odd ones (ABBA).
pub fn first_of_pair(i: usize) -> Which {
    if i.is_multiple_of(2) {
        Which::Base
    } else {
        Which::Head
    }
}

/// A build as compared.
#[derive(Clone, Debug)]
pub struct Built {
    pub commit: Commit,
    /// The build's time and log (none without --build).
    pub build: Option<(Duration, PathBuf)>,
    /// Where its plan came from.
    pub plan_from: String,
}

/// How the run ended.
#[derive(Clone, Debug)]
pub enum Ending {
    /// A gated cell is worse past its gate.
    Worse,
    /// None is: every gated cell shown within its gate.
    NoChange,
    /// None is worse, but some gated cells are neither worse nor within at the last pair: not
    /// green (exit 4, unless the team asks for 0).
    Undecided,
    /// It could not say (a target died, too few steps counted): exit 4.
    CouldNotTell(String),
    /// A signal stopped it.
    Stopped,
}

/// The whole of it, for the last line, ab.md and ab.json.
#[derive(Debug)]
pub struct Report {
    pub base: Built,
    pub head: Built,
    /// Every lab folder, in run order, with its side.
    pub labs: Vec<(Which, PathBuf)>,
    pub repeats: Repeats,
    /// How each pair's two labs ran.
    pub pairing: Pairing,
    /// The looks the run could take, and the one-sided level each was tested at.
    pub looks: Vec<usize>,
    pub alpha_look: f64,
    /// The last look taken (none when no pair finished).
    pub look: Option<Look>,
    pub ending: Ending,
    pub gates: Vec<Gate>,
    pub profiles: Vec<profile::diff::Differential>,
    pub profile_problems: Vec<String>,
    /// Per cell traced on both sides, the span that grew most in the slowest requests.
    pub tails: Vec<lab::TailGrowth>,
    /// Anything a reader should know (the plans differ, a capacity search left out).
    pub notes: Vec<String>,
}

pub fn ab<'a>(
    req: &'a Request,
    signals: &'a Signals,
    say: &'a dyn Fn(&str),
) -> LocalBoxFuture<'a, Result<Report, Failure>> {
    Box::pin(run(req, signals, say))
}

async fn run(req: &Request, signals: &Signals, say: &dyn Fn(&str)) -> Result<Report, Failure> {
    let input = Failure::Input;
    let plan = std::path::absolute(&req.plan).map_err(|e| input(format!("{}: {e}", req.plan.display())))?;
    if !plan.is_file() {
        return Err(input(format!("{}: no such plan", req.plan.display())));
    }
    let repo = Repo::holding(&plan).map_err(input)?;
    let root = std::fs::canonicalize(&repo.root).map_err(|e| input(e.to_string()))?;
    let plan_in_repo = std::fs::canonicalize(&plan)
        .ok()
        .and_then(|p| p.strip_prefix(&root).ok().map(Path::to_path_buf))
        .ok_or_else(|| input(format!("{}: not inside {}", req.plan.display(), root.display())))?;
    let repo = Repo { root };
    let base = repo.resolve(&req.base).map_err(|e| input(format!("BASE {e}")))?;
    let head = repo.resolve(&req.head).map_err(|e| input(format!("HEAD {e}")))?;
    let (base, head) = (repo.commit(&base).map_err(input)?, repo.commit(&head).map_err(input)?);
    let mut history = match &req.history {
        Some(h) => Some(history::History::open(h).await.map_err(|e| input(e.to_string()))?),
        None => None,
    };
    if req.out.join("ab.json").exists() || req.out.join("labs").exists() {
        // Labs of two runs in one folder would read as one run's.
        return Err(input(format!(
            "--out {}: holds a previous lab ab: give another folder, or remove it",
            req.out.display()
        )));
    }
    std::fs::create_dir_all(&req.out).map_err(|e| input(format!("--out {}: {e}", req.out.display())))?;
    let mut notes = Vec::new();
    let mut sides = Vec::new();
    for (which, commit) in [(Which::Base, base), (Which::Head, head)] {
        let ready = prepare(req, &repo, &plan, &plan_in_repo, which, commit, signals, say).await?;
        notes.extend(ready.note.clone());
        sides.push(ready);
    }
    let head = sides.pop().expect("two sides");
    let base = sides.pop().expect("two sides");
    if base.plan_text != head.plan_text {
        notes.push(format!(
            "the plan differs between base and head: each build ran its own ({} and {}); cells compare what each asks",
            base.plan_path.display(),
            head.plan_path.display()
        ));
    }
    for (w, r) in [(Which::Base, &base), (Which::Head, &head)] {
        if r.plan.capacity.is_some() {
            notes.push(format!(
                "{}'s plan has a capacity search: lab ab compares its fixed steps and leaves it out",
                w.name()
            ));
        }
    }
    let looks = match req.repeats {
        Repeats::Fixed(n) => vec![n],
        Repeats::Auto { most } => stats::paired::looks(most),
    };
    let most = *looks.last().expect("at least one look");
    let alpha_look = ALPHA / looks.len() as f64;
    let mut pairing = Pairing::choose(req.one_at_a_time, &base.plan, &head.plan);
    let per_lab = lab::preview(&head.plan).estimate.as_secs_f64() + 2.0;
    let per_pair = if pairing.at_once() { per_lab } else { 2.0 * per_lab };
    say(&format!(
        "ab: {} (base) against {} (head): {}; {} (about {per_pair:.0} s a pair, up to {:.0} min)",
        base.built.commit.short(),
        head.built.commit.short(),
        pairing.text(),
        match req.repeats {
            Repeats::Fixed(n) => format!("{n} pairs"),
            Repeats::Auto { .. } => format!("looks at {:?} pairs, stopping once every gate is decided", looks),
        },
        per_pair * most as f64 / 60.0
    ));
    let mut run = Run {
        req,
        signals,
        say,
        history: history.as_mut(),
        labs: Vec::new(),
        sides: [Vec::new(), Vec::new()],
        at_once: pairing.at_once(),
        crowded: None,
    };
    let mut look: Option<Look> = None;
    let mut ending = Ending::NoChange;
    let mut said_stuck: Vec<String> = Vec::new();
    let mut i = 0;
    'pairs: while i < most {
        let ends = match &pairing {
            Pairing::AtOnce { placement } => run.duet(&base, &head, i, placement.as_ref()).await?,
            Pairing::OneAtATime { .. } => {
                let first = first_of_pair(i);
                let second = if first == Which::Base { Which::Head } else { Which::Base };
                let mut ends = Vec::new();
                for which in [first, second] {
                    let ready = if which == Which::Base { &base } else { &head };
                    let end = run.lab(which, ready, i).await?;
                    let over = !matches!(end, LabEnd::Done);
                    ends.push((which, end));
                    if over {
                        break;
                    }
                }
                ends
            }
        };
        for (which, end) in ends {
            match end {
                LabEnd::Done => {}
                LabEnd::Died(why) => {
                    ending = Ending::CouldNotTell(format!("{}'s target died: {why}", which.name()));
                    break 'pairs;
                }
                LabEnd::Stopped => {
                    ending = Ending::Stopped;
                    break 'pairs;
                }
            }
        }
        if let Some(why) = run.crowded.take() {
            // The first pair at once crowded the targets' CPUs: the run starts again, one build
            // at a time.
            say(&format!("ab: {why}"));
            notes.push(format!("{why}; its labs are 01 and 02"));
            pairing = Pairing::OneAtATime { why };
            (run.sides, run.at_once) = ([Vec::new(), Vec::new()], false);
            continue;
        }
        i += 1;
        if looks.contains(&i) {
            let l = judge::look(&run.cells(), &req.gates, alpha_look);
            say(&format!("ab: look at {i} pairs: {}", l.line()));
            let decided = l.decided();
            // Cells whose spread no run of `most` pairs can decide: said at once, and no reason
            // to run on for them alone.
            let stuck = l.out_of_reach(most);
            for r in &stuck {
                let key = format!("{} {}", r.metric.name(), r.load);
                if !said_stuck.contains(&key) {
                    let why = r.out_of_reach_words(most).unwrap_or_default();
                    say(&format!("ab: {} at {} cannot be decided in {most} pairs: {why}", r.metric.name(), r.load));
                    said_stuck.push(key);
                }
            }
            let only_stuck =
                !decided && l.worse().is_empty() && l.too_few().is_empty() && l.undecided().len() == stuck.len();
            look = Some(l);
            if (decided || only_stuck) && matches!(req.repeats, Repeats::Auto { .. }) {
                break;
            }
        }
    }
    if matches!(ending, Ending::Stopped | Ending::CouldNotTell(_)) && look.is_none() && !run.labs.is_empty() {
        // What ran is still shown; a stopped run judges nothing.
        look = Some(judge::look(&run.cells(), &req.gates, alpha_look));
    }
    if let (Ending::NoChange, Some(l)) = (&ending, &look) {
        if !l.worse().is_empty() {
            ending = Ending::Worse;
        } else if !l.undecided().is_empty() {
            ending = Ending::Undecided;
        } else if !l.too_few().is_empty() {
            let cells: Vec<String> = l.too_few().iter().map(|r| format!("{} at {}", r.metric.name(), r.load)).collect();
            ending = Ending::CouldNotTell(format!(
                "too few steps counted on both sides to judge {} (see each lab's report for why)",
                cells.join(", ")
            ));
        }
    }
    let (profiles, profile_problems) = crate::profiles::differentials(&run.sides, &req.out);
    let tails = crate::profiles::tails(&run.sides);
    Ok(Report {
        base: base.built,
        head: head.built,
        labs: run.labs,
        repeats: req.repeats,
        pairing,
        looks,
        alpha_look,
        look,
        ending,
        gates: req.gates.clone(),
        profiles,
        profile_problems,
        tails,
        notes,
    })
}

enum LabEnd {
    Done,
    Died(String),
    Stopped,
}

/// The labs run so far, by side and pair.
struct Run<'a> {
    req: &'a Request,
    signals: &'a Signals,
    say: &'a dyn Fn(&str),
    history: Option<&'a mut history::History>,
    labs: Vec<(Which, PathBuf)>,
    /// Per side (base, head), per pair: the lab as compared.
    sides: [Vec<lab::Side>; 2],
    /// Each pair's labs ran at once.
    at_once: bool,
    /// Why the first pair run at once crowded its CPUs, if it did.
    crowded: Option<String>,
}

impl Run<'_> {
    /// The folder and options of lab number `n` of the run, `which`'s.
    fn options(&self, which: Which, ready: &Ready, n: usize) -> (PathBuf, lab::RunOptions) {
        let out = self.req.out.join("labs").join(format!("{n:02}-{}", which.name()));
        let mut opts = lab::RunOptions::new(out.clone());
        (opts.stop, opts.abort) = (self.signals.stop.clone(), self.signals.abort.clone());
        let mut tags = self.req.tags.clone();
        // Off the line: a pull request's head is not a commit of its branch yet, and its base
        // labbed now is a rerun of a commit the line has passed.
        tags.insert(history::AB_TAG.to_owned(), format!("{}..{}", self.req.base, self.req.head));
        tags.insert("side".to_owned(), which.name().to_owned());
        let given = lab::Given { commit: Some(ready.built.commit.hash.clone()), branch: self.req.branch.clone(), tags };
        let folder = ready.plan_path.parent().unwrap_or(&ready.tree.path);
        opts.provenance = Some(lab::Provenance::gather(&given, folder));
        (out, opts)
    }

    /// Runs `which`'s plan once, as pair `i`'s lab of that side, and records it.
    async fn lab(&mut self, which: Which, ready: &Ready, i: usize) -> Result<LabEnd, Failure> {
        let (out, opts) = self.options(which, ready, self.labs.len() + 1);
        (self.say)(&format!("ab: pair {} {} ({})", i + 1, which.name(), ready.built.commit.short()));
        let done = run_lab(&ready.plan, opts, which, self.say, self.req.lab_charts, false).await?;
        self.record(which, done, out).await
    }

    /// Runs pair `i` at once: both builds' labs started together and kept in step, loadlab's
    /// threads on `placement`'s CPUs while they run and both builds' targets on the others.
    async fn duet(
        &mut self,
        base: &Ready,
        head: &Ready,
        i: usize,
        placement: Option<&lab::Placement>,
    ) -> Result<Vec<(Which, LabEnd)>, Failure> {
        // Which lab is started (and polled) first alternates, as ABBA's order does.
        let order = match first_of_pair(i) {
            Which::Base => [(Which::Base, base), (Which::Head, head)],
            Which::Head => [(Which::Head, head), (Which::Base, base)],
        };
        let n = self.labs.len();
        let (first, second) = lab::Duet::pair(placement.cloned());
        let (out_a, mut opts_a) = self.options(order[0].0, order[0].1, n + 1);
        let (out_b, mut opts_b) = self.options(order[1].0, order[1].1, n + 2);
        (opts_a.duet, opts_b.duet) = (Some(first), Some(second));
        (self.say)(&format!(
            "ab: pair {} at once: base ({}) and head ({})",
            i + 1,
            base.built.commit.short(),
            head.built.commit.short()
        ));
        let pinned = match placement.map(|p| lab::Pinned::to(&p.generator)) {
            Some(Err(e)) => {
                (self.say)(&format!("ab: loadlab's threads could not be pinned ({e}): they run on any CPU"));
                None
            }
            pinned => pinned.and_then(Result::ok),
        };
        let charts = self.req.lab_charts;
        let (a, b) = tokio::join!(
            run_lab(&order[0].1.plan, opts_a, order[0].0, self.say, charts, true),
            run_lab(&order[1].1.plan, opts_b, order[1].0, self.say, charts, true)
        );
        drop(pinned);
        let (a, b) = (a?, b?);
        if i == 0 {
            let cpus = placement.map_or(1, |p| p.targets.len());
            let steps = |l: &lab::Lab| l.steps.iter().map(|s| (s.id.clone(), s.target_cpu_pct)).collect::<Vec<_>>();
            self.crowded = crate::duet::crowded(cpus, &steps(&a), &steps(&b));
        }
        let mut ends = Vec::new();
        for ((which, _), (done, out)) in order.into_iter().zip([(a, out_a), (b, out_b)]) {
            ends.push((which, self.record(which, done, out).await?));
        }
        // A death said before a stop, whichever lab it was in.
        ends.sort_by_key(|(_, e)| !matches!(e, LabEnd::Died(_)));
        Ok(ends)
    }

    /// Records a lab that ran: its folder, its history entry, its side of the pairs.
    async fn record(&mut self, which: Which, done: lab::Lab, out: PathBuf) -> Result<LabEnd, Failure> {
        let failed = Failure::Failed;
        self.labs.push((which, out.clone()));
        if let Some(h) = self.history.as_deref_mut() {
            let how = history::Recording::default();
            history::record(h, &done, &out, &how).await.map_err(|e| failed(format!("{}: {e}", which.name())))?;
        }
        let side = lab::side_of(&done, &out).map_err(|e| failed(e.to_string()))?;
        self.sides[which as usize].push(side);
        if let Some(death) = done.deaths.first() {
            return Ok(LabEnd::Died(death.text()));
        }
        if done.interrupted || self.signals.stop.is_cancelled() {
            return Ok(LabEnd::Stopped);
        }
        Ok(LabEnd::Done)
    }

    /// Every cell's pairs so far (a pair whose second lab did not run is left out).
    fn cells(&self) -> Vec<CellPairs> {
        let [base, head] = &self.sides;
        let n = base.len().min(head.len());
        let mut keys: Vec<&String> = base.iter().chain(head).flat_map(|s| s.cells.keys()).collect();
        keys.sort();
        keys.dedup();
        keys.into_iter()
            .map(|key| {
                let step = |s: &lab::Side| s.cells.get(key).and_then(|c| c.steps.first()).cloned();
                let values = |s: &lab::Side| step(s).map(|step| step.values);
                let speed = |s: &lab::Side| step(s).and_then(|step| step.speed_us);
                let any = base.iter().chain(head).find_map(|s| s.cells.get(key)).expect("a key of some lab");
                // Bytes an answer brought, over the side's counted steps at this cell.
                let per_answer = |sides: &[lab::Side]| {
                    let (bytes, n) = sides[..n]
                        .iter()
                        .filter_map(step)
                        .fold((0u64, 0u64), |(b, k), s| (b + s.bytes_in, k + s.requests));
                    (n > 0).then(|| bytes as f64 / n as f64)
                };
                CellPairs {
                    at_once: self.at_once,
                    target: any.target.clone(),
                    load: any.label.clone(),
                    pairs: (0..n).map(|i| (values(&base[i]), values(&head[i]))).collect(),
                    answer_bytes: per_answer(base).zip(per_answer(head)),
                    speed: (0..n).map(|i| (speed(&base[i]), speed(&head[i]))).collect(),
                }
            })
            .collect()
    }
}

/// Runs `plan` once with `opts` (taken, so that a lab of a duet that ends lets the other go on)
/// and writes its reports. `named`: its progress lines say whose lab it is (two run at once).
async fn run_lab(
    plan: &lab::Plan,
    opts: lab::RunOptions,
    which: Which,
    say: &dyn Fn(&str),
    charts: bool,
    named: bool,
) -> Result<lab::Lab, Failure> {
    let whose = if named { format!("{} ", which.name()) } else { String::new() };
    let watch = |e: &lab::Event<'_>| match e {
        lab::Event::Finished { index, of, id, line, .. } => say(&format!("  {whose}[{}/{of}] {id}: {line}", index + 1)),
        lab::Event::Spans { id, line } => say(&format!("    {whose}{id}: {line}")),
        _ => {}
    };
    let done = lab::run(plan, &opts, &watch)
        .await
        .map_err(|e| Failure::Failed(format!("{}'s lab did not run: {e}", which.name())))?;
    let out = opts.out.clone();
    drop(opts);
    let write = if charts { lab::write_reports } else { lab::write_brief_reports };
    write(&done, &out).map_err(|e| Failure::Failed(e.to_string()))?;
    Ok(done)
}
