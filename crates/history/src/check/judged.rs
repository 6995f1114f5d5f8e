//! What a check says of each gated series (`Judged`, `Outcome`, what it was held to, the
//! regression it carries) and of the lab (`Checked`), and the rules it is held to (`Rules`).

use lab::Gate;
use serde::Serialize;

use super::{IN_A_ROW, TRIM};
use crate::accept::Acceptance;
use crate::series::Key;
use stats::change_points::{ChangePoint, Settings};

/// How one gated series judged the lab.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Past the threshold and beyond the level's spread, or a regression nobody accepted.
    Worse,
    /// Within the threshold or the level's spread.
    Held,
    /// The level has too few labs to tell (or the lab has no counted figure): why.
    TooShort(String),
    /// A new series still gathering its first level: not judged yet, as planned (a history's
    /// first merges are not a failure); why, with how many labs it has and needs.
    NotYet(String),
}

/// What the lab was held to.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HeldTo {
    /// The level's own spread, measured over this many labs.
    Spread { labs: usize },
    /// The fixed run-to-run floor (%) as well: the level has too few labs to stand alone.
    Floor { pct: f64 },
    /// A level of 1 or 2 labs just after a change: its own centre, and the spread of the level
    /// before it (over this many labs).
    Borrowed { labs: usize },
}

/// A confirmed change for the worse the series still carries: its level now against the last
/// accepted level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Regression {
    /// The first lab of the change's level, and the commits on either side of the change.
    pub from_lab: i64,
    pub commit: Option<String>,
    pub commit_before: Option<String>,
    /// The accepted level and the level now (geometric means), and how many labs each holds.
    pub before: f64,
    pub now: f64,
    pub labs_before: usize,
    pub labs_now: usize,
    /// now / before - 1, in %, with its 95% interval.
    pub change_pct: f64,
    pub interval_pct: (f64, f64),
    /// Welch's two-sided p-value between the two levels.
    pub pvalue: f64,
}

/// A change not yet confirmed that is already past the gate: a warning.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Pending {
    pub commit: Option<String>,
    pub change_pct: f64,
    /// Labs still needed after it to confirm it.
    pub needs: usize,
}

/// A gated series and its verdict on the lab.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Judged {
    pub key: Key,
    pub gate: String,
    pub machine_text: String,
    pub value: f64,
    /// The current level: its centre (geometric mean), standard deviation and labs.
    pub level_mean: f64,
    pub level_std: f64,
    pub level_points: usize,
    /// Labs of the level left out of its spread and centre as outliers (`stats::outliers`).
    pub level_outliers: usize,
    /// The level's most extreme lab on the gate's worse side, its outliers included (NaN when
    /// unknown): a lab alone within what the level itself produced is no change by itself.
    #[serde(skip)]
    pub level_extreme: f64,
    /// Values of the level left out because they have no ratio (0 or below, on a metric that
    /// cannot be 0: a history written around its checks): one such lab cannot switch off the
    /// gate.
    pub level_unratioed: usize,
    /// Failed alone: its change [`super::ALONE_TIMES`] the gate's threshold at p at most
    /// [`super::ALONE_P`].
    pub alone_far: bool,
    /// A new series with a level but not yet the labs a run needs: judged by the alone rule
    /// only (a doubled cost is red on its first lab however young the series).
    pub alone_only: bool,
    /// Where the level began: the commit of its first lab (none: the series' start).
    pub level_since: Option<String>,
    pub change_pct: f64,
    /// What the lab was held to: the level's spread, or the fixed floor too.
    pub held_to: Option<HeldTo>,
    /// One-sided p-value of the prediction test of this lab alone against the level; the least
    /// change of the labs judged with it ([`IN_A_ROW`]), and the commit of the first of them.
    pub lab_pvalue: f64,
    pub previous_change_pct: f64,
    pub previous_commit: Option<String>,
    /// The p-value of this lab and the one before it both lying beyond the level (the larger of
    /// their p-values, squared), and whether it failed the lab (both past the gate,
    /// Holm-corrected).
    pub pvalue: f64,
    pub past_level: bool,
    /// This lab is past the gate and beyond the level without the run of [`IN_A_ROW`] labs that
    /// would fail it: a warning, which the next labs confirm or clear.
    pub alone_beyond: bool,
    /// This lab is past the gate's threshold, but its level's spread cannot yet tell it from
    /// noise: said, never a silent green.
    pub past_gate_unproven: bool,
    pub outcome: Outcome,
    /// Profiled functions at the same target and load whose own CPU per request grew most:
    /// (function, before µs, now µs); against the level, or against the accepted level for a
    /// regression.
    pub functions: Vec<(String, f64, f64)>,
    /// Traced spans at the same target and load whose self time in the slowest 1% grew most:
    /// (span, before µs, now µs), as `functions`.
    pub spans: Vec<(String, f64, f64)>,
    /// The series' last confirmed change before this lab, with the commits on either side.
    pub last_change: Option<(ChangePoint, Option<String>, Option<String>)>,
    pub regression: Option<Regression>,
    pub pending: Option<Pending>,
    /// The series' accepted changes, one line each.
    pub accepted: Vec<String>,
    /// A failure the machine explains, taken back (`check::machine`): why, for a reader.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// A failure that stands relative to the machine too (the machine slower, by less than the
    /// change): what was taken out, for a reader.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine_scaled: Option<String>,
    /// A target's CPU per request read at loadlab's own CPU per request of this lab: the slope
    /// of the level's regression on it (`check::machine::read_at_machine`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjusted: Option<f64>,
    /// The figure of the machine it was read at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjusted_by: Option<String>,
}

