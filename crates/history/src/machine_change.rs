//! Which of a series' change points the machine made. On a shared or virtual machine a spell of
//! a slower machine moves the target's CPU per request and its latencies, and loadlab's own CPU
//! per request with them: ten labs of one build got a change point at their sixth lab (target
//! CPU +15%, p50 +12%) while loadlab's own CPU per request moved alike. Such a change is the
//! machine's, not a commit's: `history show` and the page say so, the gate does not carry it as
//! a regression, and bisect does not search for it.
//!
//! A change point of a target's CPU or a latency is the machine's when loadlab's own CPU per
//! request has a change point of its own in the same direction within a lab of it, and the
//! series divided lab by lab by loadlab's (scaled by its median, as the gate's control reads it)
//! has none there: what is left after taking the machine out did not move. A build that changed
//! the cost beside a machine that changed too keeps its change point (the divided series moves).

use stats::change_points::{change_points, ChangePoint, Settings};

/// Whether a series of `metric` is one loadlab's own CPU is a control for.
pub(crate) fn controlled(metric: &str) -> bool {
    lab::Metric::parse(metric).is_ok_and(|m| m == lab::Metric::TargetCpu || m.is_latency())
}

/// Per change point of `values` (`changes`, indices into `values`), why the machine made it,
/// from a figure of the machine in the same labs (`own`, called `what`: loadlab's own CPU per
/// request, or the speed probe's time on the target's CPUs); none where a lab lacks it.
pub(crate) fn explained(
    values: &[f64],
    own: &[Option<f64>],
    changes: &[ChangePoint],
    settings: &Settings,
    what: &str,
) -> Vec<Option<String>> {
    let mut out = vec![None; changes.len()];
    let own: Option<Vec<f64>> = own.iter().map(|g| g.filter(|g| g.is_finite() && *g > 0.0)).collect();
    let Some(own) = own.filter(|o| !changes.is_empty() && o.len() == values.len()) else { return out };
    let typical = stats::describe::median(&own);
    let relative: Vec<f64> = values.iter().zip(&own).map(|(v, g)| v / g * typical).collect();
    let (own_changes, left) = (change_points(&own, settings), change_points(&relative, settings));
    let near = |a: usize, b: usize| a.abs_diff(b) <= 1;
    for (why, c) in out.iter_mut().zip(changes) {
        let same_way = |g: &&ChangePoint| near(g.index, c.index) && (g.change() > 0.0) == (c.change() > 0.0);
        let Some(g) = own_changes.iter().find(same_way) else { continue };
        if left.iter().any(|r| near(r.index, c.index)) {
            continue;
        }
        *why = Some(format!(
            "the machine's: {what} moved {:+.1}% at the same lab, and relative to it the series did not move",
            g.change() * 100.0
        ));
    }
    out
}

