//! What a clause, a hypothesis or a comparison looks at: a step's metric, and how people write
//! its values.

use serde::{Deserialize, Serialize};
use stats::floors::{self, Figure};

use crate::measure::numbers::Numbers;

/// What a clause or a hypothesis looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    P50,
    P90,
    P95,
    P99,
    P999,
    Max,
    Mean,
    /// Share of successful requests (0..1).
    Success,
    /// Share of failed requests (0..1).
    Errors,
    /// Requests per second sent.
    Rps,
    /// Successful responses per second.
    Throughput,
    /// µs of CPU per successful request of the target's process tree, and of loadlab: sampled
    /// beside a step (once a second), not in its numbers, so compared (`lab compare`) but not a
    /// clause or a hypothesis.
    #[serde(rename = "target_cpu")]
    TargetCpu,
    #[serde(rename = "generator_cpu")]
    GeneratorCpu,
}

/// The metrics two labs are compared on (`lab compare`), in the order of its table.
pub const COMPARED: [Metric; 6] =
    [Metric::Throughput, Metric::P50, Metric::P99, Metric::Success, Metric::TargetCpu, Metric::GeneratorCpu];

impl Metric {
    pub fn parse(s: &str) -> Result<Metric, String> {
        Ok(match s {
            "p50" => Metric::P50,
            "p90" => Metric::P90,
            "p95" => Metric::P95,
            "p99" => Metric::P99,
            "p999" | "p99.9" => Metric::P999,
            "max" => Metric::Max,
            "mean" => Metric::Mean,
            "success" => Metric::Success,
            "errors" => Metric::Errors,
            "rps" | "rate" => Metric::Rps,
            "throughput" => Metric::Throughput,
            "target_cpu" => Metric::TargetCpu,
            "generator_cpu" => Metric::GeneratorCpu,
            _ => {
                return Err(format!(
                    "unknown metric {s:?} (p50, p90, p95, p99, p999, max, mean, success, errors, rps, throughput, \
                     target_cpu, generator_cpu)"
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P95 => "p95",
            Metric::P99 => "p99",
            Metric::P999 => "p999",
            Metric::Max => "max",
            Metric::Mean => "mean",
            Metric::Success => "success",
            Metric::Errors => "errors",
            Metric::Rps => "rps",
            Metric::Throughput => "throughput",
            Metric::TargetCpu => "target_cpu",
            Metric::GeneratorCpu => "generator_cpu",
        }
    }

    /// A metric of a step's numbers, which a clause or a hypothesis may name: refused, with why,
    /// for the CPU sampled beside the step.
    pub fn parse_of_step(s: &str) -> Result<Metric, String> {
        let m = Metric::parse(s)?;
        if m.is_sampled() {
            return Err(format!(
                "{s} (CPU per request) is sampled beside a step, not in its numbers: `lab compare` compares it"
            ));
        }
        Ok(m)
    }

    /// The kind of figure it is, for its run-to-run floor.
    pub fn figure(self) -> Figure {
        match self {
            Metric::P50 | Metric::Mean => Figure::Centre,
            Metric::P90 => Figure::Upper,
            Metric::P95 | Metric::P99 | Metric::P999 | Metric::Max => Figure::Tail,
            Metric::TargetCpu | Metric::GeneratorCpu => Figure::Cpu,
            Metric::Success | Metric::Errors | Metric::Rps | Metric::Throughput => Figure::Rate,
        }
    }

    /// How far two labs of one build move apart in this metric at `value` (its unit), as a share
    /// (`stats::floors::run_to_run`).
    pub fn floor(self, value: f64) -> f64 {
        floors::run_to_run(self.figure(), value)
    }

    /// The quantile a tail metric (p95 and beyond) reads.
    pub fn tail_quantile(self) -> Option<f64> {
        match self {
            Metric::P95 => Some(0.95),
            Metric::P99 => Some(0.99),
            Metric::P999 => Some(0.999),
            _ => None,
        }
    }

    /// Sampled beside a step (once a second), not in its [`Numbers`].
    pub fn is_sampled(self) -> bool {
        matches!(self, Metric::TargetCpu | Metric::GeneratorCpu)
    }

    /// A higher value is better.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Success | Metric::Rps | Metric::Throughput)
    }

    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Metric::P50 | Metric::P90 | Metric::P95 | Metric::P99 | Metric::P999 | Metric::Max | Metric::Mean
        )
    }

    /// A latency metric's value among `l` (ms); none for a metric that is not a latency.
    pub fn of_latencies(self, l: &crate::measure::numbers::Latencies) -> Option<f64> {
        Some(match self {
            Metric::P50 => l.p50,
            Metric::P90 => l.p90,
            Metric::P95 => l.p95,
            Metric::P99 => l.p99,
            Metric::P999 => l.p999,
            Metric::Max => l.max,
            Metric::Mean => l.mean,
            _ => return None,
        })
    }

    /// The metric's value in a step: latencies in ms (of all requests; corrected where a closed
    /// model hid a stall), shares 0..1, rates /s;
    /// NaN for what is sampled beside it ([`Metric::cpu_per_request`]).
    pub fn of(self, n: &Numbers) -> f64 {
        match self {
            Metric::P50 | Metric::P90 | Metric::P95 | Metric::P99 | Metric::P999 | Metric::Max | Metric::Mean => {
                self.of_latencies(n.judged_latency()).unwrap_or(f64::NAN)
            }
            Metric::Success => n.success,
            Metric::Errors => 1.0 - n.success,
            Metric::Rps => n.rate,
            Metric::Throughput => n.throughput,
            Metric::TargetCpu | Metric::GeneratorCpu => f64::NAN,
        }
    }

    /// µs of CPU per successful request from a process's CPU (% of one core) over a step. Per
    /// successful request, in profiles too: the work the target is there to do, so a target
    /// that fails half its requests fast is not read as cheaper (it was divided by every
    /// request in profiles, by successes here: two figures for one step).
    pub fn cpu_per_request(cpu_pct: Option<f64>, n: &Numbers) -> Option<f64> {
        cpu_pct.filter(|_| n.throughput > 0.0).map(|p| p / 100.0 / n.throughput * 1e6)
    }

    /// A value of this metric as people write it (`250.0ms`, `99.90%`, `1200.0/s`).
    pub fn show(self, v: f64) -> String {
        match self {
            _ if self.is_latency() => results::duration::show_ms(v),
            Metric::Success | Metric::Errors => format!("{:.2}%", v * 100.0),
            Metric::TargetCpu | Metric::GeneratorCpu => format!("{v:.1}µs/req"),
            _ => format!("{v:.1}/s"),
        }
    }
}
