//! The open model's schedule: when each request is due. A pure function of the hit number, so
//! it is table-tested and never drifts: hit `n` is due when the integral of the rate reaches `n`.
//!
//! The pacer that follows it (see `pacer`) wakes, sends every hit whose time has come (each
//! stamped with its own scheduled time, not the wake time), and sleeps until the next one is due.
//! If it wakes late it catches up at once: late hits go out immediately, still measured from
//! their scheduled times, so a stall shows in the latencies instead of silently lowering the rate.

use std::time::Duration;

/// A rate, parsed from `N`, `N/s`, `N/m`, `N/h` or `N/<duration>` (vegeta's forms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate(pub f64);

impl std::str::FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        let (n, per) = match s.split_once('/') {
            Some((n, per)) => (n, per),
            None => (s, "s"),
        };
        let n: f64 = n.trim().parse().map_err(|_| format!("bad rate {s:?}: expected N, N/s or N/m"))?;
        if !n.is_finite() || n < 0.0 {
            return Err(format!("bad rate {s:?}: must be a positive number"));
        }
        let per = match per.trim() {
            "s" => Duration::from_secs(1),
            "m" => Duration::from_secs(60),
            "h" => Duration::from_secs(3600),
            other => {
                let other = if other.starts_with(|c: char| c.is_ascii_digit()) {
                    other.to_owned()
                } else {
                    format!("1{other}")
                };
                results::duration::parse(&other).map_err(|e| format!("bad rate {s:?}: {e}"))?
            }
        };
        if per.is_zero() {
            return Err(format!("bad rate {s:?}: zero period"));
        }
        let rate = n / per.as_secs_f64();
        check_rate(rate).map(Rate).map_err(|e| format!("bad rate {s:?}: {e}"))
    }
}

/// The highest rate accepted: ten times what one core of any HTTP generator can send, and low
/// enough that the schedule's arithmetic stays exact.
pub const MAX_RATE: f64 = 10_000_000.0;

/// The one bound on a rate, for every front end (flags, plans, the demo, a capacity search):
/// `r` per second, above 0 and at most [`MAX_RATE`]; else why not.
pub fn check_rate(r: f64) -> Result<f64, String> {
    if r.is_finite() && r > 0.0 && r <= MAX_RATE {
        Ok(r)
    } else {
        Err(format!("{r} is out of range (above 0, at most {MAX_RATE} per second)"))
    }
}

/// A rate as a user writes it: `R` (constant), `A..B` (a linear ramp) or `R,R,...@STEP` (steps).
/// The one grammar of `attack --rate`/`--rate-steps` and of lab plans.
#[derive(Clone, Debug, PartialEq)]
pub enum RateSpec {
    Constant(f64),
    Ramp(f64, f64),
    Steps(Vec<f64>, Duration),
}

impl std::str::FromStr for RateSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<RateSpec, String> {
        let rate = |r: &str| r.trim().parse::<Rate>().map(|r| r.0);
        if let Some((rates, step)) = s.split_once('@') {
            let rates = rates.split(',').map(rate).collect::<Result<Vec<_>, _>>()?;
            let step = results::duration::parse(step)?;
            if step.is_zero() {
                return Err(format!("bad rate steps {s:?}: the step must be longer than 0"));
            }
            return Ok(RateSpec::Steps(rates, step));
        }
        if let Some((from, to)) = s.split_once("..") {
            return Ok(RateSpec::Ramp(rate(from)?, rate(to)?));
        }
        Ok(RateSpec::Constant(rate(s)?))
    }
}

/// As a user would write it back (`700`, `100..2000`, `400,800@60s`).
impl std::fmt::Display for RateSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RateSpec::Constant(r) => write!(f, "{r}"),
            RateSpec::Ramp(a, b) => write!(f, "{a}..{b}"),
            RateSpec::Steps(rates, step) => {
                let rates: Vec<String> = rates.iter().map(f64::to_string).collect();
                write!(f, "{}@{}ms", rates.join(","), step.as_millis())
            }
        }
    }
}

