//! A service's own run-to-run spread, measured (`lab calibrate`): one metric's value in N labs
//! of one build, and the test it gives a comparison of two labs.
//!
//! Two labs of one build differ by more than either run shows from inside: the processes, their
//! placement on the cores, connections and caches change between them, and a CPU-bound Python
//! server answered in 2.6 ms in some labs and 4.4 ms in others. The fixed floors (`floors`) were
//! measured on nginx and an origin; a service of its own modes needs its own. With the values of
//! N labs, the logarithm of a lab's value has a standard deviation `s` (N - 1 degrees of
//! freedom), and the difference of two new labs' logarithms divided by `s·√2` follows Student's
//! t: the chance that two labs of one build differ by a ratio `r` or more is
//! `2·(1 - T(|ln r| / (s·√2)))`, the p-value of a change against this service's reruns. A change
//! is called only where that p is under 5%; the floor shown is the ratio at which it is.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::describe::{logs, mean, variance};
use crate::CONFIDENCE;

/// Labs needed to measure a spread at all: with 2, one difference and one degree of freedom.
pub const MIN_LABS: usize = 3;

/// Labs from which a measured spread replaces the fixed run-to-run floors (`floors`): with fewer,
/// its own estimate is too rough to stand alone (docs/DECISIONS.md, "The level as a
/// calibration", for the false alarms and the power this number gives).
pub const REPLACES_FLOOR: usize = 5;

/// One metric's values in N labs of one build, and what they say of a rerun.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// The value in each lab (the centre of its repeats), in the metric's unit.
    pub values: Vec<f64>,
    /// Standard deviation of their logarithms.
    pub sd_log: f64,
    /// Two labs of one build differ by less than this share in 95% of pairs (the change at
    /// which [`Spread::p`] is 5%).
    pub floor: f64,
}

impl Spread {
    /// The spread of `values` (one per lab): none with fewer than [`MIN_LABS`] or any value not
    /// positive (a share of 0 errors has no ratio).
    pub fn of(values: &[f64]) -> Option<Spread> {
        if values.len() < MIN_LABS || values.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
            return None;
        }
        let sd_log = variance(&logs(values)).sqrt();
        let t = student(values.len()).inverse_cdf(1.0 - (1.0 - CONFIDENCE) / 2.0);
        let floor = (t * sd_log * std::f64::consts::SQRT_2).exp() - 1.0;
        Some(Spread { values: values.to_vec(), sd_log, floor })
    }

    /// How often two labs of one build differ by `ratio` or more (either way).
    pub fn p(&self, ratio: f64) -> f64 {
        if !(ratio.is_finite() && ratio > 0.0) {
            return 1.0;
        }
        let d = ratio.ln().abs();
        if self.sd_log == 0.0 {
            return if d == 0.0 { 1.0 } else { 0.0 };
        }
        2.0 * (1.0 - student(self.values.len()).cdf(d / (self.sd_log * std::f64::consts::SQRT_2)))
    }

    pub fn labs(&self) -> usize {
        self.values.len()
    }

    /// Enough labs to stand in for the fixed floors ([`REPLACES_FLOOR`]).
    pub fn replaces_floor(&self) -> bool {
        self.labs() >= REPLACES_FLOOR
    }

    /// The centre of these labs: the geometric mean of their values.
    pub fn centre(&self) -> f64 {
        mean(&logs(&self.values)).exp()
    }

    /// How often one more lab of this build lies as far beyond these labs' centre as `value`
    /// (one-sided: above it with `up`, else below): Student's prediction test on logarithms,
    /// `(ln value - mean) / (sd_log·√(1 + 1/n))` with n - 1 degrees of freedom. A history's
    /// newest lab against its level.
    pub fn p_beyond(&self, value: f64, up: bool) -> f64 {
        if !(value.is_finite() && value > 0.0) {
            return 1.0;
        }
        let d = value.ln() - self.centre().ln();
        let d = if up { d } else { -d };
        if self.sd_log == 0.0 {
            return if d > 0.0 { 0.0 } else { 1.0 };
        }
        let n = self.values.len() as f64;
        student(self.values.len()).sf(d / (self.sd_log * (1.0 + 1.0 / n).sqrt()))
    }
}

