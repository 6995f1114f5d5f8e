//! One worker's share of an attack run by many (`--shard I/N`): the open model's hits I, I+N,
//! I+2N ... of the one global schedule, at their global times; the closed model's share of the
//! connections and of the request count. Each worker's records keep the global sequence numbers
//! and times, so the workers' files together read as one run.

use std::str::FromStr;

/// Worker `index` of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Default for Shard {
    fn default() -> Self {
        Shard { index: 0, count: 1 }
    }
}

/// Most workers one run may have.
pub const MAX_SHARDS: u64 = 10_000;

impl Shard {
    pub fn new(index: u64, count: u64) -> Result<Shard, String> {
        if count == 0 || count > MAX_SHARDS {
            return Err(format!("bad shard count {count} (1 to {MAX_SHARDS})"));
        }
        if index >= count {
            return Err(format!("bad shard {index}/{count}: the index counts from 0 to {}", count - 1));
        }
        Ok(Shard { index, count })
    }

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// How many of `total` hits (0-based, every `count`-th from `index`) are this worker's.
    pub fn hits_of(&self, total: u64) -> u64 {
        if self.index >= total {
            0
        } else {
            (total - self.index).div_ceil(self.count)
        }
    }

    /// This worker's share of `n` (connections, requests): an even split, the first `n % count`
    /// workers taking one more.
    pub fn share_of(&self, n: u64) -> u64 {
        n / self.count + u64::from(self.index < n % self.count)
    }

    /// The global sequence number of this worker's `local`-th request (closed model).
    pub fn global_seq(&self, local: u64) -> u64 {
        local * self.count + self.index
    }
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("bad shard {s:?} (expected I/N, e.g. 0/4)");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        Shard::new(i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::Schedule;
    use std::time::Duration;

    #[test]
    fn shards_split_every_schedule_into_disjoint_covering_shares() {
        let schedules = [
            Schedule::constant(1000.0, Duration::from_secs(3)),
            Schedule::ramp(10.0, 900.0, Duration::from_secs(2), Duration::from_secs(3)),
            Schedule::rate_steps(&[7.0, 333.0, 50.0], Duration::from_millis(700), None),
        ];
        for schedule in &schedules {
            let total = schedule.total_hits();
            for count in [1u64, 3, 4, 7, 50] {
                let mut seen = vec![0u8; total as usize];
                let mut sum = 0;
                for index in 0..count {
                    let shard = Shard::new(index, count).unwrap();
                    let mine: Vec<u64> = (index..total).step_by(count as usize).collect();
                    assert_eq!(mine.len() as u64, shard.hits_of(total), "{index}/{count} of {total}");
                    sum += shard.hits_of(total);
                    for n in mine {
                        seen[n as usize] += 1;
                    }
                }
                assert_eq!(sum, total);
                assert!(seen.iter().all(|s| *s == 1), "every hit sent once, by one worker");
            }
        }
    }

    #[test]
    fn uneven_divisions_spread_the_remainder() {
        let shares: Vec<u64> = (0..4).map(|i| Shard::new(i, 4).unwrap().share_of(10)).collect();
        assert_eq!(shares, [3, 3, 2, 2]);
        let shares: Vec<u64> = (0..3).map(|i| Shard::new(i, 3).unwrap().share_of(2)).collect();
        assert_eq!(shares, [1, 1, 0]);
        // Closed-model sequence numbers stay distinct across workers.
        let mut seqs: Vec<u64> =
            (0..3).flat_map(|i| (0..5).map(move |l| Shard::new(i, 3).unwrap().global_seq(l))).collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (0..15).collect::<Vec<_>>());
    }

    #[test]
    fn shards_parse_and_refuse_what_makes_no_sense() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        assert_eq!("2/4".parse::<Shard>().unwrap().to_string(), "2/4");
        for bad in ["4/4", "0/0", "x/2", "1", "-1/3", "0/100000"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