impl RateSpec {
    /// The schedule for `duration` (a ramp takes `ramp` to climb, then holds; steps may run
    /// without a duration). Refuses a schedule that would send nothing or never end.
    pub fn schedule(&self, duration: Option<Duration>, ramp: Option<Duration>) -> Result<Schedule, String> {
        let schedule = match self {
            RateSpec::Constant(r) => {
                if ramp.is_some() {
                    return Err("a ramp length needs a rate A..B".into());
                }
                Schedule::constant(*r, duration.ok_or("a rate needs a duration (every attack is bounded)")?)
            }
            RateSpec::Ramp(from, to) => {
                let ramp = ramp.ok_or("a rate A..B needs a ramp length")?;
                Schedule::ramp(*from, *to, ramp, duration.unwrap_or(ramp))
            }
            RateSpec::Steps(rates, step) => Schedule::rate_steps(rates, *step, duration),
        };
        if schedule.total_hits() == 0 {
            return Err("this schedule sends no request".into());
        }
        Ok(schedule)
    }
}

/// A stretch of the schedule whose rate moves linearly from `from` to `to`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Segment {
    start: f64,
    len: f64,
    from: f64,
    to: f64,
    /// Hits due before the segment starts (fractional).
    hits_before: f64,
}

impl Segment {
    fn hits(&self) -> f64 {
        (self.from + self.to) / 2.0 * self.len
    }
}

/// Rates over time. Build with [`Schedule::constant`], [`Schedule::ramp`] or [`Schedule::steps`].
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    segments: Vec<Segment>,
    total: u64,
    /// Built by [`Schedule::steps`]: each step's length and the rates asked in turn.
    steps: Option<(Duration, Vec<f64>)>,
}

impl Schedule {
    fn from_pieces(pieces: &[(f64, f64, f64)]) -> Schedule {
        let mut segments = Vec::new();
        let (mut start, mut hits_before) = (0.0, 0.0);
        for &(len, from, to) in pieces {
            if len <= 0.0 {
                continue;
            }
            let s = Segment { start, len, from, to, hits_before };
            hits_before += s.hits();
            start += len;
            segments.push(s);
        }
        // Hits n = 0, 1, ... with due time < end: ceil(total), robust to float noise.
        let rounded = hits_before.round();
        let total = if (hits_before - rounded).abs() < 1e-6 { rounded } else { hits_before.ceil() };
        Schedule { segments, total: total.max(0.0) as u64, steps: None }
    }

    /// `rate` per second for `duration`.
    pub fn constant(rate: f64, duration: Duration) -> Schedule {
        Schedule::from_pieces(&[(duration.as_secs_f64(), rate, rate)])
    }

    /// From `from` to `to` per second linearly over `ramp`, then `to` until `duration` ends.
    pub fn ramp(from: f64, to: f64, ramp: Duration, duration: Duration) -> Schedule {
        let ramp_s = ramp.as_secs_f64().min(duration.as_secs_f64());
        let to_at_end = if ramp.as_secs_f64() > 0.0 { from + (to - from) * ramp_s / ramp.as_secs_f64() } else { to };
        Schedule::from_pieces(&[(ramp_s, from, to_at_end), (duration.as_secs_f64() - ramp_s, to, to)])
    }

    /// Each rate in turn for `step`, cut at `limit` when given.
    pub fn rate_steps(rates: &[f64], step: Duration, limit: Option<Duration>) -> Schedule {
        let mut pieces = Vec::new();
        let mut left = limit.map_or(f64::INFINITY, |d| d.as_secs_f64());
        for &r in rates {
            let len = step.as_secs_f64().min(left);
            pieces.push((len, r, r));
            left -= len;
        }
        Schedule { steps: Some((step, rates.to_vec())), ..Schedule::from_pieces(&pieces) }
    }

    /// The one rate of a constant schedule.
    pub fn constant_rate(&self) -> Option<f64> {
        match &self.segments[..] {
            [only] if only.from == only.to => Some(only.from),
            _ => None,
        }
    }

    /// A schedule in steps: each step's length and its rates.
    pub fn rate_steps_asked(&self) -> Option<(Duration, &[f64])> {
        self.steps.as_ref().map(|(step, rates)| (*step, rates.as_slice()))
    }

