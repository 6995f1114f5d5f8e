//! Which target each request goes to: in turn, or by weight. Weighted targets follow one
//! precomputed cycle in smooth weighted round-robin order (nginx's upstream algorithm): over any
//! stretch of the cycle each target's share is within one request of its weight's, so the mix
//! holds over 10,000 requests to a fraction of a percent, not only on average as random draws
//! would (a 50/50 mix drawn at random is off by 0.5% one time in three). A request's target is a
//! function of its sequence number, so threads and shards share one mix; `--seed` moves where
//! in the cycle the run starts.

/// The longest cycle (the weights' sum after dividing by their greatest common divisor).
pub(crate) const MAX_CYCLE: u64 = 1_000_000;

/// Targets by sequence number.
#[derive(Clone, Debug)]
pub(crate) enum Mix {
    /// Every target in turn (all weights equal).
    RoundRobin(usize),
    /// One cycle of target indices, and where the run starts in it.
    Weighted { cycle: Vec<u32>, offset: u64 },
}

impl Mix {
    /// The mix of targets with these weights (each at least 1), starting where `seed` says.
    pub(crate) fn new(weights: &[u32], seed: u64) -> Result<Mix, String> {
        if weights.contains(&0) {
            return Err("a target's weight must be at least 1".into());
        }
        if weights.iter().all(|w| *w == weights[0]) {
            return Ok(Mix::RoundRobin(weights.len().max(1)));
        }
        let g = weights.iter().fold(0u64, |g, w| gcd(g, u64::from(*w)));
        let reduced: Vec<u64> = weights.iter().map(|w| u64::from(*w) / g).collect();
        let total: u64 = reduced.iter().sum();
        if total > MAX_CYCLE {
            return Err(format!(
                "the weights sum to {total} (after dividing by their common divisor): at most {MAX_CYCLE}"
            ));
        }
        // Smooth weighted round-robin: each turn every target gains its weight, the richest is
        // picked and pays the total.
        let mut credit = vec![0i64; reduced.len()];
        let mut cycle = Vec::with_capacity(total as usize);
        for _ in 0..total {
            for (c, w) in credit.iter_mut().zip(&reduced) {
                *c += *w as i64;
            }
            let (best, _) =
                credit.iter().enumerate().max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i))).expect("targets");
            credit[best] -= total as i64;
            cycle.push(best as u32);
        }
        Ok(Mix::Weighted { offset: splitmix64(seed) % total, cycle })
    }

    /// The target of request `seq`.
    #[inline]
    pub(crate) fn pick(&self, seq: u64) -> usize {
        match self {
            Mix::RoundRobin(n) => (seq % *n as u64) as usize,
            Mix::Weighted { cycle, offset } => cycle[((seq + offset) % cycle.len() as u64) as usize] as usize,
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A well-mixed 64-bit function of `x` (SplitMix64's finaliser).
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shares(mix: &Mix, n: usize, from: u64, count: u64) -> Vec<f64> {
        let mut c = vec![0u64; n];
        for s in from..from + count {
            c[mix.pick(s)] += 1;
        }
        c.iter().map(|x| *x as f64 / count as f64).collect()
    }

    #[test]
    fn equal_weights_take_turns() {
        let m = Mix::new(&[1, 1, 1], 7).unwrap();
        assert_eq!((0..6).map(|s| m.pick(s)).collect::<Vec<_>>(), [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn weights_hold_within_one_percent_over_ten_thousand_requests_anywhere() {
        for (weights, seed) in [(vec![3, 1], 0), (vec![70, 20, 9, 1], 42), (vec![997, 3], 5), (vec![1, 2, 3, 4, 5], 9)]
        {
            let m = Mix::new(&weights, seed).unwrap();
            let total: u32 = weights.iter().sum();
            for from in [0, 12_345, 1 << 40] {
                let got = shares(&m, weights.len(), from, 10_000);
                for (w, g) in weights.iter().zip(&got) {
                    let want = f64::from(*w) / f64::from(total);
                    assert!((g - want).abs() <= 0.01 * want.max(0.01), "{weights:?} from {from}: {got:?}");
                }
            }
        }
    }

    #[test]
    fn a_seed_moves_the_start_and_the_same_seed_gives_the_same_run() {
        let a = Mix::new(&[5, 3, 2], 1).unwrap();
        let b = Mix::new(&[5, 3, 2], 1).unwrap();
        let c = Mix::new(&[5, 3, 2], 2).unwrap();
        let run = |m: &Mix| (0..50).map(|s| m.pick(s)).collect::<Vec<_>>();
        assert_eq!(run(&a), run(&b));
        assert_ne!(run(&a), run(&c));
        // Smooth: the heaviest target never waits more than its share's gap.
        let seq = run(&a);
        assert!(seq.windows(3).all(|w| w.contains(&0)), "{seq:?}");
    }

    #[test]
    fn bad_weights_are_refused() {
        assert!(Mix::new(&[1, 0], 0).unwrap_err().contains("at least 1"));
        assert!(Mix::new(&[999_999, 1_000_000], 0).unwrap_err().contains("at most 1000000"));
        assert!(Mix::new(&[2_000_000, 4_000_000], 0).is_ok(), "divided by their gcd");
    }
}
