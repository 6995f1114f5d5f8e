//! Head against base at one look (pure): per cell (target and load point) and metric, the
//! pairs' change with its interval; per gated cell, whether it is worse past its gate (Holm over
//! the gated cells, one-sided, at the look's share of the run's false-alarm rate), shown within
//! it, or undecided; and the smallest change the run could have seen.

use std::collections::BTreeMap;

use lab::{Gate, Metric};
use serde::Serialize;
use stats::describe::centre;
use stats::paired::{Pair, Paired};

/// The chance of a false alarm over a whole run, one-sided, whatever the looks and cells.
pub const ALPHA: f64 = 0.01;
/// The power "what it could have seen" is stated at.
pub const POWER: f64 = 0.8;

/// A change read at no change of the machine's measure is worse only where the pairs as
/// measured show it too, one-sided at this level: the regression on the measure sharpens a
/// change the pairs show, and never makes one they do not. On nginx, five A/A pairs whose
/// probe and CPU per request fell on one line (slope 4.7, correlation 1.00: two spells of the
/// machine, not five independent pairs) read +19.7% [+13.6, +26.1] at no change of the probe
/// where the pairs as measured were +4.9%, and the run went red (docs/DECISIONS.md).
pub(crate) const AS_MEASURED_P: f64 = 0.05;
/// The hold applies to looks of fewer pairs than this: a line through two spells of the machine
/// is a few pairs' accident, and from 12 pairs (9 degrees of freedom with both measures) the
/// regression's interval is its own guard. Where the head's labs happened on a faster machine,
/// the pairs as measured understate the change and the regression is what finds it: two runs
/// of the Python server with 10% more hashing were held at 20 pairs, +8.2% and +11.5% relative
/// to the machine (p 7e-4 and 2e-5), +3.8% and +5.2% as measured (p 0.14 and 0.10); no A/A row
/// of 27 real runs was ever held.
pub(crate) const HOLD_BELOW_PAIRS: usize = 12;
/// A gated cell needs this many counted pairs to be judged at all.
pub const MIN_PAIRS: usize = 2;
/// The largest change "would have seen" states: past it, the pairs were too few to say.
pub(crate) const MAX_SEEN_PCT: f64 = 1_000.0;

/// One side's values at a cell in one lab; none where its step did not count.
pub(crate) type Values = Option<BTreeMap<Metric, f64>>;

/// One cell's measurements: per pair (in run order), each side's values, none where that side's
/// step did not count.
#[derive(Clone, Debug, Default)]
pub struct CellPairs {
    /// Each pair's labs ran at once (a duet): the machine's moment is the same on both sides.
    pub at_once: bool,
    pub target: String,
    pub load: String,
    pub pairs: Vec<(Values, Values)>,
    /// The bytes an answer brought in on each side (base, head), where known.
    pub answer_bytes: Option<(f64, f64)>,
    /// Per pair, the speed probe's time on the target's CPUs on each side (µs), where measured.
    pub speed: Vec<(Option<f64>, Option<f64>)>,
}

impl CellPairs {
    /// The pairs where both sides counted and measured `metric`.
    fn of(&self, metric: Metric) -> Vec<(f64, f64)> {
        self.pairs.iter().filter_map(|(b, h)| Some((*b.as_ref()?.get(&metric)?, *h.as_ref()?.get(&metric)?))).collect()
    }

    /// The pairs where both sides measured `metric` and the speed probe: each's `(base, head)`.
    fn with_speed(&self, metric: Metric) -> Vec<((f64, f64), (f64, f64))> {
        self.pairs
            .iter()
            .zip(&self.speed)
            .filter_map(|((b, h), (sb, sh))| {
                let (b, h) = (b.as_ref()?, h.as_ref()?);
                Some(((*b.get(&metric)?, *h.get(&metric)?), ((*sb)?, (*sh)?)))
            })
            .collect()
    }

    /// The pairs where both sides measured `metric` and `control`: each's `(base, head)`.
    fn with(&self, metric: Metric, control: Metric) -> Vec<((f64, f64), (f64, f64))> {
        self.pairs
            .iter()
            .filter_map(|(b, h)| {
                let (b, h) = (b.as_ref()?, h.as_ref()?);
                Some(((*b.get(&metric)?, *h.get(&metric)?), (*b.get(&control)?, *h.get(&control)?)))
            })
            .collect()
    }
}