    /// The highest rate anywhere in the schedule, per second.
    pub fn peak_rate(&self) -> f64 {
        self.segments.iter().map(|s| s.from.max(s.to)).fold(0.0, f64::max)
    }

    /// How many requests the whole schedule sends.
    pub fn total_hits(&self) -> u64 {
        self.total
    }

    /// The schedule's length.
    pub fn duration(&self) -> Duration {
        self.segments.last().map_or(Duration::ZERO, |s| Duration::from_secs_f64(s.start + s.len))
    }

    /// When hit `n` (0-based) is due, from the start; `None` past the end.
    pub fn due(&self, n: u64) -> Option<Duration> {
        if n >= self.total {
            return None;
        }
        let n = n as f64;
        let i = self.segments.partition_point(|s| s.hits_before <= n).max(1) - 1;
        let s = self.segments.get(i)?;
        let d = n - s.hits_before;
        // Solve from*x + (to-from)/(2 len) * x^2 = d in the stable form 2d / (b + sqrt(b^2 + 4ad)).
        let a = (s.to - s.from) / (2.0 * s.len);
        let b = s.from;
        let disc = (b * b + 4.0 * a * d).max(0.0);
        let denom = b + disc.sqrt();
        let x = if d == 0.0 {
            0.0
        } else if denom > 0.0 {
            2.0 * d / denom
        } else {
            s.len
        };
        Some(Duration::from_secs_f64(s.start + x.min(s.len)))
    }

