//! `loadlab demo`: an embedded origin simulator with example 002's recipe (100 ms, 200 KiB of
//! random content, gzip), an open-model ladder against it, a vegeta-style report per step, and
//! the results files kept for `report` and `plot`. Everything it starts stops before it returns.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use attack::{AttackConfig, Model, Schedule, Target};
use report::chart::ChartBuilder;
use results::{LlrWriter, Metrics};
use tokio_util::sync::CancellationToken;

/// The recipe of example 002.
pub const RECIPE: &str = r#"{
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
    /// Where the results files go.
    pub out: PathBuf,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            rates: vec![200.0, 400.0, 800.0],
            step: Duration::from_secs(5),
            out: PathBuf::from("loadlab-demo"),
        }
    }
}

/// One step's outcome.
pub struct Step {
    pub rate: f64,
    pub file: PathBuf,
    pub metrics: Metrics,
}

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0}")]
    Attack(#[from] attack::AttackError),
}

/// Runs the demo, writing progress and reports to `out`.
pub async fn run(opts: &DemoOptions, out: &mut dyn Write) -> Result<Vec<Step>, DemoError> {
    std::fs::create_dir_all(&opts.out).map_err(|e| DemoError::Io { path: opts.out.clone(), source: e })?;
    let sim = origin::Simulation::new().await;
    sim.upload(RECIPE.as_bytes()).await.expect("the demo recipe is valid");
    let listener = origin::bind(([127, 0, 0, 1], 0).into())
        .map_err(|e| DemoError::Io { path: PathBuf::from("127.0.0.1:0"), source: e })?;
    let addr = listener.local_addr().map_err(|e| DemoError::Io { path: PathBuf::from("127.0.0.1:0"), source: e })?;
    let stop_origin = CancellationToken::new();
    let admin = origin::AdminPolicy { token: None, enabled: true, loopback_only: true };
    let server =
        tokio::spawn(origin::serve(listener, Arc::clone(&sim), admin, None, stop_origin.clone().cancelled_owned()));
    let url = format!("http://{addr}/foobar");
    let _ = writeln!(out, "Origin simulator on http://{addr} (100 ms, 200kb random content, gzip)");
    let mut steps = Vec::new();
    // The charts are built from the records as they happen, beside the results files.
    let result = async {
        let mut charts = ChartBuilder::new("loadlab demo: 100 ms origin, rate ladder");
        for &rate in &opts.rates {
            let _ = writeln!(out, "\n== {rate} req/s for {:?}: GET {url}", opts.step);
            let file = opts.out.join(format!("step-{rate}rps.llr"));
            let f = std::fs::File::create(&file).map_err(|e| DemoError::Io { path: file.clone(), source: e })?;
            let target = Target::new(http::Method::GET, url.parse().expect("valid URL"));
            let mut config =
                AttackConfig::new(vec![target], Model::Open { schedule: Schedule::constant(rate, opts.step) });
            config.name = format!("demo {rate} req/s");
            config.client.timeout = Duration::from_secs(10);
            charts.source(format!("{rate} req/s"));
            let consumer = (LlrWriter::new(std::io::BufWriter::new(f)), charts);
            let summary = attack::run(config, consumer, CancellationToken::new()).await?;
            charts = summary.consumer.1;
            let mut text = Vec::new();
            report::write_text(&summary.metrics, &mut text)
                .map_err(|e| DemoError::Io { path: file.clone(), source: e })?;
            let _ = out.write_all(&text);
            steps.push(Step { rate, file, metrics: summary.metrics });
        }
        Ok::<ChartBuilder, DemoError>(charts)
    }
    .await;
    stop_origin.cancel();
    let _ = server.await;
    let charts = result?;
    let html = opts.out.join("report.html");
    let page = report::chart::render_html(&charts.finish(), report::chart::Chart::All);
    std::fs::write(&html, page).map_err(|e| DemoError::Io { path: html.clone(), source: e })?;
    let _ = writeln!(out, "\nResults files (loadlab report FILE, loadlab plot FILE -o chart.svg):");
    for s in &steps {
        let _ = writeln!(out, "  {}", s.file.display());
    }
    let _ = writeln!(out, "Charts of all steps: {}", html.display());
    Ok(steps)
}
