//! How a bisect is told: the one line a person and a CI log read, and bisect.md (each commit
//! tried, its figures, its verdict, its build and labs).

use std::fmt::Write;

use crate::run::{Ending, Report, Tried};
use crate::search::State;
use history::show;

/// The last line: the first slow commit with the change, or why there is none.
pub fn last_line(r: &Report) -> String {
    match &r.ending {
        Ending::Named { first, change } => {
            let c = &r.range[*first].commit;
            let interval = change.interval_pct.map_or_else(String::new, |(lo, hi)| format!(" [{lo:+.1}, {hi:+.1}]"));
            format!(
                "first slow commit: {} {} ({} {} -> {}, {:+.1}%{interval})",
                c.short(),
                c.subject,
                change.metric,
                show(&change.metric, change.good),
                show(&change.metric, change.bad),
                change.pct
            )
        }
        Ending::Range(r_) => format!(
            "first slow commit: one of {} (skipped commits leave them in doubt): {}",
            r_.len(),
            r_.iter()
                .map(|&i| format!("{} {}", r.range[i].commit.short(), r.range[i].commit.subject))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Ending::NoDifference(why) => format!("no slower commit to find: {why}"),
        Ending::OutOfLabs(left) => {
            format!("--max-labs reached after {} labs with {} commits still to try", r.labs_run, left.len())
        }
        Ending::Stopped => format!("stopped by a signal after {} labs", r.labs_run),
    }
}

fn state_text(t: &Tried, end: Option<&str>) -> String {
    if let Some(end) = end {
        return end.to_owned();
    }
    match &t.state {
        State::Untested => "not tried".into(),
        State::Good => "good".into(),
        State::Bad => "**bad**".into(),
        State::Skipped(why) => format!("skipped: {why}"),
    }
}

/// `path` as a link from bisect.md, which sits in the same folder.
fn near(path: &std::path::Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// bisect.md (in the folder that holds the labs and build logs it links to).
pub fn markdown(r: &Report) -> String {
    let mut out = String::from("# history bisect\n\n");
    let _ = writeln!(out, "{}\n", last_line(r));
    let _ = writeln!(
        out,
        "Good {} ({}), bad {} ({}); {} commits between them ({}); build: `{}`; {} labs run.\n",
        r.good.commit.short(),
        r.good.commit.subject,
        r.bad.commit.short(),
        r.bad.commit.subject,
        r.range.len(),
        if r.merged { "every commit, topological order" } else { "first-parent line" },
        r.build.as_deref().unwrap_or("none"),
        r.labs_run
    );
    if let Some((key, why)) = &r.series {
        let _ = writeln!(out, "Judged on {}: {why}.\n", key.text());
        let _ = writeln!(
            out,
            "A commit is judged by Wald's sequential test between the two levels ({}% error each way), labbed \
             again while its labs cannot tell, at most {} labs; a commit whose build fails, whose target does \
             not start, or whose labs still cannot tell is skipped.\n",
            crate::judge::ERROR * 100.0,
            crate::judge::MOST_LABS
        );
    }
    out.push_str("| commit | subject | values | verdict | labs (reused) | build |\n|---|---|---|---|---|---|\n");
    let metric = r.series.as_ref().map_or("p50", |(k, _)| k.metric.as_str());
    let rows = std::iter::once((&r.good, Some("good end")))
        .chain(r.range.iter().map(|t| (t, (t.commit.hash == r.bad.commit.hash).then_some("bad end"))));
    for (t, end) in rows {
        let t = if end == Some("bad end") { &r.bad } else { t };
        let values = t.values.iter().map(|v| show(metric, *v)).collect::<Vec<_>>().join(", ");
        let labs =
            t.labs.iter().map(|l| format!("[{}]({}/report.html)", near(l), near(l))).collect::<Vec<_>>().join(" ");
        let build = t
            .build
            .as_ref()
            .map_or_else(|| "-".to_owned(), |(took, log)| format!("{:.1} s, [log]({})", took.as_secs_f64(), near(log)));
        let _ = writeln!(
            out,
            "| {} | {} | {values} | {} | {labs} ({}) | {build} |",
            t.commit.short(),
            history::md_cell(&t.commit.subject),
            state_text(t, end),
            t.reused
        );
    }
    out
}
