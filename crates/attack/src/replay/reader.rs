//! The reader thread: the log's lines, in order, to requests with their due times.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Method, Uri};
use tokio::sync::mpsc::Sender;
use tokio_util::sync::CancellationToken;

use super::formats::Format;
use super::log::LogRequest;
use super::{ReplaySpec, SharedStats, Skipped};
use crate::shard::Shard;
use crate::targets::Target;
use client::Prepared;

/// Skipped lines quoted in the report.
const QUOTED: usize = 5;
/// Distinct `METHOD /path` labels the results keep; beyond, `METHOD (other paths)`.
const MAX_LABELS: usize = 1_000;
/// Requests handed to the pacer together: one wake-up of each thread per batch, not per request
/// (at 30,000/s on one core, a hand-off per request put 16% of the samples in task switches).
/// The reader runs ahead of the schedule, so a batch waits for nothing but parsing.
pub(crate) const BATCH: usize = 64;

/// One request to send.
pub(crate) struct Hit {
    pub(crate) seq: u64,
    /// From the replay's start.
    pub(crate) due: Duration,
    pub(crate) request: Arc<Prepared>,
    pub(crate) label: Arc<str>,
}

/// Reads the log (every loop) and sends each request to `out`; returns when done, when `out`
/// closes, or at `stop`.
pub(crate) fn read(
    spec: &ReplaySpec,
    shard: Shard,
    headers: &[(HeaderName, HeaderValue)],
    out: &Sender<Vec<Hit>>,
    stats: &SharedStats,
    stop: &CancellationToken,
) {
    let format = match super::formats::sniff(&spec.path) {
        Ok(f) => f,
        Err(e) => {
            stats.lock().unwrap_or_else(|e| e.into_inner()).failed = Some(e);
            return;
        }
    };
    stats.lock().unwrap_or_else(|e| e.into_inner()).format = Some(format);
    let mut r = Reader {
        spec,
        shard,
        sent: 0,
        format,
        headers,
        out,
        stats,
        stop,
        seq: 0,
        labels: HashMap::new(),
        offset: 0.0,
        batch: Vec::with_capacity(BATCH),
        lines: 0,
        cut: false,
    };
    r.replay();
    // The schedule's length, for the rate it asked: every pass at its speed, or the limit that
    // cut it (a short log looped for a lab step's length asks its rate over that length).
    let length = match (r.cut, spec.limit) {
        (true, Some(l)) => l.as_secs_f64(),
        _ => r.offset,
    };
    stats.lock().unwrap_or_else(|e| e.into_inner()).schedule_s = length;
}

impl Reader<'_> {
    fn replay(&mut self) {
        let (spec, stats) = (self.spec, self.stats);
        for _ in 0..spec.loops {
            let pass = self.pass();
            // What the pass left in the batch goes now (a pacer that stopped takes nothing more).
            let handed = self.hand_over();
            match pass {
                Ok(Some(span)) if handed => {
                    stats.lock().unwrap_or_else(|e| e.into_inner()).span_s = span;
                    // The next pass starts one mean gap after this one's last request.
                    self.offset += span / spec.speed * (1.0 + 1.0 / self.seq.max(1) as f64);
                }
                Ok(_) => return,
                Err(e) => {
                    stats.lock().unwrap_or_else(|e| e.into_inner()).failed = Some(e);
                    return;
                }
            }
        }
    }
}

struct Reader<'a> {
    spec: &'a ReplaySpec,
    /// Of many workers replaying one log, this one sends requests `index`, `index + count` ...
    /// (each at its time, with its sequence number), as shards split an open model's hits.
    shard: Shard,
    /// Requests this worker sent.
    sent: u64,
    format: Format,
    headers: &'a [(HeaderName, HeaderValue)],
    out: &'a Sender<Vec<Hit>>,
    stats: &'a SharedStats,
    stop: &'a CancellationToken,
    /// The run's length (`spec.limit`) ended the replay.
    cut: bool,
    seq: u64,
    labels: HashMap<String, Arc<str>>,
    /// Seconds added to this pass's due times (the earlier passes' length).
    offset: f64,
    batch: Vec<Hit>,
    /// Lines read since the last count published to `stats`.
    lines: u64,
}

