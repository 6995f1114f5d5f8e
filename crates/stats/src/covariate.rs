//! A level read against a covariate: one metric's value in N labs of one build, each beside a
//! figure of the machine it ran on (loadlab's own CPU per request), and the test of one more lab
//! against what the level predicts at that lab's machine.
//!
//! A target's CPU per request moves with the machine from lab to lab: on a Go service's A/A
//! histories the target's moved 6.7% and, read at loadlab's own of the level, 2.2%
//! (docs/DECISIONS.md). The slope is fitted on the level's own labs, so both it and the
//! residuals' spread are uncertain: the new lab is tested with the regression's prediction
//! interval, `(ln y0 - a - b·ln x0) / (s·√(1 + 1/n + (ln x0 - mean ln x)² / Sxx))` with n - 2
//! degrees of freedom, which widens for a machine unlike the level's and for a short level.

use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::describe::mean;

/// Labs a slope is fitted from at the fewest: with fewer, the slope's own error makes the
/// prediction wider than the plain level's (n - 2 degrees of freedom).
pub const MIN_LABS: usize = 8;

/// The regression of the logarithm of a metric on the logarithm of a covariate over a level.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    /// Labs fitted.
    pub n: usize,
    /// The slope: how many percent the metric moves for 1% of the covariate.
    pub slope: f64,
    /// The intercept, on logarithms.
    pub intercept: f64,
    /// Standard deviation of the residuals (n - 2 degrees of freedom), on logarithms.
    pub sd_log: f64,
    mean_x: f64,
    sxx: f64,
    /// The covariate's range over the level, on logarithms.
    range_x: (f64, f64),
}

impl Fit {
    /// The fit of `ys` on `xs` (pairs, each positive and finite): none with fewer than
    /// [`MIN_LABS`] pairs or a covariate without spread.
    pub fn of(xs: &[f64], ys: &[f64]) -> Option<Fit> {
        if xs.len() != ys.len() || xs.len() < MIN_LABS {
            return None;
        }
        if xs.iter().chain(ys).any(|v| !(v.is_finite() && *v > 0.0)) {
            return None;
        }
        let (lx, ly): (Vec<f64>, Vec<f64>) = xs.iter().zip(ys).map(|(x, y)| (x.ln(), y.ln())).unzip();
        let (mx, my) = (mean(&lx), mean(&ly));
        let sxx: f64 = lx.iter().map(|x| (x - mx).powi(2)).sum();
        if sxx.is_nan() || sxx <= 0.0 {
            return None;
        }
        let sxy: f64 = lx.iter().zip(&ly).map(|(x, y)| (x - mx) * (y - my)).sum();
        let slope = sxy / sxx;
        let intercept = my - slope * mx;
        let n = lx.len();
        let rss: f64 = lx.iter().zip(&ly).map(|(x, y)| (y - intercept - slope * x).powi(2)).sum();
        let sd_log = (rss / (n as f64 - 2.0)).sqrt();
        let range_x = lx.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        Some(Fit { n, slope, intercept, sd_log, mean_x: mx, sxx, range_x })
    }

    /// The two-sided p-value of the slope against none: whether the metric moves with the
    /// covariate at all over the level, or the slope is its noise.
    pub fn slope_p(&self) -> f64 {
        let se = self.sd_log / self.sxx.sqrt();
        if se == 0.0 {
            return if self.slope == 0.0 { 1.0 } else { 0.0 };
        }
        let t = StudentsT::new(0.0, 1.0, self.n as f64 - 2.0).expect("at least three labs");
        2.0 * t.sf((self.slope / se).abs())
    }

    /// Whether `x` lies within the covariate's range over the level, widened by `margin` times
    /// its width each way. Far outside it a covariate measured with noise of its own (which
    /// flattens the slope: errors in variables) mispredicts most.
    pub fn covers(&self, x: f64, margin: f64) -> bool {
        let (l, w) = (x.ln(), self.range_x.1 - self.range_x.0);
        l >= self.range_x.0 - margin * w && l <= self.range_x.1 + margin * w
    }

