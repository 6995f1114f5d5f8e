//! `loadlab history`: list, add, show and check a history of labs.

pub mod args;
pub mod bisect;

use std::io::Write;
use std::path::Path;

use history::History;
use stats::change_points::Settings;

use crate::bad;
use args::{ChangeArgs, HistoryAcceptArgs, HistoryArgs, HistoryAt, HistoryCommand, HistoryShowArgs, SeriesArgs};

pub fn run(a: HistoryArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        match a.command {
            None => list(a.list).await,
            Some(HistoryCommand::Show(s)) => show(s).await,
            Some(HistoryCommand::Add(add)) => {
                let given = add.commit.given().map_err(bad)?;
                let mut h = open(&add.at).await?;
                // Every folder is tried (`history add lab-2026*/`): one that cannot be read is
                // said, and the others are still added; the exit says some were not.
                let mut refused = 0;
                for path in &add.labs {
                    let added = async {
                        let (lab, dir) = read_lab(path)?;
                        let how = history::Recording { given: given.clone(), ..Default::default() };
                        let recorded = history::record(&mut h, &lab, &dir, &how).await;
                        Ok::<_, anyhow::Error>((recorded.map_err(anyhow::Error::from)?, dir))
                    }
                    .await;
                    match added {
                        Ok((history::Recorded { id, already: false, .. }, dir)) => {
                            eprintln!("loadlab: added {} as lab {id}", dir.display());
                        }
                        Ok((history::Recorded { id, already: true, .. }, dir)) => {
                            eprintln!("loadlab: {} is in the history already, as lab {id}", dir.display());
                        }
                        Err(e) => {
                            refused += 1;
                            eprintln!("loadlab: {}: not added: {e}", path.display());
                        }
                    }
                }
                match refused {
                    0 => Ok(()),
                    n => Err(bad(format!("{n} of {} lab folders could not be added (see above)", add.labs.len()))),
                }
            }
            Some(HistoryCommand::Check(c)) => {
                let gates = match c.fail_on.as_deref() {
                    Some(g) => {
                        let gates = lab::Gate::parse_history_list(g).map_err(|e| bad(format!("--fail-on: {e}")))?;
                        if gates.is_empty() {
                            return Err(bad("--fail-on: no gate given (e.g. 'p99>+5%')"));
                        }
                        gates
                    }
                    None => Vec::new(),
                };
                // A lab folder is added first (a history may start with it); else it must exist.
                let settings = settings(&c.changes)?;
                let checked = match &c.lab {
                    Some(dir) => {
                        let mut h = open(&c.at).await?;
                        let (lab, dir) = read_lab(dir)?;
                        let how = history::Recording {
                            gates: Some(&gates),
                            settings,
                            any_machine: c.any_machine,
                            ..Default::default()
                        };
                        let recorded = history::record(&mut h, &lab, &dir, &how).await;
                        recorded.map_err(anyhow::Error::from)?.checked.expect("gated")
                    }
                    None => {
                        let h = open_existing(&c.at).await?;
                        let id = h.newest().await.map_err(anyhow::Error::from)?.ok_or_else(|| {
                            bad("the history holds no lab yet: record one with `lab run --history` or `history add`")
                        })?;
                        let judged = history::judge_lab(&h, id, &gates, &settings, c.any_machine).await;
                        judged.map_err(anyhow::Error::from)?
                    }
                };
                eprint!("{}", history::check_text(&checked));
                if c.json {
                    let doc = serde_json::json!({
                        "check": &checked,
                        "warnings": checked.warnings(),
                        "not_judged_yet": checked.not_yet(),
                        "cannot_tell": checked.too_short(),
                    });
                    println!("{}", serde_json::to_string_pretty(&doc)?);
                }
                crate::exit::history_check(&checked, c.strict, c.warning_exit)
            }
            Some(HistoryCommand::Accept(a)) => accept(a).await,
            Some(HistoryCommand::Bisect(_)) => Err(bad("history bisect is run by its own command")),
        }
    })
}

/// Records an acceptance, after checking that the history knows the commit, and says which
/// change points it covers now.
async fn accept(a: HistoryAcceptArgs) -> anyhow::Result<()> {
    let commit = a.commit.trim().to_owned();
    let reason = a.reason.trim().to_owned();
    if reason.is_empty() {
        return Err(bad("--reason: say why the change is accepted"));
    }
    // What an acceptance says is read by every teammate's terminal and page.
    for (flag, text) in [("--reason", Some(&reason)), ("--by", a.by.as_ref()), ("COMMIT", Some(&commit))] {
        if text.is_some_and(|t| t.chars().any(history::reorders_or_controls)) {
            return Err(bad(format!("{flag}: holds a control character")));
        }
        if text.is_some_and(|t| t.chars().count() > 1_000) {
            return Err(bad(format!("{flag}: over 1000 characters")));
        }
    }
    if let Some(m) = &a.metric {
        lab::Metric::parse(m).map_err(|e| bad(format!("--metric: {e}")))?;
    }
    let mut h = open_existing(&a.at).await?;
    let labs = h.labs().await.map_err(anyhow::Error::from)?;
    let matching: std::collections::BTreeSet<&str> = labs
        .iter()
        .filter(|(_, e)| a.plan.as_deref().is_none_or(|p| p == e.plan))
        .filter_map(|(_, e)| e.commit.as_deref())
        .filter(|c| *c == commit || (commit.chars().count() >= history::MIN_COMMIT && c.starts_with(&commit)))
        .collect();
    // A prefix of two commits names neither: which one would be accepted is said, not guessed.
    if matching.len() > 1 && !matching.contains(commit.as_str()) {
        let shown: Vec<String> = matching.iter().take(10).map(|c| history::plain(c)).collect();
        return Err(bad(format!(
            "commit {commit:?} is a prefix of {} commits in the history ({}): give more of it",
            matching.len(),
            shown.join(", ")
        )));
    }
    if matching.is_empty() {
        let plan = a.plan.as_deref().map_or_else(String::new, |p| format!(" of plan {p}"));
        return Err(bad(format!(
            "no lab{plan} of commit {commit:?} in the history (a prefix needs {} characters)",
            history::MIN_COMMIT
        )));
    }
    let acceptance = history::Acceptance {
        commit,
        plan: a.plan,
        metric: a.metric,
        reason,
        who: a.by.filter(|b| !b.trim().is_empty()).unwrap_or_else(history::who_default),
        at_unix_s: chrono::Utc::now().timestamp(),
    };
    h.accept(&acceptance).await.map_err(anyhow::Error::from)?;
    let mut series = history::series(&labs, &history::Query::default(), &Settings::default());
    let one = [acceptance.clone()];
    series.iter_mut().for_each(|s| s.mark_accepted(&one));
    let covered: Vec<String> =
        series.iter().filter(|s| s.accepted.iter().any(Option::is_some)).map(|s| s.key.text()).collect();
    eprintln!("loadlab: {} {}", acceptance.commit, acceptance.text());
    match covered.len() {
        0 => eprintln!("loadlab: it covers no change point yet; it will cover one found there"),
        n => eprintln!("loadlab: it covers the change in {n} series: {}", covered.join("; ")),
    }
    Ok(())
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
    History::open(spec(at)?).await.map_err(anyhow::Error::from)
}

