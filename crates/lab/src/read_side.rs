//! A side of a comparison read from a finished lab, its lab.json, or a plain results file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::measure::metric::{Metric, COMPARED};
use crate::measure::numbers::StepConsumer;
use crate::measure::windows::Window;
use crate::side::{CellData, Side, StepData};

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CompareError(pub String);

fn read_windows(file: &Path, warmup_s: f64) -> Result<Vec<Window>, CompareError> {
    let f = std::fs::File::open(file).map_err(|e| CompareError(format!("{}: {e}", file.display())))?;
    let mut reader = results::Reader::new(std::io::BufReader::new(f), file.display().to_string());
    let mut c = StepConsumer::new(std::time::Duration::from_secs_f64(warmup_s));
    results::feed(&mut reader, &mut c).map_err(|e| CompareError(format!("{}: {e}", file.display())))?;
    Ok(c.windows.windows())
}

/// The results files of one run: `path`, or the `.llr` files of a folder (a sharded run's, as
/// `loadlab k8s collect` writes them).
fn run_files(path: &Path) -> Result<Vec<PathBuf>, CompareError> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let entries = std::fs::read_dir(path).map_err(|e| CompareError(format!("{}: {e}", path.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "llr"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(CompareError(format!("{}: no lab.json and no .llr results files", path.display())));
    }
    Ok(files)
}

/// Reads a lab's folder (or its lab.json) and its step files; a results file, or a folder of
/// them with no lab.json (a sharded run's), is read as one run.
pub fn load_lab(path: &Path) -> Result<Side, CompareError> {
    let results_file = !path.is_dir() && path.extension().is_some_and(|x| x != "json");
    if results_file || (path.is_dir() && !path.join("lab.json").exists()) {
        return load_file(path);
    }
    let (dir, json) = if path.is_dir() {
        (path.to_path_buf(), path.join("lab.json"))
    } else {
        (path.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf), path.to_path_buf())
    };
    let lab = crate::lab_json::read(&json).map_err(|e| CompareError(e.to_string()))?;
    side_of(&lab, &dir)
}

/// A lab's cells as compared: its steps by target and full load point, those that do not count
/// left out by the lab's own rule (the step's `down` and `uncounted`).
pub fn side_of(lab: &crate::lab_json::Lab, dir: &Path) -> Result<Side, CompareError> {
    let bad = |what: String| CompareError(format!("{}: lab.json: {what}", dir.display()));
    // Named so that two labs of one plan can be told apart: plan, folder, commit, start.
    let commit = lab.provenance.as_ref().and_then(|p| p.commit.as_deref()).map_or_else(String::new, |c| {
        format!(", commit {}", c.chars().take(10).filter(|c| !c.is_control()).collect::<String>())
    });
    let when = chrono::DateTime::from_timestamp(lab.started_unix_s as i64, 0)
        .map_or_else(String::new, |t| format!(", {}", t.format("%Y-%m-%d %H:%M")));
    let plan = if lab.name.is_empty() { "lab".to_owned() } else { lab.name.clone() };
    let name = format!("{plan} ({}{commit}{when})", dir.display());
    let machine = lab.provenance.as_ref().map(|p| p.machine.clone());
    let mut side = Side { name, cells: BTreeMap::new(), machine };
    for s in &lab.steps {
        let target = lab.targets.get(s.target).ok_or_else(|| bad(format!("step {}: no target {}", s.id, s.target)))?;
        let point =
            lab.matrix.points.get(s.point).ok_or_else(|| bad(format!("step {}: no point {}", s.id, s.point)))?;
        let key = format!("{} @ {}", target.name, serde_json::to_string(point).unwrap_or_default());
        let cell = side.cells.entry(key).or_insert_with(|| CellData {
            target: target.name.clone(),
            label: point.label(&crate::plan::matrix::Axes::set_in(point)),
            ..Default::default()
        });
        if let Some(why) = s.not_counted() {
            cell.excluded.push(format!("{}: {why}", s.id));
            continue;
        }
        let n = &s.numbers;
        let mut values: BTreeMap<Metric, f64> =
            COMPARED.iter().filter(|m| !m.is_sampled()).map(|m| (*m, m.of(n))).collect();
        for (m, pct) in [(Metric::TargetCpu, s.target_cpu_pct), (Metric::GeneratorCpu, s.generator_cpu_pct)] {
            if let Some(v) = Metric::cpu_per_request(pct, n) {
                values.insert(m, v);
            }
        }
        let file = Some(&s.file).filter(|f| !f.is_empty()).map(|f| dir.join(f));
        let windows = match &file {
            Some(f) => read_windows(f, lab.warmup_s)?,
            None => Vec::new(),
        };
        let profile = s.profile.clone().map(|p| (p, dir.to_path_buf()));
        cell.steps.push(StepData {
            id: s.id.clone(),
            values,
            windows,
            requests: n.requests,
            bytes_in: n.bytes_in,
            files: file.into_iter().collect(),
            profile,
            tail: s.traces.as_ref().and_then(|t| t.tail.clone()),
            speed_us: s.speed.as_ref().map(|v| v.target_us).filter(|v| v.is_finite() && *v > 0.0),
        });
    }
    Ok(side)
}

/// Two plain results files as one-cell sides (within-run statistics only).
pub fn load_file(path: &Path) -> Result<Side, CompareError> {
    let files = run_files(path)?;
    // A lab's step file holds its warm-up before the step: left out, as the lab counted it.
    let mut read =
        (results::WithoutWarmup::new(StepConsumer::new(std::time::Duration::ZERO)), results::ShardSet::new());
    for file in &files {
        let f = std::fs::File::open(file).map_err(|e| CompareError(format!("{}: {e}", file.display())))?;
        let mut reader = results::Reader::new(std::io::BufReader::new(f), file.display().to_string());
        read.1.source(&file.display().to_string());
        results::feed(&mut reader, &mut read).map_err(|e| CompareError(format!("{}: {e}", file.display())))?;
    }
    let (c, set) = read;
    let c = c.inner;
    let problems = set.problems();
    if !problems.is_empty() {
        return Err(CompareError(format!(
            "{}: the shard files are not one whole run: {}",
            path.display(),
            problems.join("; ")
        )));
    }
    if let Some((i, n)) = set.alone() {
        return Err(CompareError(format!(
            "{}: shard {i}/{n} of a sharded run, a {n}th of its load: give the folder with all {n} shard files",
            path.display()
        )));
    }
    let n = c.numbers();
    let values = COMPARED.iter().filter(|m| !m.is_sampled()).map(|m| (*m, m.of(&n))).collect();
    let mut cell = CellData { target: "run".into(), label: "all".into(), ..Default::default() };
    let id = path.display().to_string();
    // The lab's rule, with no SLO to break.
    if let Some(why) = crate::measure::verdict::uncounted(&[], &n) {
        cell.excluded.push(format!("{id}: {why}"));
    } else {
        cell.steps.push(StepData {
            id,
            values,
            windows: c.windows.windows(),
            requests: n.requests,
            bytes_in: n.bytes_in,
            files,
            profile: None,
            tail: None,
            speed_us: None,
        });
    }
    Ok(Side { name: path.display().to_string(), cells: BTreeMap::from([("run".to_owned(), cell)]), machine: None })
}
