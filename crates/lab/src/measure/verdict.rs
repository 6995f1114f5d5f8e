//! Verdicts: SLO clauses per step (`p99 < 1s`, `success >= 99.9%`), and hypotheses over repeats
//! (supported, rejected or inconclusive, with the effect and its interval).

use serde::{Deserialize, Serialize};

use crate::measure::estimate::Comparison;
pub(crate) use crate::measure::metric::Metric;
use crate::measure::numbers::{Latencies, Numbers};
use results::duration::show_ms;

/// A step's line for the console and the live view: its numbers, and what they say of the SLO.
/// A step the generator could not send says only that: its numbers are not the target's.
/// `left_out`: why the step does not count beside its numbers (its target's host was busy);
/// `unmeasured`: why its target's CPU is not a measurement.
pub(crate) fn step_line(slo: &[Clause], n: &Numbers, left_out: Option<&str>, unmeasured: Option<&str>) -> String {
    if let Some(why) = uncounted(slo, n) {
        return format!("generator-limited: {why} (not counted)");
    }
    let cpu = unmeasured.map_or(String::new(), |why| format!("  (target CPU not measured: {why})"));
    if let Some(why) = left_out {
        let line = step_line(&[], n, None, None);
        return format!("{line}: not counted: {why}{cpu}");
    }
    let mut broken: Vec<String> = Clause::broken(slo, n).iter().map(|c| c.text()).collect();
    broken.extend(unanswered(n).filter(|_| !slo.is_empty()));
    let verdict = if slo.is_empty() {
        String::new()
    } else if broken.is_empty() {
        "  SLO held".to_owned()
    } else {
        format!("  SLO broken: {}", broken.join(", "))
    };
    let busy = if n.starved() { format!("  (machine busy: {})", n.busy_text()) } else { String::new() };
    let p99 = match (&n.hidden_stall, &n.corrected_latency) {
        (Some(why), Some(c)) => format!("{} ({} as measured; {why})", show_ms(c.p99), show_ms(n.latency.p99)),
        _ => show_ms(n.latency.p99),
    };
    let waits = n.accept_waits.as_ref().map_or(String::new(), |w| format!("  ({w})"));
    format!("{:.1} req/s, p99 {p99}, success {:.2}%{verdict}{busy}{waits}{cpu}", n.rate, n.success * 100.0)
}

/// Why a counted step measured no latency at all, if it did not: the generator was not the
/// limit, yet every send of the counted time waited for the target (its slow answers kept every
/// in-flight request busy). A p99 of nothing held once, for a target answering in 2 s with
/// 1,000 sends unsent: a broken SLO, the target's.
fn unanswered(n: &Numbers) -> Option<String> {
    (n.requests == 0 && n.not_sent > 0).then(|| {
        format!(
            "no request answered in the counted time: {} sends waited for the target (its answers kept every \
             in-flight request busy)",
            n.not_sent
        )
    })
}

/// Why a step does not count for or against its target, or None when it does: the generator
/// could not send what was asked, or it broke the SLO while the generator's threads waited for
/// a CPU (the machine was busy: the late responses may have been late in the generator). A step
/// that held the SLO on a busy machine counts: the target held even so.
///
/// Both ways: a generator that fell behind still leaves a step that counts against its target
/// when what the requests it did send took at the target alone (from the actual send:
/// `Numbers::service_latency`) already breaks a latency clause. The requests not sent could only
/// have been later, so that clause failed whatever was not sent (1 s answers against `p99 <
/// 100ms`).
pub(crate) fn uncounted(slo: &[Clause], n: &Numbers) -> Option<String> {
    if let Some(t) = n.generator_text() {
        if (!n.starved() || beyond_the_generator(slo, n)) && !Clause::broken_at_target(slo, n).is_empty() {
            return None;
        }
        return Some(t);
    }
    if n.starved() && !Clause::broken(slo, n).is_empty() && !beyond_the_generator(slo, n) {
        return Some(format!("the SLO broke while the machine was busy: {}", n.busy_text()));
    }
    None
}

/// How many times the generator's own delays (its sends' lag p99, at least a millisecond) a
/// latency at the target must be before a busy machine cannot explain it: a generator whose
/// threads waited for a CPU 13% of the time is late by milliseconds, not by the second a target
/// past its knee takes.
pub(crate) const BEYOND_THE_GENERATOR: f64 = 10.0;

