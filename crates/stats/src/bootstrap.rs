//! The percentile bootstrap (Efron): a statistic recomputed over resamples drawn with
//! replacement, its interval read from their quantiles. The items are whatever keeps together
//! what happens together (a lab resamples whole seconds of a run), so the interval is not
//! falsely narrow. Draws come from a fixed seed: the same data give the same interval.

use rand::{Rng, SeedableRng};

/// Resamples per interval.
pub const RESAMPLES: usize = 500;

/// The seed every resampling starts from (with a salt per use).
const SEED: u64 = 0x10ad_1ab0;

/// [`RESAMPLES`] values of `stat` over resamples of `items` (each as many items as given,
/// drawn with replacement); `salt` varies the draws between uses. A resample whose statistic is
/// none or not finite is left out.
pub fn resample<T>(items: &[T], salt: u64, stat: impl Fn(&[&T]) -> Option<f64>) -> Vec<f64> {
    if items.is_empty() {
        return Vec::new();
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED ^ salt);
    let mut out = Vec::with_capacity(RESAMPLES);
    let mut pick: Vec<&T> = Vec::with_capacity(items.len());
    for _ in 0..RESAMPLES {
        pick.clear();
        for _ in 0..items.len() {
            pick.push(&items[rng.random_range(0..items.len())]);
        }
        if let Some(v) = stat(&pick).filter(|v| v.is_finite()) {
            out.push(v);
        }
    }
    out
}

/// The `q` quantile of `values` (sorted in place): the nearest rank, as NumPy's
/// `quantile(method='nearest')` reads it away from ties.
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// The 95% percentile interval of resampled `values` (sorted in place).
pub fn interval(values: &mut [f64]) -> (f64, f64) {
    (quantile(values, 0.025), quantile(values, 0.975))
}

/// The two-sided bootstrap p-value of "no change" for resampled ratios: twice the share of
/// ratios on the far side of 1, ties counted half on each side (a figure equal in every resample
/// has p = 1), and never below one resample's share.
pub fn p_of_ratios(ratios: &[f64]) -> f64 {
    let n = ratios.len() as f64;
    let below = ratios.iter().filter(|r| **r < 1.0).count() as f64;
    let ties = ratios.iter().filter(|r| **r == 1.0).count() as f64;
    let tail = (below + ties / 2.0).min(n - below - ties / 2.0) / n;
    (2.0 * tail).clamp(1.0 / n, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn quantiles_are_numpys_nearest_rank() {
        // v = np.array([5, 1, 4, 2, 3, 9, 7, 8, 6, 10, 0.5]);
        // np.quantile(v, q, method='nearest') for q = 0.025, 0.1, 0.5, 0.975 (NumPy 2.4)
        //   -> 0.5, 1.0, 5.0, 10.0
        let v = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 7.0, 8.0, 6.0, 10.0, 0.5];
        for (q, want) in [(0.025, 0.5), (0.1, 1.0), (0.5, 5.0), (0.975, 10.0)] {
            assert_eq!(quantile(&mut v.to_vec(), q), want, "q = {q}");
        }
        assert!(quantile(&mut [], 0.5).is_nan());
    }

    #[test]
    fn p_counts_the_far_side_and_ties_half() {
        assert_eq!(p_of_ratios(&[1.0; 10]), 1.0);
        // 2 of 10 below 1: p = 0.4; none below: the floor of one resample in ten.
        assert!((p_of_ratios(&[0.9, 0.95, 1.1, 1.2, 1.1, 1.3, 1.05, 1.2, 1.1, 1.4]) - 0.4).abs() < 1e-12);
        assert_eq!(p_of_ratios(&[1.1; 10]), 0.1);
    }

    #[test]
    fn the_interval_of_a_median_covers_the_true_one_about_as_often_as_it_says() {
        // 400 samples of 60 draws from a log-normal with median 10: the percentile interval of
        // the sample median covers 10 in about 95% of them (the bootstrap of a median runs a
        // little under its nominal level at this size).
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut covered = 0;
        for i in 0..400u64 {
            let sample: Vec<f64> = (0..60)
                .map(|_| {
                    let (u1, u2): (f64, f64) = (rng.random_range(1e-12..1.0), rng.random());
                    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                    10.0 * (0.3 * z).exp()
                })
                .collect();
            let mut medians =
                resample(&sample, i, |s| Some(crate::describe::median(&s.iter().map(|v| **v).collect::<Vec<_>>())));
            let (lo, hi) = interval(&mut medians);
            covered += usize::from(lo <= 10.0 && 10.0 <= hi);
        }
        assert!((360..=395).contains(&covered), "covered in {covered} of 400");
        // Deterministic: the same data and salt give the same resamples.
        let v = [1.0, 2.0, 3.0];
        let mean = |s: &[&f64]| Some(s.iter().copied().sum::<f64>() / 3.0);
        assert_eq!(resample(&v, 1, mean), resample(&v, 1, mean));
        assert_ne!(resample(&v, 1, mean), resample(&v, 2, mean));
    }
}
