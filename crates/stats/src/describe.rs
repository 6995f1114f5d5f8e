//! Centres and spreads of a handful of values (repeats of a step, labs of a level).

/// The median (the mean of the two middle values for an even count); NaN for none.
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

/// The arithmetic mean; NaN for none.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The sample variance (divided by n - 1).
pub fn variance(values: &[f64]) -> f64 {
    let m = mean(values);
    values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (values.len() as f64 - 1.0)
}

/// The value a set of repeats or labs is shown with, and that a change is the ratio of: their
/// geometric mean when every one is positive (the centre a test on logarithms compares), else
/// their mean. One value: itself, as measured (exp(ln x) is not always x).
pub fn centre(values: &[f64]) -> f64 {
    match values {
        [] => f64::NAN,
        [one] => *one,
        _ if values.iter().all(|v| *v > 0.0) => mean(&logs(values)).exp(),
        _ => mean(values),
    }
}

/// The natural logarithms of `values`.
pub fn logs(values: &[f64]) -> Vec<f64> {
    values.iter().map(|v| v.ln()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_numpy_computes_them() {
        // numpy 2.4: np.median([3, 1, 2]) = 2.0; np.median([4, 1, 2, 3]) = 2.5;
        // np.var([10, 12, 11, 13, 14], ddof=1) = 2.5; scipy.stats.gmean([2, 8]) = 4.0
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert_eq!(variance(&[10.0, 12.0, 11.0, 13.0, 14.0]), 2.5);
        assert!((centre(&[2.0, 8.0]) - 4.0).abs() < 1e-12);
        assert_eq!(centre(&[0.0, 3.0]), 1.5);
        assert_eq!(centre(&[0.1]), 0.1);
        assert!(centre(&[]).is_nan());
    }
}
