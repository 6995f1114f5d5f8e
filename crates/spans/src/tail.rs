//! Where the tail's time went: the slowest 1% of a step's counted requests against its median
//! ones, each request's time shared out by its own spans. A span's self time is its length less
//! the part its children cover (within it); what no span covers is the network and the queues
//! before the server's first span and after its last (`uncovered`). Each figure is the mean over
//! the group's requests that have spans, a span name a request lacks counting as zero.

use std::collections::BTreeMap;

use results::trace::{trace_id_text, TraceKey};
use serde::{Deserialize, Serialize};

use crate::store::{Collector, Kept};

/// The share of requests the tail is, in %: the slowest 1%, at least one.
pub const TAIL: usize = 1;

/// The median band: requests ranked between these shares of the latency order, in %.
pub const MEDIAN_BAND: (usize, usize) = (45, 55);

/// Trace ids listed for the slowest requests.
pub const LISTED: usize = 10;

/// One span name's time in a group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NameTime {
    pub name: String,
    /// Mean self time per request, µs.
    pub self_us: f64,
}

/// A group of requests (the slowest, or the median ones) and where their time went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub requests: usize,
    /// Of them, those with at least one span received.
    pub with_spans: usize,
    /// Mean latency (the client's, from the schedule), µs, of those with spans.
    pub latency_us: f64,
    /// Mean self time per span name, largest first.
    pub names: Vec<NameTime>,
    /// Mean time no span covers, µs.
    pub uncovered_us: f64,
    /// Trace ids of its requests, slowest first (at most [`LISTED`]).
    pub trace_ids: Vec<String>,
}

/// Where a step's tail went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tail {
    pub slowest: Group,
    pub median: Group,
    /// The slowest request with spans, drawn as a waterfall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waterfall: Option<Waterfall>,
}

/// One request's spans in the order they began: where each began after the request's first
/// span, how long it lasted, and how deep it sits in the request's span tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Waterfall {
    pub trace_id: String,
    /// The request's latency as the client saw it, µs.
    pub latency_us: f64,
    pub spans: Vec<Bar>,
}

/// A span of a waterfall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bar {
    pub name: String,
    /// After the request's first span began, µs.
    pub start_us: f64,
    pub length_us: f64,
    /// 0 for a span whose parent is not among the request's spans (the server's own), 1 for
    /// its children, and so on.
    pub depth: usize,
}

/// `spans` (one request's) as a waterfall.
fn waterfall(spans: &[Kept], trace_id: String, latency_us: f64) -> Waterfall {
    let first = spans.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let depth = |s: &Kept| {
        // Up the parents among the request's own spans; a request holds at most
        // MAX_PER_REQUEST spans, so a cycle (a hostile export) ends there.
        let (mut d, mut at) = (0usize, s);
        while let Some(p) = spans.iter().find(|p| p.span_id == at.parent && p.span_id != at.span_id) {
            d += 1;
            at = p;
            if d >= crate::store::MAX_PER_REQUEST {
                break;
            }
        }
        d
    };
    let mut bars: Vec<Bar> = spans
        .iter()
        .map(|s| Bar {
            name: s.name.to_string(),
            start_us: (s.start_ns - first) as f64 / 1000.0,
            length_us: (s.end_ns - s.start_ns) as f64 / 1000.0,
            depth: depth(s),
        })
        .collect();
    bars.sort_by(|a, b| a.start_us.total_cmp(&b.start_us).then(a.depth.cmp(&b.depth)).then(a.name.cmp(&b.name)));
    Waterfall { trace_id, latency_us, spans: bars }
}

impl Tail {
    /// The name whose mean self time grew most from the median requests to the slowest, and
    /// by how much (µs).
    pub fn grew_most(&self) -> Option<(&str, f64)> {
        let median: BTreeMap<&str, f64> = self.median.names.iter().map(|n| (n.name.as_str(), n.self_us)).collect();
        self.slowest
            .names
            .iter()
            .map(|n| (n.name.as_str(), n.self_us - median.get(n.name.as_str()).copied().unwrap_or(0.0)))
            .max_by(|a, b| a.1.total_cmp(&b.1))
    }
}

/// The length of the union of `intervals` (ns), each clipped to `within`.
fn covered(intervals: &mut [(u64, u64)], within: (u64, u64)) -> u64 {
    for i in intervals.iter_mut() {
        *i = (i.0.clamp(within.0, within.1), i.1.clamp(within.0, within.1));
    }
    intervals.sort_unstable();
    let (mut total, mut end) = (0u64, 0u64);
    for &(s, e) in intervals.iter() {
        let s = s.max(end);
        if e > s {
            total += e - s;
            end = e;
        }
    }
    total
}