/// Whether a latency clause is broken by what the requests took at the target alone (from
/// their actual sends), by [`BEYOND_THE_GENERATOR`] times the generator's own delays or more:
/// then the target broke it, busy machine or not (a target past its knee, whose load is what
/// made the machine busy).
pub(crate) fn beyond_the_generator(slo: &[Clause], n: &Numbers) -> bool {
    let own = n.lag_p99.max(1.0);
    let Some(service) = &n.service_latency else { return false };
    Clause::broken_at_target(slo, n)
        .iter()
        .any(|c| latency_of(service, c.metric).is_some_and(|v| v >= BEYOND_THE_GENERATOR * own))
}

/// A percentile clause's latency among `l` (a mean is no request's time, so none for it).
fn latency_of(l: &Latencies, metric: Metric) -> Option<f64> {
    if metric == Metric::Mean {
        return None;
    }
    metric.of_latencies(l)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    #[serde(rename = "<")]
    Lt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = ">=")]
    Ge,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }

    fn holds(self, v: f64, limit: f64) -> bool {
        match self {
            Op::Lt => v < limit,
            Op::Le => v <= limit,
            Op::Gt => v > limit,
            Op::Ge => v >= limit,
        }
    }
}

/// One SLO clause: `metric op limit` (limit in the metric's unit: ms, 0..1, /s).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Clause {
    pub metric: Metric,
    pub op: Op,
    pub limit: f64,
}

impl Clause {
    /// `key` is the metric, `text` the condition: `"< 1s"`, `">= 99.9%"`, `"> 1000"`.
    pub fn parse(key: &str, text: &str) -> Result<Clause, String> {
        let metric = Metric::parse_of_step(key)?;
        let t = text.trim();
        let (op, rest) = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)]
            .iter()
            .find_map(|(p, op)| t.strip_prefix(p).map(|r| (*op, r.trim())))
            .ok_or_else(|| format!("{text:?}: expected a comparison like \"< 1s\" or \">= 99.9%\""))?;
        let limit = if metric.is_latency() {
            results::duration::parse(rest)?.as_secs_f64() * 1000.0
        } else if matches!(metric, Metric::Success | Metric::Errors) {
            parse_percent(rest)
                .filter(|p| (0.0..=1.0).contains(p))
                .ok_or_else(|| format!("{rest:?} is not a percentage like \"99.9%\""))?
        } else {
            rest.trim_end_matches("/s").trim().parse::<f64>().map_err(|_| format!("{rest:?} is not a rate"))?
        };
        Ok(Clause { metric, op, limit })
    }

    /// Clauses written on one line, as `--slo` takes them: `p99<500ms,success>=99.9%`.
    pub fn parse_list(s: &str) -> Result<Vec<Clause>, String> {
        s.split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(|c| {
                let at = c.find(['<', '>']).ok_or_else(|| format!("{c:?}: expected METRIC<VALUE or METRIC>=VALUE"))?;
                Clause::parse(c[..at].trim(), &c[at..]).map_err(|e| format!("{c}: {e}"))
            })
            .collect()
    }

    /// `p99 < 1.000s`, as the report names it.
    pub fn text(&self) -> String {
        format!("{} {} {}", self.metric.name(), self.op.text(), self.metric.show(self.limit))
    }

    pub fn holds(&self, n: &Numbers) -> bool {
        self.op.holds(self.metric.of(n), self.limit)
    }

    /// Every clause that `n` breaks, in the plan's order.
    pub fn broken<'a>(clauses: &'a [Clause], n: &Numbers) -> Vec<&'a Clause> {
        clauses.iter().filter(|c| !c.holds(n)).collect()
    }

    /// The latency ceilings (`p99 < 100ms`) that the target's own time on the requests sent
    /// breaks: a lower bound of every request's latency, the unsent included.
    pub fn broken_at_target<'a>(clauses: &'a [Clause], n: &Numbers) -> Vec<&'a Clause> {
        // After a stall of the generator, its catch-up burst queues at the target: the target
        // is judged by what it did before the stall (none: nothing to blame it for). A burst
        // of a stall's sends is served in about the stall's length by a target that keeps up,
        // so a latency ten times the longest stall is the target's all the same (a target past
        // its knee, seconds behind, after a busy machine held the generator 25 ms).
        let longest = results::longest_stall(&n.stalls).map_or(0, |s| s.length_us);
        let stalled = longest >= results::GENERATOR_LAG_P99_US;
        let breaks = |c: &Clause, l: &Option<Latencies>, floor_ms: f64| {
            l.as_ref()
                .and_then(|l| latency_of(l, c.metric))
                .is_some_and(|v| v.is_finite() && !c.op.holds(v, c.limit) && v >= floor_ms)
        };
        let past_the_burst = BEYOND_THE_GENERATOR * longest as f64 / 1000.0;
        clauses
            .iter()
            .filter(|c| matches!(c.op, Op::Lt | Op::Le))
            .filter(|c| match stalled {
                false => breaks(c, &n.service_latency, 0.0),
                true => breaks(c, &n.service_before_stall, 0.0) || breaks(c, &n.service_latency, past_the_burst),
            })
            .collect()
    }
}

