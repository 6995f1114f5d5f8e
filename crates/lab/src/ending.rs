//! A lab's two ends as a command shows them: before it runs, what it will do and for how long
//! ([`preview`]); after, what it leaves behind before any history ([`conclude`]: its reports and
//! its `[baseline]` comparison), its last lines and how it ended ([`Lab::ending`]), which the
//! command turns into its exit status. Also where a lab writes when not told ([`out_dir`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::lab_json::Lab;
use crate::plan::Plan;

/// What a plan will run, before it does.
#[derive(Clone, Debug, PartialEq)]
pub struct Preview {
    /// `6 steps (2 targets x 1 load point x 3 repeats, 2.0s each after 0.5s of warm-up) and a
    /// capacity search per target`.
    pub what: String,
    pub estimate: Duration,
}

/// What `plan` (as it will run: after `--quick`) will do, and about how long it takes.
pub fn preview(plan: &Plan) -> Preview {
    let steps = crate::plan::matrix::count(plan);
    let l = &plan.load;
    let plural = |n: u128| if n == 1 { "" } else { "s" };
    let mut what = format!("{steps} step{}", plural(steps));
    if steps > 0 {
        let targets = plan.targets.len() as u128;
        let points = steps / targets / u128::from(l.repeats);
        what += &format!(
            " ({targets} target{} x {points} load point{} x {} repeat{}, {} each after {} of warm-up)",
            plural(targets),
            plural(points),
            l.repeats,
            plural(u128::from(l.repeats)),
            results::duration::span(l.duration),
            results::duration::span(l.warmup)
        );
    }
    if plan.capacity.is_some() {
        what += " and a capacity search per target";
    }
    Preview { what, estimate: crate::plan::matrix::estimate(plan) }
}

/// What a finished lab left in its folder.
#[derive(Debug)]
pub struct Concluded {
    /// report.md, report.html, lab.json and the charts.
    pub reports: Vec<PathBuf>,
    /// With `[baseline]` (and not interrupted): the comparison with that lab, and its files.
    pub baseline: Option<(crate::compare::Changes, Vec<PathBuf>)>,
}

/// Why a finished lab could not leave what it should.
#[derive(Debug, thiserror::Error)]
pub enum ConcludeError {
    #[error("writing the reports: {0}")]
    Reports(std::io::Error),
    /// The plan's `[baseline]` lab could not be read: the plan's input.
    #[error("baseline: {0}")]
    Baseline(crate::read_side::CompareError),
    /// The baseline's calibration could not be read: the plan's input.
    #[error("baseline: calibration: {0}")]
    Calibration(crate::calibration::CalibrationError),
    /// This lab could not be read as a side (its step files gone from its folder).
    #[error("baseline: this lab: {0}")]
    ThisLab(crate::read_side::CompareError),
    #[error("writing the comparison with the baseline: {0}")]
    Comparison(std::io::Error),
}

impl ConcludeError {
    /// About what the user gave (the plan's baseline or calibration): exit 2.
    pub fn is_input(&self) -> bool {
        matches!(self, ConcludeError::Baseline(_) | ConcludeError::Calibration(_))
    }
}

/// Writes `lab`'s reports into `out` and, with the plan's `[baseline]`, compares it with that
/// lab (held to its calibration when one is named), the comparison written beside them: what
/// every command that runs a plan does before the history.
pub fn conclude(lab: &Lab, out: &Path) -> Result<Concluded, ConcludeError> {
    let reports = crate::render::write(lab, out).map_err(ConcludeError::Reports)?;
    let baseline = match lab.plan.baseline.as_ref().filter(|_| !lab.interrupted) {
        None => None,
        Some(b) => {
            let old = crate::read_side::load_lab(&b.path).map_err(ConcludeError::Baseline)?;
            // This lab as it ran (not read back from its lab.json): its steps' windows from the
            // files it wrote.
            let new = crate::read_side::side_of(lab, out).map_err(ConcludeError::ThisLab)?;
            let calibration = b
                .calibration
                .as_deref()
                .map(crate::calibration::Calibration::read)
                .transpose()
                .map_err(ConcludeError::Calibration)?;
            let rule = crate::compare::Rule { threshold_pct: b.threshold_pct, gates: b.fail_on.clone(), calibration };
            Some(crate::render::compare::compared(&old, &new, rule, out).map_err(ConcludeError::Comparison)?)
        }
    };
    Ok(Concluded { reports, baseline })
}

