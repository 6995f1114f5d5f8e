//! vegeta's `hist[...]` report: request counts per latency bucket, with a bar per bucket.

use std::io::{self, Write};

use results::Metrics;

use crate::tabwriter::align;
use results::duration::go_string;

/// Parses `[0,5ms,10ms]` into bucket bounds in microseconds (ascending, at least one).
pub fn parse_buckets(s: &str) -> Result<Vec<u64>, String> {
    let inner = s
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| format!("bad histogram buckets {s:?}: expected hist[0,5ms,10ms]"))?;
    let mut out = Vec::new();
    for part in inner.split(',') {
        let part = part.trim();
        let us = if part == "0" {
            0
        } else {
            results::duration::parse(part).map_err(|e| format!("bad histogram bucket: {e}"))?.as_micros() as u64
        };
        if out.last().is_some_and(|&last| us <= last) {
            return Err(format!("bad histogram buckets {s:?}: bounds must increase"));
        }
        out.push(us);
    }
    if out.is_empty() {
        return Err(format!("bad histogram buckets {s:?}"));
    }
    Ok(out)
}

pub fn write_hist(m: &Metrics, buckets: &[u64], out: &mut dyn Write) -> io::Result<()> {
    let h = &m.latency;
    let total = m.requests.max(1) as f64;
    let mut s = String::from("Bucket\t\t#\t%\tHistogram\n");
    for (i, &lo) in buckets.iter().enumerate() {
        let hi = buckets.get(i + 1).copied();
        // Latencies in [lo, hi): HDR counts by value, exact to its 3 significant digits.
        let count: u64 = h
            .iter_recorded()
            .filter(|v| {
                let x = v.value_iterated_to();
                x >= lo && hi.is_none_or(|hi| x < hi)
            })
            .map(|v| v.count_at_value())
            .sum();
        let ratio = count as f64 / total;
        let hi_text = hi.map_or("+Inf".to_owned(), |hi| go_string(hi * 1000));
        s += &format!(
            "[{},\t{}]\t{}\t{:.2}%\t{}\n",
            go_string(lo * 1000),
            hi_text,
            count,
            ratio * 100.0,
            "#".repeat((ratio * 75.0) as usize)
        );
    }
    out.write_all(align(&s).as_bytes())
}
