//! Two builds measured in pairs (`lab ab`): pair i holds a lab of each, run one after the other,
//! so a drift of the machine falls on both and their difference leaves it out. The test is
//! Student's paired t on the logarithms of head / base (a change is a ratio), one-sided in the
//! direction a gate calls worse; with a zero among the values (an error share), on the plain
//! differences relative to the base's mean.
//!
//! Sequential looks: a run may stop at [`looks`] pairs. Each look tests at `alpha / looks`
//! (Bonferroni over the looks), so the chance of a false alarm at any look of a run stays at or
//! below `alpha` however many looks it took; stopping early because every change is shown to
//! be within its gate rejects nothing and costs nothing.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::describe::{mean, variance};

/// Head against base over their pairs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    pub pairs: usize,
    /// Head / base: the geometric mean of the pairs' ratios (on the plain scale, 1 + the mean
    /// difference over the base's mean).
    pub ratio: f64,
    /// The standard deviation of the pairs' differences (in logarithms, or relative to the
    /// base's mean on the plain scale).
    pub sd: f64,
    /// On logarithms (every value positive).
    logs: bool,
    /// The base's mean, for the plain scale.
    base_mean: f64,
}

fn t(df: f64) -> Option<StudentsT> {
    StudentsT::new(0.0, 1.0, df).ok()
}