/// The metrics judged relative to the machine's moment, and its measure: loadlab's own CPU per
/// request in the same step. Over 12 labs of one build the pairs' differences of a Go service's
/// CPU per request and p50 correlated with it at 0.91-0.96, nginx's at 0.85-0.98 from 400 req/s,
/// and taking out what it explains cut their spread from 5-33% to 2-7% (docs/DECISIONS.md,
/// "Where the spread comes from").
pub(crate) const CONTROLLED: [Metric; 2] = [Metric::TargetCpu, Metric::P50];
pub(crate) const MACHINE: Metric = Metric::GeneratorCpu;

/// The machine's measures: the speed probe on the target's CPUs where every counted pair has it
/// (on a CPU-bound Python server it explained 81% of the lab-to-lab variance of the target's
/// CPU per request, loadlab's own CPU 44%), and loadlab's own CPU per request (on nginx, mostly
/// the kernel's network path as loadlab is, the pairs' spread of its CPU per request was 6%
/// after it, 17-20% after the probe). Both together where every pair has both (6 pairs or
/// more): on each server that leaves what the better one alone leaves (docs/DECISIONS.md).
pub(crate) const PROBE: &str = "the speed probe's time on the target's CPUs";
pub(crate) const OWN: &str = "loadlab's own CPU per request";
pub(crate) const BOTH: &str = "the speed probe's time on the target's CPUs and loadlab's own CPU per request";

/// How sure a run is that a spread is at least as wide as it says before it calls a gate out
/// of reach (the spread's lower bound at this confidence).
pub(crate) const REACH_CONFIDENCE: f64 = 0.8;
/// Pairs a row needs before its spread can call its gate out of reach.
pub(crate) const REACH_FROM_PAIRS: usize = 5;
/// ... and a row read relative to the machine: both of its measures are taken out from 6
/// pairs, so its spread is not judged before the look at 8 (on nginx the spread at 5 pairs,
/// one measure taken out, was 18%, and 6% at 8 with both).
pub(crate) const REACH_FROM_PAIRS_CONTROLLED: usize = 8;

fn reach_from(metric: Metric) -> usize {
    if CONTROLLED.contains(&metric) {
        REACH_FROM_PAIRS_CONTROLLED
    } else {
        REACH_FROM_PAIRS
    }
}

/// The most pairs "needs" states: past it, the row's gate is out of reach of any run.
pub(crate) const MAX_NEEDED_PAIRS: usize = 1_000;

/// Pairs a spread of `sd` (logarithms) needs before the one-sided 95% bound of an unchanged
/// head falls inside a gate of `limit` (a ratio's logarithm): the smallest n with
/// t(0.95, n - 1) sd / sqrt(n) below it.
pub(crate) fn pairs_needed(sd: f64, limit: f64) -> Option<usize> {
    stats::paired::pairs_needed(sd, limit, stats::CONFIDENCE, MIN_PAIRS..=MAX_NEEDED_PAIRS)
}

/// Answers whose size differs by more than this share between the sides change loadlab's own
/// work a request (reading and parsing them): its CPU then measures the head too.
pub(crate) const ANSWER_BYTES_SAME: f64 = 0.01;

/// How the machine's measure served a row.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Whether the row's change is the one at no change of the machine's measure.
    pub used: bool,
    /// The measure: the speed probe on the target's CPUs, or loadlab's own CPU per request.
    pub measure: &'static str,
    /// The measure's change, head against base, in % (with both, the probe's).
    pub own_change_pct: f64,
    /// With both: the second measure's (loadlab's own CPU per request) change, and its slope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_change_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub second_slope: Option<f64>,
    /// The row's change per unit change of loadlab's own CPU (logarithms), and their correlation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slope: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation: Option<f64>,
    /// The row's change without the control, in %.
    pub unadjusted_change_pct: f64,
    /// Why it was not used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_used: Option<String>,
    /// A change past its gate relative to the machine that the pairs as measured did not show
    /// (their one-sided p above [`AS_MEASURED_P`]): held undecided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
}