/// Each span name's self time in one request's spans (ns), and the time its spans cover.
fn shares(spans: &[Kept]) -> (BTreeMap<&str, u64>, u64) {
    let mut by_name: BTreeMap<&str, u64> = BTreeMap::new();
    for s in spans {
        let mut children: Vec<(u64, u64)> = spans
            .iter()
            .filter(|c| c.parent == s.span_id && c.span_id != s.span_id)
            .map(|c| (c.start_ns, c.end_ns))
            .collect();
        let own = s.end_ns - s.start_ns;
        let under = covered(&mut children, (s.start_ns, s.end_ns));
        *by_name.entry(&*s.name).or_insert(0) += own - under;
    }
    let mut all: Vec<(u64, u64)> = spans.iter().map(|s| (s.start_ns, s.end_ns)).collect();
    let first = all.iter().map(|i| i.0).min().unwrap_or(0);
    let last = all.iter().map(|i| i.1).max().unwrap_or(0);
    let cover = covered(&mut all, (first, last));
    (by_name, cover)
}

fn group(members: &[(u64, u64)], key: TraceKey, collector: &Collector) -> Group {
    let mut names: BTreeMap<String, f64> = BTreeMap::new();
    let (mut with, mut latency, mut uncovered) = (0usize, 0.0, 0.0);
    for &(seq, latency_us) in members {
        let spans = collector.of_request(key, seq);
        if spans.is_empty() {
            continue;
        }
        with += 1;
        let (by_name, cover) = shares(&spans);
        for (name, ns) in by_name {
            *names.entry(name.to_owned()).or_insert(0.0) += ns as f64 / 1000.0;
        }
        latency += latency_us as f64;
        uncovered += (latency_us as f64 - cover as f64 / 1000.0).max(0.0);
    }
    let per = |v: f64| if with == 0 { 0.0 } else { v / with as f64 };
    let mut names: Vec<NameTime> = names.into_iter().map(|(name, t)| NameTime { name, self_us: per(t) }).collect();
    names.sort_by(|a, b| b.self_us.total_cmp(&a.self_us).then_with(|| a.name.cmp(&b.name)));
    Group {
        requests: members.len(),
        with_spans: with,
        latency_us: per(latency),
        names,
        uncovered_us: per(uncovered),
        trace_ids: members.iter().take(LISTED).map(|(seq, _)| trace_id_text(key.trace_id(*seq))).collect(),
    }
}

/// Requests as (number, latency µs).
type Requests = Vec<(u64, u64)>;

/// `requests` as the slowest 1% (slowest first) and the median band.
fn split(requests: &[(u64, u64)]) -> (Requests, Requests) {
    if requests.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut by_latency = requests.to_vec();
    // Slowest first; ties by number, so a run reads the same every time.
    by_latency.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let n = by_latency.len();
    let tail_n = (n * TAIL).div_ceil(100).clamp(1, n);
    // The median band, counted from the fastest.
    let lo = (n * MEDIAN_BAND.0 / 100).min(n - 1);
    let hi = (n * MEDIAN_BAND.1).div_ceil(100).clamp(lo + 1, n);
    let fastest_first: Vec<(u64, u64)> = by_latency.iter().rev().copied().collect();
    (by_latency[..tail_n].to_vec(), fastest_first[lo..hi].to_vec())
}

/// The request numbers of the slowest 1% and of the median band of `requests`: the requests a
/// step's end waits for spans of.
pub fn groups(requests: &[(u64, u64)]) -> (Vec<u64>, Vec<u64>) {
    let (slowest, median) = split(requests);
    (slowest.iter().map(|r| r.0).collect(), median.iter().map(|r| r.0).collect())
}

