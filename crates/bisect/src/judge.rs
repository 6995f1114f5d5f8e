//! Whether a commit's labs are at the good level or at the bad one: Wald's sequential
//! probability ratio test between the two levels (`stats::sequential`), so that a commit is labbed again while its
//! labs cannot tell, and no more once they can.
//!
//! The levels are the labs of the good and the bad commit (at least [`LEVEL_LABS`] each, their
//! outliers left out as the history's gate leaves them out). On logarithms (a change is a
//! ratio), with the levels' pooled spread widened by [`SPREAD_MARGIN`] (at least [`MIN_SPREAD`]),
//! each lab adds `((x - g)^2 - (x - b)^2) / 2s^2` to the evidence for bad; the commit is bad
//! when the evidence reaches `ln((1 - β) / α)`, good when it falls to its negative, with
//! α = β = [`ERROR`]. A lab is first brought within the two levels (one lab past a level counts
//! as one lab at that level, not as many), and a lab more than [`OUTLIER_SPREADS`] spreads
//! beyond both is left out: a busy machine's spike is at neither level.

use stats::describe::mean;
use stats::outliers::without_outliers;
use stats::sequential::{decide, pooled_sd, Decision, TwoMeans};

/// Labs each end's level needs before the commits between are judged.
pub const LEVEL_LABS: usize = 5;

/// The most labs a commit is given; still undecided then, it is skipped as git bisect skips.
pub const MOST_LABS: usize = 8;

/// The chance of calling a good commit bad, and a bad commit good.
pub const ERROR: f64 = 0.005;

/// The least lab-to-lab spread assumed (on logarithms, 0.01 = 1%): a few labs that happen to
/// agree closely must not make one lab decisive.
pub const MIN_SPREAD: f64 = 0.01;

/// A lab further than this many spreads beyond both levels is at neither (a busy machine's
/// spike): it is left out, and the commit labbed again.
pub const OUTLIER_SPREADS: f64 = 3.0;

/// The levels' pooled spread is widened by this much before judging: from 5 + 5 labs it is an
/// estimate, and a pair of levels that happen to agree closely must not make labs decisive. Of
/// 1,000 simulated bisects of 15 commits at +10% with 3% noise, 1.25 took wrong commits from
/// 4.7% to 2.8% (docs/DECISIONS.md).
pub const SPREAD_MARGIN: f64 = 1.25;

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

    /// A level's labs without its outliers, as the history's gate leaves them out
    /// (`stats::outliers`), on logarithms.
    fn kept(v: &[f64]) -> Vec<f64> {
        let positive: Vec<f64> = v.iter().copied().filter(|x| *x > 0.0).collect();
        Self::logs(&without_outliers(&positive))
    }

    /// The levels' centres and pooled spread, on logarithms (outliers left out).
    pub fn model(&self) -> (f64, f64, f64) {
        let (g, b) = (Self::kept(&self.good), Self::kept(&self.bad));
        (mean(&g), mean(&b), (pooled_sd(&[&g, &b]) * SPREAD_MARGIN).max(MIN_SPREAD))
    }

    /// How far apart the levels are, in (widened) spreads: below about 3, a lab at either
    /// level is weak evidence and a bisect takes many labs a commit.
    pub fn separation(&self) -> f64 {
        let (g, b, s) = self.model();
        (b - g).abs() / s
    }

    /// The evidence that `values` are at the bad level rather than the good one (a log
    /// likelihood ratio: positive for bad). A lab far past the bad level is a spike, left out; a
    /// lab past the good level away from the bad one, however far, is as good as the good
    /// level (a commit 17% faster than the good end, on a machine that sped up during the
    /// search, was left out lab after lab and skipped).
    pub fn evidence(&self, values: &[f64]) -> f64 {
        let (g, b, s) = self.model();
        let (lo, hi) = (g.min(b), g.max(b));
        let levels = TwoMeans { a: g, b, sd: s };
        let beyond_good = |x: f64| if b > g { x < lo } else { x > hi };
        Self::logs(values)
            .into_iter()
            .filter(|x| beyond_good(*x) || (*x >= lo - OUTLIER_SPREADS * s && *x <= hi + OUTLIER_SPREADS * s))
            .map(|x| levels.llr(x.clamp(lo, hi)))
            .sum()
    }

    /// The verdict on a commit whose labs gave `values`.
    pub fn judge(&self, values: &[f64]) -> Verdict {
        match decide(self.evidence(values), ERROR, ERROR) {
            Decision::B => Verdict::Bad,
            Decision::A => Verdict::Good,
            Decision::Continue => Verdict::Undecided,
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
        // +5% at 3% noise: about 1.3 (widened) spreads apart; each lab at a level adds 0.85 of
        // the 5.3 needed.
        let l = levels(2.0, 2.1, 0.03);
        assert_eq!(l.judge(&[2.1]), Verdict::Undecided);
        assert_eq!(l.judge(&[2.1; 6]), Verdict::Undecided);
        assert_eq!(l.judge(&[2.1; 7]), Verdict::Bad);
        // A lab just past the bad level is one lab at it; a lab 1.5x the bad level (a spike) is
        // at neither and left out.
        assert!((l.evidence(&[2.15]) - l.evidence(&[2.1])).abs() < 1e-9);
        assert_eq!(l.evidence(&[3.15]), 0.0);
        // Far past the good level, away from the bad one: as good as the good level.
        assert_eq!(l.evidence(&[1.6]), l.evidence(&[1.9]));
        assert!(l.evidence(&[1.6]) < -0.8);
        let lower_is_worse = levels(2.1, 2.0, 0.03);
        assert_eq!(lower_is_worse.evidence(&[2.8]), lower_is_worse.evidence(&[2.2]));
        assert_eq!(lower_is_worse.evidence(&[1.4]), 0.0);
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
