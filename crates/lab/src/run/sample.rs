//! Sampling every second while a lab runs: CPU % (a process and all its descendants, from their
//! CPU clocks in ns: `cpu`) and RSS of each sampled process from /proc, of the generator itself
//! (its own process only: the targets it starts are its children, sampled on their own), and
//! the series scraped from a target's Prometheus endpoint (example 000's pool workers), each
//! selector's sum, and a target measured where it runs, its CPU and memory from its exporter.
//! Samples are kept (one row a second per source: small) and written to `samples/NAME.csv`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::run::cpu;

/// The series a remote target's samples carry where its CPU counter went back (a restart).
pub(crate) const COUNTER_WENT_BACK: &str = "cpu_counter_went_back";

/// How often sources are sampled.
pub(crate) const EVERY: Duration = Duration::from_secs(1);

/// What to sample.
#[derive(Clone, Debug)]
pub(crate) struct Source {
    /// Names the CSV file and the charts.
    pub name: String,
    pub pid: Option<u32>,
    /// Without a pid: every process of this name (`nginx`), each on its own.
    pub process: Option<String>,
    /// Count the process's descendants too (a started server and its workers).
    pub tree: bool,
    /// Prometheus endpoint and the series to keep (each selector's sum).
    pub metrics: Option<String>,
    pub series: Vec<scrape::Selector>,
    /// A target measured by its exporter: its CPU % and memory from there.
    pub remote: Option<scrape::Remote>,
}

impl Source {
    /// How its CPU is read, if it has processes here.
    pub(crate) fn watched(&self) -> Option<cpu::Watched> {
        match (self.pid, &self.process) {
            (Some(pid), _) => Some(cpu::Watched::Pid(pid, self.tree)),
            (None, Some(name)) => Some(cpu::Watched::Named(name.clone())),
            (None, None) => None,
        }
    }
}

/// One sample.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// Seconds since the lab started.
    pub t: f64,
    /// CPU of the process tree over the last interval, % of one core.
    pub cpu_pct: Option<f64>,
    pub rss_mb: Option<f64>,
    /// Scraped series, by name.
    pub series: BTreeMap<String, f64>,
}

/// Every source's rows, by source name.
pub(crate) type Samples = BTreeMap<String, Vec<Row>>;

/// The running sampler thread.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    rows: Arc<Mutex<Samples>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling `sources` (and the generator, as `generator`) every second; times count
    /// from `origin`.
    pub(crate) fn start(sources: Vec<Source>, origin: Instant) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let rows = Arc::new(Mutex::new(Samples::new()));
        let (s, r) = (Arc::clone(&stop), Arc::clone(&rows));
        let mut sources = sources;
        sources.push(Source {
            name: "generator".into(),
            pid: Some(std::process::id()),
            process: None,
            tree: false,
            metrics: None,
            series: Vec::new(),
            remote: None,
        });
        let thread =
            std::thread::Builder::new().name("loadlab-sampler".into()).spawn(move || run(sources, origin, &s, &r)).ok();
        Sampler { stop, rows, thread }
    }

    /// The rows so far.
    pub(crate) fn snapshot(&self) -> Samples {
        self.rows.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stops the thread and returns every row.
    pub(crate) fn finish(mut self) -> Samples {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
        self.snapshot()
    }
}

fn run(sources: Vec<Source>, origin: Instant, stop: &AtomicBool, rows: &Mutex<Samples>) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
    let mut last: BTreeMap<String, (Instant, u64)> = BTreeMap::new();
    // A remote target's last CPU counter reading (seconds), by source.
    let mut last_remote: BTreeMap<String, (Instant, scrape::counters::Counters)> = BTreeMap::new();
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        for s in &sources {
            let now = Instant::now();
            let mut row = Row {
                t: now.duration_since(origin).as_secs_f64(),
                cpu_pct: None,
                rss_mb: None,
                series: BTreeMap::new(),
            };
            if let Some(watched) = s.watched() {
                if let Some((ns, rss)) = watched.usage() {
                    row.rss_mb = Some(rss as f64 / (1 << 20) as f64);
                    if let Some((t0, ns0)) = last.get(&s.name) {
                        let secs = now.duration_since(*t0).as_secs_f64().max(1e-3);
                        let used = ns.saturating_sub(*ns0) as f64 / 1e9;
                        row.cpu_pct = Some(100.0 * used / secs);
                    }
                    last.insert(s.name.clone(), (now, ns));
                }
            }
            if let (Some(remote), Ok(rt)) = (&s.remote, &rt) {
                let reading = rt.block_on(remote.read(false));
                row.rss_mb = reading.memory_bytes.map(|b| b / (1 << 20) as f64);
                if let Ok(cpu) = reading.cpu {
                    // A series that went back or is gone (a restart) gives no sample, and is
                    // marked: the step around it read two processes' counters.
                    match last_remote.get(&s.name).map(|(t0, cpu0)| (t0, cpu0.grown(&cpu))) {
                        Some((_, Err(_))) => {
                            row.series.insert(COUNTER_WENT_BACK.into(), 1.0);
                        }
                        Some((t0, Ok(grown))) => {
                            let secs = reading.at.duration_since(*t0).as_secs_f64().max(1e-3);
                            row.cpu_pct = Some(100.0 * grown / secs);
                        }
                        None => {}
                    }
                    last_remote.insert(s.name.clone(), (reading.at, cpu));
                }
            }
            if let (Some(url), Ok(rt)) = (&s.metrics, &rt) {
                if let Ok(Ok(f)) = rt.block_on(async {
                    let opts = attack::ClientOptions {
                        timeout: Duration::from_millis(800),
                        max_body: Some(scrape::remote::MAX_BYTES),
                        ..Default::default()
                    };
                    tokio::time::timeout(Duration::from_secs(1), attack::fetch(url, &[], opts)).await
                }) {
                    if let Ok(e) = scrape::exposition::Exposition::parse(&String::from_utf8_lossy(&f.body)) {
                        row.series = chosen(&e, &s.series);
                    }
                }
            }
            rows.lock().unwrap_or_else(|e| e.into_inner()).entry(s.name.clone()).or_default().push(row);
        }
        next += EVERY;
        let now = Instant::now();
        if next <= now {
            next = now + EVERY;
        }
        std::thread::park_timeout(next - now);
    }
}