/// A step's SLO verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum SloVerdict {
    /// No SLO in the plan.
    None,
    Pass,
    /// The clauses it broke, with the values measured.
    Fail {
        broken: Vec<String>,
    },
    /// No repeat counted: the generator could not send what was asked (why).
    GeneratorLimited {
        why: String,
    },
    /// The target had exited before the step (when, how).
    TargetDown {
        why: String,
    },
    /// No repeat counted, for a reason that is not the generator's: the target's host was busy
    /// with a neighbour or robbed by its hypervisor (why).
    NotCounted {
        why: String,
    },
}

impl SloVerdict {
    /// The verdict of a load point over its repeats' numbers: each clause on the median of the
    /// repeats that count (see [`uncounted`]).
    pub fn of(clauses: &[Clause], repeats: &[&Numbers]) -> SloVerdict {
        let none: Vec<Option<&str>> = vec![None; repeats.len()];
        SloVerdict::of_left_out(clauses, repeats, &none)
    }

    /// As [`SloVerdict::of`], where `left_out[i]` says why repeat `i` does not count for a reason
    /// its numbers do not show (its host was busy): judged on the others, and on none when none
    /// is left, named for what left them out.
    pub fn of_left_out(clauses: &[Clause], repeats: &[&Numbers], left_out: &[Option<&str>]) -> SloVerdict {
        if clauses.is_empty() {
            return SloVerdict::None;
        }
        let counted: Vec<&Numbers> = repeats
            .iter()
            .zip(left_out)
            .filter(|(n, why)| uncounted(clauses, n).is_none() && why.is_none())
            .map(|(n, _)| *n)
            .collect();
        if counted.is_empty() {
            if let Some(why) = repeats.iter().find_map(|n| uncounted(clauses, n)) {
                return SloVerdict::GeneratorLimited { why };
            }
            return match left_out.iter().flatten().next() {
                Some(why) => SloVerdict::NotCounted { why: (*why).to_owned() },
                None => SloVerdict::GeneratorLimited { why: "no step ran".into() },
            };
        }
        let mut broken = Vec::new();
        for c in clauses {
            let values: Vec<f64> = counted.iter().map(|n| c.metric.of(n)).collect();
            let median = stats::describe::median(&values);
            if !c.op.holds(median, c.limit) {
                let of =
                    if counted.len() > 1 { format!(", median of {} repeats", counted.len()) } else { String::new() };
                broken.push(format!("{} (measured {}{of})", c.text(), c.metric.show(median)));
            }
        }
        let unanswered: Vec<String> = counted.iter().filter_map(|n| unanswered(n)).collect();
        if unanswered.len() * 2 > counted.len() {
            broken.push(unanswered[0].clone());
        }
        if broken.is_empty() {
            SloVerdict::Pass
        } else {
            SloVerdict::Fail { broken }
        }
    }

    pub fn failed(&self) -> bool {
        matches!(self, SloVerdict::Fail { .. })
    }