/// The comparison of `metric` in `cell`: at no change of the machine's measure where that is
/// known and the head did not move the measure itself; else the pairs as they are.
fn compared(cell: &CellPairs, metric: Metric) -> (Paired, Option<Machine>) {
    let plain = Paired::of(&cell.of(metric));
    // Both builds ran at the same moments on the same CPUs: the machine's measures are one
    // process's (loadlab's) and one probe's, the same on both sides, so nothing to take out.
    if !CONTROLLED.contains(&metric) || cell.at_once {
        return (plain, None);
    }
    let plain_pairs = cell.of(metric).len();
    let probed = cell.with_speed(metric);
    let owned = cell.with(metric, MACHINE);
    let moved = |pairs: &[(Pair, Pair)]| {
        let own = Paired::of(&pairs.iter().map(|(_, c)| *c).collect::<Vec<_>>());
        own.interval(stats::CONFIDENCE).filter(|(lo, hi)| *lo > 1.0 || *hi < 1.0).map(|i| (own.ratio, i))
    };
    // Both measures where every pair has both and neither moved with the head (a head that
    // changes loadlab's own work is the single measure's rule below).
    let same_answers = cell.answer_bytes.is_none_or(|(b, h)| (h - b).abs() <= ANSWER_BYTES_SAME * b.max(1.0));
    if probed.len() == plain_pairs && owned.len() == plain_pairs && same_answers {
        if let (None, None) = (moved(&probed), moved(&owned)) {
            let triples: Vec<_> = probed.iter().zip(&owned).map(|((m, p), (_, o))| (*m, *p, *o)).collect();
            if let Some(controlled) = Paired::with_two_controls(&triples) {
                let change =
                    |pairs: &[(Pair, Pair)]| pct(Paired::of(&pairs.iter().map(|(_, c)| *c).collect::<Vec<_>>()).ratio);
                let m = Machine {
                    used: true,
                    measure: BOTH,
                    own_change_pct: change(&probed),
                    second_change_pct: Some(change(&owned)),
                    second_slope: controlled.control.and_then(|c| c.second_slope),
                    slope: controlled.control.map(|c| c.slope),
                    correlation: controlled.control.map(|c| c.correlation),
                    unadjusted_change_pct: pct(plain.ratio),
                    not_used: None,
                    held: None,
                };
                return (controlled, Some(m));
            }
        }
    }
    let (both, measure) = if !probed.is_empty() && probed.len() == plain_pairs && moved(&probed).is_none() {
        (probed, PROBE)
    } else {
        (owned, OWN)
    };
    let Some(controlled) = Paired::with_control(&both) else { return (plain, None) };
    let own = Paired::of(&both.iter().map(|(_, c)| *c).collect::<Vec<_>>());
    let mut m = Machine {
        used: false,
        measure,
        own_change_pct: pct(own.ratio),
        second_change_pct: None,
        second_slope: None,
        slope: controlled.control.map(|c| c.slope),
        correlation: controlled.control.map(|c| c.correlation),
        unadjusted_change_pct: pct(plain.ratio),
        not_used: None,
        held: None,
    };
    // The head moved loadlab's own work (a larger answer, slower answers keeping more
    // connections busy): then it measures the head as well as the machine, and taking it out
    // would take out part of the head's change. A larger answer is known exactly; a change of
    // loadlab's work hidden in the machine's moments only once it stands out of them.
    if let Some((b, h)) = cell.answer_bytes.filter(|(b, h)| (h - b).abs() > ANSWER_BYTES_SAME * b.max(1.0)) {
        m.not_used = Some(format!(
            "the head's answers brought {h:.0} bytes each against the base's {b:.0}, so loadlab's own work differs"
        ));
        return (plain, Some(m));
    }
    match own.interval(stats::CONFIDENCE) {
        Some((lo, hi)) if lo > 1.0 || hi < 1.0 => {
            m.not_used = Some(format!(
                "{measure} moved with the head ({} [{:+.1}, {:+.1}]), so it measures the head too",
                signed(pct(own.ratio)),
                pct(lo),
                pct(hi)
            ));
            (plain, Some(m))
        }
        _ => {
            m.used = true;
            (controlled, Some(m))
        }
    }
}

