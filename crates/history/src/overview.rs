//! What a team reads first on a history's page or in a CI summary: every change point, newest
//! first, with its state (confirmed, pending, accepted, the machine's); each plan's newest lab as the gate sees
//! it; and the series that did not move, folded into one line.

use std::fmt::Write;

use crate::check::{Checked, Judged, Outcome};
use crate::series::{md_cell, show, Point, Series};
use stats::change_points::ChangePoint;

/// Where a change stands.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum State {
    /// Confirmed and not accepted: a gate fails on it until someone accepts it.
    Confirmed,
    /// Found, with this many labs still to come before it is confirmed.
    Pending(usize),
    /// Accepted: the words of the acceptance.
    Accepted(String),
    /// The machine's, not a commit's ([`crate::machine_change`]): why.
    Machine(String),
}

impl State {
    /// Where change point `k` of `s` stands.
    pub(crate) fn of(s: &Series, k: usize) -> State {
        match (s.acceptance(k), s.changes[k].pending) {
            (Some(a), _) => State::Accepted(a.text()),
            (None, _) if s.machine_made(k).is_some() => State::Machine(s.machine_made(k).unwrap_or_default().into()),
            (None, 0) => State::Confirmed,
            (None, n) => State::Pending(n),
        }
    }

    pub(crate) fn text(&self) -> String {
        match self {
            State::Confirmed => "confirmed".into(),
            State::Pending(n) => format!("pending ({n} more lab{})", if *n == 1 { "" } else { "s" }),
            State::Accepted(a) | State::Machine(a) => a.clone(),
        }
    }

    /// A short word for a table cell or a CSS class.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            State::Confirmed => "confirmed",
            State::Pending(_) => "pending",
            State::Accepted(_) => "accepted",
            State::Machine(_) => "machine",
        }
    }
}

/// One change point, as the overview lists it.
pub(crate) struct Change<'a> {
    /// The series' index in the list given.
    pub series: usize,
    pub of: &'a Series,
    pub change: &'a ChangePoint,
    pub state: State,
}

impl Change<'_> {
    /// The first lab at the new level.
    pub(crate) fn after(&self) -> &Point {
        &self.of.points[self.change.index]
    }

    /// The last lab before it.
    pub(crate) fn before(&self) -> Option<&Point> {
        self.of.points.get(self.change.index.wrapping_sub(1))
    }

    /// `2.10ms -> 2.31ms`.
    pub(crate) fn levels(&self) -> String {
        let m = &self.of.key.metric;
        format!("{} -> {}", show(m, self.change.mean_before), show(m, self.change.mean_after))
    }

    /// `+9.9% [+7.5, +12.4]`; a share of the machine in points (`+94.3 points`): from near
    /// nothing, a ratio says nothing.
    pub(crate) fn size(&self) -> String {
        if crate::figures::is_machine_share(&self.of.key.metric) {
            return format!("{:+.1} points", self.change.mean_after - self.change.mean_before);
        }
        let (lo, hi) = self.change.change_interval_pct();
        format!("{:+.1}% [{lo:+.1}, {hi:+.1}]", self.change.change() * 100.0)
    }
}

/// The overview of `series` (in the order given) and the plans' last checks.
pub(crate) struct Overview<'a> {
    /// Newest first (by the first lab at the new level).
    pub changes: Vec<Change<'a>>,
    pub checks: &'a [Checked],
    /// Series with no change point.
    pub quiet: Vec<&'a Series>,
}

impl<'a> Overview<'a> {
    pub(crate) fn of(series: &'a [Series], checks: &'a [Checked]) -> Overview<'a> {
        let mut changes = Vec::new();
        for (i, s) in series.iter().enumerate() {
            for (k, c) in s.changes.iter().enumerate() {
                changes.push(Change { series: i, of: s, change: c, state: State::of(s, k) });
            }
        }
        // loadlab's own CPU and the shares others took of its machine are the machine's
        // health, not the service's: their changes come after every change of the target, newest
        // first among themselves, and never lead.
        changes.sort_by_key(|c| {
            let m = &c.of.key.metric;
            (crate::figures::is_machine(m), std::cmp::Reverse((c.after().started_unix_s, c.after().lab)))
        });
        let quiet = series.iter().filter(|s| s.changes.is_empty()).collect();
        Overview { changes, checks, quiet }
    }
}

