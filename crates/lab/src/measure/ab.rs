//! The one rule that says whether two sides of a comparison differ (`lab compare`, hypotheses,
//! `[baseline]`): which test (across repeats, or within the runs), the change as the ratio of
//! the two values shown beside it, and what a side has too little of to say anything.
//!
//! - With [`MIN_REPEATS`] or more repeats a side: Welch's t-test on the repeats' logarithms
//!   (`estimate::compare`); with fewer, the runs' own 1 s windows give the interval (a block
//!   bootstrap).
//! - Either way, a change counts only beyond the run-to-run floor (`stats::floors`): what two labs of one build
//!   were measured to differ by (bench/aa.sh, docs/DECISIONS.md). Repeats within one lab share
//!   its processes and their placement on the cores, so they do not see that variation: nginx
//!   ran at 50 µs and 17 µs of CPU per request in some labs and at 100 µs and 40 µs in others,
//!   every repeat of a lab alike, and Welch's test called p50 different in 12% of A/A cells.
//! - A tail (p95 and beyond) needs [`MIN_BEYOND`] requests past its quantile on each side.
//! - Where the service's own spread was measured (`lab calibrate`: a [`Spread`] per cell and
//!   metric), a change must also be one that fewer than 5% of its A/A pairs show, and the
//!   comparison's p-value is the larger of the two tests' (both must reject). That also lets one
//!   run a side compare CPU per request, which no run measures from inside. A spread of
//!   [`stats::spread::REPLACES_FLOOR`] labs or more is the service's own floor and
//!   stands in for the fixed one; with fewer, both hold.
//! - Floors and thresholds are ratios, compared in logarithms (`stats::floors::within`): naming the
//!   sides the other way round gives the same verdict.

use crate::measure::estimate::{compare, compare_within, Comparison, MIN_REPEATS};
use crate::measure::metric::Metric;
use crate::measure::windows::Window;
use stats::describe::centre;
use stats::floors::{
    self, CPU_FLOOR, CPU_FLOOR_US, MIN_BEYOND, P50_FLOOR, P50_FLOOR_MS, P99_FLOOR, P99_FLOOR_MS, RATE_FLOOR,
};
use stats::spread::Spread;
use stats::CONFIDENCE;

/// One side of a comparison: a value per repeat, the runs' windows, and the fewest requests a
/// repeat counted.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample<'a> {
    pub values: &'a [f64],
    pub windows: &'a [Window],
    pub requests: u64,
}

/// Why a tail cannot be compared with these requests, if it cannot.
fn too_few_beyond(metric: Metric, requests: u64) -> Option<String> {
    let (beyond, needed) = floors::too_few_beyond(metric.tail_quantile()?, requests)?;
    Some(format!(
        "{} from {requests} requests has {beyond} past it; a verdict needs {MIN_BEYOND} ({needed} requests a side)",
        metric.name()
    ))
}

/// Where a comparison's spread came from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Found<'a> {
    /// Measured at this cell.
    Cell(&'a Spread),
    /// The cell was not calibrated: the widest spread of the metric at any cell.
    Widest(&'a Spread),
}

impl<'a> Found<'a> {
    pub fn spread(self) -> &'a Spread {
        match self {
            Found::Cell(s) | Found::Widest(s) => s,
        }
    }

    /// Where the spread was measured, in a note's words.
    fn place(self) -> &'static str {
        match self {
            Found::Cell(_) => "here",
            Found::Widest(_) => "at the widest calibrated cell (this one was not calibrated)",
        }
    }
}

/// Whether `a` differs from `b` in `metric` (the ratio is a / b), held to the service's measured
/// `spread` where there is one.
pub(crate) fn judge(metric: Metric, a: Sample<'_>, b: Sample<'_>, spread: Option<Found<'_>>) -> Comparison {
    let ratio = centre(a.values) / centre(b.values);
    let repeats = a.values.len() >= MIN_REPEATS && b.values.len() >= MIN_REPEATS;
    let c = if repeats || metric.is_sampled() {
        compare(a.values, b.values)
    } else {
        compare_within(metric, a.windows, b.windows, ratio)
    };
    let c = match spread {
        Some(s) => held_to_spread(metric, c, s),
        None => c,
    };
    // A spread of enough labs is the service's own floor; the fixed one stands in below that.
    let mut c = match spread.filter(|s| s.spread().replaces_floor()) {
        Some(_) => c,
        None => held_to_floor(metric, c, centre(a.values).min(centre(b.values))),
    };
    if let Some(why) = too_few_beyond(metric, a.requests.min(b.requests)) {
        c.significant = false;
        c.note = Some(why);
    }
    c
}

