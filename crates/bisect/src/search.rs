//! The halving, as git bisect does it: commits in order (the good one before the first, the bad
//! one last), each untested, good, bad or skipped; the next to try is the untested one nearest
//! the middle of the range still in doubt, and the answer is the first bad commit once no
//! untested one is left before it.

/// What is known of a commit.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    Untested,
    Good,
    Bad,
    /// Not judged, and why (its build failed, its target did not start, its labs could not
    /// tell): git bisect's skip.
    Skipped(String),
}

/// The answer, once there is one.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// The first bad commit.
    First(usize),
    /// Skipped commits leave these (in order, the last one bad) in doubt.
    Range(Vec<usize>),
}

/// The commits after the good one, up to and including the bad one.
#[derive(Clone, Debug)]
pub struct Search {
    pub states: Vec<State>,
}

impl Search {
    /// `n` commits, the last of them (the bad end) bad.
    pub fn new(n: usize) -> Search {
        let mut states = vec![State::Untested; n];
        if let Some(last) = states.last_mut() {
            *last = State::Bad;
        }
        Search { states }
    }

    /// The range in doubt: the last good commit before the first bad one (none: the good end)
    /// and that first bad one.
    fn bounds(&self) -> (Option<usize>, usize) {
        let hi = self.states.iter().position(|s| *s == State::Bad).unwrap_or(self.states.len().saturating_sub(1));
        let lo = self.states[..hi].iter().rposition(|s| *s == State::Good);
        (lo, hi)
    }

    /// The commit to try next, none when the answer is known.
    pub fn next(&self) -> Option<usize> {
        let (lo, hi) = self.bounds();
        let start = lo.map_or(0, |l| l + 1);
        // The middle of the range, counting the good end as position -1.
        let middle = (start + hi).saturating_sub(1) / 2;
        (start..hi).filter(|&i| self.states[i] == State::Untested).min_by_key(|&i| i.abs_diff(middle))
    }

    /// The answer, once [`Search::next`] has none to try.
    pub fn answer(&self) -> Answer {
        let (lo, hi) = self.bounds();
        let start = lo.map_or(0, |l| l + 1);
        if start == hi {
            Answer::First(hi)
        } else {
            Answer::Range((start..=hi).collect())
        }
    }

    /// Commits still in doubt (untested ones between the bounds).
    pub fn left(&self) -> usize {
        let (lo, hi) = self.bounds();
        (lo.map_or(0, |l| l + 1)..hi).filter(|&i| self.states[i] == State::Untested).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search over `n` commits whose first bad one is `first`, `broken` skipped;
    /// returns the answer and the commits tried in order.
    fn bisect(n: usize, first: usize, broken: &[usize]) -> (Answer, Vec<usize>) {
        let mut s = Search::new(n);
        let mut tried = Vec::new();
        while let Some(i) = s.next() {
            tried.push(i);
            s.states[i] = if broken.contains(&i) {
                State::Skipped("build failed".into())
            } else if i >= first {
                State::Bad
            } else {
                State::Good
            };
        }
        (s.answer(), tried)
    }

    #[test]
    fn it_halves_as_git_bisect_does() {
        for n in 1..40 {
            for first in 0..n {
                let (answer, tried) = bisect(n, first, &[]);
                assert_eq!(answer, Answer::First(first), "n {n} first {first}");
                let most = (n as f64).log2().ceil() as usize;
                assert!(tried.len() <= most, "n {n} first {first}: {tried:?}");
            }
        }
        assert_eq!(bisect(11, 6, &[]).1, vec![4, 7, 5, 6]);
    }

    #[test]
    fn a_skipped_commit_is_stepped_around_and_named_in_a_range_when_it_must_be() {
        // Broken at 3, the change at 6: found all the same.
        assert_eq!(bisect(11, 6, &[3]).0, Answer::First(6));
        // Broken just before the change: either could be first.
        assert_eq!(bisect(11, 6, &[5]).0, Answer::Range(vec![5, 6]));
        // The middle broken: the search steps beside it.
        let (answer, tried) = bisect(11, 2, &[4]);
        assert_eq!(answer, Answer::First(2));
        assert_eq!(tried[..2], [4, 3]);
    }
}