impl Paired {
    /// The pairs `(base, head)`; a pair with a value that is not finite is left out.
    pub fn of(pairs: &[(f64, f64)]) -> Paired {
        let pairs: Vec<(f64, f64)> = pairs.iter().copied().filter(|(b, h)| b.is_finite() && h.is_finite()).collect();
        let logs = pairs.iter().all(|(b, h)| *b > 0.0 && *h > 0.0);
        let base_mean = mean(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
        let d: Vec<f64> = pairs.iter().map(|(b, h)| if logs { (h / b).ln() } else { (h - b) / base_mean }).collect();
        let centre = mean(&d);
        let ratio = if logs { centre.exp() } else { 1.0 + centre };
        let sd = if d.len() >= 2 { variance(&d).sqrt() } else { f64::NAN };
        Paired { pairs: d.len(), ratio, sd, logs, base_mean }
    }

    /// The mean difference on the test's scale.
    fn centre(&self) -> f64 {
        if self.logs {
            self.ratio.ln()
        } else {
            self.ratio - 1.0
        }
    }

    fn as_ratio(&self, x: f64) -> f64 {
        if self.logs {
            x.exp()
        } else {
            1.0 + x
        }
    }

    fn se(&self) -> f64 {
        self.sd / (self.pairs as f64).sqrt()
    }

    /// One-sided p-value that head is not worse: `up` when a larger value is worse. None with
    /// fewer than two pairs.
    pub fn p_worse(&self, up: bool) -> Option<f64> {
        if self.pairs < 2 {
            return None;
        }
        let c = if up { self.centre() } else { -self.centre() };
        let se = self.se();
        if se == 0.0 || !se.is_finite() {
            return Some(if c > 0.0 { 0.0 } else { 1.0 });
        }
        Some(t(self.pairs as f64 - 1.0)?.sf(c / se))
    }

    /// The two-sided interval of the ratio at `confidence`.
    pub fn interval(&self, confidence: f64) -> Option<(f64, f64)> {
        let half = self.half(1.0 - (1.0 - confidence) / 2.0)?;
        Some((self.as_ratio(self.centre() - half), self.as_ratio(self.centre() + half)))
    }

    /// The one-sided bound of the ratio at `confidence` on the worse side (`up`: the upper).
    pub fn bound(&self, up: bool, confidence: f64) -> Option<f64> {
        let half = self.half(confidence)?;
        Some(self.as_ratio(if up { self.centre() + half } else { self.centre() - half }))
    }

    fn half(&self, q: f64) -> Option<f64> {
        (self.pairs >= 2).then(|| t(self.pairs as f64 - 1.0).map(|d| d.inverse_cdf(q) * self.se())).flatten()
    }

    /// The smallest change (a ratio, on the worse side) that pairs with this spread, as many as
    /// these, find at one-sided level `alpha` with probability `power`.
    pub fn detectable(&self, up: bool, alpha: f64, power: f64) -> Option<f64> {
        if self.pairs < 2 || !self.sd.is_finite() {
            return None;
        }
        let d = t(self.pairs as f64 - 1.0)?;
        let delta = (d.inverse_cdf(1.0 - alpha) + d.inverse_cdf(power)) * self.se();
        Some(self.as_ratio(if up { delta } else { -delta }))
    }

    /// The base's mean (the plain scale's reference), for a reader.
    pub fn base_mean(&self) -> f64 {
        self.base_mean
    }
}

/// The pair counts a run of at most `limit` pairs looks at: 3, 5, 8, 12, 20, 30, 50, then every
/// 50, cut at `limit` (which is always a look). Few looks keep each one's share of the
/// false-alarm rate large.
pub fn looks(limit: usize) -> Vec<usize> {
    let mut v: Vec<usize> =
        [3, 5, 8, 12, 20, 30].into_iter().chain((1..).map(|k| 50 * k)).take_while(|n| *n < limit).collect();
    v.push(limit.max(2));
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn matches_scipys_paired_t_on_logarithms() {
        // SciPy 1.x: r = scipy.stats.ttest_rel(np.log(h), np.log(b), alternative='greater') gives
        // statistic 8.795628, pvalue 0.00046081; mean of the log ratios 0.0686042; the two-sided
        // 95% interval, exponentiated: 1.0480680 to 1.0944587.
        let b = [100.0, 104.0, 98.0, 101.0, 103.0];
        let h = [108.0, 110.0, 105.0, 106.0, 113.0];
        let pairs: Vec<(f64, f64)> = b.into_iter().zip(h).collect();
        let p = Paired::of(&pairs);
        assert!(close(p.ratio, 0.0686042_f64.exp(), 1e-6), "{}", p.ratio);
        assert!(close(p.p_worse(true).unwrap(), 0.00046081, 1e-4), "{:?}", p.p_worse(true));
        assert!(p.p_worse(false).unwrap() > 0.99);
        let (lo, hi) = p.interval(0.95).unwrap();
        assert!(close(lo, 1.0480680, 1e-6) && close(hi, 1.0944587, 1e-6), "{lo} {hi}");
        assert!(p.bound(true, 0.95).unwrap() < hi, "a one-sided bound is nearer than the two-sided one");
    }

    #[test]
    fn no_spread_and_too_few_pairs() {
        let same = Paired::of(&[(1.0, 1.0), (2.0, 2.0), (3.0, 3.0)]);
        assert_eq!(same.p_worse(true), Some(1.0));
        let one = Paired::of(&[(1.0, 2.0)]);
        assert_eq!(one.p_worse(true), None);
        assert_eq!(one.interval(0.95), None);
        // An error share of zero takes the plain scale.
        let plain = Paired::of(&[(0.0, 0.01), (0.02, 0.03), (0.01, 0.02)]);
        assert!(close(plain.ratio, 1.0 + 0.01 / 0.01, 1e-9), "{}", plain.ratio);
    }

    #[test]
    fn looks_are_few_and_end_at_the_limit() {
        assert_eq!(looks(20), vec![3, 5, 8, 12, 20]);
        assert_eq!(looks(10), vec![3, 5, 8, 10]);
        assert_eq!(looks(3), vec![3]);
        assert_eq!(looks(120), vec![3, 5, 8, 12, 20, 30, 50, 100, 120]);
    }

    /// The rule's false alarms and power, simulated: normal log differences of 2%, 5% and 10%
    /// spread, CELLS gated cells (default 3: the default gates at one load point; the change in
    /// the first), Holm at each look, one-sided 1% over the run, looks at 3..20 pairs, stopping
    /// when every cell is shown within a 5% gate. `cargo test --release -p stats paired_figures
    /// -- --ignored --nocapture` prints the table docs/DECISIONS.md quotes.
    #[test]
    #[ignore = "a simulation that prints figures; run by hand"]
    fn paired_figures() {
        let (alpha, gate, runs) = (0.01, 1.05_f64, 20_000);
        let cells: usize = std::env::var("CELLS").ok().and_then(|c| c.parse().ok()).unwrap_or(3);
        for sd in [0.02, 0.05, 0.10] {
            for change in [1.0_f64, 1.05, 1.10, 1.30] {
                let mut rng = rand::rngs::StdRng::seed_from_u64(7);
                let (mut failed, mut pairs_used) = (0, 0);
                let normal = |rng: &mut rand::rngs::StdRng| -> f64 {
                    let (u, v): (f64, f64) = (rng.random(), rng.random());
                    (-2.0 * (1.0 - u).ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
                };
                for _ in 0..runs {
                    let all: Vec<Vec<f64>> = (0..cells)
                        .map(|c| {
                            let shift = if c == 0 { change.ln() } else { 0.0 };
                            (0..20).map(|_| shift + sd * normal(&mut rng)).collect()
                        })
                        .collect();
                    let schedule = looks(20);
                    for &n in &schedule {
                        let tested: Vec<Paired> = all
                            .iter()
                            .map(|d| Paired::of(&d[..n].iter().map(|x| (1.0, x.exp())).collect::<Vec<_>>()))
                            .collect();
                        let ps: Vec<f64> = tested.iter().map(|p| p.p_worse(true).unwrap()).collect();
                        let stands = crate::holm(&ps, alpha / schedule.len() as f64);
                        if tested.iter().zip(&stands).any(|(p, s)| *s && p.ratio > gate) {
                            failed += 1;
                            pairs_used += n;
                            break;
                        }
                        if tested.iter().all(|p| p.bound(true, 0.95).unwrap() < gate) || n == 20 {
                            pairs_used += n;
                            break;
                        }
                    }
                }
                println!(
                    "sd {:.0}% change {:+.0}%: failed {:.2}% of runs, mean pairs {:.1}",
                    sd * 100.0,
                    (change - 1.0) * 100.0,
                    100.0 * f64::from(failed) / f64::from(runs),
                    pairs_used as f64 / f64::from(runs)
                );
            }
        }
    }
}
