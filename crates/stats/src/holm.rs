//! Holm's step-down (Holm 1979): family-wise error control over `m` tests without assuming
//! they are independent. The p-values in ascending order; the k-th (from 0) stands at
//! `alpha / (m - k)` while every smaller one stood; the first that does not stops the rest.

/// Per p-value (in the order given), whether it stands at family-wise level `alpha`. A NaN
/// p-value never stands and does not count towards `m`.
pub fn holm(p_values: &[f64], alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p_values.len()).filter(|&i| !p_values[i].is_nan()).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let m = order.len();
    let mut stands = vec![false; p_values.len()];
    for (rank, i) in order.into_iter().enumerate() {
        if p_values[i] > alpha / (m - rank) as f64 {
            break;
        }
        stands[i] = true;
    }
    stands
}

/// Holm's adjusted p-values (in the order given): a p-value stands at `alpha` exactly when its
/// adjusted value is at most `alpha`. NaN stays NaN.
pub fn holm_adjusted(p_values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p_values.len()).filter(|&i| !p_values[i].is_nan()).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let m = order.len();
    let mut adjusted = vec![f64::NAN; p_values.len()];
    let mut running = 0.0_f64;
    for (rank, i) in order.into_iter().enumerate() {
        running = running.max(((m - rank) as f64 * p_values[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    /// p-values, alpha, and what statsmodels says: which are rejected, the adjusted p-values.
    type Case = (&'static [f64], f64, &'static [bool], &'static [f64]);

    /// Reference values from statsmodels 0.15.0:
    /// `multipletests(p, alpha=a, method="holm")` -> (reject, adjusted p-values).
    const STATSMODELS: [Case; 4] = [
        (&[0.01, 0.04, 0.03], 0.05, &[true, false, false], &[0.03, 0.06, 0.06]),
        (&[0.001, 0.012, 0.02], 0.05, &[true, true, true], &[0.003, 0.024, 0.024]),
        (
            &[0.0001, 0.004, 0.0019, 0.02, 0.6],
            0.005,
            &[true, false, false, false, false],
            &[0.0005, 0.012, 0.0076, 0.04, 0.6],
        ),
        (&[0.0012, 0.0011, 0.3, 0.0049], 0.005, &[true, true, false, false], &[0.0044, 0.0044, 0.3, 0.0098]),
    ];

    #[test]
    fn holm_agrees_with_statsmodels() {
        for (p, alpha, reject, adjusted) in STATSMODELS {
            assert_eq!(holm(p, alpha), reject, "{p:?} at {alpha}");
            for (got, want) in holm_adjusted(p).iter().zip(adjusted) {
                assert!((got - want).abs() < 1e-12, "{p:?}: {got} vs {want}");
            }
            let by_adjusted: Vec<bool> = holm_adjusted(p).iter().map(|q| *q <= alpha).collect();
            assert_eq!(by_adjusted, reject);
        }
    }

    #[test]
    fn nothing_given_nothing_stands_and_nan_never_counts() {
        assert_eq!(holm(&[], 0.05), Vec::<bool>::new());
        // With the NaN left out, m = 2: 0.02 <= 0.05 / 2 stands, 0.04 <= 0.05 too.
        assert_eq!(holm(&[0.02, f64::NAN, 0.04], 0.05), vec![true, false, true]);
        assert!(holm_adjusted(&[f64::NAN])[0].is_nan());
    }
}
