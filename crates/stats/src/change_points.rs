//! Change points of a series: where its level moved. The method is Apache Otava's (formerly
//! Hunter; Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance
//! Regressions", ICPE 2023), so a team can check one against the other on the same CSV:
//!
//! 1. split: E-divisive means (Matteson and James) in sliding windows of `window` points, half
//!    a window apart, each candidate kept while Student's t-test between the segments on either
//!    side gives a p-value of at most ten times `max_pvalue` (the "weak" change points);
//! 2. merge: the weakest point (the highest p-value above `max_pvalue`, else the smallest change
//!    when it is at most `min_magnitude`) is removed and its neighbours re-tested, until every
//!    point passes.
//!
//! Beyond Otava: a change needs `min_points` points on each side. Red Hat's performance CI, which
//! runs Hunter, raised false alarms until it asked for about 10; a change nearer the series' end
//! than that is kept as *pending*: reported with the points it still needs, and confirmed once
//! they come. `min_points = 1` is Otava's own rule.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// How change points are found; the defaults are Otava's but for `min_points`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// Points per sliding window of the split step (Otava: 50).
    pub window: usize,
    /// The t-test's p-value a change must reach (Otava: 0.001).
    pub max_pvalue: f64,
    /// A change whose relative size is at most this is dropped (0.05 = 5%; Otava: 0).
    pub min_magnitude: f64,
    /// Points needed on each side of a change before it is confirmed.
    pub min_points: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { window: 50, max_pvalue: 0.001, min_magnitude: 0.0, min_points: MIN_POINTS }
    }
}

/// The points a change needs on each side by default: see DECISIONS.md ("Change points") for the
/// false changes per 100 points and the power this buys on recorded and simulated series.
pub const MIN_POINTS: usize = 5;

/// Where a series' level moved: `index` is the first point of the new level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ChangePoint {
    pub index: usize,
    /// The segments on either side (up to the neighbouring change points): mean, standard
    /// deviation (of the population, as Otava reports it) and points.
    pub mean_before: f64,
    pub mean_after: f64,
    pub std_before: f64,
    pub std_after: f64,
    pub points_before: usize,
    pub points_after: usize,
    /// Student's two-sided t-test between the two segments.
    pub pvalue: f64,
    /// Points still needed after it before it is confirmed (0: confirmed).
    pub pending: usize,
}

impl ChangePoint {
    /// The change from before to after, relative (0.10 = 10% higher).
    pub fn change(&self) -> f64 {
        if self.mean_before == 0.0 {
            0.0
        } else {
            self.mean_after / self.mean_before - 1.0
        }
    }

    /// Otava's magnitude: the larger of the change forwards and backwards.
    fn magnitude(&self) -> f64 {
        let back = if self.mean_after == 0.0 { 0.0 } else { self.mean_before / self.mean_after - 1.0 };
        self.change().abs().max(back.abs())
    }

    /// The 95% interval of the change in %, from the two segments (Welch's interval of the
    /// difference of means, over the mean before).
    pub fn change_interval_pct(&self) -> (f64, f64) {
        let (n1, n2) = (self.points_before as f64, self.points_after as f64);
        let se = (self.std_before.powi(2) / n1.max(1.0) + self.std_after.powi(2) / n2.max(1.0)).sqrt();
        let df = (n1 + n2 - 2.0).max(1.0);
        let t = StudentsT::new(0.0, 1.0, df).map(|d| d.inverse_cdf(0.975)).unwrap_or(1.96);
        let d = self.mean_after - self.mean_before;
        let pct = |x: f64| if self.mean_before == 0.0 { 0.0 } else { x / self.mean_before * 100.0 };
        (pct(d - t * se), pct(d + t * se))
    }
}

/// The change points of `series`, in order.
pub fn change_points(series: &[f64], s: &Settings) -> Vec<ChangePoint> {
    if series.len() < 2 {
        return Vec::new();
    }
    let first_pass = if s.max_pvalue < 0.05 {
        s.max_pvalue * 10.0
    } else if s.max_pvalue < 0.5 {
        s.max_pvalue * 2.0
    } else {
        s.max_pvalue
    };
    let weak = split(series, s.window.max(2), first_pass);
    merge(weak, series, s)
}