/// What a row says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Said {
    /// Worse past its gate, standing at the run's false-alarm rate.
    Worse,
    /// Shown within its gate (the one-sided 95% bound on the worse side is inside it).
    Within,
    /// Neither yet.
    Undecided,
    /// Gated, but too few pairs counted to judge.
    TooFew,
    /// Not gated: shown, not judged.
    Shown,
}

/// One metric of one cell, head against base.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub target: String,
    pub load: String,
    pub metric: Metric,
    /// The gate that judges it, as written (`target_cpu>+5%`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<String>,
    pub pairs: usize,
    pub base: f64,
    pub head: f64,
    /// Head / base - 1, in %, with its two-sided 95% interval.
    pub change_pct: f64,
    pub interval_pct: Option<(f64, f64)>,
    /// One-sided p-value of no change for the worse (gated rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p: Option<f64>,
    /// The smallest change for the worse, in %, this row would have shown at [`POWER`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detectable_pct: Option<f64>,
    pub said: Said,
    /// The spread of its pairs' changes (sd of the logarithms, in %), after the machine's part.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spread_pct: Option<f64>,
    /// Pairs its spread needs (at least: from the spread's lower bound) before an unchanged head
    /// can be shown within its gate (gated rows not yet decided; none past [`MAX_NEEDED_PAIRS`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needs_pairs: Option<usize>,
    /// How the machine's measure served it (the metrics in [`CONTROLLED`], from
    /// [`stats::paired::MIN_CONTROLLED`] pairs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// Within its gate or not yet decided against it, and real all the same: its change for the
    /// worse stands at the run's error rate (and, read relative to the machine, in the pairs as
    /// measured).
    pub real: bool,
}

/// A change in % with its sign: `+4.6%`.
pub(crate) fn signed(v: f64) -> String {
    format!("{v:+.1}%")
}

impl Row {
    /// Its interval as ` [+4.3, +4.9]` (empty without one).
    pub fn interval_words(&self) -> String {
        self.interval_pct.map_or_else(String::new, |(lo, hi)| format!(" [{lo:+.1}, {hi:+.1}]"))
    }

    /// The row in one line's words: `target_cpu +9.8% [+7.1, +12.6] at 200 req/s (gate +5%)`.
    pub fn words(&self) -> String {
        let gate = self.gate.as_deref().and_then(|g| g.find(['<', '>']).map(|at| &g[at + 1..])).unwrap_or("");
        format!(
            "{} {}{} at {} (gate {gate})",
            self.metric.name(),
            signed(self.change_pct),
            self.interval_words(),
            history::plain(&self.load)
        )
    }
}

/// A look's judgement of every row.
#[derive(Clone, Debug, Serialize)]
pub struct Look {
    pub pairs: usize,
    /// The one-sided level the gated cells were tested at here (Holm over them).
    pub alpha: f64,
    pub rows: Vec<Row>,
}

impl Look {
    /// Rows worse past their gates, furthest past first.
    pub fn worse(&self) -> Vec<&Row> {
        let mut v: Vec<&Row> = self.rows.iter().filter(|r| r.said == Said::Worse).collect();
        v.sort_by(|a, b| b.change_pct.abs().total_cmp(&a.change_pct.abs()));
        v
    }

    /// What the look found, in a few words.
    pub fn line(&self) -> String {
        if let Some(w) = self.worse().first() {
            return format!("worse past a gate: {}", w.words());
        }
        let count = |s: Said| self.rows.iter().filter(|r| r.said == s).count();
        format!(
            "{} gated cells within their gates, {} undecided, {} with too few steps",
            count(Said::Within),
            count(Said::Undecided),
            count(Said::TooFew)
        )
    }

    /// Every gated row is decided: one is worse, or all are shown within their gates.
    pub fn decided(&self) -> bool {
        let gated = || self.rows.iter().filter(|r| r.gate.is_some());
        gated().any(|r| r.said == Said::Worse) || gated().all(|r| r.said == Said::Within)
    }

