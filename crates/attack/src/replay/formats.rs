//! Which replay format a file is (found from its first bytes), and the source that reads it: an
//! access log's lines, a HAR file's entries, or the records of a run (loadlab's results,
//! vegeta's JSON results).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::har::Har;
use super::log::parse_line;
use super::reorder::Reorder;
use super::runs::{LlrRuns, VegetaRuns};
use super::source::{excerpt, read_line, Item, Source};

/// What a replayed file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    AccessLog,
    Har,
    Results,
    VegetaJson,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::AccessLog => "access log",
            Format::Har => "HAR",
            Format::Results => "loadlab results",
            Format::VegetaJson => "vegeta JSON results",
        }
    }

    /// What one item is called in messages.
    pub fn unit(self) -> &'static str {
        match self {
            Format::AccessLog | Format::VegetaJson => "line",
            Format::Har => "entry",
            Format::Results => "record",
        }
    }
}

/// The format of `path`, from its first bytes.
pub fn sniff(path: &Path) -> Result<Format, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut head = vec![0u8; 4096];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(format!("{}: {e}", path.display())),
        }
    }
    head.truncate(n);
    if head.starts_with(&results::MAGIC) {
        return Ok(Format::Results);
    }
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&head);
    let start = text.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(text.len());
    if text.get(start) == Some(&b'{') {
        let line = text[start..].split(|b| *b == b'\n').next().unwrap_or_default();
        let vegeta = std::str::from_utf8(line).is_ok_and(|l| results::interop::parse_vegeta_json(l).is_ok());
        return Ok(if vegeta { Format::VegetaJson } else { Format::Har });
    }
    if text.contains(&0) {
        // Binary: vegeta's gob results say how to convert them; anything else is not replayable.
        let e = results::Reader::new(&head[..], path.display().to_string()).next().err();
        return Err(e.map_or_else(
            || format!("{}: a binary file that is not loadlab results", path.display()),
            |e| e.to_string(),
        ));
    }
    Ok(Format::AccessLog)
}

/// Opens `path` as `format`.
pub(crate) fn open(path: &Path, format: Format) -> Result<Box<dyn Source>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let input = BufReader::with_capacity(1 << 16, file);
    Ok(match format {
        Format::AccessLog => {
            Box::new(LogLines { input, buf: Vec::with_capacity(256), line: 0, reorder: Reorder::new(0) })
        }
        Format::Har => Box::new(Har::read(path, input)?),
        Format::Results => Box::new(LlrRuns::new(input, path)),
        Format::VegetaJson => Box::new(VegetaRuns::new(input)),
    })
}

/// An access log, a line at a time. Lines are written as requests end; once a line has
/// `$request_time` (so a start before its end), lines pass through a reorder buffer whose window
/// is the longest request time seen and a second: a request is sent at its start even when it
/// was logged after shorter ones that started later. (One longer than any before it by more
/// than a second may be sent late by the difference.)
struct LogLines<R> {
    input: R,
    buf: Vec<u8>,
    line: u64,
    reorder: Reorder,
}

impl<R: BufRead + Send> Source for LogLines<R> {
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
            let parsed = if !whole {
                Err("line longer than 64 KiB")
            } else {
                std::str::from_utf8(&self.buf).map_or(Err("not UTF-8"), parse_line)
            };
            let text = if parsed.is_err() { excerpt(&self.buf) } else { String::new() };
            let (time, took) = parsed.as_ref().map_or((i64::MIN, 0), |r| (r.time_us, r.took_us));
            let item = Item { at: self.line, parsed, text };
            if took == 0 && self.reorder.window_us == 0 {
                // No request time so far: lines go in file order, at once.
                return Ok(Some(item));
            }
            self.reorder.window_us = self.reorder.window_us.max(took + 1_000_000);
            self.reorder.push(item, time.saturating_add(took));
        }
    }
}
