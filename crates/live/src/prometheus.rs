//! The Prometheus text exposition (version 0.0.4) of the live numbers: one set of series per run,
//! labelled with its name (and its shard, `I/N`, in a sharded attack, so the pods' series stay
//! apart without the scraper's labels); counters only go up within a run.

use std::fmt::Write;

use crate::state::{Buckets, RunState, State, BUCKETS};

/// A label value escaped as the format asks (backslash, double quote, newline).
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A run's labels: `run="NAME"`, and `,shard="I/N"` for a shard.
fn labels(r: &RunState) -> String {
    match &r.shard {
        Some(shard) => format!("run=\"{}\",shard=\"{}\"", esc(&r.name), esc(shard)),
        None => format!("run=\"{}\"", esc(&r.name)),
    }
}

fn histogram(out: &mut String, name: &str, labels: &str, b: &Buckets) {
    let mut cumulative = 0;
    for (le, n) in BUCKETS.iter().zip(b.counts) {
        cumulative += n;
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
    }
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", b.count);
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", b.sum_us as f64 / 1e6);
    let _ = writeln!(out, "{name}_count{{{labels}}} {}", b.count);
}

/// Writes one gauge or counter family: a value per run.
fn per_run(
    out: &mut String,
    runs: &[RunState],
    name: &str,
    kind: &str,
    help: &str,
    value: impl Fn(&RunState) -> Option<f64>,
) {
    let values: Vec<(String, f64)> = runs.iter().filter_map(|r| Some((labels(r), value(r)?))).collect();
    if values.is_empty() {
        return;
    }
    family(out, name, kind, help);
    for (labels, v) in values {
        let _ = writeln!(out, "{name}{{{labels}}} {v}");
    }
}

pub(crate) fn render(st: &State) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "loadlab_requests_total",
        "counter",
        "Requests answered or failed, by target and status (0: no response).",
    );
    for r in &st.runs {
        let labels = labels(r);
        for ((target, status), n) in &r.by_target_status {
            let target = esc(r.targets.get(*target as usize).map_or("", String::as_str));
            let _ = writeln!(out, "loadlab_requests_total{{{labels},target=\"{target}\",status=\"{status}\"}} {n}");
        }
    }
    family(
        &mut out,
        "loadlab_request_duration_seconds",
        "histogram",
        "Latency from the scheduled send to the end of the response.",
    );
    for r in &st.runs {
        histogram(&mut out, "loadlab_request_duration_seconds", &labels(r), &r.latency);
    }
    family(&mut out, "loadlab_schedule_lag_seconds", "histogram", "Delay from the scheduled send to the actual send.");
    for r in &st.runs {
        histogram(&mut out, "loadlab_schedule_lag_seconds", &labels(r), &r.lag);
    }
    let runs = &st.runs;
    per_run(&mut out, runs, "loadlab_requests_in_flight", "gauge", "Requests sent and not yet answered.", |r| {
        Some(r.in_flight() as f64)
    });
    per_run(
        &mut out,
        runs,
        "loadlab_requests_not_sent_total",
        "counter",
        "Scheduled requests that could not be sent by the schedule's end.",
        |r| Some(r.not_sent() as f64),
    );
    per_run(
        &mut out,
        runs,
        "loadlab_connections_opened_total",
        "counter",
        "Connections opened (TCP, TLS included).",
        |r| Some(r.connections as f64),
    );
    per_run(&mut out, runs, "loadlab_response_body_bytes_total", "counter", "Response body bytes received.", |r| {
        Some(r.bytes_in as f64)
    });
    per_run(&mut out, runs, "loadlab_request_body_bytes_total", "counter", "Request body bytes sent.", |r| {
        Some(r.bytes_out as f64)
    });
    per_run(&mut out, runs, "loadlab_asked_rate_requests_per_second", "gauge", "The open model's asked rate.", |r| {
        r.asked_rate
    });
    per_run(&mut out, runs, "loadlab_run_done", "gauge", "1 once the run has ended.", |r| {
        Some(f64::from(u8::from(r.end.is_some())))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(esc("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