    /// What the level predicts at covariate `x`: its centre at that machine.
    pub fn at(&self, x: f64) -> f64 {
        (self.intercept + self.slope * x.ln()).exp()
    }

    /// The spread, on logarithms, of one more lab at covariate `x` around [`Fit::at`]: the
    /// residuals' with the error of the fitted line there.
    pub fn sd_at(&self, x: f64) -> f64 {
        let n = self.n as f64;
        self.sd_log * (1.0 + 1.0 / n + (x.ln() - self.mean_x).powi(2) / self.sxx).sqrt()
    }

    /// How often one more lab of this build at covariate `x` lies as far beyond the prediction
    /// as `value` (one-sided: above it with `up`): the prediction interval's test.
    pub fn p_beyond(&self, x: f64, value: f64, up: bool) -> f64 {
        if !(value.is_finite() && value > 0.0 && x.is_finite() && x > 0.0) {
            return 1.0;
        }
        let d = value.ln() - self.at(x).ln();
        let d = if up { d } else { -d };
        if self.sd_log == 0.0 {
            return if d > 0.0 { 0.0 } else { 1.0 };
        }
        let t = StudentsT::new(0.0, 1.0, self.n as f64 - 2.0).expect("at least three labs");
        t.sf(d / self.sd_at(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A Go service's level: loadlab's own CPU per request (µs) and the target's, 10 labs.
    const XS: [f64; 10] = [78.0, 92.0, 70.0, 101.0, 85.0, 66.0, 110.0, 80.0, 74.0, 95.0];
    const YS: [f64; 10] = [480.0, 505.0, 470.0, 520.0, 488.0, 455.0, 530.0, 490.0, 472.0, 500.0];

    #[test]
    fn the_prediction_test_agrees_with_scipy() {
        // x = numpy.log(XS); y = numpy.log(YS); r = scipy.stats.linregress(x, y)
        // res = y - r.intercept - r.slope * x; s = (res @ res / 8) ** 0.5
        // se = s * (1 + 1/10 + (numpy.log(90) - x.mean()) ** 2 / ((x - x.mean()) ** 2).sum()) ** 0.5
        // t = (numpy.log(540) - r.intercept - r.slope * numpy.log(90)) / se; scipy.stats.t.sf(t, 8)
        let f = Fit::of(&XS, &YS).unwrap();
        assert!((f.slope - 0.281_083_5).abs() < 1e-5, "{f:?}");
        assert!((f.sd_log - 0.009_110_74).abs() < 1e-6, "{f:?}");
        let p = f.p_beyond(90.0, 540.0, true);
        assert!((p - 2.219_45e-5).abs() < 1e-9, "{p}");
        assert!(f.p_beyond(90.0, 540.0, false) > 0.999);
        // Far from the level's machines, the same value is less surprising: the line's error.
        assert!(f.sd_at(200.0) > 1.5 * f.sd_at(85.0));
        // scipy.stats.linregress(x, y).pvalue = 3.32325e-07
        assert!((f.slope_p() - 3.32325e-7).abs() < 1e-11, "{}", f.slope_p());
        assert!(f.covers(66.0, 0.0) && f.covers(100.0, 0.0) && !f.covers(111.0, 0.0) && !f.covers(65.0, 0.0));
        // ln(110 / 66) = 0.511: one width beyond either end.
        assert!(f.covers(183.0, 1.0) && !f.covers(184.0, 1.0) && f.covers(39.7, 1.0) && !f.covers(39.5, 1.0));
    }

    #[test]
    fn too_few_labs_or_one_machine_fit_nothing() {
        assert!(Fit::of(&XS[..7], &YS[..7]).is_none());
        assert!(Fit::of(&[80.0; 9], &YS[..9]).is_none());
        let mut bad = YS;
        bad[3] = 0.0;
        assert!(Fit::of(&XS, &bad).is_none());
    }
}
