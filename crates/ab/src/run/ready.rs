//! One side of `lab ab` made ready: its commit checked out in a worktree of its own, built, and
//! its plan loaded as a pair's labs run it (one repeat, no capacity search).

use std::path::{Path, PathBuf};

use builds::{Commit, Repo, Worktree};

use super::{Built, Failure, Request, Signals, Which};

/// A build checked out, built, its plan loaded for one-repeat labs.
pub(crate) struct Ready {
    pub(crate) built: Built,
    pub(crate) tree: Worktree,
    pub(crate) plan: lab::Plan,
    pub(crate) plan_path: PathBuf,
    /// The plan's text, to say when the two differ.
    pub(crate) plan_text: String,
    /// Said when the commit holds no plan and the working tree's stood in.
    pub(crate) note: Option<String>,
}

/// Checks `commit` out, builds it and loads its plan as one-repeat labs run it.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn prepare(
    req: &Request,
    repo: &Repo,
    working_plan: &Path,
    plan_in_repo: &Path,
    which: Which,
    commit: Commit,
    signals: &Signals,
    say: &dyn Fn(&str),
) -> Result<Ready, Failure> {
    let how = builds::Build {
        command: req.build.as_deref(),
        tree: std::env::temp_dir().join(format!("loadlab-ab-{}-{}", std::process::id(), which.name())),
        log: req.out.join(format!("build-{}.log", which.name())),
        timeout: req.build_timeout,
        stop: &signals.stop,
    };
    let b = builds::build(repo, &commit, &how, &|line| say(&format!("ab: {} {line}", which.name())))
        .await
        .map_err(|e| Failure::Failed(format!("{} {}: {e}", which.name(), commit.short())))?;
    let (in_tree, absent) = builds::plan_in_tree(&b.tree, plan_in_repo, working_plan, req.plan_from_working_tree)
        .map_err(Failure::Failed)?;
    let plan_from = match req.plan_from_working_tree || absent {
        true => format!("{} from the working tree", plan_in_repo.display()),
        false => format!("{} as {} holds it", plan_in_repo.display(), commit.short()),
    };
    let note = (absent && !req.plan_from_working_tree).then(|| {
        format!(
            "{} {} holds no {}: labbed with the working tree's",
            which.name(),
            commit.short(),
            plan_in_repo.display()
        )
    });
    let plan_text = std::fs::read_to_string(&in_tree).unwrap_or_default();
    let mut plan =
        lab::load_plan(&in_tree).map_err(|e| Failure::Input(format!("{} {}: {e}", which.name(), commit.short())))?;
    for t in &plan.targets {
        if let lab::TargetKind::Running { url, .. } = &t.kind {
            return Err(Failure::Input(format!(
                "{} {}: target {} is a system already running ({url}): lab ab compares two builds, so each \
                 target must be started by the plan from its build (start = [...])",
                which.name(),
                commit.short(),
                t.name
            )));
        }
    }
    // Pairs are the repeats: each lab runs every load point once.
    plan.load.repeats = 1;
    plan.capacity = None;
    if lab::expand_matrix(&plan).steps.is_empty() {
        return Err(Failure::Input(format!(
            "{} {}: the plan has no fixed steps (rate, connections or speed) for lab ab to compare",
            which.name(),
            commit.short()
        )));
    }
    Ok(Ready {
        built: Built { commit, build: b.build, plan_from },
        tree: b.tree,
        plan,
        plan_path: in_tree,
        plan_text,
        note,
    })
}
