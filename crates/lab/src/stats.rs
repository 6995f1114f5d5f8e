//! Statistics over repeats: a repeat is one measurement, so a step run 3 times has 3 values.
//!
//! - Per step: the median, and a 95% confidence interval from Student's t (few repeats, unknown
//!   variance), on the logarithms when every value is positive: an interval for the geometric
//!   mean, which never leaves the physical range (a latency's interval is never below 0, where
//!   the plain t interval of 4.3 ms over two repeats reached -3.9 ms). Values with a zero in
//!   them (error shares) take the plain interval, cut at 0; shares are cut at 1.
//! - A/B: Welch's t-test on the logarithms of the values (unequal variances, few repeats; the log
//!   makes the effect a ratio, as latencies and rates compare by ratio): the ratio of geometric
//!   means with its 95% interval, and the two-sided p-value. The difference is significant when
//!   the interval excludes 1 (p < 0.05); otherwise "no significant difference", as benchstat
//!   prints `~`. Values that are not all positive (an error count of 0) are compared on their
//!   differences instead, and the ratio is that of the means.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Two-sided confidence level.
pub const CONFIDENCE: f64 = 0.95;

/// One step's values over its repeats.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    /// 95% interval (of the geometric mean when every value is positive); `None` with a single
    /// repeat. Never below 0.
    pub ci: Option<(f64, f64)>,
}

pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Sample variance (n - 1).
fn variance(v: &[f64]) -> f64 {
    let m = mean(v);
    v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() as f64 - 1.0)
}

/// The two-sided critical value of Student's t for `df` degrees of freedom.
fn t_critical(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::INFINITY, |t| t.inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0))
}

pub fn summarize(values: &[f64]) -> Summary {
    let n = values.len();
    let m = if n == 0 { f64::NAN } else { mean(values) };
    let ci = (n >= 2).then(|| {
        let t = t_critical(n as f64 - 1.0);
        if values.iter().all(|v| *v > 0.0) {
            let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
            let half = t * (variance(&logs) / n as f64).sqrt();
            let centre = mean(&logs);
            ((centre - half).exp(), (centre + half).exp())
        } else {
            let half = t * (variance(values) / n as f64).sqrt();
            ((m - half).max(0.0), (m + half).max(0.0))
        }
    });
    Summary { n, median: median(values), mean: m, ci }
}

/// [`summarize`] for a share (0..1): the interval is cut at 1 as well.
pub fn summarize_share(values: &[f64]) -> Summary {
    let mut s = summarize(values);
    s.ci = s.ci.map(|(lo, hi)| (lo.min(1.0), hi.min(1.0)));
    s
}

/// A compared with B.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Comparison {
    /// A / B: the ratio of geometric means (of means when values are not all positive).
    pub ratio: f64,
    /// 95% interval of the ratio; `None` when a side has a single repeat.
    pub ci: Option<(f64, f64)>,
    /// Two-sided p-value of Welch's test; `None` when it cannot be computed.
    pub p: Option<f64>,
    /// The interval excludes 1.
    pub significant: bool,
}