impl Spread {
    /// [`Spread::p_beyond`] for a level of only `level` labs (1 or 2, just after a change),
    /// with the spread of these labs, the level before it: the lab-to-lab spread of a service's
    /// logarithms moves much less than its level does. The test is Student's prediction test
    /// with the level's own mean and count and this spread's deviation and degrees of freedom.
    pub fn p_beyond_borrowed(&self, level: &[f64], value: f64, up: bool) -> f64 {
        if level.is_empty() || level.iter().any(|v| !(v.is_finite() && *v > 0.0)) {
            return 1.0;
        }
        if !(value.is_finite() && value > 0.0) {
            return 1.0;
        }
        let centre = mean(&logs(level));
        let d = value.ln() - centre;
        let d = if up { d } else { -d };
        if self.sd_log == 0.0 {
            return if d > 0.0 { 0.0 } else { 1.0 };
        }
        let n = level.len() as f64;
        student(self.values.len()).sf(d / (self.sd_log * (1.0 + 1.0 / n).sqrt()))
    }
}

/// Student's t with the degrees of freedom of `labs` values' standard deviation.
fn student(labs: usize) -> StudentsT {
    StudentsT::new(0.0, 1.0, labs as f64 - 1.0).expect("at least two labs")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_floor_is_where_the_p_value_is_five_percent() {
        // A bimodal service: 2.6 ms in some labs, 4.4 ms in others.
        let s = Spread::of(&[2.6, 4.4, 2.6, 4.4, 2.7]).unwrap();
        // statistics.stdev(map(math.log, v)) = 0.28168; scipy's t.ppf(0.975, 4) = 2.77645;
        // exp(2.77645 * 0.28168 * sqrt(2)) - 1 = 2.0223
        assert!((s.sd_log - 0.28168).abs() < 1e-4, "{s:?}");
        assert!((s.floor - 2.0223).abs() < 1e-3, "{s:?}");
        assert!((s.p(1.0 + s.floor) - 0.05).abs() < 1e-9);
        // The two modes are 69% apart: a rerun, not a change.
        assert!(s.p(4.4 / 2.6) > 0.05);
        assert!(s.p(3.1) < 0.05);
        assert_eq!(s.p(1.0), 1.0);
    }

    #[test]
    fn one_more_lab_against_a_level() {
        // A level of 6 labs and a new one. Reference from SciPy:
        //   l = numpy.log([2.20, 2.25, 2.18, 2.22, 2.27, 2.21]); s = l.std(ddof=1)
        //   t = (numpy.log(2.40) - l.mean()) / (s * (1 + 1/6) ** 0.5); scipy.stats.t.sf(t, 5)
        //   = 0.0024184 (t = 4.8109)
        let s = Spread::of(&[2.20, 2.25, 2.18, 2.22, 2.27, 2.21]).unwrap();
        assert!((s.p_beyond(2.40, true) - 0.0024184).abs() < 2e-6, "{}", s.p_beyond(2.40, true));
        // The same distance below is as unlikely for a metric where lower is worse.
        let below = (s.centre().ln() * 2.0 - 2.40f64.ln()).exp();
        assert!((s.p_beyond(below, false) - s.p_beyond(2.40, true)).abs() < 1e-12);
        assert!(s.p_beyond(2.40, false) > 0.99);
        assert!(s.replaces_floor() && !Spread::of(&[1.0, 1.1, 1.2, 1.3]).unwrap().replaces_floor());
    }

    #[test]
    fn a_short_level_judged_with_the_spread_before_it() {
        // The level before: 6 labs; the new level: 2 labs at 2.0 and 2.04; a lab at 2.3.
        // Python: s = statistics.stdev(map(math.log, [2.20, 2.25, 2.18, 2.22, 2.27, 2.21]))
        //   = 0.0148763; c = (log(2.0) + log(2.04)) / 2; t = (log(2.3) - c) / (s * 1.5 ** 0.5)
        //   = 7.12748; Student's t survival at 5 degrees of freedom, by Simpson's rule over its
        //   density from t to 2,000: 4.2179e-4
        let before = Spread::of(&[2.20, 2.25, 2.18, 2.22, 2.27, 2.21]).unwrap();
        let p = before.p_beyond_borrowed(&[2.0, 2.04], 2.3, true);
        assert!((p - 4.2179e-4).abs() < 1e-7, "{p}");
        // Against a level of its own 6 labs it is the ordinary test.
        let own = before.p_beyond_borrowed(&before.values, 2.40, true);
        assert!((own - before.p_beyond(2.40, true)).abs() < 1e-12);
        assert_eq!(before.p_beyond_borrowed(&[], 2.3, true), 1.0);
    }

    #[test]
    fn too_few_labs_or_a_zero_measure_nothing() {
        assert!(Spread::of(&[1.0, 1.1]).is_none());
        assert!(Spread::of(&[0.0, 1.0, 1.0]).is_none());
        let s = Spread::of(&[1.0, 1.0, 1.0]).unwrap();
        assert_eq!((s.floor, s.p(1.0), s.p(1.01)), (0.0, 1.0, 0.0));
    }
}
