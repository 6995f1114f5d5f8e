//! Wald's sequential probability ratio test between two normal means with a common spread: each
//! value adds its log likelihood ratio, and the test stops once the sum crosses a boundary, so
//! values are taken while they cannot tell and no more once they can.

use crate::describe::mean;

/// Two normal means with a common standard deviation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwoMeans {
    pub a: f64,
    pub b: f64,
    pub sd: f64,
}

/// Where the evidence stands.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Decision {
    A,
    B,
    /// Between the boundaries: take another value.
    Continue,
}

impl TwoMeans {
    /// The log likelihood ratio of `x` for `b` over `a` (positive: evidence for `b`).
    pub fn llr(&self, x: f64) -> f64 {
        ((x - self.a).powi(2) - (x - self.b).powi(2)) / (2.0 * self.sd * self.sd)
    }
}

/// Wald's boundaries on summed evidence: `B` once it reaches ln((1 - beta) / alpha), `A` once it
/// falls to ln(beta / (1 - alpha)), where alpha is the chance of deciding `B` at `a` and beta of
/// deciding `A` at `b`.
pub fn decide(evidence: f64, alpha: f64, beta: f64) -> Decision {
    if evidence >= ((1.0 - beta) / alpha).ln() {
        Decision::B
    } else if evidence <= (beta / (1.0 - alpha)).ln() {
        Decision::A
    } else {
        Decision::Continue
    }
}

/// The pooled standard deviation of groups around their own means (n - k degrees of freedom,
/// at least 1).
pub fn pooled_sd(groups: &[&[f64]]) -> f64 {
    let squares: f64 = groups
        .iter()
        .map(|g| {
            let m = mean(g);
            g.iter().map(|x| (x - m).powi(2)).sum::<f64>()
        })
        .sum();
    let n: usize = groups.iter().map(|g| g.len()).sum();
    (squares / n.saturating_sub(groups.len()).max(1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_scipy_computes_them() {
        // SciPy 1.17: norm.logpdf(x, b, s) - norm.logpdf(x, a, s) with a = ln 2, b = ln 2.2,
        // s = 0.04, at x = ln 2, ln 2.1, ln 2.25.
        let m = TwoMeans { a: 2f64.ln(), b: 2.2f64.ln(), sd: 0.04 };
        for (x, want) in [(2.0f64, -2.838759491978987), (2.1, 0.06761508281545225), (2.25, 4.177441949464219)] {
            assert!((m.llr(x.ln()) - want).abs() < 1e-9, "{x}: {}", m.llr(x.ln()));
        }
        // sqrt(((n1 - 1) var1 + (n2 - 1) var2) / (n1 + n2 - 2)) with NumPy's var(ddof=1).
        assert!((pooled_sd(&[&[1.0, 2.0, 4.0], &[10.0, 11.0, 13.0, 14.0]]) - 1.7126976771553504).abs() < 1e-12);
        // ln(0.995 / 0.005) = 5.293304824724492.
        assert_eq!(decide(5.2934, 0.005, 0.005), Decision::B);
        assert_eq!(decide(5.2932, 0.005, 0.005), Decision::Continue);
        assert_eq!(decide(-5.2934, 0.005, 0.005), Decision::A);
    }
}