    /// How many hits are due by `elapsed` (those with due time <= elapsed).
    pub fn due_by(&self, elapsed: Duration) -> u64 {
        let t = elapsed.as_secs_f64();
        let Some(s) = self.segments.iter().rev().find(|s| s.start <= t) else { return 0 };
        let x = (t - s.start).min(s.len);
        let a = (s.to - s.from) / (2.0 * s.len);
        let h = s.hits_before + s.from * x + a * x * x;
        // Hit n is due at h == n, so about floor(h) + 1 hits are due; `due` is the reference,
        // so settle float noise against it.
        let mut n = ((h.max(0.0)).floor() as u64 + 1).min(self.total);
        while n < self.total && self.due(n).is_some_and(|d| d <= elapsed) {
            n += 1;
        }
        while n > 0 && self.due(n - 1).is_some_and(|d| d > elapsed) {
            n -= 1;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn one_bound_holds_every_rate() {
        assert_eq!(check_rate(MAX_RATE), Ok(MAX_RATE));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, MAX_RATE * 1.5] {
            assert!(check_rate(bad).unwrap_err().contains("out of range"), "{bad}");
        }
        // A written rate past it says what was written and why.
        let e = "20000000/s".parse::<Rate>().unwrap_err();
        assert!(e.starts_with("bad rate \"20000000/s\": 20000000 is out of range"), "{e}");
    }

    #[test]
    fn rates_parse_like_vegeta() {
        let cases =
            [("700", 700.0), ("700/s", 700.0), ("60/m", 1.0), ("3600/h", 1.0), ("5/100ms", 50.0), ("1/2s", 0.5)];
        for (s, want) in cases {
            let got: Rate = s.parse().unwrap();
            assert!((got.0 - want).abs() < 1e-9, "{s}: {got:?}");
        }
        for bad in ["", "x", "-1", "10/0s", "10/parsec"] {
            assert!(bad.parse::<Rate>().is_err(), "{bad}");
        }
    }

    #[test]
    fn constant_rate_is_exact() {
        let s = Schedule::constant(500.0, secs(4.0));
        assert_eq!(s.total_hits(), 2000);
        assert_eq!(s.due(0), Some(Duration::ZERO));
        assert_eq!(s.due(1), Some(secs(0.002)));
        assert_eq!(s.due(1999), Some(secs(3.998)));
        assert_eq!(s.due(2000), None);
        assert_eq!(Schedule::constant(3.0, secs(1.0)).total_hits(), 3);
        assert_eq!(Schedule::constant(2.5, secs(1.0)).total_hits(), 3);
        assert_eq!(Schedule::constant(700.0, secs(600.0)).total_hits(), 420_000);
    }

    #[test]
    fn due_by_counts_hits_at_or_before() {
        let s = Schedule::constant(1000.0, secs(1.0));
        let table = [(0.0, 1), (0.0005, 1), (0.001, 2), (0.0999, 100), (0.5, 501), (0.999, 1000), (5.0, 1000)];
        for (t, want) in table {
            assert_eq!(s.due_by(secs(t)), want, "t={t}");
        }
    }

    #[test]
    fn ramp_integrates_the_rate() {
        // 100 -> 2000 over 60 s: (100 + 2000) / 2 * 60 = 63000 hits.
        let s = Schedule::ramp(100.0, 2000.0, secs(60.0), secs(60.0));
        assert_eq!(s.total_hits(), 63_000);
        // Halfway, 30 s at a mean rate of 575/s: 17250 hits done.
        assert_eq!(s.due_by(secs(30.0)), 17_251);
        // Instantaneous rate near the end is close to 2000/s.
        let gap = s.due(62_999).unwrap() - s.due(62_998).unwrap();
        assert!((gap.as_secs_f64() - 1.0 / 2000.0).abs() < 2e-6, "{gap:?}");
        // A hold after the ramp.
        let held = Schedule::ramp(0.0, 100.0, secs(10.0), secs(20.0));
        assert_eq!(held.total_hits(), 500 + 1000);
        assert_eq!(held.due(1), Some(secs((2.0 * 1.0 / 10.0f64).sqrt())));
    }

    #[test]
    fn steps_follow_each_other() {
        let s = Schedule::rate_steps(&[400.0, 800.0, 1000.0], secs(60.0), None);
        assert_eq!(s.total_hits(), (400 + 800 + 1000) * 60);
        assert_eq!(s.duration(), secs(180.0));
        assert_eq!(s.due(24_000), Some(secs(60.0)));
        assert_eq!(s.due(24_001), Some(secs(60.0 + 1.0 / 800.0)));
        let cut = Schedule::rate_steps(&[400.0, 800.0], secs(60.0), Some(secs(90.0)));
        assert_eq!(cut.total_hits(), 400 * 60 + 800 * 30);
    }

    #[test]
    fn due_is_monotonic_and_consistent_with_due_by() {
        let s = Schedule::rate_steps(&[7.0, 0.0, 13.0], secs(3.0), None);
        let mut last = Duration::ZERO;
        for n in 0..s.total_hits() {
            let d = s.due(n).unwrap();
            assert!(d >= last);
            assert!(s.due_by(d) > n, "hit {n} at {d:?} not counted");
            last = d;
        }
        assert_eq!(s.total_hits(), 21 + 39);
    }

    #[test]
    fn rate_specs_parse_and_schedule() {
        let secs = Duration::from_secs;
        assert_eq!("700".parse(), Ok(RateSpec::Constant(700.0)));
        assert_eq!("60/m".parse(), Ok(RateSpec::Constant(1.0)));
        assert_eq!("100..2000".parse(), Ok(RateSpec::Ramp(100.0, 2000.0)));
        assert_eq!("400, 800,1000@60s".parse(), Ok(RateSpec::Steps(vec![400.0, 800.0, 1000.0], secs(60))));
        for bad in ["1e300", "-5", "x", "1..", "400@0s", "400@", "400,@1s"] {
            assert!(bad.parse::<RateSpec>().is_err(), "{bad}");
        }
        let c = RateSpec::Constant(100.0);
        assert_eq!(c.schedule(Some(secs(2)), None).unwrap().total_hits(), 200);
        assert!(c.schedule(None, None).unwrap_err().contains("duration"));
        assert!(c.schedule(Some(secs(2)), Some(secs(1))).is_err());
        let r = RateSpec::Ramp(0.0, 100.0);
        assert_eq!(r.schedule(None, Some(secs(2))).unwrap().total_hits(), 100);
        assert!(r.schedule(Some(secs(2)), None).is_err());
        let st = RateSpec::Steps(vec![10.0, 20.0], secs(1));
        assert_eq!(st.schedule(None, None).unwrap().total_hits(), 30);
        assert!(RateSpec::Constant(0.0).schedule(Some(secs(1)), None).unwrap_err().contains("no request"));
    }
}
