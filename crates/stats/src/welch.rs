//! Student's t for a handful of repeats: the interval of one side's centre, and Welch's test of
//! two sides, both on logarithms when every value is positive (a latency or a rate moves by a
//! share of itself, so a change is a ratio; and an interval of a geometric mean never leaves the
//! physical range: the plain t interval of 4.3 ms over two repeats reached -3.9 ms). Values with
//! a zero among them (error shares) take the plain scale instead.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::describe::{logs, mean, variance};
use crate::CONFIDENCE;

/// The two-sided critical value of Student's t at [`CONFIDENCE`] for `df` degrees of freedom.
pub(crate) fn critical(df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::INFINITY, |t| t.inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0))
}

/// The 95% interval of the centre of `values` (of the geometric mean when every value is
/// positive, else of the mean, cut at 0); none for fewer than two values.
pub fn interval(values: &[f64]) -> Option<(f64, f64)> {
    let n = values.len();
    (n >= 2).then(|| {
        let t = critical(n as f64 - 1.0);
        if values.iter().all(|v| *v > 0.0) {
            let l = logs(values);
            let half = t * (variance(&l) / n as f64).sqrt();
            let c = mean(&l);
            ((c - half).exp(), (c + half).exp())
        } else {
            let m = mean(values);
            let half = t * (variance(values) / n as f64).sqrt();
            ((m - half).max(0.0), (m + half).max(0.0))
        }
    })
}

/// Welch's test of A against B.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Welch {
    /// A / B: the ratio of geometric means (of means when values are not all positive).
    pub ratio: f64,
    /// 95% interval of the ratio; none when a side has a single value.
    pub ci: Option<(f64, f64)>,
    /// Two-sided p-value; none when a side has a single value.
    pub p: Option<f64>,
}

impl Welch {
    /// The interval excludes 1.
    pub fn significant(&self) -> bool {
        self.ci.is_some_and(|(lo, hi)| lo > 1.0 || hi < 1.0)
    }
}

/// Welch's t-test of `a` against `b` (unequal variances): on logarithms when every value is
/// positive, else on the values, with the difference's interval relative to B's mean.
pub fn welch(a: &[f64], b: &[f64]) -> Welch {
    let positive = a.iter().chain(b).all(|v| *v > 0.0);
    let (xa, xb) = if positive { (logs(a), logs(b)) } else { (a.to_vec(), b.to_vec()) };
    let (ma, mb) = (mean(&xa), mean(&xb));
    let ratio = if positive { (ma - mb).exp() } else { ma / mb };
    if xa.len() < 2 || xb.len() < 2 {
        return Welch { ratio, ci: None, p: None };
    }
    let (va, vb) = (variance(&xa) / xa.len() as f64, variance(&xb) / xb.len() as f64);
    let se = (va + vb).sqrt();
    let diff = ma - mb;
    if se == 0.0 {
        // No spread at all: any difference is certain, none is none.
        return Welch { ratio, ci: Some((ratio, ratio)), p: Some(if diff != 0.0 { 0.0 } else { 1.0 }) };
    }
    let df = (va + vb).powi(2) / (va.powi(2) / (xa.len() as f64 - 1.0) + vb.powi(2) / (xb.len() as f64 - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).expect("positive degrees of freedom");
    let p = 2.0 * dist.sf((diff / se).abs());
    let half = critical(df) * se;
    let ci = if positive {
        ((diff - half).exp(), (diff + half).exp())
    } else {
        (1.0 + (diff - half) / mb, 1.0 + (diff + half) / mb)
    };
    Welch { ratio, ci: Some(ci), p: Some(p) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn intervals_match_scipy() {
        // x = np.log([10, 12, 11, 13, 14])
        // np.exp(scipy.stats.t.interval(0.95, 4, loc=x.mean(), scale=scipy.stats.sem(x)))
        //   -> (10.102295, 14.055235); scipy.stats.t.ppf(0.975, 4) = 2.7764451
        assert!(close(critical(4.0), 2.7764451051977934, 1e-9));
        let (lo, hi) = interval(&[10.0, 12.0, 11.0, 13.0, 14.0]).unwrap();
        assert!(close(lo, 10.102295, 1e-6) && close(hi, 14.055235, 1e-6), "{lo} {hi}");
        assert_eq!(interval(&[5.0]), None);
        // Two repeats far apart: on the log scale the interval stays above 0. As above with
        // x = np.log([0.5, 8.1]), 1 degree of freedom -> (4.1644227e-8, 97252374.7).
        let (lo, hi) = interval(&[0.5, 8.1]).unwrap();
        assert!(close(lo, 4.1644227e-8, 1e-5) && close(hi, 97252374.7, 1e-5), "{lo} {hi}");
        // A zero among them: the plain interval, scipy.stats.t.interval(0.95, 2, loc=0.1,
        // scale=scipy.stats.sem([0, 0, 0.3])) -> (-0.3302653, 0.5302653), cut at 0.
        let (lo, hi) = interval(&[0.0, 0.0, 0.3]).unwrap();
        assert!(lo == 0.0 && close(hi, 0.5302652729749462, 1e-9), "{lo} {hi}");
    }

    #[test]
    fn welch_matches_scipy() {
        // scipy 1.17: a = [38071.96, 37512.4, 38390.1]; b = [36702.41, 36119.8, 36950.2]
        //   r = scipy.stats.ttest_ind(np.log(a), np.log(b), equal_var=False)
        //     -> statistic 3.933846, pvalue 0.017048117; np.exp(r.confidence_interval(0.95))
        //     -> (1.0111134, 1.0661752)
        let w = welch(&[38071.96, 37512.4, 38390.1], &[36702.41, 36119.8, 36950.2]);
        assert!(close(w.p.unwrap(), 0.017048117358622873, 1e-6), "{w:?}");
        let (lo, hi) = w.ci.unwrap();
        assert!(close(lo, 1.01111337, 1e-6) && close(hi, 1.06617516, 1e-6), "{w:?}");
        assert!(w.significant());
        // scipy.stats.ttest_ind(np.log([100,120,90]), np.log([110,95,105]), equal_var=False)
        //   -> pvalue 0.9589551
        let w = welch(&[100.0, 120.0, 90.0], &[110.0, 95.0, 105.0]);
        assert!(close(w.p.unwrap(), 0.9589551, 1e-6) && !w.significant(), "{w:?}");
        // Zeros: the plain scale. scipy.stats.ttest_ind([0,0,1], [40,50,45], equal_var=False)
        //   -> pvalue 0.0037648412, interval of the difference (-56.863823, -32.469511),
        //   here over B's mean of 45.
        let w = welch(&[0.0, 0.0, 1.0], &[40.0, 50.0, 45.0]);
        assert!(close(w.p.unwrap(), 0.00376484117312552, 1e-6), "{w:?}");
        let (lo, hi) = w.ci.unwrap();
        assert!(close(lo, 1.0 - 56.86382274920471 / 45.0, 1e-6) && close(hi, 1.0 - 32.46951058412862 / 45.0, 1e-6));
        // One value a side: nothing measured of the spread.
        assert_eq!(welch(&[1.0], &[2.0]), Welch { ratio: 0.5, ci: None, p: None });
        // No spread at all.
        assert_eq!(welch(&[2.0, 2.0], &[2.0, 2.0]).p, Some(1.0));
    }
}