/// Welch's t-test of `a` against `b` (see the module's docs).
pub fn compare(a: &[f64], b: &[f64]) -> Comparison {
    let positive = a.iter().chain(b).all(|v| *v > 0.0);
    let (xa, xb): (Vec<f64>, Vec<f64>) = if positive {
        (a.iter().map(|v| v.ln()).collect(), b.iter().map(|v| v.ln()).collect())
    } else {
        (a.to_vec(), b.to_vec())
    };
    let (ma, mb) = (mean(&xa), mean(&xb));
    let ratio = if positive { (ma - mb).exp() } else { ma / mb };
    if xa.len() < 2 || xb.len() < 2 {
        return Comparison { ratio, ci: None, p: None, significant: false };
    }
    let (va, vb) = (variance(&xa) / xa.len() as f64, variance(&xb) / xb.len() as f64);
    let se = (va + vb).sqrt();
    let diff = ma - mb;
    if se == 0.0 {
        // No spread at all: any difference is certain, none is none.
        let significant = diff != 0.0;
        return Comparison {
            ratio,
            ci: Some((ratio, ratio)),
            p: Some(if significant { 0.0 } else { 1.0 }),
            significant,
        };
    }
    let df = (va + vb).powi(2) / (va.powi(2) / (xa.len() as f64 - 1.0) + vb.powi(2) / (xb.len() as f64 - 1.0));
    let t = diff / se;
    let dist = StudentsT::new(0.0, 1.0, df).expect("positive degrees of freedom");
    let p = 2.0 * (1.0 - dist.cdf(t.abs()));
    let half = t_critical(df) * se;
    let ci = if positive {
        ((diff - half).exp(), (diff + half).exp())
    } else {
        // The difference's interval, expressed relative to B's mean.
        (1.0 + (diff - half) / mb, 1.0 + (diff + half) / mb)
    };
    Comparison { ratio, ci: Some(ci), p: Some(p), significant: ci.0 > 1.0 || ci.1 < 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn median_and_interval() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        // x = np.log([10, 12, 11, 13, 14])
        // np.exp(scipy.stats.t.interval(0.95, 4, loc=x.mean(), scale=scipy.stats.sem(x)))
        //   -> (10.102295, 14.055235)
        let s = summarize(&[10.0, 12.0, 11.0, 13.0, 14.0]);
        let (lo, hi) = s.ci.unwrap();
        assert!(close(lo, 10.102295, 1e-6) && close(hi, 14.055235, 1e-6), "{s:?}");
        assert_eq!(summarize(&[5.0]).ci, None);
        // Two repeats far apart: the plain t interval of [0.5, 8.1] ms reached -20 ms; on the log
        // scale it stays above 0. scipy, as above with x = np.log([0.5, 8.1]), 1 degree of
        // freedom -> (4.2e-8, 9.7e7): wide, but physical.
        let (lo, hi) = summarize(&[0.5, 8.1]).ci.unwrap();
        assert!(close(lo, 4.1644227e-8, 1e-5) && close(hi, 97252374.7, 1e-5), "{lo} {hi}");
        // Error shares with a zero: plain interval, cut at 0; success shares cut at 1.
        let (lo, _) = summarize(&[0.0, 0.0, 0.3]).ci.unwrap();
        assert_eq!(lo, 0.0);
        let (_, hi) = summarize_share(&[1.0, 0.9, 1.0]).ci.unwrap();
        assert_eq!(hi, 1.0);
    }

    #[test]
    fn welch_on_logs_matches_scipy() {
        // Reference values computed with scipy 1.16:
        //   a = [38071.96, 37512.4, 38390.1]; b = [36702.41, 36119.8, 36950.2]
        //   r = scipy.stats.ttest_ind(np.log(a), np.log(b), equal_var=False)
        //     -> statistic 3.933846, pvalue 0.0170481
        //   np.exp(r.confidence_interval(0.95)) -> (1.0111134, 1.0661752)
        let a = [38071.96, 37512.4, 38390.1];
        let b = [36702.41, 36119.8, 36950.2];
        let c = compare(&a, &b);
        assert!(close(c.p.unwrap(), 0.017048117, 1e-6), "{c:?}");
        assert!(c.significant);
        let geo = |v: &[f64]| (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp();
        assert!(close(c.ratio, geo(&a) / geo(&b), 1e-12));
        let (lo, hi) = c.ci.unwrap();
        assert!(close(lo, 1.0111134, 1e-6) && close(hi, 1.0661752, 1e-6), "{c:?}");
    }

    #[test]
    fn overlapping_samples_are_not_significant() {
        // scipy.stats.ttest_ind(np.log([100,120,90]), np.log([110,95,105]), equal_var=False)
        //   -> statistic -0.0558887, pvalue 0.9589551
        let c = compare(&[100.0, 120.0, 90.0], &[110.0, 95.0, 105.0]);
        assert!(close(c.p.unwrap(), 0.9589551, 1e-6), "{c:?}");
        assert!(!c.significant);
        let (lo, hi) = c.ci.unwrap();
        assert!(lo < 1.0 && hi > 1.0);
        // One repeat a side: nothing can be said.
        let one = compare(&[1.0], &[2.0]);
        assert!(!one.significant && one.ci.is_none());
        // Counts with zeros compare on differences.
        let z = compare(&[0.0, 0.0, 1.0], &[40.0, 50.0, 45.0]);
        assert!(z.significant && z.ratio < 0.05, "{z:?}");
    }
}
