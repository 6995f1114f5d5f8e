//! Replaying a run: the requests of a loadlab results file (each record's target at its
//! scheduled time; concatenated runs at their own start times) or of vegeta's JSON results
//! (`vegeta encode --to json`: method, URL and timestamp of each).
//!
//! Both are written in completion order, so a request may come up to its latency after later
//! ones. A reorder buffer holds each until no earlier one can still come: until the newest
//! completion seen is more than [`REORDER`] past it (the default timeout and a second). Memory
//! is that window's requests, whatever the file's size.

use std::io::BufRead;
use std::path::Path;

use super::log::{LogRequest, Skip};
use super::reorder::Reorder;
use super::source::{excerpt, read_line, Item, Source};

/// How long a request may come after ones scheduled later than it, in microseconds: the
/// default timeout (no request completes later than it) and a second.
pub const REORDER_US: i64 = (client::DEFAULT_TIMEOUT.as_micros() + 1_000_000) as i64;

/// `METHOD URL` (or `METHOD /path`, a replay's label) as a request at `time_us`.
fn request(label: &str, time_us: i64) -> Result<LogRequest, Skip> {
    let (method, url) = label.split_once(' ').ok_or("the target is not METHOD URL")?;
    if method.is_empty() || method.len() > 16 || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err("the target's method is not a token");
    }
    let path = match url.strip_prefix("http://").or_else(|| url.strip_prefix("https://")) {
        Some(abs) => abs.find('/').map_or("/", |i| &abs[i..]),
        None => url,
    };
    if !path.starts_with('/') || path.contains(" (other paths)") || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("the target has no path to send (or stands for many: \"(other paths)\")");
    }
    Ok(LogRequest {
        time_us,
        took_us: 0,
        precise: true,
        method: method.to_owned(),
        path: path.to_owned(),
        headers: Vec::new(),
        body: bytes::Bytes::new(),
    })
}

/// A loadlab results file's records.
pub(crate) struct LlrRuns<R: std::io::Read> {
    reader: results::Reader<R>,
    start_us: i64,
    reorder: Reorder,
    records: u64,
}

impl<R: std::io::Read> LlrRuns<R> {
    pub(crate) fn new(input: R, path: &Path) -> LlrRuns<R> {
        LlrRuns {
            reader: results::Reader::new(input, path.display().to_string()),
            start_us: 0,
            reorder: Reorder::new(REORDER_US),
            records: 0,
        }
    }
}

impl<R: std::io::Read + Send> Source for LlrRuns<R> {
    fn next(&mut self) -> Result<Option<Item>, String> {
        loop {
            if let Some(next) = self.reorder.ready() {
                return Ok(next);
            }
            match self.reader.next().map_err(|e| e.to_string())? {
                None => self.reorder.end(),
                Some(results::Item::Run(h)) => self.start_us = (h.start_unix_ns / 1_000) as i64,
                Some(results::Item::End(_)) => {}
                Some(results::Item::Record(r)) => {
                    self.records += 1;
                    let label = self.reader.targets().get(r.target as usize).cloned().unwrap_or_default();
                    let time = self.start_us + r.scheduled_us as i64;
                    let parsed = request(&label, time);
                    let text = if parsed.is_err() { label } else { String::new() };
                    self.reorder.push(Item { at: self.records, parsed, text }, time + r.latency_us as i64);
                }
            }
        }
    }
}

/// vegeta's JSON results, a line each.
pub(crate) struct VegetaRuns<R> {
    input: R,
    buf: Vec<u8>,
    line: u64,
    reorder: Reorder,
}

impl<R> VegetaRuns<R> {
    pub(crate) fn new(input: R) -> VegetaRuns<R> {
        VegetaRuns { input, buf: Vec::with_capacity(512), line: 0, reorder: Reorder::new(REORDER_US) }
    }
}

impl<R: BufRead + Send> Source for VegetaRuns<R> {
    fn next(&mut self) -> Result<Option<Item>, String> {
        loop {
            if let Some(next) = self.reorder.ready() {
                return Ok(next);
            }
            let Some(whole) = read_line(&mut self.input, &mut self.buf)? else {
                self.reorder.end();
                continue;
            };
            self.line += 1;
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let result = match std::str::from_utf8(&self.buf) {
                Ok(text) if whole => results::interop::parse_vegeta_json(text).map_err(|_| "not a vegeta JSON result"),
                Ok(_) => Err("line longer than 64 KiB"),
                Err(_) => Err("not UTF-8"),
            };
            let (parsed, done) = match result {
                Ok(r) if r.method.is_empty() || r.url.is_empty() => {
                    (Err("no method and url (vegeta writes them from 12.8 on)"), i64::MIN)
                }
                Ok(r) => {
                    let time = (r.timestamp_ns / 1_000) as i64;
                    (request(&format!("{} {}", r.method, r.url), time), time + (r.latency_ns / 1_000) as i64)
                }
                Err(why) => (Err(why), i64::MIN),
            };
            let text = if parsed.is_err() { excerpt(&self.buf) } else { String::new() };
            self.reorder.push(Item { at: self.line, parsed, text }, done);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_become_requests() {
        assert_eq!(request("POST http://127.0.0.1:8080/a?b=1", 7).unwrap().path, "/a?b=1");
        assert_eq!(request("GET /news", 7).unwrap().path, "/news");
        assert_eq!(request("GET http://h", 7).unwrap().path, "/");
        assert!(request("GET (other paths)", 7).is_err());
        assert!(request("get /x", 7).is_err());
    }
}
