//! The generator's own stalls: stretches of the schedule whose sends left late while a worker
//! was free to take them (the process was stopped, its core taken, its pacer starved). Late
//! sends that waited for a worker the target kept busy are not stalls: those are the target's.

use serde::{Deserialize, Serialize};

/// At most this many stalls are kept per run: a busy machine may stall hundreds of times by a
/// few milliseconds, and a results file stays small. Later ones fold into the last kept.
pub const MAX_STALLS: usize = 64;

/// One stall of the generator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// When the first late send was due, from the run's start (microseconds).
    pub at_us: u64,
    /// How late its latest send left, at most (microseconds): the stall's length.
    pub length_us: u64,
    /// Sends due in the stall that left late with a worker free.
    pub sends: u64,
}

impl Stall {
    /// The end of the stretch it delayed, from the run's start.
    pub fn end_us(&self) -> u64 {
        self.at_us.saturating_add(self.length_us)
    }

    /// For a reader: `2.0 s at 3.1 s`.
    pub fn text(&self) -> String {
        format!("{:.1} s at {:.1} s", self.length_us as f64 / 1e6, self.at_us as f64 / 1e6)
    }
}

/// Stalls of many threads or runs as one list: overlapping ones (the same pause seen by every
/// pacer thread) become one, longest length, sends summed. Sorted by start; at most
/// [`MAX_STALLS`].
pub fn merge_stalls(mut all: Vec<Stall>) -> Vec<Stall> {
    all.sort_by_key(|s| s.at_us);
    let mut out: Vec<Stall> = Vec::with_capacity(all.len().min(MAX_STALLS));
    for s in all {
        let full = out.len() >= MAX_STALLS;
        match out.last_mut() {
            Some(last) if s.at_us <= last.end_us() => {
                last.length_us = last.end_us().max(s.end_us()) - last.at_us;
                last.sends += s.sends;
            }
            // Past the bound: the sends are kept, the stretch is not.
            Some(last) if full => {
                last.length_us = last.length_us.max(s.length_us);
                last.sends += s.sends;
            }
            _ => out.push(s),
        }
    }
    out
}

/// The longest of `stalls`.
pub fn longest(stalls: &[Stall]) -> Option<&Stall> {
    stalls.iter().max_by_key(|s| s.length_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pause_seen_by_two_threads_is_one_stall() {
        let s = |at_us, length_us, sends| Stall { at_us, length_us, sends };
        let merged =
            merge_stalls(vec![s(3_100_000, 2_000_000, 2_000), s(3_100_400, 1_999_600, 2_000), s(9_000_000, 30_000, 3)]);
        assert_eq!(merged, vec![s(3_100_000, 2_000_000, 4_000), s(9_000_000, 30_000, 3)]);
        assert_eq!(merged[0].text(), "2.0 s at 3.1 s");
        assert_eq!(longest(&merged), Some(&merged[0]));
        // Many small ones keep the list bounded and lose no send.
        let many: Vec<_> = (0..200).map(|i| s(i * 100_000, 6_000, 1)).collect();
        let merged = merge_stalls(many);
        assert_eq!(merged.len(), MAX_STALLS);
        assert_eq!(merged.iter().map(|s| s.sends).sum::<u64>(), 200);
    }
}
