//! A lab's outputs in its directory: `report.md` with its charts as PNG (`charts/`),
//! `report.html` (the same, self-contained, with interactive charts), and `lab.json` (every
//! number, for scripts).

pub(crate) mod charts;
pub(crate) mod compare;
pub(crate) mod html;
pub(crate) mod markdown;
pub(crate) mod profiles;
pub(crate) mod tail_charts;
pub(crate) mod traces;

use std::path::{Path, PathBuf};

use report::chart::{render_html, render_png, Chart, ChartData};

use crate::lab_json::Lab;
use results::files::put;

/// Writes the lab's reports into `dir`; returns the files written (report.md, report.html,
/// lab.json).
pub fn write(lab: &Lab, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    write_as(lab, dir, true)
}

/// Writes report.md without its charts and lab.json into `dir` (profiles' differentials stay):
/// what one lab of many needs, where a summary of them all is the report (`lab ab`'s pairs:
/// their charts and pages were 93% of a run's 12 MB).
pub fn write_brief(lab: &Lab, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    write_as(lab, dir, false)
}

fn write_as(lab: &Lab, dir: &Path, whole: bool) -> std::io::Result<Vec<PathBuf>> {
    // lab.json last: a lab.json says the reports beside it are whole.
    let json = dir.join("lab.json");
    let chart_dir = dir.join("charts");
    let _ = std::fs::remove_dir_all(&chart_dir);
    if !whole {
        let (diffs, problems) = profiles::differentials(lab, dir);
        let md = dir.join("report.md");
        put(
            &md,
            (markdown::render(lab, &[]) + &profiles::markdown(lab, &diffs, &problems) + &traces::markdown(lab, &[]))
                .as_bytes(),
        )?;
        let _ = std::fs::remove_file(dir.join("report.html"));
        put(&json, &serde_json::to_vec_pretty(lab).map_err(std::io::Error::other)?)?;
        return Ok(vec![md, json]);
    }
    let figures = charts::figures(lab);
    let tail_figures = tail_charts::figures(lab);
    std::fs::create_dir_all(&chart_dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", chart_dir.display())))?;
    // Each chart as a PNG beside the report: (title, its path).
    let png = |f: &charts::Figure| -> std::io::Result<(String, String)> {
        let png = render_png(&f.svg, 1.5).map_err(std::io::Error::other)?;
        put(&chart_dir.join(format!("{}.png", f.stem)), &png)?;
        Ok((f.title.clone(), format!("charts/{}.png", f.stem)))
    };
    let images = figures.iter().map(png).collect::<std::io::Result<Vec<_>>>()?;
    let tail_images = tail_figures.iter().map(png).collect::<std::io::Result<Vec<_>>>()?;
    let figures: Vec<charts::Figure> = figures.into_iter().chain(tail_figures).collect();
    let (diffs, problems) = profiles::differentials(lab, dir);
    let md_text = markdown::render(lab, &images)
        + &profiles::markdown(lab, &diffs, &problems)
        + &traces::markdown(lab, &tail_images);
    let md = dir.join("report.md");
    put(&md, md_text.as_bytes())?;
    let runs = ChartData {
        title: lab.name.clone(),
        runs: lab
            .series
            .iter()
            .map(|(i, r)| {
                let mut r = r.clone();
                r.name = lab.steps[*i].id.clone();
                r
            })
            .collect(),
    };
    let interactive = (!runs.runs.is_empty()).then(|| render_html(&runs, Chart::All));
    let title = if lab.name.is_empty() { "Lab report" } else { &lab.name };
    let page = dir.join("report.html");
    let flames = html::flames(dir, &md_text);
    put(&page, html::render(title, &md_text, &figures, &flames, interactive.as_deref()).as_bytes())?;
    put(&json, &serde_json::to_vec_pretty(lab).map_err(std::io::Error::other)?)?;
    Ok(vec![md, page, json])
}