/// Where the time of `requests` (a step's counted requests: number and latency in µs) went, by
/// the spans `collector` holds for `key`; none without requests.
pub fn tail(requests: &[(u64, u64)], key: TraceKey, collector: &Collector) -> Option<Tail> {
    if requests.is_empty() {
        return None;
    }
    let (slowest, median) = split(requests);
    let waterfall = slowest.iter().find_map(|&(seq, latency_us)| {
        let spans = collector.of_request(key, seq);
        (!spans.is_empty()).then(|| waterfall(&spans, trace_id_text(key.trace_id(seq)), latency_us as f64))
    });
    Some(Tail { slowest: group(&slowest, key, collector), median: group(&median, key, collector), waterfall })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::Span;

    fn kept(id: u64, parent: u64, name: &str, start_ms: u64, end_ms: u64) -> Kept {
        Kept { span_id: id, parent, name: name.into(), start_ns: start_ms * 1_000_000, end_ns: end_ms * 1_000_000 }
    }

    #[test]
    fn self_time_subtracts_children_once_and_within_the_parent() {
        // GET / 0-44 ms: db.query 2-43 (two overlapping children 3-20 and 10-30 under it), and
        // a child running past its parent's end counted only inside it.
        let spans = vec![
            kept(1, 99, "GET /", 0, 44),
            kept(2, 1, "db.query", 2, 43),
            kept(3, 2, "lock", 3, 20),
            kept(4, 2, "lock", 10, 30),
            kept(5, 1, "late", 40, 60),
        ];
        let (by_name, cover) = shares(&spans);
        // GET /: 44 - (2..44 covered by db.query and late) = 2 ms.
        assert_eq!(by_name["GET /"], 2_000_000);
        // db.query: 41 - (3..30) = 14 ms; lock: 17 + 20 = 37 ms of its own (no children).
        assert_eq!(by_name["db.query"], 14_000_000);
        assert_eq!(by_name["lock"], 37_000_000);
        assert_eq!(by_name["late"], 20_000_000);
        assert_eq!(cover, 60_000_000);
    }

    #[test]
    fn the_slowest_percent_against_the_median_names_the_span_that_grew() {
        let key = TraceKey::from_seed(4);
        let c = Collector::default();
        c.register(key);
        // 200 requests: each 4 ms in its server span, 2 ms of it db.query; every 50th waits
        // 40 ms more in db.query. The client sees 1 ms more than the server span.
        let mut requests = Vec::new();
        let mut spans = Vec::new();
        for seq in 0..200u64 {
            let slow = seq % 50 == 7;
            let db = if slow { 42 } else { 2 };
            let total = db + 2;
            requests.push((seq, (total + 1) * 1000));
            let id = key.trace_id(seq);
            spans.push(Span {
                trace_id: id,
                span_id: 1,
                parent: 77,
                name: "GET /".into(),
                start_ns: 0,
                end_ns: total * 1_000_000,
            });
            spans.push(Span {
                trace_id: id,
                span_id: 2,
                parent: 1,
                name: "db.query".into(),
                start_ns: 1_000_000,
                end_ns: (1 + db) * 1_000_000,
            });
        }
        c.take(spans, 0);
        let t = tail(&requests, key, &c).unwrap();
        assert_eq!((t.slowest.requests, t.slowest.with_spans), (2, 2));
        assert_eq!(t.slowest.names[0], NameTime { name: "db.query".into(), self_us: 42_000.0 });
        assert_eq!(t.slowest.latency_us, 45_000.0);
        assert_eq!(t.slowest.uncovered_us, 1000.0);
        let median_db = t.median.names.iter().find(|n| n.name == "db.query").unwrap();
        assert_eq!(median_db.self_us, 2000.0);
        assert_eq!(t.median.requests, 20);
        assert_eq!(t.grew_most(), Some(("db.query", 40_000.0)));
        assert_eq!(t.slowest.trace_ids[0], trace_id_text(key.trace_id(7)));
        // The slowest request's waterfall: the server span, db.query 1 ms into it, one deeper.
        let w = t.waterfall.as_ref().unwrap();
        assert_eq!((w.trace_id.as_str(), w.latency_us), (t.slowest.trace_ids[0].as_str(), 45_000.0));
        let bar = |name: &str, start_us: f64, length_us: f64, depth: usize| Bar {
            name: name.into(),
            start_us,
            length_us,
            depth,
        };
        assert_eq!(w.spans, [bar("GET /", 0.0, 44_000.0, 0), bar("db.query", 1_000.0, 42_000.0, 1)]);
        // Requests whose spans never came are counted, not guessed.
        let late: Vec<(u64, u64)> = (1000..1100).map(|s| (s, 5000)).collect();
        let t = tail(&late, key, &c).unwrap();
        assert_eq!((t.slowest.requests, t.slowest.with_spans, t.slowest.latency_us), (1, 0, 0.0));
        assert!(tail(&[], key, &c).is_none());
    }
}
