//! What two labs of one build differ by (the run-to-run floors), and what a tail needs to be
//! compared at all. A change within a floor cannot be told from a rerun: repeats within one lab
//! share its processes and their placement on the cores, so they do not see that variation
//! (nginx ran at 50 µs and 17 µs of CPU per request in some labs and at 100 µs and 40 µs in
//! others, every repeat of a lab alike). A service's own measured spread (`spread`, from
//! [`crate::spread::REPLACES_FLOOR`] labs) stands in for these fixed floors.

/// The kind of figure a floor is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Figure {
    /// A centre of the latencies (p50, the mean): in ms.
    Centre,
    /// p90: the centre's share, the tail's absolute part; in ms.
    Upper,
    /// p95 and beyond, the maximum: in ms.
    Tail,
    /// CPU per request: in µs.
    Cpu,
    /// A rate or a share of requests.
    Rate,
}

/// The floors' parts, from A/A pairs (bench/aa.sh; docs/DECISIONS.md has the figures): nginx
/// answering in 50-140 µs moved p50 by up to 76 µs past 3% between two labs of one build, and
/// p99 by up to 4.9 ms past 25% (a busy 2-core machine, pinned or not); a 10 ms origin's p50 by
/// under 1%.
pub const P50_FLOOR: f64 = 0.03;
pub const P50_FLOOR_MS: f64 = 0.100;
pub const P99_FLOOR: f64 = 0.25;
pub const P99_FLOOR_MS: f64 = 5.0;
pub const CPU_FLOOR: f64 = 0.30;
/// 30 µs while CPU was counted in 10 ms ticks; 15 µs since it is read from the processes' CPU
/// clocks: A/A pairs of nginx (16-26 µs a request) and the origin (43-51 µs) differed by up to
/// 43-60% in 95% of pairs (bench/gate.sh; docs/DECISIONS.md, "CPU in nanoseconds").
pub const CPU_FLOOR_US: f64 = 15.0;
pub const RATE_FLOOR: f64 = 0.03;

/// How far two labs of one build move apart, as a share, for a `figure` at `value` (in its
/// unit): a latency or a CPU per request moves by a share of itself and by an absolute amount
/// (scheduling, placement of the processes, connections and caches: tens of microseconds, which
/// is a third of a 130 µs answer and nothing of a 10 ms one).
pub fn run_to_run(figure: Figure, value: f64) -> f64 {
    let (share, abs) = match figure {
        Figure::Centre => (P50_FLOOR, P50_FLOOR_MS),
        Figure::Upper => (P50_FLOOR, P99_FLOOR_MS),
        Figure::Tail => (P99_FLOOR, P99_FLOOR_MS),
        Figure::Cpu => (CPU_FLOOR, CPU_FLOOR_US),
        Figure::Rate => (RATE_FLOOR, 0.0),
    };
    if abs > 0.0 && value > 0.0 {
        share + abs / value
    } else {
        share
    }
}

/// Whether `ratio` lies within a floor (a share), the same whichever side is named first: a
/// floor is a ratio, so 0.5 is as far below 1 as 2.0 is above it (|ln r| <= ln(1 + floor)).
pub fn within(ratio: f64, floor: f64) -> bool {
    ratio.is_finite() && ratio > 0.0 && ratio.ln().abs() <= (1.0 + floor).ln()
}

/// A tail's value rests on the requests past its quantile: with fewer than this many on a side,
/// a p99 is one or two requests' luck.
pub const MIN_BEYOND: u64 = 10;

/// What a tail at quantile `q` lacks with `requests` a side, if it lacks anything: the requests
/// past it, and the requests a side it needs for [`MIN_BEYOND`].
pub fn too_few_beyond(q: f64, requests: u64) -> Option<(u64, u64)> {
    let beyond = (requests as f64 * (1.0 - q)).floor() as u64;
    (beyond < MIN_BEYOND).then(|| (beyond, (MIN_BEYOND as f64 / (1.0 - q)).round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_has_a_share_and_an_absolute_part() {
        // 130 µs: 3% + 100 µs of 130 µs; 10 ms: 3% + 1%.
        assert!((run_to_run(Figure::Centre, 0.130) - (0.03 + 0.1 / 0.13)).abs() < 1e-12);
        assert!((run_to_run(Figure::Centre, 10.0) - 0.04).abs() < 1e-12);
        assert!((run_to_run(Figure::Upper, 50.0) - 0.13).abs() < 1e-12);
        assert!((run_to_run(Figure::Tail, 50.0) - 0.35).abs() < 1e-12);
        assert!((run_to_run(Figure::Cpu, 50.0) - 0.60).abs() < 1e-12);
        assert_eq!(run_to_run(Figure::Rate, 1000.0), 0.03);
        assert_eq!(run_to_run(Figure::Centre, 0.0), 0.03);
    }

    #[test]
    fn a_floor_gives_one_verdict_whichever_side_is_named_first() {
        // 12 ms against 31 ms with a floor of 67%: 0.388 is as far from 1 as 2.58.
        assert!(!within(12.0 / 31.0, 0.67) && !within(31.0 / 12.0, 0.67));
        assert!(within(1.0 / 1.6, 0.67) && within(1.6, 0.67));
        assert!(!within(f64::NAN, 0.5) && !within(0.0, 0.5));
    }

    #[test]
    fn a_tail_needs_ten_requests_past_its_quantile() {
        assert_eq!(too_few_beyond(0.99, 300), Some((3, 1000)));
        assert_eq!(too_few_beyond(0.99, 1000), None);
        assert_eq!(too_few_beyond(0.999, 5000), Some((5, 10000)));
        assert_eq!(too_few_beyond(0.95, 199), Some((9, 200)));
    }
}
