//! A level's outliers: labs of a busy machine, left out of its spread and centre so that one of
//! them does not widen the level for every lab after it. Robust, on logarithms: the median and
//! the median absolute deviation scaled to a normal's standard deviation.

use crate::describe::{logs, median};

/// A value further than this many robust standard deviations from the median is an outlier...
pub(crate) const OUTLIER_MADS: f64 = 3.5;

/// ... and further than this share from it (5%): in a series steady to 0.1%, a lab 1% away is
/// no busy machine, and no gate is that fine.
pub(crate) const OUTLIER_SHARE: f64 = 0.05;

/// The fewest values outliers are looked for in: with fewer, the median and its deviation are
/// too rough to call any one of them out.
pub(crate) const MIN_VALUES: usize = 5;

/// The scale that makes a median absolute deviation a normal's standard deviation (1 / Φ⁻¹(3/4),
/// as SciPy's `median_abs_deviation(scale='normal')`).
const NORMAL_MAD: f64 = 1.4826;

/// The robust standard deviation of `values`: the scaled median absolute deviation.
pub(crate) fn robust_sd(values: &[f64]) -> f64 {
    let m = median(values);
    NORMAL_MAD * median(&values.iter().map(|x| (x - m).abs()).collect::<Vec<_>>())
}

/// `values` without their outliers, in their order (all of them when fewer than [`MIN_VALUES`],
/// or when they are not all positive).
pub fn without_outliers(values: &[f64]) -> Vec<f64> {
    if values.len() < MIN_VALUES || values.iter().any(|v| v.is_nan() || *v <= 0.0) {
        return values.to_vec();
    }
    let l = logs(values);
    let centre = median(&l);
    let reach = (OUTLIER_MADS * robust_sd(&l)).max(OUTLIER_SHARE.ln_1p());
    values.iter().zip(&l).filter(|(_, l)| (*l - centre).abs() <= reach).map(|(v, _)| *v).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_machines_lab_is_left_out_as_scipys_deviation_says() {
        // l = np.log([2.20, 2.25, 2.18, 2.22, 2.27, 2.21, 3.10, 2.19])
        // scipy.stats.median_abs_deviation(l, scale='normal') = 0.0200363848 (SciPy 1.17);
        // |l - median(l)| / that: 3.10 is 16.8 deviations away, the rest under 1.3.
        let v = [2.20, 2.25, 2.18, 2.22, 2.27, 2.21, 3.10, 2.19];
        assert!((robust_sd(&logs(&v)) - 0.0200363848227952).abs() < 1e-5);
        assert_eq!(without_outliers(&v), [2.20, 2.25, 2.18, 2.22, 2.27, 2.21, 2.19]);
        // Within 5% of the median nothing is an outlier, however steady the rest.
        let steady = [1.000, 1.001, 1.000, 1.001, 1.040];
        assert_eq!(without_outliers(&steady), steady);
        // Too few values, or a zero: all kept.
        assert_eq!(without_outliers(&[1.0, 1.0, 1.0, 9.0]).len(), 4);
        assert_eq!(without_outliers(&[1.0, 1.0, 1.0, 1.0, 0.0, 9.0]).len(), 6);
    }
}