/// How a lab ended, in the order a command checks: stopped early, an SLO broken, a verdict not
/// reached, or every verdict standing.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    /// Stopped by a signal after `ran` of `of` steps.
    Interrupted {
        ran: usize,
        of: usize,
    },
    /// The cells whose SLO failed: `web at 400 req/s`.
    SloFailed(Vec<String>),
    /// Verdicts that could not be reached, one line each.
    Inconclusive(Vec<String>),
    Held,
}

impl Lab {
    /// The lines a lab ends with (each capacity found, each hypothesis's finding, each verdict
    /// not reached), and how it ended.
    pub fn ending(&self) -> (Vec<String>, Ending) {
        let mut lines: Vec<String> = self.capacity.iter().map(crate::render::markdown::capacity_sentence).collect();
        // The question's answer where the plan asked one, as the report's summary says it.
        lines.extend(self.findings.hypotheses.iter().map(|h| crate::render::markdown::hypothesis_sentence(h, "")));
        let inconclusive = self.inconclusive();
        lines.extend(inconclusive.iter().map(|why| format!("inconclusive: {why}")));
        let ending = if self.interrupted {
            Ending::Interrupted { ran: self.matrix.steps.len() - self.not_run.len(), of: self.matrix.steps.len() }
        } else if self.findings.slo_failed {
            Ending::SloFailed(
                self.findings
                    .cells
                    .iter()
                    .filter(|c| c.slo.failed())
                    .map(|c| {
                        let point = self.matrix.points[c.point].label(&self.matrix.axes);
                        format!("{} at {point}", self.targets[c.target].name)
                    })
                    .collect(),
            )
        } else if !inconclusive.is_empty() {
            Ending::Inconclusive(inconclusive)
        } else {
            Ending::Held
        };
        (lines, ending)
    }
}

/// Where a lab writes: `out`, which must not hold a previous lab unless `force` (a previous run's
/// step, sample and chart folders are cleared); else a new folder named after the plan and the
/// time, so no run replaces another.
pub fn out_dir(out: Option<&Path>, stem: &str, force: bool) -> Result<PathBuf, String> {
    match out {
        Some(dir) if dir.join("lab.json").exists() && !force => Err(format!(
            "--out {}: holds a previous lab (lab.json); give another --out, or --force to replace it",
            dir.display()
        )),
        Some(dir) => {
            for sub in ["steps", "samples", "charts", "profiles"] {
                let _ = std::fs::remove_dir_all(dir.join(sub));
            }
            Ok(dir.to_path_buf())
        }
        None => new_dir(&format!("lab-{stem}-{}", chrono::Local::now().format("%Y%m%d-%H%M%S"))),
    }
}

/// A folder made now that no other run has: `base`, else `base-2`, `base-3`... Each is taken by
/// creating it, so two runs started in the same second (a lab, a bisect) never share one.
pub fn new_dir(base: &str) -> Result<PathBuf, String> {
    for n in 1..10_000 {
        let dir = if n == 1 { PathBuf::from(base) } else { PathBuf::from(format!("{base}-{n}")) };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{}: {e}", dir.display())),
        }
    }
    Err(format!("{base}: 10,000 folders of that name exist already"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_started_together_each_get_a_folder() {
        let base = std::env::temp_dir().join(format!("loadlab-new-dir-{}", std::process::id()));
        let base = base.display().to_string();
        let made: Vec<PathBuf> = std::thread::scope(|s| {
            let all: Vec<_> = (0..8).map(|_| s.spawn(|| new_dir(&base).unwrap())).collect();
            all.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let distinct: std::collections::BTreeSet<&PathBuf> = made.iter().collect();
        assert_eq!(distinct.len(), 8, "{made:?}");
        for d in &made {
            std::fs::remove_dir(d).unwrap();
        }
    }

    #[test]
    fn a_preview_counts_steps_and_time() {
        let text = "[targets.a]\nurl = \"http://127.0.0.1:1/\"\n[targets.b]\nurl = \"http://127.0.0.1:2/\"\n\
                    [load]\nrate = [10, 20]\nduration = \"10s\"\nwarmup = \"1s\"\nrepeats = 3\n";
        let plan = crate::plan::parse(text, "plan.toml", Path::new(".")).unwrap();
        let p = preview(&plan);
        assert_eq!(p.what, "12 steps (2 targets x 2 load points x 3 repeats, 10.0s each after 1.0s of warm-up)");
        assert!(p.estimate >= Duration::from_secs(12 * 11), "{:?}", p.estimate);
        assert_eq!(
            preview(&plan.quick()).what,
            "12 steps (2 targets x 2 load points x 3 repeats, 2.0s each after 0.5s of warm-up)"
        );
    }
}