    /// Gated rows neither worse nor shown within their gates.
    pub fn undecided(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.said == Said::Undecided).collect()
    }

    /// Undecided rows a run of `most` pairs cannot decide either way: their spread needs more
    /// pairs to show an unchanged head within the gate, and their change so far (on the gate's
    /// worse side) is less than `most` pairs of that spread would find with [`POWER`]. Such a
    /// run ends with them undecided whatever it does, so it need not run on for them.
    pub fn out_of_reach(&self, most: usize) -> Vec<&Row> {
        let m = self.rows.iter().filter(|r| r.p.is_some()).count().max(1) as f64;
        self.rows
            .iter()
            .filter(|r| r.said == Said::Undecided && r.pairs >= reach_from(r.metric))
            .filter(|r| r.needs_pairs.is_none_or(|n| n > most))
            .filter(|r| {
                let Some(gate) = r.gate.as_deref().and_then(|g| Gate::parse_list(g).ok()?.into_iter().next()) else {
                    return false;
                };
                let Some(sd) =
                    r.spread_pct.and_then(|s| stats::paired::sd_at_least(s / 100.0, r.pairs, REACH_CONFIDENCE))
                else {
                    return false;
                };
                let half = |q: f64| stats::paired::half_width(sd, most, q);
                let (Some(a), Some(b)) = (half(1.0 - self.alpha / m), half(POWER)) else { return false };
                let change = (1.0 + r.change_pct / 100.0).ln();
                let worse_side = if gate.above { change } else { -change };
                worse_side < a + b
            })
            .collect()
    }

    /// Gated rows that could not be judged.
    pub fn too_few(&self) -> Vec<&Row> {
        self.rows.iter().filter(|r| r.said == Said::TooFew).collect()
    }

    /// Per gated metric, the largest of its rows' detectable changes (in %, worse side).
    pub fn detectable(&self) -> Vec<(Metric, f64)> {
        let mut by: BTreeMap<Metric, f64> = BTreeMap::new();
        for r in self.rows.iter().filter(|r| r.gate.is_some()) {
            if let Some(d) = r.detectable_pct {
                let e = by.entry(r.metric).or_insert(d);
                if d.abs() > e.abs() {
                    *e = d;
                }
            }
        }
        by.into_iter().collect()
    }
}

impl Row {
    /// Why a run of `most` pairs cannot decide this row, and what would: none when it can.
    pub fn out_of_reach_words(&self, most: usize) -> Option<String> {
        if self.said != Said::Undecided
            || self.pairs < reach_from(self.metric)
            || self.needs_pairs.is_some_and(|n| n <= most)
        {
            return None;
        }
        let sd = self.spread_pct? / 100.0;
        let needs = self.needs_pairs.map_or_else(
            || format!("more than {MAX_NEEDED_PAIRS} pairs"),
            |n| format!("at least {n} pairs (--most-repeats {n})"),
        );
        let gate = stats::paired::half_width(sd, most, stats::CONFIDENCE).map(|h| pct(h.exp()));
        Some(format!(
            "its pairs' spread ({:.1}%) needs {needs} to show an unchanged head within its gate{}",
            sd * 100.0,
            gate.map_or_else(String::new, |g| format!(", or a gate of {} or wider in {most}", signed(g.ceil())))
        ))
    }
}

fn pct(ratio: f64) -> f64 {
    (ratio - 1.0) * 100.0
}