/// The least spread a segment is read with, relative to its level: labs' latencies come from
/// histograms of 3 significant digits. A quiet machine's reruns read the same bucket (11.735,
/// 11.735, then 11.767 ms), and a spread of zero made that 0.3% wiggle certain (p = 0), surer
/// than the 14.7% step before it, which went first (a history's accepted change then had no
/// change point to start its level).
const RESOLUTION: f64 = 1e-3;

/// Student's t-test (pooled variance) between two segments, with population deviations: what
/// Otava computes (`scipy.stats.ttest_ind_from_stats` given `numpy.std`).
fn compare(left: &[f64], right: &[f64], index: usize) -> ChangePoint {
    let stats = |x: &[f64]| {
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let std = if x.len() >= 2 { (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt() } else { 0.0 };
        (mean, std)
    };
    let ((m1, s1), (m2, s2)) = (stats(left), stats(right));
    let (n1, n2) = (left.len() as f64, right.len() as f64);
    let pvalue = if left.len() + right.len() > 2 {
        let df = n1 + n2 - 2.0;
        // Never below the figures' resolution: identical figures are a histogram's bucket, not
        // a spread of zero.
        let floor = RESOLUTION * (m1.abs() + m2.abs()) / 2.0;
        let pooled = (((n1 - 1.0) * s1 * s1 + (n2 - 1.0) * s2 * s2) / df).max(floor * floor);
        let t = (m1 - m2) / (pooled * (1.0 / n1 + 1.0 / n2)).sqrt();
        match StudentsT::new(0.0, 1.0, df) {
            Ok(d) if t.is_finite() => 2.0 * d.sf(t.abs()),
            _ if t.is_infinite() => 0.0,
            // Two constant, equal segments: nothing moved.
            _ => 1.0,
        }
    } else {
        1.0
    };
    ChangePoint {
        index,
        mean_before: m1,
        mean_after: m2,
        std_before: s1,
        std_after: s2,
        points_before: left.len(),
        points_after: right.len(),
        pvalue,
        pending: 0,
    }
}

/// The segments between sorted change points (`bounds`) of a series of `len` points.
fn intervals(bounds: &[usize], len: usize) -> Vec<(usize, usize)> {
    let mut edges = vec![0];
    edges.extend_from_slice(bounds);
    edges.push(len);
    edges.windows(2).map(|w| (w[0], w[1])).filter(|(a, b)| a != b).collect()
}

/// A candidate at `index` tested against the segments `bounds` make: split from the segment it
/// falls in, or (a change point already) between the segments it separates.
fn tested(index: usize, series: &[f64], bounds: &[usize]) -> ChangePoint {
    let ivs = intervals(bounds, series.len());
    for (i, &(a, b)) in ivs.iter().enumerate() {
        if b == index && i + 1 < ivs.len() {
            let (c, d) = ivs[i + 1];
            return compare(&series[a..b], &series[c..d], index);
        }
        if a < index && index < b {
            return compare(&series[a..index], &series[index..b], index);
        }
    }
    compare(&series[..index], &series[index..], index)
}

/// E-divisive means' best split of `series[a..b]`: the first point of the second part, and its
/// Q statistic (the energy distance between the parts, scaled by their sizes).
fn candidate(series: &[f64], sums: &PairSums, a: usize, b: usize) -> (usize, f64) {
    // Q over tau in (a, b) and kappa in (tau, b], laid out as Otava's matrix (row tau, column
    // kappa; the cells with kappa <= tau are 0) so that a tie resolves to the same cell.
    let (mut best, mut best_q) = (a + 1, f64::NEG_INFINITY);
    let _ = series;
    for tau in a + 1..b {
        for kappa in a + 2..=b {
            let q = if kappa <= tau {
                0.0
            } else {
                let (n, m) = ((tau - a) as f64, (kappa - tau) as f64);
                let cross = sums.block(a, tau, tau, kappa);
                let within_x =
                    if n > 1.0 { 2.0 * m / ((m + n) * (n - 1.0)) * sums.block(a, tau, a, tau) / 2.0 } else { 0.0 };
                let within_y = if m > 1.0 {
                    2.0 * n / ((m + n) * (m - 1.0)) * sums.block(tau, kappa, tau, kappa) / 2.0
                } else {
                    0.0
                };
                2.0 / (m + n) * cross - within_x - within_y
            };
            if q > best_q {
                (best, best_q) = (tau, q);
            }
        }
    }
    (best, best_q)
}

/// Sums of |x_i - x_j| over rectangles of index pairs, in O(1) each after O(n²) set-up.
struct PairSums {
    n: usize,
    /// prefix[(i * (n + 1)) + j]: the sum over rows < i and columns < j.
    prefix: Vec<f64>,
}

impl PairSums {
    fn new(x: &[f64]) -> PairSums {
        let n = x.len();
        let mut prefix = vec![0.0; (n + 1) * (n + 1)];
        for i in 0..n {
            for j in 0..n {
                let d = (x[i] - x[j]).abs();
                prefix[(i + 1) * (n + 1) + j + 1] =
                    d + prefix[i * (n + 1) + j + 1] + prefix[(i + 1) * (n + 1) + j] - prefix[i * (n + 1) + j];
            }
        }
        PairSums { n, prefix }
    }

    /// The sum over rows `r0..r1` and columns `c0..c1`.
    fn block(&self, r0: usize, r1: usize, c0: usize, c1: usize) -> f64 {
        let w = self.n + 1;
        self.prefix[r1 * w + c1] - self.prefix[r0 * w + c1] - self.prefix[r1 * w + c0] + self.prefix[r0 * w + c0]
    }
}

/// E-divisive means on one window: split while the best candidate passes the t-test.
fn divisive(window: &[f64], max_pvalue: f64) -> Vec<ChangePoint> {
    let sums = PairSums::new(window);
    let mut found: Vec<ChangePoint> = Vec::new();
    loop {
        let bounds: Vec<usize> = found.iter().map(|c| c.index).collect();
        let best = intervals(&bounds, window.len())
            .into_iter()
            .filter(|(a, b)| b - a > 1)
            .map(|(a, b)| candidate(window, &sums, a, b))
            // The first of equal maxima, as Python's max() keeps.
            .fold(None, |best: Option<(usize, f64)>, c| match best {
                Some(b) if b.1 >= c.1 => Some(b),
                _ => Some(c),
            });
        let Some((index, _)) = best else { break };
        let cp = tested(index, window, &bounds);
        if cp.pvalue > max_pvalue {
            break;
        }
        found.push(cp);
        found.sort_by_key(|c| c.index);
    }
    found
}

/// Otava's split step: windows of `window` points, half a window apart (or from the last
/// change found), their change points united and re-tested against their neighbours.
fn split(series: &[f64], window: usize, max_pvalue: f64) -> Vec<ChangePoint> {
    let step = window / 2;
    let mut start = 0;
    let mut indices: Vec<usize> = Vec::new();
    while start < series.len() {
        let end = (start + window).min(series.len());
        let found = divisive(&series[start..end], max_pvalue);
        let last = found.last().map_or(0, |c| c.index + start);
        for c in found {
            if !indices.contains(&(c.index + start)) {
                indices.push(c.index + start);
            }
        }
        start = last.max(start + step);
    }
    indices.sort_unstable();
    indices.iter().map(|&i| tested(i, series, &indices)).collect()
}

/// Otava's merge step, then the points each side needs: the weakest change is removed and its
/// neighbours re-tested until all pass. A change with fewer than `min_points` before it, or
/// after it when another change follows, is removed too; the last change with too few after it
/// stays, pending.
fn merge(mut cps: Vec<ChangePoint>, series: &[f64], s: &Settings) -> Vec<ChangePoint> {
    loop {
        if cps.is_empty() {
            return cps;
        }
        let last = cps.len() - 1;
        let short =
            |i: usize, c: &ChangePoint| c.points_before < s.min_points || (i < last && c.points_after < s.min_points);
        // Of the changes too close to a neighbour (or the start), the one with the least evidence
        // goes first: removing the one with the fewest points took a clear step with the weak
        // points beside it (5.4 ms for six labs, then 9.2, 9.1, 8.5, 8.5, 8.6, 10.8: the step at
        // the 7th lab had two points before its weak neighbour, and went first). Of equal
        // p-values, the smaller change.
        let weaker = |a: &ChangePoint, b: &ChangePoint| {
            a.pvalue > b.pvalue || (a.pvalue == b.pvalue && a.magnitude() < b.magnitude())
        };
        let weakest =
            match cps.iter().enumerate().filter(|(i, c)| short(*i, c)).fold(None, |b: Option<usize>, (i, c)| match b {
                Some(k) if !weaker(c, &cps[k]) => b,
                _ => Some(i),
            }) {
                Some(i) => {
                    // Our rule, not Otava's: the changes either side are re-tested, the left one too
                    // (its segment after grew; left stale, it stayed "too close" and went next).
                    cps.remove(i);
                    let bounds: Vec<usize> = cps.iter().map(|c| c.index).collect();
                    for k in [i.wrapping_sub(1), i] {
                        if let Some(c) = cps.get(k) {
                            cps[k] = tested(c.index, series, &bounds);
                        }
                    }
                    continue;
                }
                None => {
                    // The highest p-value (the first of equals, as Python's max()).
                    let (i, c) =
                        cps.iter()
                            .enumerate()
                            .fold((0, &cps[0]), |b, (i, c)| if c.pvalue > b.1.pvalue { (i, c) } else { b });
                    if c.pvalue < s.max_pvalue {
                        let (j, m) = cps.iter().enumerate().fold((0, &cps[0]), |b, (j, c)| {
                            if c.magnitude() < b.1.magnitude() {
                                (j, c)
                            } else {
                                b
                            }
                        });
                        if m.magnitude() > s.min_magnitude {
                            break;
                        }
                        j
                    } else {
                        i
                    }
                }
            };
        cps.remove(weakest);
        let bounds: Vec<usize> = cps.iter().map(|c| c.index).collect();
        // As Otava does: the right neighbour and the one after it are re-tested (the left
        // neighbour's segment changed too, but re-testing it as well differed from Otava on 6 of
        // 144 seeded series, dropping 5 changes and adding 1, no better on the whole; agreeing
        // with Otava lets a team check one against the other).
        for i in [weakest, weakest + 1] {
            if let Some(c) = cps.get(i) {
                cps[i] = tested(c.index, series, &bounds);
            }
        }
    }
    if let Some(c) = cps.last_mut() {
        c.pending = s.min_points.saturating_sub(c.points_after);
    }
    cps
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// `n` points around 100 with `noise` (a relative deviation), `step` higher from `at` on;
    /// `spikes`: a share of points three times as high (a lab that hit a busy machine).
    fn simulated(seed: u64, n: usize, noise: f64, at: usize, step: f64, spikes: f64) -> Vec<f64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|i| {
                let level = if i >= at { 100.0 * (1.0 + step) } else { 100.0 };
                // Irwin-Hall: near-normal without another crate.
                let z: f64 = (0..12).map(|_| rng.random::<f64>()).sum::<f64>() - 6.0;
                let spike = if rng.random::<f64>() < spikes { 3.0 } else { 1.0 };
                level * (1.0 + noise * z) * spike
            })
            .collect()
    }

    /// Over `seeds` series: the confirmed change points found per 100 points, and the share of
    /// series whose step (when there is one) is found within one point.
    fn rates(min_points: usize, noise: f64, step: f64, spikes: f64, seeds: u64) -> (f64, f64) {
        let s = Settings { min_points, ..Settings::default() };
        let (n, at) = (60, 30);
        let (mut found, mut hit) = (0usize, 0usize);
        for seed in 0..seeds {
            let cps = change_points(&simulated(seed, n, noise, at, step, spikes), &s);
            let confirmed: Vec<&ChangePoint> = cps.iter().filter(|c| c.pending == 0).collect();
            found += confirmed.len();
            hit += usize::from(confirmed.iter().any(|c| c.index.abs_diff(at) <= 1));
        }
        (found as f64 * 100.0 / (seeds as f64 * n as f64), hit as f64 / seeds as f64)
    }

    #[test]
    fn a_steady_series_has_no_change_and_a_step_is_found_where_it_is() {
        // 3% noise, no change: false change points are rare.
        let (false_per_100, _) = rates(MIN_POINTS, 0.03, 0.0, 0.0, 100);
        assert!(false_per_100 < 0.2, "{false_per_100} false changes per 100 labs");
        // A 10% step at lab 30 of 60 is found there in almost every series.
        let (_, power) = rates(MIN_POINTS, 0.03, 0.10, 0.0, 100);
        assert!(power >= 0.95, "found in {power}");
        // Spiky labs (3% of them three times as slow) do not read as changes.
        let (false_per_100, _) = rates(MIN_POINTS, 0.03, 0.0, 0.03, 100);
        assert!(false_per_100 < 1.0, "{false_per_100} false changes per 100 labs with spikes");
    }

    #[test]
    fn a_change_near_the_end_is_pending_until_enough_labs_follow_it() {
        let mut v = simulated(7, 40, 0.01, 100, 0.0, 0.0);
        v.extend(simulated(8, 2, 0.01, 0, 0.20, 0.0));
        let s = Settings::default();
        let cps = change_points(&v, &s);
        let last = cps.last().expect("the step is seen");
        assert_eq!((last.index, last.pending), (40, MIN_POINTS - 2), "{cps:?}");
        v.extend(simulated(9, MIN_POINTS, 0.01, 0, 0.20, 0.0));
        let cps = change_points(&v, &s);
        let c = cps.iter().find(|c| c.index == 40).expect("still there");
        assert_eq!(c.pending, 0);
        assert!((c.change() - 0.20).abs() < 0.02, "{}", c.change());
        let (lo, hi) = c.change_interval_pct();
        assert!(lo < 20.0 && 20.0 < hi, "[{lo}, {hi}]");
    }

    #[test]
    fn two_changes_close_together_need_points_between_them() {
        // Up for 3 labs, then back: with 5 labs needed each side, not two changes.
        let mut v = simulated(1, 30, 0.01, 100, 0.0, 0.0);
        v.extend(simulated(2, 3, 0.01, 0, 0.3, 0.0));
        v.extend(simulated(3, 30, 0.01, 100, 0.0, 0.0));
        let strict = change_points(&v, &Settings::default());
        assert!(strict.is_empty(), "{strict:?}");
        let otava = change_points(&v, &Settings { min_points: 1, ..Settings::default() });
        assert_eq!(otava.iter().map(|c| c.index).collect::<Vec<_>>(), vec![30, 33]);
    }

    #[test]
    fn a_clear_change_is_found_whatever_weak_points_lie_near_it() {
        // p90 of a test server, 12 labs: Otava 0.8 splits it at the 7th point (p below 1e-6),
        // and weakly at the 9th and 12th.
        let v = [5.40, 5.54, 5.45, 5.39, 5.50, 5.50, 9.18, 9.12, 8.52, 8.49, 8.62, 10.81];
        let cps = change_points(&v, &Settings::default());
        let step = cps.iter().find(|c| c.index == 6).unwrap_or_else(|| panic!("{cps:?}"));
        assert!(step.pvalue < 1e-6 && step.pending == 0, "{step:?}");
        // A step with a bump at its foot.
        let v = [10.3, 10.46, 10.25, 10.43, 10.43, 10.96, 13.37, 13.85, 13.89, 13.6, 13.7, 13.8];
        let cps = change_points(&v, &Settings::default());
        assert!(cps.iter().any(|c| c.index == 6 || c.index == 5), "{cps:?}");
    }

    #[test]
    fn a_step_between_runs_of_identical_figures_is_found() {
        // p50s of an embedded origin on a quiet machine (a history test's labs): the reruns of
        // the slower commit read the same bucket: a spread of zero made a 0.3% wiggle after the
        // step surer than the step, which went first.
        let v = [10.271, 10.279, 10.279, 10.271, 10.287, 10.223, 11.735, 11.735, 11.767];
        let cps = change_points(&v, &Settings::default());
        assert_eq!(cps.iter().map(|c| (c.index, c.pending)).collect::<Vec<_>>(), vec![(6, 2)], "{cps:?}");
    }

    /// The figures behind MIN_POINTS (DECISIONS.md, "Change points"), printed with
    /// `cargo test -p stats figures -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn figures() {
        println!("min_points  noise  spikes  false/100 labs  power(+5%)  power(+10%)  power(+20%)");
        for min_points in [1, 3, 5, 10] {
            for (noise, spikes) in [(0.01, 0.0), (0.03, 0.0), (0.08, 0.0), (0.03, 0.03)] {
                let (fp, _) = rates(min_points, noise, 0.0, spikes, 200);
                let power = |step| rates(min_points, noise, step, spikes, 200).1;
                println!(
                    "{min_points:>10}  {noise:>5}  {spikes:>6}  {fp:>14.2}  {:>10.2}  {:>11.2}  {:>11.2}",
                    power(0.05),
                    power(0.10),
                    power(0.20)
                );
            }
        }
    }
}