/// Whether the move of a series of `metric` from the labs `before` to the labs `after` (each a
/// value and loadlab's own CPU per request in the same step) is the machine's: beyond the noise
/// as measured (Welch's test at `p`), within it relative to loadlab's own CPU (each value
/// divided by it). False when a lab lacks it or the metric is not one it controls.
pub fn machine_explains(metric: &str, before: &[(f64, Option<f64>)], after: &[(f64, Option<f64>)], p: f64) -> bool {
    let own = |ps: &[(f64, Option<f64>)]| -> Option<Vec<(f64, f64)>> {
        ps.iter().map(|&(v, g)| g.filter(|g| g.is_finite() && *g > 0.0).map(|g| (v, g))).collect()
    };
    let (Some(before), Some(after)) = (own(before), own(after)) else { return false };
    if !controlled(metric) || before.len() < 2 || after.len() < 2 {
        return false;
    }
    let beyond = |a: &[f64], b: &[f64]| {
        let c = stats::welch::welch(a, b);
        c.p.is_some_and(|q| q <= p) && c.ci.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0)
    };
    let raw = |v: &[(f64, f64)]| -> Vec<f64> { v.iter().map(|x| x.0).collect() };
    let relative = |v: &[(f64, f64)]| -> Vec<f64> { v.iter().map(|x| x.0 / x.1).collect() };
    beyond(&raw(&after), &raw(&before)) && !beyond(&relative(&after), &relative(&before))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWN: &str = "loadlab's own CPU per request";

    /// `n` labs at `level`, each moved by a small fixed pattern (a lab-to-lab spread of about 1%).
    fn labs(n: usize, level: f64, from: usize) -> Vec<f64> {
        (from..from + n).map(|i| level * (1.0 + [0.01, -0.008, 0.004, -0.012, 0.006][i % 5])).collect()
    }

    fn found(values: &[f64]) -> Vec<ChangePoint> {
        change_points(values, &Settings::default())
    }

    #[test]
    fn a_change_the_machine_made_is_the_machines() {
        // Ten labs of one build: the sixth on a machine 15% slower, loadlab's own CPU alike.
        let target: Vec<f64> = [labs(5, 400.0, 0), labs(5, 460.0, 5)].concat();
        let own: Vec<f64> = [labs(5, 100.0, 2), labs(5, 115.0, 7)].concat();
        let changes = found(&target);
        assert_eq!(changes.iter().map(|c| c.index).collect::<Vec<_>>(), [5]);
        let own: Vec<Option<f64>> = own.into_iter().map(Some).collect();
        let why = explained(&target, &own, &changes, &Settings::default(), OWN);
        assert!(why[0].as_deref().is_some_and(|w| w.contains("moved +15.")), "{why:?}");
    }

    #[test]
    fn a_builds_change_stays_the_builds() {
        let target: Vec<f64> = [labs(5, 400.0, 0), labs(5, 600.0, 5)].concat();
        let changes = found(&target);
        assert_eq!(changes.len(), 1);
        // The machine did not move: the change is the build's.
        let still: Vec<Option<f64>> = labs(10, 100.0, 2).into_iter().map(Some).collect();
        assert_eq!(explained(&target, &still, &changes, &Settings::default(), OWN), [None]);
        // The machine moved 15% and the target 50%: more than the machine explains.
        let slower: Vec<Option<f64>> = [labs(5, 100.0, 2), labs(5, 115.0, 7)].concat().into_iter().map(Some).collect();
        assert_eq!(explained(&target, &slower, &changes, &Settings::default(), OWN), [None]);
        // The machine moved the other way.
        let faster: Vec<Option<f64>> = [labs(5, 100.0, 2), labs(5, 80.0, 7)].concat().into_iter().map(Some).collect();
        assert_eq!(explained(&target, &faster, &changes, &Settings::default(), OWN), [None]);
        // A lab without loadlab's figure: nothing is said.
        let mut gap = slower.clone();
        gap[3] = None;
        assert_eq!(explained(&target, &gap, &changes, &Settings::default(), OWN), [None]);
    }

    #[test]
    fn a_move_between_two_ends_with_the_machine_is_the_machines() {
        let with = |v: Vec<f64>, g: Vec<f64>| -> Vec<(f64, Option<f64>)> {
            v.into_iter().zip(g.into_iter().map(Some)).collect()
        };
        let good = with(labs(5, 400.0, 0), labs(5, 100.0, 2));
        // The target 15% up with loadlab's own CPU: the machine's; alone, or 50% up: a commit's.
        assert!(machine_explains("target_cpu", &good, &with(labs(5, 460.0, 0), labs(5, 115.0, 2)), 0.01));
        assert!(!machine_explains("target_cpu", &good, &with(labs(5, 460.0, 0), labs(5, 100.0, 2)), 0.01));
        assert!(!machine_explains("target_cpu", &good, &with(labs(5, 600.0, 0), labs(5, 115.0, 2)), 0.01));
        // Nothing moved: nothing for the machine to explain; a rate is not controlled.
        assert!(!machine_explains("p50", &good, &good, 0.01));
        assert!(!machine_explains("rps", &good, &with(labs(5, 460.0, 0), labs(5, 115.0, 2)), 0.01));
        // A lab without loadlab's figure.
        let mut gap = with(labs(5, 460.0, 0), labs(5, 115.0, 2));
        gap[0].1 = None;
        assert!(!machine_explains("target_cpu", &good, &gap, 0.01));
    }

    #[test]
    fn controlled_metrics() {
        assert!(controlled("target_cpu") && controlled("p50") && controlled("p99"));
        assert!(!controlled("generator_cpu") && !controlled("rps") && !controlled("fn:sha256"));
    }
}