/// A gated series' verdict in a word or two.
pub(crate) fn verdict(j: &Judged) -> String {
    match (&j.outcome, &j.regression) {
        (Outcome::Worse, Some(_)) => "WORSE (a regression not accepted)".into(),
        (Outcome::Worse, None) => "WORSE".into(),
        (Outcome::Held, _) if j.alone_beyond => "ok (this lab alone is beyond its level: a warning)".into(),
        (Outcome::Held, _) if j.machine.is_some() => {
            format!("ok (a warning: {})", j.machine.as_deref().unwrap_or_default())
        }
        (Outcome::Held, _) => "ok".into(),
        (Outcome::TooShort(why), _) => format!("cannot tell: {why}"),
        (Outcome::NotYet(why), _) => format!("not judged yet: {why}"),
    }
}

/// The quiet series in one line: `14 series did not move: api / svc @ 50/s: p50, ...`.
pub(crate) fn quiet_line(quiet: &[&Series]) -> String {
    let names: Vec<String> = quiet.iter().map(|s| s.key.text()).collect();
    format!("{} series with no change point: {}", quiet.len(), names.join("; "))
}

/// The changes as the terminal ends `history show` with them: newest first, one line each.
pub(crate) fn changes_text(o: &Overview<'_>) -> String {
    let mut out = String::new();
    if o.changes.is_empty() {
        return out;
    }
    let _ = writeln!(out, "changes, newest first:");
    for c in &o.changes {
        let _ = writeln!(
            out,
            "  {:<10} {}  at {}  {}  {}",
            c.state.word(),
            c.of.key.text(),
            c.after().short_commit(),
            c.levels(),
            c.size()
        );
    }
    out
}

/// The overview as Markdown (history.md; a CI summary).
pub(crate) fn markdown(o: &Overview<'_>) -> String {
    let mut out = String::new();
    if o.changes.is_empty() {
        out.push_str("No change point in any series.\n\n");
    } else {
        out.push_str("## Changes, newest first\n\n| state | series | commit | level | change [95%] | p |\n");
        out.push_str("|---|---|---|---|---:|---:|\n");
        for c in &o.changes {
            let before = c.before().map_or_else(|| "-".into(), Point::short_commit);
            let _ = writeln!(
                out,
                "| {} | {} | `{}` (after `{}`) | {} | {} | {:.1e} |",
                md_cell(&c.state.text()),
                md_cell(&c.of.key.text()),
                md_cell(&c.after().short_commit()),
                md_cell(&before),
                c.levels(),
                c.size(),
                c.change.pvalue
            );
        }
        out.push('\n');
    }
    for checked in o.checks {
        let commit: String =
            checked.commit.as_deref().map_or_else(|| "no commit".into(), |c| c.chars().take(10).collect());
        let _ = writeln!(
            out,
            "## Last check: {} (lab {}, commit `{}`)\n\n| series | gate | verdict | value | level | change |\n\
             |---|---|---|---:|---:|---:|",
            md_cell(&checked.plan),
            md_cell(&checked.path),
            md_cell(&commit)
        );
        for j in &checked.judged {
            let change = j.change_text();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {change} |",
                md_cell(&j.key.text()),
                md_cell(&j.gate),
                md_cell(&verdict(j)),
                show(&j.key.metric, j.value),
                show(&j.key.metric, j.level_mean)
            );
        }
        out.push('\n');
    }
    if !o.quiet.is_empty() {
        let _ = writeln!(out, "{}.\n", md_cell(&quiet_line(&o.quiet)));
    }
    out
}
