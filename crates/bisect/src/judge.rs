//! Whether a commit's labs are at the good level or at the bad one: Wald's sequential
//! probability ratio test between the two levels, so that a commit is labbed again while its
//! labs cannot tell, and no more once they can.
//!
//! The levels are the labs of the good and the bad commit (at least [`LEVEL_LABS`] each). On
//! logarithms (a change is a ratio), with the levels' pooled spread (at least [`MIN_SPREAD`]),
//! each lab adds `((x - g)^2 - (x - b)^2) / 2s^2` to the evidence for bad; the commit is bad
//! when the evidence reaches `ln((1 - β) / α)`, good when it falls to its negative, with
//! α = β = [`ERROR`]. A lab is first brought within the two levels: one lab far past a level (a
//! busy machine's spike) counts as one lab at that level, not as many.

/// Labs each end's level needs before the commits between are judged.
pub const LEVEL_LABS: usize = 3;

/// The most labs a commit is given; still undecided then, it is skipped as git bisect skips.
pub const MOST_LABS: usize = 4;

/// The chance of calling a good commit bad, and a bad commit good.
pub const ERROR: f64 = 0.01;

/// The least lab-to-lab spread assumed (on logarithms, 0.01 = 1%): a few labs that happen to
/// agree closely must not make one lab decisive.
pub const MIN_SPREAD: f64 = 0.01;

/// The two levels a commit is judged between.
#[derive(Clone, Debug, PartialEq)]
pub struct Levels {
    pub good: Vec<f64>,
    pub bad: Vec<f64>,
}

/// Where a commit's labs put it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    Good,
    Bad,
    /// Its labs cannot tell yet.
    Undecided,
}

impl Levels {
    fn logs(v: &[f64]) -> Vec<f64> {
        v.iter().filter(|x| **x > 0.0).map(|x| x.ln()).collect()
    }

    fn mean(v: &[f64]) -> f64 {
        v.iter().sum::<f64>() / v.len().max(1) as f64
    }

    /// The levels' centres and pooled spread, on logarithms.
    pub fn model(&self) -> (f64, f64, f64) {
        let (g, b) = (Self::logs(&self.good), Self::logs(&self.bad));
        let (mg, mb) = (Self::mean(&g), Self::mean(&b));
        let squares: f64 = g.iter().map(|x| (x - mg).powi(2)).chain(b.iter().map(|x| (x - mb).powi(2))).sum();
        let df = (g.len() + b.len()).saturating_sub(2).max(1) as f64;
        (mg, mb, (squares / df).sqrt().max(MIN_SPREAD))
    }

    /// The evidence that `values` are at the bad level rather than the good one (a log
    /// likelihood ratio: positive for bad).
    pub fn evidence(&self, values: &[f64]) -> f64 {
        let (g, b, s) = self.model();
        let (lo, hi) = (g.min(b), g.max(b));
        Self::logs(values)
            .into_iter()
            .map(|x| {
                let x = x.clamp(lo, hi);
                ((x - g).powi(2) - (x - b).powi(2)) / (2.0 * s * s)
            })
            .sum()
    }

    /// The verdict on a commit whose labs gave `values`.
    pub fn judge(&self, values: &[f64]) -> Verdict {
        let bound = ((1.0 - ERROR) / ERROR).ln();
        let e = self.evidence(values);
        if e >= bound {
            Verdict::Bad
        } else if e <= -bound {
            Verdict::Good
        } else {
            Verdict::Undecided
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(good: f64, bad: f64, noise: f64) -> Levels {
        let spread = |c: f64| vec![c * (1.0 - noise), c, c * (1.0 + noise)];
        Levels { good: spread(good), bad: spread(bad) }
    }

    #[test]
    fn a_lab_at_either_level_decides_when_the_levels_are_far_apart() {
        // +30% at 3% noise: about 9 spreads apart; one lab decides either way.
        let l = levels(2.0, 2.6, 0.03);
        assert_eq!(l.judge(&[2.62]), Verdict::Bad);
        assert_eq!(l.judge(&[1.97]), Verdict::Good);
        // Halfway: no evidence either way, however many labs.
        assert_eq!(l.judge(&[2.28, 2.28, 2.28]), Verdict::Undecided);
    }

    #[test]
    fn a_small_change_takes_more_labs_and_a_spike_counts_as_one_lab() {
        // +5% at 3% noise: about 1.7 spreads apart; each lab at a level adds 1.4 of the 4.6
        // needed.
        let l = levels(2.0, 2.1, 0.03);
        assert_eq!(l.judge(&[2.1]), Verdict::Undecided);
        assert_eq!(l.judge(&[2.1, 2.1, 2.1, 2.1]), Verdict::Bad);
        // A lab 3x the bad level is one lab at the bad level.
        assert_eq!(l.judge(&[6.3]), Verdict::Undecided);
        assert!((l.evidence(&[6.3]) - l.evidence(&[2.1])).abs() < 1e-9);
    }

    #[test]
    fn levels_that_agree_too_closely_are_given_the_least_spread() {
        let l = Levels { good: vec![2.0, 2.0, 2.0], bad: vec![2.02, 2.02, 2.02] };
        let (_, _, s) = l.model();
        assert_eq!(s, MIN_SPREAD);
        // 1% apart at 1% spread: one lab is 0.5 of the evidence needed.
        assert_eq!(l.judge(&[2.02]), Verdict::Undecided);
    }
}
