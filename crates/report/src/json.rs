//! vegeta's JSON report (same field names and units: durations in ns, success as 0..1), with
//! loadlab's extra fields beside them.

use results::interop::rfc3339_nanos;
use results::Metrics;
use serde_json::{json, Value};

use crate::text::quantile_us;

pub fn json_report(m: &Metrics) -> Value {
    let ns = |us: u64| us * 1000;
    let q = |h: &hdrhistogram::Histogram<u64>, p| ns(quantile_us(h, p));
    let max = |h: &hdrhistogram::Histogram<u64>| if h.is_empty() { 0 } else { ns(h.max()) };
    let mean = |total: u64| if m.requests == 0 { 0.0 } else { total as f64 / m.requests as f64 };
    let (earliest, latest, end) = if m.requests == 0 { (0, 0, 0) } else { (m.earliest_ns, m.latest_ns, m.end_ns) };
    let status: serde_json::Map<String, Value> = m.status.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    let mut out = json!({
        "latencies": {
            "total": m.latency_sum_us as u64 * 1000,
            "mean": (m.mean_latency_us() * 1000.0).round() as u64,
            "50th": ns(m.latency_quantile_us(0.5)),
            "90th": ns(m.latency_quantile_us(0.9)),
            "95th": ns(m.latency_quantile_us(0.95)),
            "99th": ns(m.latency_quantile_us(0.99)),
            "max": if m.requests == 0 { 0 } else { ns(m.latency_max_us) },
            "min": if m.requests == 0 { 0 } else { ns(m.latency_min_us) },
        },
        "bytes_in": { "total": m.bytes_in, "mean": mean(m.bytes_in) },
        "bytes_out": { "total": m.bytes_out, "mean": mean(m.bytes_out) },
        "earliest": rfc3339_nanos(earliest),
        "latest": rfc3339_nanos(latest),
        "end": rfc3339_nanos(end),
        "duration": m.attack_ns(),
        "wait": m.wait_ns(),
        "requests": m.requests,
        "rate": m.rate(),
        "throughput": m.throughput(),
        "success": m.success_ratio(),
        "status_codes": status,
        "errors": m.errors.keys().collect::<Vec<_>>(),
        "error_counts": m.errors,
        "schedule_lag": {
            "50th": q(&m.lag, 0.5),
            "99th": q(&m.lag, 0.99),
            "max": max(&m.lag),
            "late_sends": m.late_sends,
            "late_threshold": m.late_threshold_us() * 1000,
            "pace_tick": m.pace_tick_us * 1000,
            "pace_window": m.pace_window_us * 1000,
        },
        "replay": m.replay,
        "ttfb": {
            "50th": q(&m.ttfb, 0.5),
            "90th": q(&m.ttfb, 0.9),
            "95th": q(&m.ttfb, 0.95),
            "99th": q(&m.ttfb, 0.99),
            "max": max(&m.ttfb),
        },
        "connections": m.connections,
        "not_sent": m.not_sent,
        "asked_rate": m.asked_rate,
        "peak_in_flight": m.peak_in_flight,
        "in_flight_cap": m.in_flight_cap,
        "generator_limited": m.generator_limited().is_some(),
        "interrupted": m.interrupted,
        "incomplete_runs": m.incomplete,
    });
    if let Some(d) = m.decoded_in() {
        out["bytes_in_decoded"] = json!({ "total": d, "mean": mean(d) });
    }
    if let Some(s) = m.hidden_stall() {
        let c = &s.corrected;
        out["hidden_stall"] = json!({
            "text": s.text(),
            "at": s.quiet.at_us * 1000,
            "length": s.quiet.length_us * 1000,
            "would_have_waited": s.would_have_waited,
            "corrected_latencies": {
                "50th": q(c, 0.5), "90th": q(c, 0.9), "95th": q(c, 0.95), "99th": q(c, 0.99), "max": max(c),
            },
        });
    }
    if m.slow_connects > 0 || m.listen_overflows.is_some_and(|n| n > 0) {
        out["connect_waits"] = json!({
            "slow_connects": m.slow_connects,
            "longest": m.connect_max_us * 1000,
            "listen_overflows": m.listen_overflows,
            "text": m.accept_waits(),
        });
    }
    if !m.stalls.is_empty() {
        out["generator_stalls"] = json!(m.stalls);
    }
    out
}
