//! A million spans at the lab's receiver, by hand (bench/spans-flood.sh runs it under a memory
//! cap): N requests' client spans of a registered run posted by the exporter (the receiver keeps
//! its 250,000 and refuses the rest, counted), then N spans of a run it never sent (counted and
//! dropped). Prints the counts, the time, and the process's peak resident memory.
//!
//!   cargo run --release -p spans --example flood -- [N]

use std::time::Instant;

use results::trace::TraceKey;
use results::{Consumer, Entry, Record, RunEnd, RunHeader, RunPlan};

fn flood(url: &str, key: TraceKey, n: u64) -> spans::Exported {
    let mut exporter = spans::ClientSpans::new(spans::ExportTarget::new(url).unwrap(), spans::Pace::AfterLoad);
    let outcome = exporter.outcome();
    let header = RunHeader {
        start_unix_ns: 1_700_000_000_000_000_000,
        targets: vec!["GET http://127.0.0.1:9/".into()],
        run_plan: Some(RunPlan { trace: Some(key.text()), ..Default::default() }),
        ..Default::default()
    };
    exporter.start(&header).unwrap();
    for seq in 0..n {
        let r = Record { seq, scheduled_us: seq, latency_us: 1000, ttfb_us: 900, status: 200, ..Default::default() };
        exporter.record(&Entry { record: &r, target: Some(&header.targets[0]), error: None }).unwrap();
    }
    exporter.end(&RunEnd::default()).unwrap();
    let o = outcome.lock().unwrap().clone();
    o
}

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb =
        status.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()?.parse().ok());
    kb.map_or(f64::NAN, |kb: f64| kb / 1024.0)
}

fn main() {
    let n: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1_000_000);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let receiver = runtime.block_on(spans::Receiver::start()).unwrap();
    let ours = TraceKey::from_seed(1);
    receiver.collector.register(ours);
    let url = receiver.endpoint();
    let began = Instant::now();
    let kept = flood(&url, ours, n);
    println!("{n} spans of the lab's own run: {} ({:.1} s)", kept.line(), began.elapsed().as_secs_f64());
    let began = Instant::now();
    let stranger = flood(&url, TraceKey::from_seed(2), n);
    println!("{n} spans of a run it never sent: {} ({:.1} s)", stranger.line(), began.elapsed().as_secs_f64());
    let c = receiver.collector.counts();
    println!(
        "receiver: {} exports, {} spans received, {} kept, {} over the lab's bound, {} of unknown traces",
        c.exports, c.received, c.kept, c.over_lab, c.unknown_trace
    );
    println!("peak resident memory: {:.0} MB", peak_rss_mb());
    assert_eq!(c.kept, spans::MAX_PER_LAB as u64);
    assert_eq!(c.received, 2 * n);
}