/// A comparison held to the spread measured between labs of this service. CPU per request with
/// one repeat a side has no test of its own (it is read once a step): the spread is its test.
fn held_to_spread(metric: Metric, mut c: Comparison, found: Found<'_>) -> Comparison {
    let s = found.spread();
    let p = s.p(c.ratio);
    let untested = metric.is_sampled() && c.p.is_none() && c.ratio.is_finite();
    if untested {
        c.significant = p < 1.0 - CONFIDENCE;
        c.note = None;
    } else if c.significant && p >= 1.0 - CONFIDENCE {
        c.significant = false;
        c.note = Some(format!(
            "{} labs of this service's build differed by up to {:.0}% {} (lab calibrate): a smaller change cannot \
             be told from a rerun",
            s.labs(),
            s.floor * 100.0,
            found.place()
        ));
    }
    c.p = Some(c.p.map_or(p, |q| q.max(p)));
    c
}

/// A comparison held to what two labs of one build differ by.
fn held_to_floor(metric: Metric, mut c: Comparison, value: f64) -> Comparison {
    let floor = metric.floor(value);
    if c.significant && floors::within(c.ratio, floor) {
        c.significant = false;
        c.note = Some(format!(
            "two labs of one build differ by up to {:.0}% here: a smaller change cannot be told from a rerun",
            floor * 100.0
        ));
    }
    c
}

/// An absolute part of a floor as a reader writes it: `100 µs`, `5 ms`.
fn abs_text(ms: f64) -> String {
    if ms >= 1.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{:.0} µs", ms * 1000.0)
    }
}

/// How two sides are compared, for a report's notes.
pub(crate) fn method_text() -> String {
    format!(
        "With {MIN_REPEATS} or more repeats a side, Welch's t-test on the repeats' logarithms (the ratio of geometric \
         means with its 95% interval); with fewer, a block bootstrap over the runs' 1 s windows. Either way a change \
         must also exceed what two labs of one build differ by, which repeats within one lab do not see (they share \
         its processes and their placement): {:.0}% plus {} for p50, {:.0}% plus {} for p95 and beyond, {:.0}% plus \
         {:.0} µs for CPU per request, {:.0}% for rates and shares (beyond the largest changes A/A pairs showed; \
         bench/aa.sh measures how often two labs of one build are still called different, docs/DECISIONS.md). A tail \
         needs {MIN_BEYOND} requests past its quantile on each side. Old and new are each side's geometric mean; the \
         change is their ratio.",
        P50_FLOOR * 100.0,
        abs_text(P50_FLOOR_MS),
        P99_FLOOR * 100.0,
        abs_text(P99_FLOOR_MS),
        CPU_FLOOR * 100.0,
        CPU_FLOOR_US,
        RATE_FLOOR * 100.0
    )
}

/// What a one-run verdict can show, in one sentence for a reader; `rows`: how many of how many
/// rows were judged on one run a side, when not all were (the others' verdicts stand on their
/// repeats, CPU included).
pub(crate) fn one_run_sentence(rows: Option<(usize, usize)>) -> String {
    let lead = match rows {
        Some((one, all)) if one < all => format!("In {one} of the {all} rows a side had one counted run: there,"),
        _ => "With one run a side,".to_owned(),
    };
    format!(
        "{lead} a verdict can only catch a change larger than two runs of the same build differ by \
         (about {:.0}% plus {} for p50, {:.0}% plus {} for p99, {:.0}% for throughput) and cannot compare CPU at all, \
         so `~` does not mean nothing changed: {MIN_REPEATS} or more repeats measure the spread and CPU.",
        P50_FLOOR * 100.0,
        abs_text(P50_FLOOR_MS),
        P99_FLOOR * 100.0,
        abs_text(P99_FLOOR_MS),
        RATE_FLOOR * 100.0
    )
}