impl Reader<'_> {
    /// One pass over the file: Some(span of log time replayed), or None when told to stop.
    fn pass(&mut self) -> Result<Option<f64>, String> {
        let mut source = super::formats::open(&self.spec.path, self.format)?;
        let (mut first, mut last) = (None::<i64>, 0i64);
        // Lines of one whole second wait here to be spread over it, in file order.
        let mut second: Vec<LogRequest> = Vec::new();
        while let Some(item) = source.next().map_err(|e| format!("{}: {e}", self.spec.path.display()))? {
            self.lines += 1;
            let req = match item.parsed {
                Ok(r) => r,
                Err(why) => {
                    self.skip(item.at, why, item.text)?;
                    continue;
                }
            };
            // Times count from the first request (from its whole second when times are whole
            // seconds), in microseconds.
            let t0 = *first.get_or_insert(if req.precise {
                req.time_us
            } else {
                req.time_us - req.time_us.rem_euclid(1_000_000)
            });
            let at = req.time_us - t0;
            if self.spec.from.is_some_and(|f| at < f.as_micros() as i64) {
                continue;
            }
            if self.spec.to.is_some_and(|t| at >= t.as_micros() as i64) {
                break;
            }
            if req.precise {
                if !self.flush(&mut second, t0)? {
                    return Ok(None);
                }
                last = last.max(at);
                if !self.send(&req, at)? {
                    return Ok(None);
                }
            } else {
                if second.first().is_some_and(|s| s.time_us != req.time_us) && !self.flush(&mut second, t0)? {
                    return Ok(None);
                }
                last = last.max(at + 1_000_000);
                second.push(req);
            }
        }
        if !self.flush(&mut second, first.unwrap_or(0))? {
            return Ok(None);
        }
        let from = self.spec.from.map_or(0, |f| f.as_micros() as i64);
        Ok(Some((last - from).max(0) as f64 / 1e6))
    }

    /// Sends the lines of one whole second, line k of n at k/n of it.
    fn flush(&mut self, second: &mut Vec<LogRequest>, t0: i64) -> Result<bool, String> {
        let n = second.len() as i64;
        for (k, req) in std::mem::take(second).iter().enumerate() {
            if !self.send(req, req.time_us - t0 + k as i64 * 1_000_000 / n)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sends `req`, `at` microseconds of log time after the first request.
    fn send(&mut self, req: &LogRequest, at: i64) -> Result<bool, String> {
        if self.stop.is_cancelled() {
            return Ok(false);
        }
        let from = self.spec.from.map_or(0, |f| f.as_micros() as i64);
        let log_us = (at - from).max(0) as f64;
        let due = Duration::from_micros((log_us / self.spec.speed + self.offset * 1e6).round() as u64);
        if self.spec.limit.is_some_and(|l| due >= l) {
            // The run's length is reached: the replay ends here, whatever is left of the log.
            self.cut = true;
            return Ok(false);
        }
        if self.seq % self.shard.count != self.shard.index {
            // Another worker's request.
            self.seq += 1;
            return Ok(true);
        }
        let url = join(&self.spec.base, &req.path)?;
        let method = Method::from_bytes(req.method.as_bytes()).map_err(|e| e.to_string())?;
        let mut target = Target::new(method, url);
        // Recorded headers, but for those the attack sets itself (`-H`, which win).
        target.headers =
            req.headers.iter().filter(|(n, _)| !self.headers.iter().any(|(h, _)| h == n)).cloned().collect();
        target.headers.extend_from_slice(self.headers);
        target.body = req.body.clone();
        let path = req.path.split('?').next().unwrap_or("/");
        let key = format!("{} {path}", req.method);
        let label = match self.labels.get(&key) {
            Some(l) => Arc::clone(l),
            None if self.labels.len() < MAX_LABELS => {
                let l: Arc<str> = Arc::from(key.as_str());
                self.labels.insert(key, Arc::clone(&l));
                l
            }
            None => Arc::from(format!("{} (other paths)", req.method).as_str()),
        };
        let hit = Hit { seq: self.seq, due, request: Arc::new(Prepared::new(target.parts())), label };
        self.seq += 1;
        self.sent += 1;
        self.batch.push(hit);
        Ok(self.batch.len() < BATCH || self.hand_over())
    }

    /// Sends the batch to the pacer; false when it has stopped listening.
    fn hand_over(&mut self) -> bool {
        self.publish();
        if self.batch.is_empty() {
            return true;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.out.blocking_send(batch).is_ok()
    }

    /// The counts so far, to `stats`.
    fn publish(&mut self) {
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        s.lines += std::mem::take(&mut self.lines);
        s.requests = self.sent;
    }

    fn skip(&mut self, line: u64, why: &'static str, text: String) -> Result<(), String> {
        let unit = self.format.unit();
        if self.spec.strict {
            let place = if unit == "line" { format!(":{line}") } else { format!(": {unit} {line}") };
            return Err(format!("{}{place}: {why}: {text}", self.spec.path.display()));
        }
        let mut s = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        s.skipped += 1;
        if s.first_skipped.len() < QUOTED {
            s.first_skipped.push(Skipped { unit, line, why, text });
        }
        Ok(())
    }
}

/// The base URL's scheme and authority, its path as a prefix, then the logged path.
fn join(base: &Uri, path: &str) -> Result<Uri, String> {
    let prefix = base.path().trim_end_matches('/');
    let authority = base.authority().map_or("", |a| a.as_str());
    let scheme = base.scheme_str().unwrap_or("http");
    format!("{scheme}://{authority}{prefix}{path}").parse().map_err(|e| format!("{path}: {e}"))
}
