//! What a history admits. A history is shared: every CI job of a team writes into it and every
//! teammate reads it, so a lab is held to what a lab can measure before any of it is kept, and
//! one that is not is refused in one line naming the field. What was written before these
//! rules, or around them, is made harmless where it is read ([`plain`], the check's level).

use lab::Lab;

/// Every name in a history is whatever a CI job was given: every text read from a history
/// passes through [`plain`].
pub use results::text::{plain, reorders_or_controls};

/// Why a lab cannot enter a history, naming the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The longest latency a lab can measure: a week, in ms.
pub(crate) const MAX_LATENCY_MS: f64 = 7.0 * 86_400_000.0;
/// The most requests a second a lab can send or see.
pub(crate) const MAX_RATE: f64 = 1e9;
/// The most CPU a process can use: 65,536 cores, in % of one.
pub(crate) const MAX_CPU_PCT: f64 = 6_553_600.0;
/// The most CPU a request can take, in µs (a thousand seconds).
pub(crate) const MAX_CPU_PER_REQUEST_US: f64 = 1e9;
/// The earliest start a lab may have: 2000-01-01.
pub(crate) const EARLIEST_START: i64 = 946_684_800;
/// How far ahead of this machine's clock a lab may have started (another machine's clock).
pub(crate) const CLOCK_AHEAD_S: i64 = 86_400;
/// The longest name (plan, target, load, machine, branch...), in characters.
pub(crate) const MAX_NAME: usize = 1_000;
/// The longest path, commit and tags, in characters.
pub(crate) const MAX_PATH: usize = 4_096;
pub(crate) const MAX_COMMIT: usize = 200;
pub(crate) const MAX_TAGS: usize = 10_000;

/// What of `lab`'s steps a history would read is within what a lab can measure: requests at
/// least the successes, shares within 0-100%, latencies, rates and CPU not negative, not
/// infinite and not past what can be measured (a figure a lab did not get is null, and allowed).
pub(crate) fn lab(lab: &Lab) -> Result<(), Refused> {
    for (i, s) in lab.steps.iter().enumerate() {
        let at = |field: &str| format!("steps[{i}] ({}).{field}", s.id);
        let n = &s.numbers;
        if n.successes > n.requests {
            return Err(Refused(format!(
                "{}: {} successes of {} requests (more successes than requests)",
                at("numbers.successes"),
                n.successes,
                n.requests
            )));
        }
        if n.success.is_finite() || n.requests > 0 {
            within(&at("numbers.success"), n.success, 0.0, 1.0, "a share, 0 to 1")?;
            let share = n.successes as f64 / n.requests.max(1) as f64;
            if n.requests > 0 && (n.success - share).abs() > 1e-6 {
                return Err(Refused(format!(
                    "{}: {} where successes / requests is {share}",
                    at("numbers.success"),
                    n.success
                )));
            }
        }
        for (name, l) in [("latency", &n.latency), ("ok_latency", &n.ok_latency)]
            .into_iter()
            .chain(n.corrected_latency.as_ref().map(|l| ("corrected_latency", l)))
        {
            for (q, v) in [
                ("mean", l.mean),
                ("p50", l.p50),
                ("p90", l.p90),
                ("p95", l.p95),
                ("p99", l.p99),
                ("p999", l.p999),
                ("max", l.max),
            ] {
                measured(&at(&format!("numbers.{name}.{q}")), v, MAX_LATENCY_MS, "ms")?;
            }
        }
        for (name, v) in [("rate", n.rate), ("throughput", n.throughput), ("sent_rate", n.sent_rate)] {
            measured(&at(&format!("numbers.{name}")), v, MAX_RATE, "requests a second")?;
        }
        for (name, v) in [("target_cpu_pct", s.target_cpu_pct), ("generator_cpu_pct", s.generator_cpu_pct)] {
            if let Some(v) = v {
                within(&at(name), v, 0.0, MAX_CPU_PCT, "% of one core")?;
            }
        }
        if let Some(speed) = &s.speed {
            let max = crate::figures::MAX_SPEED_US;
            within(&at("speed.target_us"), speed.target_us, 0.0, max, "µs")?;
            for (k, c) in speed.cpus.iter().enumerate() {
                within(&at(&format!("speed.cpus[{k}].us")), c.us, 0.0, max, "µs")?;
            }
        }
        let counted = s.not_counted().is_none() && s.down.is_none();
        if counted && n.requests == 0 && !lab.interrupted {
            return Err(Refused(format!("{}: a counted step of no request", at("numbers.requests"))));
        }
    }
    let now = chrono::Utc::now().timestamp();
    // `as` saturates: a time past i64 is refused below as any far future is.
    let started = lab.started_unix_s as i64;
    if !(EARLIEST_START..=now.saturating_add(CLOCK_AHEAD_S)).contains(&started) {
        return Err(Refused(format!(
            "started_unix_s: {} is not a time a lab ran at (before 2000, or over a day ahead of this clock)",
            lab.started_unix_s
        )));
    }
    Ok(())
}

/// The largest value a figure of `metric` can have, and its unit.
pub(crate) fn range(metric: &str) -> (f64, &'static str) {
    if crate::figures::is_machine_share(metric) {
        return (100.0, "% of the machine");
    }
    if metric == crate::figures::MACHINE_SPEED {
        return (crate::figures::MAX_SPEED_US, "µs");
    }
    match lab::Metric::parse(metric) {
        Ok(m) if m.is_latency() => (MAX_LATENCY_MS, "ms"),
        Ok(lab::Metric::Success | lab::Metric::Errors) => (1.0, "a share, 0 to 1"),
        Ok(lab::Metric::Rps | lab::Metric::Throughput) => (MAX_RATE, "requests a second"),
        _ => (MAX_CPU_PER_REQUEST_US, "µs a request"),
    }
}

/// A text of a history: no control or reordering character, at most `max` characters.
pub(crate) fn name(field: &str, text: &str, max: usize) -> Result<(), Refused> {
    if let Some(c) = text.chars().find(|c| reorders_or_controls(*c)) {
        return Err(Refused(format!(
            "{field}: holds the control character {:?} (a terminal or a page would act on it)",
            c
        )));
    }
    if text.chars().count() > max {
        return Err(Refused(format!("{field}: over {max} characters")));
    }
    Ok(())
}

/// A figure that may be missing (null, read as NaN), else within 0 and `max`.
fn measured(field: &str, v: f64, max: f64, unit: &str) -> Result<(), Refused> {
    if v.is_nan() {
        Ok(())
    } else {
        within(field, v, 0.0, max, unit)
    }
}

pub(crate) fn within(field: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), Refused> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(Refused(format!("{field}: {v} is not a value a lab can measure ({unit}, {lo} to {hi})")))
    }
}
