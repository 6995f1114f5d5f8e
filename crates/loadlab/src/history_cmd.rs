//! `loadlab history`: list, add, show and check a history of labs.

use std::path::Path;

use history::{Added, History, Settings};

use crate::bad;
use crate::cli::{ChangeArgs, HistoryArgs, HistoryAt, HistoryCommand, HistoryShowArgs, SeriesArgs};

pub fn run(a: HistoryArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        match a.command {
            None => list(a.list).await,
            Some(HistoryCommand::Show(s)) => show(s).await,
            Some(HistoryCommand::Add(add)) => {
                let given = add.commit.given().map_err(bad)?;
                let mut h = open(&add.at).await?;
                for dir in &add.labs {
                    let (lab, dir) = read_lab(dir)?;
                    let entry = history::entry(&lab, &dir, &history::provenance_of(&lab, &given));
                    match h.add(&entry).await.map_err(|e| bad(e.to_string()))? {
                        Added::New(id) => eprintln!("loadlab: added {} as lab {id}", dir.display()),
                        Added::Already => eprintln!("loadlab: {} is in the history already", dir.display()),
                    }
                }
                Ok(())
            }
            Some(HistoryCommand::Check(c)) => {
                let gates = lab::Gate::parse_list(&c.fail_on).map_err(|e| bad(format!("--fail-on: {e}")))?;
                let mut h = open(&c.at).await?;
                let id = match &c.lab {
                    Some(dir) => {
                        let (lab, dir) = read_lab(dir)?;
                        let entry = history::entry(&lab, &dir, &history::provenance_of(&lab, &Default::default()));
                        lab_id(&mut h, &entry).await?
                    }
                    None => {
                        h.labs().await.map_err(|e| bad(e.to_string()))?.last().map(|(id, _)| *id).ok_or_else(|| {
                            bad("the history holds no lab yet: record one with `lab run --history` or `history add`")
                        })?
                    }
                };
                check(&h, id, &gates, &settings(&c.changes)?, c.any_machine).await
            }
        }
    })
}

fn settings(c: &ChangeArgs) -> anyhow::Result<Settings> {
    if !(c.max_pvalue > 0.0 && c.max_pvalue < 1.0) {
        return Err(bad(format!("--max-pvalue: {} is not between 0 and 1", c.max_pvalue)));
    }
    Ok(Settings {
        window: c.window as usize,
        max_pvalue: c.max_pvalue,
        min_magnitude: c.min_change,
        min_points: c.min_points as usize,
    })
}

async fn open(at: &HistoryAt) -> anyhow::Result<History> {
    let spec = at.history.as_deref().ok_or_else(|| {
        bad(format!("no history: give --history FILE (or a postgres:// URL) or set {}", history::ENV))
    })?;
    History::open(spec).await.map_err(|e| bad(e.to_string()))
}

fn read_lab(path: &Path) -> anyhow::Result<(lab::Lab, std::path::PathBuf)> {
    let (dir, json) = if path.is_dir() {
        (path.to_path_buf(), path.join("lab.json"))
    } else {
        (path.parent().map_or_else(|| ".".into(), Path::to_path_buf), path.to_path_buf())
    };
    let lab = lab::read_lab(&json).map_err(|e| bad(e.to_string()))?;
    Ok((lab, dir))
}

/// The lab's key in the history, adding it first if it is not there.
async fn lab_id(h: &mut History, entry: &history::Entry) -> anyhow::Result<i64> {
    if let Added::New(id) = h.add(entry).await.map_err(|e| bad(e.to_string()))? {
        return Ok(id);
    }
    let labs = h.labs().await.map_err(|e| bad(e.to_string()))?;
    labs.iter()
        .find(|(_, e)| e.plan == entry.plan && e.started_unix_s == entry.started_unix_s && e.machine == entry.machine)
        .map(|(id, _)| *id)
        .ok_or_else(|| bad("the lab is in the history under another key"))
}

fn query(s: &SeriesArgs) -> history::Query {
    history::Query {
        plan: s.plan.clone(),
        target: s.target.clone(),
        metric: s.metric.clone(),
        load: s.load.clone(),
        branch: s.branch.clone(),
        any_machine: s.any_machine,
    }
}

async fn list(a: HistoryShowArgs) -> anyhow::Result<()> {
    let h = open(&a.at).await?;
    let labs = h.labs().await.map_err(|e| bad(e.to_string()))?;
    let series = history::series(&labs, &query(&a.series), &settings(&a.changes)?);
    print!("{}", history::list_text(&series));
    Ok(())
}

async fn show(a: HistoryShowArgs) -> anyhow::Result<()> {
    let h = open(&a.at).await?;
    let labs = h.labs().await.map_err(|e| bad(e.to_string()))?;
    let settings = settings(&a.changes)?;
    let series = history::series(&labs, &query(&a.series), &settings);
    if a.json {
        print!("{}", history::json(&series, &settings));
    } else if a.csv {
        print!("{}", history::csv(&series));
    } else {
        print!("{}", history::show_text(&series, &settings));
    }
    if let Some(out) = &a.out {
        std::fs::create_dir_all(out).map_err(|e| bad(format!("--out {}: {e}", out.display())))?;
        for (name, text) in
            [("history.html", history::html(&series, &settings)), ("history.md", history::markdown(&series, &settings))]
        {
            let path = out.join(name);
            results::files::put(&path, text.as_bytes())?;
            eprintln!("loadlab: wrote {}", path.display());
        }
    }
    Ok(())
}

/// Judges lab `id` and maps the outcome to the exit: 3 worse, 4 too short to tell, 0 held.
async fn check(
    h: &History,
    id: i64,
    gates: &[lab::Gate],
    settings: &Settings,
    any_machine: bool,
) -> anyhow::Result<()> {
    let labs = h.labs().await.map_err(|e| bad(e.to_string()))?;
    let checked = history::check(&labs, id, gates, settings, any_machine).map_err(|e| bad(e.to_string()))?;
    eprint!("{}", history::check_text(&checked));
    crate::history_verdict(&checked)
}