/// What a verdict held to a measured spread (`lab calibrate`) shows, for a reader; `what` names
/// where the spread came from.
pub(crate) fn calibrated_sentence(what: &str, labs: usize) -> String {
    let floors = if labs >= stats::spread::REPLACES_FLOOR {
        format!("held to that spread instead of the fixed floors ({labs} labs measure it)")
    } else {
        format!(
            "held to the fixed floors too ({labs} labs; a spread replaces them from {})",
            stats::spread::REPLACES_FLOOR
        )
    };
    format!(
        "Every change is held to this service's own {what}: it is called only where fewer than 5% of pairs of \
         those labs differ as much, which also lets one run a side compare CPU per request; `~` means a rerun of \
         the same build could show this much. Verdicts are {floors}."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_one_run_sentence_names_the_rows_it_is_about() {
        assert!(one_run_sentence(None).starts_with("With one run a side, a verdict can only catch"));
        assert!(one_run_sentence(Some((2, 2))).starts_with("With one run a side,"));
        let some = one_run_sentence(Some((1, 6)));
        assert!(some.starts_with("In 1 of the 6 rows a side had one counted run: there, a verdict"), "{some}");
    }
    use crate::measure::windows::tests::run;

    #[test]
    fn steady_runs_whose_levels_differ_by_20_percent_read_as_no_change_with_one_repeat() {
        // Each run is steady (its windows agree: the bootstrap interval is narrow and excludes
        // 1), but two runs of one build on a 130 µs service differ by 20%: one run cannot tell.
        let (a, b) = (run(10, 500, 0.156, 1), run(10, 500, 0.130, 2));
        let (va, vb) = ([0.156], [0.130]);
        let c = judge(
            Metric::P50,
            Sample { values: &va, windows: &a, requests: 5_000 },
            Sample { values: &vb, windows: &b, requests: 5_000 },
            None,
        );
        assert!(!c.significant, "{c:?}");
        assert!(c.note.as_deref().unwrap().starts_with("two labs of one build differ by up to"), "{c:?}");
        // The change is the ratio of the two values shown, exactly.
        assert!((c.ratio - 0.156 / 0.130).abs() < 1e-12, "{c:?}");
        // On a 10 ms service 20% is beyond what a rerun moves: found.
        let (a, b) = (run(10, 500, 12.0, 1), run(10, 500, 10.0, 2));
        let c = judge(
            Metric::P50,
            Sample { values: &[12.0], windows: &a, requests: 5_000 },
            Sample { values: &[10.0], windows: &b, requests: 5_000 },
            None,
        );
        assert!(c.significant, "{c:?}");
    }

    #[test]
    fn a_tail_needs_requests_past_its_quantile() {
        let (a, b) = (run(3, 100, 20.0, 1), run(3, 100, 10.0, 2));
        let c = judge(
            Metric::P99,
            Sample { values: &[20.0], windows: &a, requests: 300 },
            Sample { values: &[10.0], windows: &b, requests: 300 },
            None,
        );
        assert!(!c.significant);
        assert_eq!(
            c.note.as_deref(),
            Some("p99 from 300 requests has 3 past it; a verdict needs 10 (1000 requests a side)")
        );
    }

    #[test]
    fn the_change_is_the_ratio_of_the_columns() {
        // 10.5 ms against 10.3 ms is -1.9%, not the -1.0% of two 1% histogram buckets.
        assert!((centre(&[10.3]) / centre(&[10.5]) - 1.0 + 0.019_047).abs() < 1e-5);
        // Three repeats: the geometric means, which Welch's test on logarithms compares.
        let (a, b) = ([146.0, 150.0, 142.0], [133.0, 131.0, 135.0]);
        let c = judge(
            Metric::P50,
            Sample { values: &a, windows: &[], requests: 5_000 },
            Sample { values: &b, windows: &[], requests: 5_000 },
            None,
        );
        assert!((c.ratio - centre(&a) / centre(&b)).abs() < 1e-12);
    }

    #[test]
    fn a_measured_spread_holds_a_change_a_rerun_shows_and_lets_one_run_compare_cpu() {
        // Steady runs 60% apart: found against the fixed floor, but this service's labs were
        // seen in two modes 69% apart.
        let (a, b) = (run(10, 500, 4.3, 1), run(10, 500, 2.7, 2));
        let one = |values: &'static [f64], windows| Sample { values, windows, requests: 5_000 };
        let c = judge(Metric::P50, one(&[4.3], &a), one(&[2.7], &b), None);
        assert!(c.significant, "{c:?}");
        let modes = Spread::of(&[2.6, 4.4, 2.6, 4.4, 2.7]).unwrap();
        let c = judge(Metric::P50, one(&[4.3], &a), one(&[2.7], &b), Some(Found::Cell(&modes)));
        assert!(!c.significant, "{c:?}");
        let note = c.note.unwrap();
        assert!(note.starts_with("5 labs of this service's build differed by up to 202% here"), "{note}");
        // A cell that was not calibrated is held to the widest spread, and its note says so.
        let c = judge(Metric::P50, one(&[4.3], &a), one(&[2.7], &b), Some(Found::Widest(&modes)));
        let note = c.note.unwrap();
        assert!(note.contains("202% at the widest calibrated cell (this one was not calibrated) (lab"), "{note}");
        // The p-value is the larger of the two tests': a gate's correction sees the spread.
        assert!(c.p.unwrap() > 0.05 && (c.p.unwrap() - modes.p(4.3 / 2.7)).abs() < 1e-12);
        // A steady service: the same change stands.
        let steady = Spread::of(&[2.6, 2.7, 2.65, 2.6, 2.7]).unwrap();
        assert!(judge(Metric::P50, one(&[4.3], &a), one(&[2.7], &b), Some(Found::Cell(&steady))).significant);
        // CPU per request, one run a side: no test without a spread, the spread's with one.
        let cpu = |spread| judge(Metric::TargetCpu, one(&[400.0], &[]), one(&[200.0], &[]), spread);
        assert!(!cpu(None).significant);
        let cpu_spread = Spread::of(&[200.0, 210.0, 190.0, 205.0, 195.0]).unwrap();
        let c = cpu(Some(Found::Cell(&cpu_spread)));
        assert!(c.significant && c.p.unwrap() < 0.001 && c.note.is_none(), "{c:?}");
        // ... and a spread of 5 labs replaces the fixed floor (30% plus 15 µs): a 15% change
        // against a service whose labs agree within 0.5% is found. Of 4 labs, the floor stands.
        let tight = Spread::of(&[200.0, 201.0, 200.0, 201.0, 200.0]).unwrap();
        let c = judge(Metric::TargetCpu, one(&[230.0], &[]), one(&[200.0], &[]), Some(Found::Cell(&tight)));
        assert!(c.significant, "{c:?}");
        let four = Spread::of(&[200.0, 201.0, 200.0, 201.0]).unwrap();
        let c = judge(Metric::TargetCpu, one(&[230.0], &[]), one(&[200.0], &[]), Some(Found::Cell(&four)));
        assert!(!c.significant && c.note.unwrap().starts_with("two labs of one build differ by up to 38%"));
    }

    #[test]
    fn a_floor_gives_one_verdict_whichever_side_is_named_first() {
        // Steady runs, 10 ms against 30 ms answers at p99, one repeat a side: the same verdict
        // (a change) named either way round.
        let (fast, slow) = (run(10, 500, 12.0, 1), run(10, 500, 31.0, 2));
        let one = |values: &'static [f64], windows| Sample { values, windows, requests: 5_000 };
        let down = judge(Metric::P99, one(&[12.0], &fast), one(&[31.0], &slow), None);
        let up = judge(Metric::P99, one(&[31.0], &slow), one(&[12.0], &fast), None);
        assert!(down.significant && up.significant, "{down:?} {up:?}");
        assert!((down.ratio * up.ratio - 1.0).abs() < 1e-12);
    }
}
