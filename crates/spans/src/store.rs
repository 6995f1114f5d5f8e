//! The spans a lab received, kept by the step and request they belong to. A span is kept only
//! when its trace id is one of a registered step's (the lab's own requests): the rest are
//! counted and dropped, as are spans past the bounds on a request and on the lab, so that
//! whatever a target (or anyone who reaches the port) sends, memory stays bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use results::trace::TraceKey;

use crate::decode::Span;

/// Spans kept per request: a request's own tree is tens of spans; a loop that opens a span per
/// row is not a tree anyone reads.
pub const MAX_PER_REQUEST: usize = 64;

/// Spans kept per lab (about 120 bytes each: some 30 MB).
pub const MAX_PER_LAB: usize = 250_000;

/// A span of a request, as kept: its name shared with every span of that name.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    pub span_id: u64,
    pub parent: u64,
    pub name: Arc<str>,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// What the receiver was sent, counted.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    /// Export requests answered, and refused (a bad body, a wrong type or path).
    pub exports: u64,
    pub refused: u64,
    /// Spans received, and kept.
    pub received: u64,
    pub kept: u64,
    /// Dropped: of a trace no step of the lab sent; past a request's or the lab's bound; not a
    /// span (an id of the wrong length, an end before its start).
    pub unknown_trace: u64,
    pub over_request: u64,
    pub over_lab: u64,
    pub malformed: u64,
}

/// One step's spans, by request number.
#[derive(Debug, Default)]
pub(crate) struct StepSpans {
    pub(crate) by_request: HashMap<u64, Vec<Kept>>,
    /// When its last span arrived.
    pub(crate) last_at: Option<Instant>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Each registered step's key (by its trace ids' high half) and its spans.
    steps: HashMap<u64, (TraceKey, StepSpans)>,
    names: HashMap<String, Arc<str>>,
    kept: usize,
    counts: Counts,
}

/// The lab's spans, shared by the receiver and the steps.
#[derive(Clone, Debug, Default)]
pub struct Collector {
    inner: Arc<Mutex<Inner>>,
}

impl Collector {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Spans of `key`'s trace ids are kept from now on.
    pub fn register(&self, key: TraceKey) {
        self.lock().steps.entry(key.high()).or_insert_with(|| (key, StepSpans::default()));
    }

    /// Takes `spans` (one export's), keeping those of registered steps within the bounds;
    /// returns how many of them (and of the `malformed` ones) were dropped.
    pub fn take(&self, spans: Vec<Span>, malformed: u64) -> u64 {
        let mut g = self.lock();
        let inner = &mut *g;
        let received = spans.len() as u64 + malformed;
        let kept_before = inner.counts.kept;
        inner.counts.exports += 1;
        inner.counts.received += received;
        inner.counts.malformed += malformed;
        let now = Instant::now();
        for s in spans {
            let Some((key, step)) = inner.steps.get_mut(&((s.trace_id >> 64) as u64)) else {
                inner.counts.unknown_trace += 1;
                continue;
            };
            let Some(seq) = key.seq_of(s.trace_id) else {
                inner.counts.unknown_trace += 1;
                continue;
            };
            if inner.kept >= MAX_PER_LAB {
                inner.counts.over_lab += 1;
                continue;
            }
            let of_request = step.by_request.entry(seq).or_default();
            if of_request.len() >= MAX_PER_REQUEST {
                inner.counts.over_request += 1;
                continue;
            }
            let name = match inner.names.get(&s.name) {
                Some(n) => Arc::clone(n),
                None => {
                    let n: Arc<str> = s.name.as_str().into();
                    inner.names.insert(s.name, Arc::clone(&n));
                    n
                }
            };
            of_request.push(Kept {
                span_id: s.span_id,
                parent: s.parent,
                name,
                start_ns: s.start_ns,
                end_ns: s.end_ns,
            });
            step.last_at = Some(now);
            inner.kept += 1;
            inner.counts.kept += 1;
        }
        received - (inner.counts.kept - kept_before)
    }

    /// Counts an export refused before its spans were read.
    pub fn refused(&self) {
        self.lock().counts.refused += 1;
    }

    pub fn counts(&self) -> Counts {
        self.lock().counts.clone()
    }

    /// How many of `seqs` have at least one span of `key`'s step, and when its last span came.
    pub fn arrived(&self, key: TraceKey, seqs: &[u64]) -> (usize, Option<Instant>) {
        let g = self.lock();
        let Some((_, step)) = g.steps.get(&key.high()) else { return (0, None) };
        (seqs.iter().filter(|s| step.by_request.contains_key(s)).count(), step.last_at)
    }

    /// The spans of request `seq` of `key`'s step.
    pub fn of_request(&self, key: TraceKey, seq: u64) -> Vec<Kept> {
        let g = self.lock();
        g.steps.get(&key.high()).and_then(|(_, s)| s.by_request.get(&seq)).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(key: TraceKey, seq: u64, id: u64, name: &str) -> Span {
        Span { trace_id: key.trace_id(seq), span_id: id, parent: 0, name: name.into(), start_ns: 1, end_ns: 2 }
    }

    #[test]
    fn spans_of_registered_steps_are_kept_by_request_and_the_rest_counted() {
        let (a, b, stranger) = (TraceKey::from_seed(1), TraceKey::from_seed(2), TraceKey::from_seed(3));
        let c = Collector::default();
        c.register(a);
        c.register(b);
        c.take(vec![span(a, 5, 1, "GET /"), span(a, 5, 2, "db"), span(b, 5, 3, "GET /"), span(stranger, 5, 4, "x")], 2);
        assert_eq!(c.of_request(a, 5).iter().map(|k| &*k.name).collect::<Vec<_>>(), ["GET /", "db"]);
        assert_eq!(c.of_request(b, 5).len(), 1);
        assert_eq!(c.arrived(a, &[5, 6]).0, 1);
        let n = c.counts();
        assert_eq!((n.received, n.kept, n.unknown_trace, n.malformed, n.exports), (6, 3, 1, 2, 1));
        // A name is kept once, however many spans carry it.
        assert!(Arc::ptr_eq(&c.of_request(a, 5)[0].name, &c.of_request(b, 5)[0].name));
    }

    #[test]
    fn a_request_and_the_lab_are_bounded() {
        let key = TraceKey::from_seed(1);
        let c = Collector::default();
        c.register(key);
        c.take((0..MAX_PER_REQUEST as u64 + 10).map(|i| span(key, 0, i + 1, "row")).collect(), 0);
        assert_eq!(c.of_request(key, 0).len(), MAX_PER_REQUEST);
        assert_eq!(c.counts().over_request, 10);
        let many: Vec<Span> = (0..MAX_PER_LAB as u64).map(|i| span(key, i + 1, 1, "GET /")).collect();
        c.take(many, 0);
        assert_eq!(c.counts().kept as usize, MAX_PER_LAB);
        assert_eq!(c.counts().over_lab, MAX_PER_REQUEST as u64);
    }
}