/// Judges every cell on the metrics both sides measured; `alpha` is this look's share of
/// [`ALPHA`].
pub(crate) fn look(cells: &[CellPairs], gates: &[Gate], alpha: f64) -> Look {
    let mut rows = Vec::new();
    let mut tested: Vec<(usize, Paired, &Gate)> = Vec::new();
    for c in cells {
        for metric in lab::COMPARED {
            let pairs = c.of(metric);
            if pairs.is_empty() {
                continue;
            }
            let (p, machine) = compared(c, metric);
            let gate = gates.iter().find(|g| g.metric == metric);
            let (base, head): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
            let said = match gate {
                None => Said::Shown,
                Some(_) if p.pairs < MIN_PAIRS => Said::TooFew,
                Some(_) => Said::Undecided,
            };
            if let Some(g) = gate.filter(|_| said == Said::Undecided) {
                tested.push((rows.len(), p, g));
            }
            rows.push(Row {
                target: c.target.clone(),
                load: c.load.clone(),
                metric,
                gate: gate.map(Gate::text),
                pairs: p.pairs,
                base: centre(&base),
                head: centre(&head),
                change_pct: pct(p.ratio),
                interval_pct: p.interval(stats::CONFIDENCE).map(|(lo, hi)| (pct(lo), pct(hi))),
                p: None,
                detectable_pct: None,
                said,
                spread_pct: p.sd.is_finite().then_some(p.sd * 100.0),
                needs_pairs: None,
                machine,
                real: false,
            });
        }
    }
    // Holm over the gated cells, each tested on its gate's worse side.
    let ps: Vec<f64> = tested.iter().map(|(_, p, g)| p.p_worse(g.above).unwrap_or(f64::NAN)).collect();
    let stands = stats::holm(&ps, alpha);
    let m = tested.len().max(1) as f64;
    for ((i, p, g), (pv, stands)) in tested.iter().zip(ps.iter().zip(stands)) {
        let r = &mut rows[*i];
        r.p = Some(*pv);
        // Bonferroni's share: what the last of Holm's steps holds a cell to.
        r.detectable_pct =
            p.detectable(g.above, alpha / m, POWER).map(pct).filter(|d| d.is_finite() && d.abs() <= MAX_SEEN_PCT);
        let bound = p.bound(g.above, stats::CONFIDENCE);
        let mut stands = stands;
        // The pairs as measured, for a change read relative to the machine.
        let cell = cells.iter().find(|c| c.target == r.target && c.load == r.load);
        let measured = cell.map(|c| Paired::of(&c.of(r.metric))).and_then(|q| q.p_worse(g.above));
        if let Some(m) = r.machine.as_mut().filter(|m| m.used && stands && g.passed_by(p.ratio)) {
            if let Some(q) = measured.filter(|q| *q > AS_MEASURED_P && r.pairs < HOLD_BELOW_PAIRS) {
                stands = false;
                m.held = Some(format!(
                    "{} relative to the machine, but {} as measured (p = {q:.2}): the pairs do not show it yet",
                    signed(pct(p.ratio)),
                    signed(m.unadjusted_change_pct)
                ));
            }
        }
        r.said = if stands && g.passed_by(p.ratio) {
            Said::Worse
        } else if bound.is_some_and(|b| !g.passed_by(b)) {
            Said::Within
        } else {
            Said::Undecided
        };
        // "Real" is said of a change short of "worse" on the terms of "worse": it stands at the
        // look's share of the run's 1%, and before [`HOLD_BELOW_PAIRS`] one read relative to the
        // machine shows in the pairs as measured too. An A/A run of the Go service read p50
        // +2.3% [+1.7, +2.9] (p 1e-4) relative to both measures on 8 pairs lying on one plane
        // (correlation 0.995), where as measured the pairs said +3.1% at p 0.07.
        let machine_read = r.machine.as_ref().is_some_and(|m| m.used);
        let held = machine_read && r.pairs < HOLD_BELOW_PAIRS && measured.is_none_or(|q| q > AS_MEASURED_P);
        // An undecided cell's change can be real too: a head 5% slower measures about +5%, and
        // whether that is past a +5% gate no number of pairs decides; that it is slower, they do.
        r.real = matches!(r.said, Said::Within | Said::Undecided) && stands && !held;
        if r.said == Said::Undecided {
            // From the spread's lower 80% bound: at least this many.
            r.needs_pairs = stats::paired::sd_at_least(p.sd, p.pairs, REACH_CONFIDENCE)
                .and_then(|sd| pairs_needed(sd, (1.0 + g.limit_pct.abs() / 100.0).ln()));
        }
    }
    Look { pairs: cells.iter().map(|c| c.pairs.len()).max().unwrap_or(0), alpha, rows }
}

#[cfg(test)]
mod simulation;
#[cfg(test)]
mod tests;
