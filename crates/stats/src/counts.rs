//! Two counts of events (a profile's samples in a function, one profile a side): the interval
//! of their rates' ratio, as the counts are Poisson. One sample of each is all there is, so the
//! spread is the counts' own: the log ratio's standard error is sqrt(1/a + 1/b) (the Wald
//! interval on the log scale, statsmodels' `confint_poisson_2indep(method="wald-log")`).

use statrs::distribution::{ContinuousCDF, Normal};

/// The two-sided interval at `confidence` of `ratio`, a ratio of rates measured from `a` and
/// `b` events (each at least a half: a side where none fell still has a bound).
pub fn ratio_interval(ratio: f64, a: f64, b: f64, confidence: f64) -> (f64, f64) {
    let z = Normal::standard().inverse_cdf(0.5 + confidence / 2.0);
    let se = (1.0 / a.max(0.5) + 1.0 / b.max(0.5)).sqrt();
    (ratio * (-z * se).exp(), ratio * (z * se).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_scipy_computes_it() {
        // SciPy 1.17: z = norm.ppf(0.975) = 1.959963984540054; se = sqrt(1/100 + 1/50);
        // 1.6 * exp(-z * se) = 1.1394297398204896, 1.6 * exp(z * se) = 2.2467379168138204.
        let (lo, hi) = ratio_interval(1.6, 100.0, 50.0, 0.95);
        assert!((lo - 1.1394297398204896).abs() < 1e-9 && (hi - 2.2467379168138204).abs() < 1e-9, "{lo} {hi}");
        // No event on one side: counted as half of one, and the interval is wide but bounded.
        let (lo, hi) = ratio_interval(10.0, 20.0, 0.0, 0.95);
        assert!(lo > 0.0 && hi.is_finite() && lo < 10.0 && hi > 10.0);
    }
}
