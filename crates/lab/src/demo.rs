//! `loadlab demo`: a built-in plan. An embedded origin simulator with example 002's recipe
//! (100 ms, 200 KiB of random content, gzip), an open-model ladder against it, vegeta's report
//! per step, and the lab's reports. Everything it starts stops before it returns.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_core::future::LocalBoxFuture;
use tokio_util::sync::CancellationToken;

use crate::experiment::{Event, LabError, RunOptions};
use crate::lab_json::Lab;
use crate::measure::verdict::Clause;
use crate::plan::{LoadSpec, Plan, TargetSpec};

/// The recipe of example 002.
pub(crate) const RECIPE: &str = r#"{
  "route": "/*",
  "random_content": "200kb",
  "headers": {"content-type": "text/html; charset=utf-8", "content-encoding": "gzip"},
  "stages": [{"at": 0, "status": 200, "latency": "100ms"}]
}"#;

/// What the demo does.
#[derive(Clone, Debug)]
pub struct DemoOptions {
    /// Requests per second of each step.
    pub rates: Vec<f64>,
    pub step: Duration,
    /// Where the results go.
    pub out: PathBuf,
    /// How it stops early, as a lab does ([`RunOptions::stop`], [`RunOptions::abort`]).
    pub stop: CancellationToken,
    pub abort: CancellationToken,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            rates: vec![200.0, 400.0, 800.0],
            step: Duration::from_secs(5),
            out: PathBuf::from("loadlab-demo"),
            stop: CancellationToken::new(),
            abort: CancellationToken::new(),
        }
    }
}

/// The built-in plan: a 100 ms origin (its recipe in `opts.out`) under a rate ladder.
pub(crate) fn plan(opts: &DemoOptions) -> Plan {
    let slo = [("success", ">= 99.9%"), ("p99", "< 500ms")];
    let load = LoadSpec {
        rate: opts.rates.clone(),
        duration: opts.step,
        pause: Duration::from_millis(500),
        timeout: Duration::from_secs(10),
        ..LoadSpec::default()
    };
    let mut plan = Plan::new(
        "demo",
        vec![TargetSpec::simulator("demo", opts.out.join("recipe.json"), "/foobar")],
        load,
        slo.iter().map(|(k, v)| Clause::parse(k, v).expect("the demo's clauses parse")).collect(),
    );
    plan.question = "How does a 100 ms origin serving 200 KiB gzipped pages answer a rate ladder?".into();
    plan
}

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Lab(#[from] LabError),
}

/// Runs the demo, writing progress and reports to `out`.
pub fn run<'a>(opts: &'a DemoOptions, out: &'a mut (dyn Write + Send)) -> LocalBoxFuture<'a, Result<Lab, DemoError>> {
    Box::pin(run_demo(opts, out))
}

async fn run_demo(opts: &DemoOptions, out: &mut (dyn Write + Send)) -> Result<Lab, DemoError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DemoError::Io { path, source }
    };
    // A fresh directory: a previous run's files would sit beside this one's.
    for sub in ["steps", "samples", "charts"] {
        let _ = std::fs::remove_dir_all(opts.out.join(sub));
    }
    std::fs::create_dir_all(&opts.out).map_err(io(&opts.out))?;
    let recipe = opts.out.join("recipe.json");
    std::fs::write(&recipe, RECIPE).map_err(io(&recipe))?;
    let plan = plan(opts);
    let _ = writeln!(
        out,
        "Origin simulator embedded (100 ms, 200kb random content, gzip); a rate ladder of {:?} for {:?} each",
        opts.rates, opts.step
    );
    let mut run_opts = RunOptions::new(opts.out.clone());
    (run_opts.stop, run_opts.abort) = (opts.stop.clone(), opts.abort.clone());
    let progress = std::sync::Mutex::new(&mut *out);
    let show = |e: &Event<'_>| {
        if let Event::Started { id, .. } = e {
            let _ = writeln!(progress.lock().unwrap_or_else(|e| e.into_inner()), "running {id} ...");
        }
    };
    let lab = crate::experiment::run(&plan, &run_opts, &show).await?;
    for s in &lab.steps {
        let _ = writeln!(out, "\n== {} ({})\n{}", s.id, opts.out.join(&s.file).display(), s.text);
    }
    let files = crate::render::write(&lab, &opts.out).map_err(io(&opts.out))?;
    let _ = writeln!(out, "Results files (loadlab report FILE, loadlab plot FILE -o chart.svg):");
    for s in &lab.steps {
        let _ = writeln!(out, "  {}", opts.out.join(&s.file).display());
    }
    for f in files {
        let _ = writeln!(out, "Report: {}", f.display());
    }
    Ok(lab)
}
