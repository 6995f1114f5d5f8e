//! lab.json: a [`Lab`] as `render` writes it, read back by the same types (`lab compare`, a
//! plan's baseline), as criterion reads its baselines into the structs it saved. A format
//! number guards the layout: a field added since is ignored, a field the reader needs and the
//! file lacks is refused by its path (`steps[3].numbers.latency: missing field `p99``).

use std::path::Path;

use report::chart::RunSeries;
use serde::{Deserialize, Serialize};

use crate::outcome::{Findings, StepResult};
use crate::plan::matrix::Matrix;
use crate::plan::Plan;
use crate::run::capacity::CapacityResult;
use crate::run::sample::Samples;
use crate::run::systems::TargetRun;

/// The layout of lab.json this build writes and reads. Raise it when a field is renamed or
/// removed or changes meaning; adding a field does not need it.
pub(crate) const FORMAT: u32 = 1;

/// A started target that exited while the lab ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TargetDeath {
    pub target: String,
    /// The step it was found dead after (it died during it or in the pause after), if any ran.
    pub during: Option<String>,
    /// Seconds since the lab started, when it was found dead.
    pub at_s: f64,
    /// `exit status: 1`, `signal: 9 (SIGKILL)`.
    pub status: String,
    pub log_tail: String,
}

impl TargetDeath {
    pub fn text(&self) -> String {
        // Seen between steps: it may have died in the step or in the pause after it (a step that
        // answered every request, then a death, read as "during" it).
        let when =
            self.during.as_ref().map_or("before the first step".to_owned(), |s| format!("during or after step {s}"));
        format!("target {} exited ({}) {when}, {:.1} s into the lab", self.target, self.status, self.at_s)
    }
}

/// Everything a lab did and found: what `lab.json` holds, written and read back by these types
/// (read back by [`read`]).
#[derive(Debug, Serialize, Deserialize)]
pub struct Lab {
    /// The layout of lab.json ([`FORMAT`]): a reader refuses another.
    pub format: u32,
    /// The lab's own identity, drawn at random when it starts: two labs of one plan started in
    /// the same second are still two labs in a history (none in a lab.json written before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    pub question: String,
    /// When its clock started, to the millisecond (whole seconds in a lab.json written before).
    pub started_unix_s: f64,
    pub wall_s: f64,
    pub quick: bool,
    /// The load as run (of the plan after `--quick`).
    pub duration_s: f64,
    pub warmup_s: f64,
    pub repeats: u32,
    pub targets: Vec<TargetRun>,
    pub matrix: Matrix,
    pub steps: Vec<StepResult>,
    pub findings: Findings,
    pub capacity: Vec<CapacityResult>,
    /// Started targets that exited before the lab ended.
    pub deaths: Vec<TargetDeath>,
    /// Stopped by a signal: the steps in `not_run` never ran (the last one that ran may be
    /// short).
    pub interrupted: bool,
    pub not_run: Vec<String>,
    /// The commit, branch and tags under test, the loadlab and the machine (none in a lab.json
    /// written before they were recorded).
    #[serde(default)]
    pub provenance: Option<crate::provenance::Provenance>,
    /// The CPUs loadlab and the targets it started ran on, when the lab split them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::run::placement::Placement>,
    /// Why the CPUs were not split, when they were not: said in report.md.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_not: Option<String>,
    #[serde(skip)]
    pub samples: Samples,
    /// Chart series of each step's first repeat, by step index.
    #[serde(skip)]
    pub series: Vec<(usize, RunSeries)>,
    #[serde(skip)]
    pub plan: Plan,
}

impl Lab {
    /// What kept verdicts from being reached, one line each (empty when every verdict stands):
    /// cells the generator could not send or whose target was down, capacity searches that
    /// ended at the generator's limit before anything broke.
    pub fn inconclusive(&self) -> Vec<String> {
        let mut out = self.findings.inconclusive.clone();
        for c in &self.capacity {
            if let (Some(g), None) = (c.generator_limited_at, c.breaks_at) {
                out.push(format!(
                    "capacity of {}: the generator could not send {g:.0} req/s before the SLO broke",
                    c.target
                ));
            }
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReadError(pub String);

/// The lab whose lab.json is at `path`.
pub fn read(path: &Path) -> Result<Lab, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError(format!("{}: {e}", path.display())))?;
    parse(&bytes, &path.display().to_string())
}

/// A lab.json's bytes; `name` names it in errors.
pub fn parse(bytes: &[u8], name: &str) -> Result<Lab, ReadError> {
    #[derive(Deserialize)]
    struct Head {
        format: Option<serde_json::Value>,
    }
    let head: Head = serde_json::from_slice(bytes).map_err(|e| ReadError(format!("{name}: not a lab.json: {e}")))?;
    match head.format {
        None => {
            return Err(ReadError(format!(
                "{name}: a lab.json without a format number (written before format {FORMAT}, or not by loadlab): \
                 run the lab again, or compare its results files"
            )))
        }
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(u64::from(FORMAT)) => {}
        Some(other) => {
            return Err(ReadError(format!("{name}: lab.json format {other}; this loadlab reads format {FORMAT}")))
        }
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        ReadError(format!("{name}: lab.json field {path}: {}", e.into_inner()))
    })
}