/// 1st, 2nd, 3rd...
pub(crate) fn nth(n: usize) -> String {
    match n {
        1 => "next".into(),
        2 => "2nd".into(),
        3 => "3rd".into(),
        n => format!("{n}th"),
    }
}

impl Judged {
    /// The change a row shows beside the verdict: the regression's size when the series carries
    /// one (the lab against the new level would read as no change beside WORSE), else the lab's
    /// change against its level.
    pub fn change_text(&self) -> String {
        match &self.regression {
            Some(r) if r.change_pct.is_finite() => format!("{:+.1}% (the regression)", r.change_pct),
            _ if self.change_pct.is_finite() => format!("{:+.1}%", self.change_pct),
            _ => "-".into(),
        }
    }

    /// A series' verdict before (or without) any figure: `outcome`, every number unknown.
    pub(super) fn unjudged(key: Key, gate: &Gate, machine_text: &str, outcome: Outcome) -> Judged {
        Judged {
            key,
            gate: gate.text(),
            machine_text: machine_text.to_owned(),
            value: f64::NAN,
            level_mean: f64::NAN,
            level_std: f64::NAN,
            level_points: 0,
            level_outliers: 0,
            level_extreme: f64::NAN,
            level_unratioed: 0,
            alone_far: false,
            alone_only: false,
            level_since: None,
            change_pct: f64::NAN,
            held_to: None,
            lab_pvalue: f64::NAN,
            previous_change_pct: f64::NAN,
            previous_commit: None,
            pvalue: f64::NAN,
            past_level: false,
            alone_beyond: false,
            past_gate_unproven: false,
            outcome,
            functions: Vec::new(),
            spans: Vec::new(),
            last_change: None,
            regression: None,
            pending: None,
            accepted: Vec::new(),
            machine: None,
            machine_scaled: None,
            adjusted: None,
            adjusted_by: None,
        }
    }
}

/// A check of one lab.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Checked {
    pub lab: i64,
    pub plan: String,
    pub commit: Option<String>,
    pub path: String,
    /// The gates, and whether they were the default (no `--fail-on`, no `[history] fail_on`).
    pub gates: Vec<String>,
    pub default_gates: bool,
    pub judged: Vec<Judged>,
    /// The lab asked for was off its line, and which lab was judged instead.
    pub off_line: Option<String>,
}

impl Checked {
    pub fn worse(&self) -> impl Iterator<Item = &Judged> {
        self.judged.iter().filter(|j| j.outcome == Outcome::Worse)
    }

    /// The warnings of a check that did not fail, one line each: a lab alone beyond its level (a
    /// rerun tells), a change past a gate not yet confirmed.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for j in self.judged.iter().filter(|j| j.outcome == Outcome::Held) {
            if let Some(why) = &j.machine {
                out.push(format!("{} ({}): beyond its level, but {why}", j.key.text(), j.gate));
            }
            if j.alone_beyond {
                out.push(format!(
                    "{} ({}): this lab alone is beyond its level: red from the {} lab after it if it stays",
                    j.key.text(),
                    j.gate,
                    nth(super::IN_A_ROW - 1)
                ));
            }
            if j.past_gate_unproven {
                out.push(format!(
                    "{} ({}): {:+.1}% is past the gate, but not yet beyond the level's spread: red from the {} lab \
                     after it if it stays",
                    j.key.text(),
                    j.gate,
                    j.change_pct,
                    nth(super::IN_A_ROW - 1)
                ));
            }
            if let Some(p) = &j.pending {
                out.push(format!("{} ({}): a change of {:+.1}% not yet confirmed", j.key.text(), j.gate, p.change_pct));
            }
        }
        out
    }

    /// The gated series not judged yet (a new history), one line each.
    pub fn not_yet(&self) -> Vec<String> {
        self.judged
            .iter()
            .filter_map(|j| match &j.outcome {
                Outcome::NotYet(why) => Some(format!("{} ({}): {why}", j.key.text(), j.gate)),
                _ => None,
            })
            .collect()
    }

    /// Why some gated series could not tell, one line each.
    pub fn too_short(&self) -> Vec<String> {
        self.judged
            .iter()
            .filter_map(|j| match &j.outcome {
                Outcome::TooShort(why) => Some(format!("{} ({}): {why}", j.key.text(), j.gate)),
                _ => None,
            })
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CheckError(pub String);

/// What a check is held to besides the labs: how change points are found, the gates (none: the
/// default, [`lab::HISTORY_DEFAULT`]), the acceptances, and whether machines mix.
pub struct Rules<'a> {
    pub gates: &'a [Gate],
    pub settings: &'a Settings,
    pub accepted: &'a [Acceptance],
    pub any_machine: bool,
    /// Labs in a row that must lie beyond the level ([`IN_A_ROW`]).
    pub in_a_row: usize,
    /// Leave a level's outliers out of its spread ([`TRIM`]).
    pub trim: bool,
    /// A lab alone fails far past its gate on very strong evidence ([`super::ALONE_TIMES`]).
    pub alone: bool,
}

impl<'a> Rules<'a> {
    /// The gate as `history check` runs it: these gates (none: the default), change points by
    /// `settings`, these acceptances, one machine's series.
    pub fn new(gates: &'a [Gate], settings: &'a Settings, accepted: &'a [Acceptance]) -> Rules<'a> {
        Rules { gates, settings, accepted, any_machine: false, in_a_row: IN_A_ROW, trim: TRIM, alone: true }
    }
}