    /// The verdict could not be reached: nothing here says whether the target holds.
    pub fn inconclusive(&self) -> bool {
        matches!(
            self,
            SloVerdict::GeneratorLimited { .. } | SloVerdict::TargetDown { .. } | SloVerdict::NotCounted { .. }
        )
    }

    pub fn label(&self) -> String {
        match self {
            SloVerdict::None => "-".into(),
            SloVerdict::Pass => "pass".into(),
            SloVerdict::Fail { broken } => format!("FAIL: {}", broken.join("; ")),
            SloVerdict::GeneratorLimited { why } => format!("generator-limited: {why} (not counted)"),
            SloVerdict::TargetDown { why } => format!("target down: {why}"),
            SloVerdict::NotCounted { why } => format!("not counted: {why}"),
        }
    }
}

/// A hypothesis's verdict at one load point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finding {
    Supported,
    Rejected,
    Inconclusive,
}

impl Finding {
    /// From the comparison subject / other: supported when significant in the claimed direction,
    /// rejected when significant the other way.
    pub fn of(c: &Comparison, lower: bool) -> Finding {
        if !c.significant {
            return Finding::Inconclusive;
        }
        if (c.ratio < 1.0) == lower {
            Finding::Supported
        } else {
            Finding::Rejected
        }
    }

    /// Over several load points: supported when supported somewhere and rejected nowhere.
    pub fn overall(points: &[Finding]) -> Finding {
        if points.contains(&Finding::Rejected) {
            Finding::Rejected
        } else if points.contains(&Finding::Supported) {
            Finding::Supported
        } else {
            Finding::Inconclusive
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Finding::Supported => "supported",
            Finding::Rejected => "rejected",
            Finding::Inconclusive => "inconclusive",
        }
    }
}