/// A history that must exist already: what reads it (a mistyped path is not an empty history).
async fn open_existing(at: &HistoryAt) -> anyhow::Result<History> {
    History::open_existing(spec(at)?).await.map_err(anyhow::Error::from)
}

fn spec(at: &HistoryAt) -> anyhow::Result<&str> {
    at.history
        .as_deref()
        .ok_or_else(|| bad(format!("no history: give --history FILE (or a postgres:// URL) or set {}", history::ENV)))
}

fn read_lab(path: &Path) -> anyhow::Result<(lab::Lab, std::path::PathBuf)> {
    let (dir, json) = if path.is_dir() {
        (path.to_path_buf(), path.join("lab.json"))
    } else {
        (path.parent().map_or_else(|| ".".into(), Path::to_path_buf), path.to_path_buf())
    };
    let lab = lab::read_lab(&json).map_err(anyhow::Error::from)?;
    Ok((lab, dir))
}

fn query(s: &SeriesArgs) -> history::Query {
    history::Query {
        plan: s.plan.clone(),
        target: s.target.clone(),
        metric: s.metric.clone(),
        load: s.load.clone(),
        branch: s.branch.clone(),
        any_machine: s.any_machine,
        off_line: s.off_line,
    }
}

async fn list(a: HistoryShowArgs) -> anyhow::Result<()> {
    let h = open_existing(&a.at).await?;
    let query = query(&a.series);
    let labs = h.labs_where(&query.filter()).await.map_err(anyhow::Error::from)?;
    let series = history::series(&labs, &query, &settings(&a.changes)?);
    print!("{}", history::list_text(&series));
    Ok(())
}

async fn show(a: HistoryShowArgs) -> anyhow::Result<()> {
    let h = open_existing(&a.at).await?;
    let query = query(&a.series);
    let labs = h.labs_where(&query.filter()).await.map_err(anyhow::Error::from)?;
    let settings = settings(&a.changes)?;
    let accepted = h.acceptances().await.map_err(anyhow::Error::from)?;
    let mut series = history::series(&labs, &query, &settings);
    series.iter_mut().for_each(|s| s.mark_accepted(&accepted));
    // The pages show each plan's newest lab as `history check` judges it (the default gates).
    let checks = match &a.out {
        Some(_) => last_checks(&labs, &series, &settings, &accepted, a.series.any_machine),
        None => Vec::new(),
    };
    drop(labs);
    // Written as made: a history of 10,000 labs shows tens of MB.
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = if a.json {
        history::write_json(&mut out, &series, &settings)
    } else if a.csv {
        out.write_all(history::csv(&series).as_bytes())
    } else {
        history::write_show(&mut out, &series, &settings)
    };
    match written.and_then(|()| out.flush()) {
        // A reader that stops early (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
        other => other?,
    }
    drop(out);
    if let Some(out) = &a.out {
        std::fs::create_dir_all(out).map_err(|e| bad(format!("--out {}: {e}", out.display())))?;
        for (name, text) in [
            ("history.html", history::html(&series, &settings, &checks, out)),
            ("history.md", history::markdown(&series, &settings, &checks, a.all)),
        ] {
            let path = out.join(name);
            results::files::put(&path, text.as_bytes())?;
            eprintln!("loadlab: wrote {}", path.display());
        }
    }
    Ok(())
}

/// Each shown plan's newest lab as `history check` judges it on the default gates (a plan whose
/// check cannot run is left out: the page still shows its series).
fn last_checks(
    labs: &[history::Stored],
    series: &[history::Series],
    settings: &Settings,
    accepted: &[history::Acceptance],
    any_machine: bool,
) -> Vec<history::Checked> {
    let plans: std::collections::BTreeSet<&str> = series.iter().map(|s| s.key.plan.as_str()).collect();
    let rules = history::Rules { any_machine, ..history::Rules::new(&[], settings, accepted) };
    plans
        .into_iter()
        .filter_map(|plan| {
            let (id, _) = labs.iter().filter(|(_, e)| e.plan == plan).max_by_key(|(id, e)| (e.started_unix_s, *id))?;
            history::check(labs, *id, &rules).ok()
        })
        .collect()
}