/// Each wanted selector's sum, by its text (those that select nothing are left out).
pub(crate) fn chosen(e: &scrape::exposition::Exposition, wanted: &[scrape::Selector]) -> BTreeMap<String, f64> {
    // A value that is not a number is no sample (a CSV cell of "NaN" reads as one).
    wanted.iter().filter_map(|w| Some((w.to_string(), e.sum(w).filter(|v| v.is_finite())?))).collect()
}

/// Writes each source's rows as `dir/NAME.csv` (t, cpu_pct, rss_mb, then the series).
pub(crate) fn write_csv(samples: &Samples, dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, rows) in samples {
        let series: Vec<&String> =
            rows.iter().flat_map(|r| r.series.keys()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        let mut f = std::io::BufWriter::new(std::fs::File::create(
            dir.join(format!("{}.csv", crate::plan::matrix::slug(name))),
        )?);
        write!(f, "t_s,cpu_pct,rss_mb")?;
        for s in &series {
            write!(f, ",{s}")?;
        }
        writeln!(f)?;
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.2}"));
        for r in rows {
            write!(f, "{:.3},{},{}", r.t, opt(r.cpu_pct), opt(r.rss_mb))?;
            for s in &series {
                write!(f, ",{}", opt(r.series.get(*s).copied()))?;
            }
            writeln!(f)?;
        }
        f.flush()?;
    }
    Ok(())
}

/// Mean CPU % and peak RSS of `rows` between `from` and `to` seconds.
pub(crate) fn window(rows: &[Row], from: f64, to: f64) -> (Option<f64>, Option<f64>) {
    let inside: Vec<&Row> = rows.iter().filter(|r| r.t >= from && r.t <= to + 0.5).collect();
    let cpu: Vec<f64> = inside.iter().filter_map(|r| r.cpu_pct).collect();
    let mean = (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64);
    let rss = inside.iter().filter_map(|r| r.rss_mb).fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    (mean, rss)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrape_sums_series_over_labels() {
        let text = "# HELP pool_busy_workers busy\n# TYPE pool_busy_workers gauge\n\
                    pool_busy_workers{pool=\"a b\"} 3\npool_busy_workers{pool=\"c\"} 4.5\n\
                    pool_busy_workers_total 99\nother 1\nplain 7 1700000000\n";
        let e = scrape::exposition::Exposition::parse(text).unwrap();
        let wanted: Vec<scrape::Selector> = ["pool_busy_workers", "plain", "missing", r#"pool_busy_workers{pool="c"}"#]
            .iter()
            .map(|s| scrape::Selector::parse(s).unwrap())
            .collect();
        let got = chosen(&e, &wanted);
        assert_eq!(got.get("pool_busy_workers"), Some(&7.5));
        assert_eq!(got.get("plain"), Some(&7.0));
        assert_eq!(got.get(r#"pool_busy_workers{pool="c"}"#), Some(&4.5));
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn a_busy_child_shows_in_its_parents_cpu() {
        // A shell whose child spins for a second: the parent's tree uses about a core.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "timeout 3 sh -c 'while :; do :; done'; true"])
            .spawn()
            .unwrap();
        let source = |name: &str, tree| Source {
            name: name.into(),
            pid: Some(child.id()),
            process: None,
            tree,
            metrics: None,
            series: vec![],
            remote: None,
        };
        // The same shell sampled alone, as the generator is (its started targets are children).
        let sampler = Sampler::start(vec![source("spinner", true), source("shell alone", false)], Instant::now());
        std::thread::sleep(Duration::from_millis(2600));
        let samples = sampler.finish();
        let _ = child.kill();
        let _ = child.wait();
        let rows = &samples["spinner"];
        // A core's worth on an idle machine; on a busy 2-core one the spinner gets less of it
        // (45% seen with a benchmark running), still far above the waiting shell's.
        let busiest = rows.iter().filter_map(|r| r.cpu_pct).fold(0.0, f64::max);
        assert!(busiest > 25.0, "{rows:?}");
        assert!(rows[1..].iter().all(|r| r.rss_mb.is_some_and(|m| m > 0.0)), "{rows:?}");
        assert!(samples["generator"].iter().any(|r| r.rss_mb.is_some()));
        let alone = samples["shell alone"].iter().filter_map(|r| r.cpu_pct).fold(0.0, f64::max);
        assert!(
            alone < 10.0 && alone * 3.0 < busiest,
            "a waiting shell without its busy child: {:?}",
            samples["shell alone"]
        );
    }
}