/// `"5%"` as 0.05, `"0.05"` as 0.05.
pub fn parse_percent(s: &str) -> Option<f64> {
    let s = s.trim();
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().ok().map(|p| p / 100.0),
        None => s.parse().ok(),
    };
    // `NaN` and `inf` parse as numbers; no share is either.
    v.filter(|v: &f64| v.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::numbers::Latencies;

    fn numbers(p99_ms: f64, success: f64, limited: bool) -> Numbers {
        Numbers {
            success,
            latency: Latencies { p99: p99_ms, ..Default::default() },
            generator_limited: limited,
            ..Default::default()
        }
    }

    #[test]
    fn clauses_parse_in_their_units() {
        assert_eq!(Clause::parse("p99", "< 1s").unwrap(), Clause { metric: Metric::P99, op: Op::Lt, limit: 1000.0 });
        assert!((Clause::parse("success", ">= 99.9%").unwrap().limit - 0.999).abs() < 1e-12);
        assert_eq!(Clause::parse("rps", "> 1000/s").unwrap().limit, 1000.0);
        for (k, v) in [("p99", "1s"), ("p99", "< 10"), ("success", ">= 120%"), ("p42", "< 1s"), ("rps", "> fast")] {
            assert!(Clause::parse(k, v).is_err(), "{k} {v}");
        }
    }

    #[test]
    fn slo_verdicts_judge_the_median_and_spare_generator_limited_steps() {
        let slo = [Clause::parse("p99", "< 500ms").unwrap(), Clause::parse("success", ">= 99%").unwrap()];
        let ok = numbers(120.0, 1.0, false);
        let slow = numbers(800.0, 1.0, false);
        assert_eq!(SloVerdict::of(&slo, &[&ok, &ok]), SloVerdict::Pass);
        // One slow repeat of three: the median holds, and the verdict says what it judged.
        assert_eq!(SloVerdict::of(&slo, &[&ok, &slow, &ok]), SloVerdict::Pass);
        let v = SloVerdict::of(&slo, &[&slow, &ok, &slow]);
        assert_eq!(
            v,
            SloVerdict::Fail { broken: vec!["p99 < 500.0ms (measured 800.0ms, median of 3 repeats)".into()] }
        );
        assert!(v.failed());
        let one = SloVerdict::of(&slo, &[&slow]);
        assert_eq!(one, SloVerdict::Fail { broken: vec!["p99 < 500.0ms (measured 800.0ms)".into()] });
        // A step the generator could not send: 0 req/s, 0% success, never a failure.
        let unsent = Numbers { asked_rate: Some(2000.0), not_sent: 4000, ..numbers(0.0, 0.0, true) };
        let v = SloVerdict::of(&slo, &[&unsent]);
        assert_eq!(v, SloVerdict::GeneratorLimited { why: "sent 0.0/s of 2000.0/s asked, 4000 never sent".into() });
        assert!(v.inconclusive() && !v.failed());
        assert_eq!(
            step_line(&slo, &unsent, None, None),
            "generator-limited: sent 0.0/s of 2000.0/s asked, 4000 never sent (not counted)"
        );
        // Sent in full, nothing answered: the sends waited for a slow target: its failure.
        let starved = Numbers { asked_rate: Some(200.0), not_sent: 1000, ..numbers(0.0, 0.0, false) };
        let v = SloVerdict::of(&slo[..1], &[&starved]);
        assert!(v.failed(), "{v:?}");
        assert!(step_line(&slo[..1], &starved, None, None).contains("SLO broken: no request answered"));
        // A generator-limited repeat beside counted ones: judged on those that count.
        assert_eq!(SloVerdict::of(&slo, &[&ok, &unsent]), SloVerdict::Pass);
        assert_eq!(SloVerdict::of(&[], &[&slow]), SloVerdict::None);
    }

    #[test]
    fn a_busy_machine_makes_a_broken_slo_inconclusive_but_not_a_held_one() {
        let slo = [Clause::parse("p99", "< 500ms").unwrap()];
        let busy = |p99| Numbers { cpu_wait: Some(0.4), machine_idle: Some(0.01), ..numbers(p99, 1.0, false) };
        let v = SloVerdict::of(&slo, &[&busy(900.0)]);
        assert_eq!(
            v,
            SloVerdict::GeneratorLimited {
                why: "the SLO broke while the machine was busy: its threads waited for a CPU 40% of the time; \
                      the machine was 1% idle"
                    .into()
            }
        );
        assert_eq!(SloVerdict::of(&slo, &[&busy(100.0)]), SloVerdict::Pass);
        assert!(step_line(&slo, &busy(100.0), None, None).ends_with(
            "SLO held  (machine busy: its threads waited for a CPU 40% of the time; the machine was 1% idle)"
        ));
        // A little waiting is normal.
        let calm = Numbers { cpu_wait: Some(0.02), ..numbers(900.0, 1.0, false) };
        assert!(SloVerdict::of(&slo, &[&calm]).failed());
        // A target past its knee on the same machine: its load made the machine busy (13% of
        // waiting), its requests took a second at the target alone from their sends, the
        // generator's sends were late by 4 ms at p99. The target's, not the generator's.
        let at_target = |p99: f64| Latencies { p99, ..Default::default() };
        let knee = Numbers {
            cpu_wait: Some(0.13),
            machine_idle: Some(0.5),
            lag_p99: 4.0,
            service_latency: Some(at_target(1005.0)),
            ..numbers(1005.0, 1.0, false)
        };
        assert!(SloVerdict::of(&slo, &[&knee]).failed(), "{:?}", SloVerdict::of(&slo, &[&knee]));
        // The same p99 with the generator's own sends late by 200 ms: the busy machine can explain it.
        let late = Numbers { lag_p99: 200.0, ..knee.clone() };
        assert!(SloVerdict::of(&slo, &[&late]).inconclusive());
    }

    #[test]
    fn findings() {
        let basis = crate::measure::estimate::Basis::Repeats;
        let faster =
            Comparison { ratio: 0.8, ci: Some((0.7, 0.9)), p: Some(0.01), significant: true, basis, note: None };
        let same =
            Comparison { ratio: 0.98, ci: Some((0.9, 1.1)), p: Some(0.6), significant: false, basis, note: None };
        assert_eq!(Finding::of(&faster, true), Finding::Supported);
        assert_eq!(Finding::of(&faster, false), Finding::Rejected);
        assert_eq!(Finding::of(&same, true), Finding::Inconclusive);
        use Finding::*;
        assert_eq!(Finding::overall(&[Supported, Inconclusive]), Supported);
        assert_eq!(Finding::overall(&[Supported, Rejected]), Rejected);
        assert_eq!(Finding::overall(&[Inconclusive]), Inconclusive);
    }
}
