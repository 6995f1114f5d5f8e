//! Per-request values in a target's URL, headers and body: `{{seq}}`, `{{rand 1 1000}}`,
//! `{{uuid}}`, `{{time}}` (`{{time ms}}`, `{{time rfc3339}}`), `{{line users.txt}}` (the file's
//! lines in turn) and `{{random-line users.txt}}`; `{{"{{"}}` writes braces. A template is
//! compiled once into literal text and values; rendering it is a walk over that list.
//!
//! Random values are a function of `--seed` and the request's sequence number, so two runs with
//! the same seed send the same requests (an A/B comparison offers both sides the same traffic);
//! another seed gives other values.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use crate::mix::splitmix64;

mod target;
pub use target::TargetTemplate;

/// The largest file `{{line FILE}}` reads (its lines are held in memory).
pub(crate) const MAX_LINES_FILE: u64 = 256 << 20;

/// Where a template's output goes, which decides what a value from a file may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Bytes a URL cannot hold are percent-encoded.
    Url,
    /// Values must be valid header text (checked when the file is read).
    Header,
    Body,
}

/// What a request's values are drawn from.
#[derive(Clone, Copy, Debug)]
pub struct Draw {
    pub seq: u64,
    pub seed: u64,
    pub now: SystemTime,
}

/// One compiled template.
#[derive(Debug)]
pub(crate) struct Template {
    text: String,
    pieces: Vec<Piece>,
}

impl PartialEq for Template {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

#[derive(Debug)]
enum Piece {
    Text(String),
    Seq,
    /// An integer from `lo` to `hi`, both included; `stream` tells this value's draws from the
    /// other values' of the same request.
    Rand {
        lo: i64,
        span: u64,
        stream: u64,
    },
    Uuid {
        stream: u64,
    },
    Time(TimeFormat),
    /// A file's lines: in turn (each use takes the next), or at random.
    Line {
        lines: Arc<Lines>,
        next: Option<AtomicU64>,
        stream: u64,
    },
}

#[derive(Clone, Copy, Debug)]
enum TimeFormat {
    Seconds,
    Millis,
    Rfc3339,
}

/// A file's non-empty lines.
#[derive(Debug)]
pub struct Lines {
    path: PathBuf,
    lines: Vec<Box<str>>,
}

/// Files read for the templates of one set of targets (each read once), relative to `dir`.
#[derive(Debug, Default)]
pub struct Files {
    pub dir: PathBuf,
    read: HashMap<PathBuf, Arc<Lines>>,
    /// Values drawn so far, so that each draw of a request has its own stream.
    streams: u64,
}

impl Files {
    pub fn new(dir: &Path) -> Files {
        Files { dir: dir.to_owned(), ..Files::default() }
    }

    fn lines(&mut self, name: &str) -> Result<Arc<Lines>, String> {
        let path = self.dir.join(name);
        if let Some(l) = self.read.get(&path) {
            return Ok(Arc::clone(l));
        }
        let size = std::fs::metadata(&path).map_err(|e| format!("{{{{line {name}}}}}: {}: {e}", path.display()))?.len();
        if size > MAX_LINES_FILE {
            return Err(format!("{{{{line {name}}}}}: {} is {size} bytes, more than 256 MiB", path.display()));
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{{{{line {name}}}}}: {}: {e}", path.display()))?;
        let lines: Vec<Box<str>> =
            text.lines().map(|l| l.trim_end_matches('\r')).filter(|l| !l.is_empty()).map(Box::from).collect();
        if lines.is_empty() {
            return Err(format!("{{{{line {name}}}}}: {} has no lines", path.display()));
        }
        let l = Arc::new(Lines { path: path.clone(), lines });
        self.read.insert(path, Arc::clone(&l));
        Ok(l)
    }

    fn stream(&mut self) -> u64 {
        self.streams += 1;
        self.streams
    }
}

impl Template {
    /// Compiles `text`: `None` when it holds no `{{`, so that a target without templates costs
    /// nothing per request.
    pub(crate) fn parse(text: &str, place: Place, files: &mut Files) -> Result<Option<Template>, String> {
        if !text.contains("{{") {
            return Ok(None);
        }
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = close_of(after).ok_or_else(|| {
                let text = cut(&rest[open..]);
                format!("template {text} has no closing }}}} (braces as they are: {{{{\"{{{{\"}}}})")
            })?;
            pieces.push(piece(after[..close].trim(), place, files)?);
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_owned()));
        }
        Ok(Some(Template { text: text.to_owned(), pieces }))
    }

    /// The template as written.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// Appends this request's rendering to `out`.
    pub(crate) fn render(&self, d: &Draw, place: Place, out: &mut String) {
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Seq => {
                    let _ = write!(out, "{}", d.seq);
                }
                Piece::Rand { lo, span, stream } => {
                    let r = random(d, *stream);
                    let v = lo.wrapping_add(((u128::from(r) * u128::from(*span)) >> 64) as i64);
                    let _ = write!(out, "{v}");
                }
                Piece::Uuid { stream } => {
                    let mut b = [0u8; 16];
                    b[..8].copy_from_slice(&random(d, *stream).to_le_bytes());
                    b[8..].copy_from_slice(&splitmix64(random(d, *stream)).to_le_bytes());
                    let u = uuid::Builder::from_random_bytes(b).into_uuid();
                    out.push_str(u.hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()));
                }
                Piece::Time(f) => {
                    let since = d.now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
                    let _ = match f {
                        TimeFormat::Seconds => write!(out, "{}", since.as_secs()),
                        TimeFormat::Millis => write!(out, "{}", since.as_millis()),
                        TimeFormat::Rfc3339 => write!(
                            out,
                            "{}",
                            chrono::DateTime::<chrono::Utc>::from(d.now)
                                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                        ),
                    };
                }
                Piece::Line { lines, next, stream } => {
                    let n = lines.lines.len() as u64;
                    let i = match next {
                        Some(counter) => counter.fetch_add(1, Ordering::Relaxed) % n,
                        None => ((u128::from(random(d, *stream)) * u128::from(n)) >> 64) as u64,
                    };
                    let value = &lines.lines[i as usize];
                    if place == Place::Url {
                        percent_encode(value, out);
                    } else {
                        out.push_str(value);
                    }
                }
            }
        }
    }
}

/// Where the `}}` closing a template is, past any quoted text.
fn close_of(s: &str) -> Option<usize> {
    let t = s.trim_start();
    if let Some(q) = t.strip_prefix('"') {
        let end = q.find('"')?;
        let skip = s.len() - t.len() + 1 + end + 1;
        return s[skip..].find("}}").map(|i| skip + i);
    }
    s.find("}}")
}

fn cut(s: &str) -> String {
    client::quoted(s)
}

fn piece(inner: &str, place: Place, files: &mut Files) -> Result<Piece, String> {
    if let Some(q) = inner.strip_prefix('"') {
        let text = q.strip_suffix('"').ok_or_else(|| format!("template {{{{{inner}}}}}: unterminated \"text\""))?;
        return Ok(Piece::Text(text.to_owned()));
    }
    let words: Vec<&str> = inner.split_whitespace().collect();
    let bad = |why: &str| format!("template {{{{{inner}}}}}: {why}");
    match words.as_slice() {
        ["seq"] => Ok(Piece::Seq),
        ["uuid"] => Ok(Piece::Uuid { stream: files.stream() }),
        ["rand", lo, hi] => {
            let (lo, hi) = match (lo.parse::<i64>(), hi.parse::<i64>()) {
                (Ok(lo), Ok(hi)) if lo <= hi => (lo, hi),
                _ => return Err(bad("expected {{rand LOW HIGH}} with whole numbers, LOW <= HIGH")),
            };
            let span = (hi as i128 - lo as i128 + 1).min(u64::MAX as i128) as u64;
            Ok(Piece::Rand { lo, span, stream: files.stream() })
        }
        ["time"] | ["time", "s"] => Ok(Piece::Time(TimeFormat::Seconds)),
        ["time", "ms"] => Ok(Piece::Time(TimeFormat::Millis)),
        ["time", "rfc3339"] => Ok(Piece::Time(TimeFormat::Rfc3339)),
        ["time", ..] => Err(bad("the time's format is s (the default), ms or rfc3339")),
        [kind @ ("line" | "random-line"), file] => {
            let lines = files.lines(file)?;
            if place == Place::Header {
                if let Some((i, _)) = lines.lines.iter().enumerate().find(|(_, l)| http::HeaderValue::from_str(l).is_err())
                {
                    return Err(format!(
                        "{{{{{kind} {file}}}}}: {}:{}: not a valid header value",
                        lines.path.display(),
                        line_number(&lines, i)
                    ));
                }
            }
            let next = (*kind == "line").then(|| AtomicU64::new(0));
            Ok(Piece::Line { lines, next, stream: files.stream() })
        }
        ["line" | "random-line", ..] => Err(bad("expected one file name")),
        _ => Err(bad(
            "unknown; templates are seq, rand LOW HIGH, uuid, time [s|ms|rfc3339], line FILE, random-line FILE, or \"text\"",
        )),
    }
}

/// The file line of the `i`-th non-empty line (for an error message).
fn line_number(lines: &Lines, i: usize) -> usize {
    let text = std::fs::read_to_string(&lines.path).unwrap_or_default();
    text.lines().enumerate().filter(|(_, l)| !l.trim_end_matches('\r').is_empty()).nth(i).map_or(0, |(n, _)| n + 1)
}

/// This request's draw for one value.
fn random(d: &Draw, stream: u64) -> u64 {
    splitmix64(d.seed ^ splitmix64(d.seq ^ stream.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
}

/// Appends `s`, with what a URL cannot hold (spaces, controls, non-ASCII, `"<>\^`{|}`)
/// percent-encoded; `%`, `/`, `?`, `&` and `=` stay, so an already encoded value is unchanged.
fn percent_encode(s: &str, out: &mut String) {
    for b in s.bytes() {
        if b > b' ' && b < 0x7f && !b"\"<>\\^`{|}".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draw(seq: u64) -> Draw {
        Draw { seq, seed: 0, now: SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_764_000_000_123) }
    }

    fn render(t: &Template, seq: u64, place: Place) -> String {
        let mut s = String::new();
        t.render(&draw(seq), place, &mut s);
        s
    }

    fn compile(text: &str, files: &mut Files) -> Template {
        Template::parse(text, Place::Body, files).unwrap().unwrap()
    }

    #[test]
    fn values_render_per_request() {
        let mut f = Files::default();
        assert!(Template::parse("no braces {here}", Place::Url, &mut f).unwrap().is_none());
        let t = compile("/u/{{seq}}?n={{ rand 5 7 }}&id={{uuid}}&t={{time}}&ms={{time ms}}&d={{time rfc3339}}", &mut f);
        let a = render(&t, 41, Place::Body);
        assert!(a.starts_with("/u/41?n="), "{a}");
        assert!(a.ends_with("&t=1764000000&ms=1764000000123&d=2025-11-24T16:00:00.123Z"), "{a}");
        let id = a.split("id=").nth(1).unwrap().split('&').next().unwrap();
        let u = uuid::Uuid::parse_str(id).unwrap();
        assert_eq!(u.get_version_num(), 4);
        // A function of the seed and the sequence number.
        assert_eq!(a, render(&t, 41, Place::Body));
        let ids: std::collections::HashSet<String> = (0..10_000).map(|s| render(&t, s, Place::Body)).collect();
        assert_eq!(ids.len(), 10_000);
    }

    #[test]
    fn random_integers_cover_their_range_evenly() {
        let t = compile("{{rand -2 2}}", &mut Files::default());
        let mut counts = std::collections::BTreeMap::new();
        for s in 0..50_000 {
            *counts.entry(render(&t, s, Place::Body).parse::<i64>().unwrap()).or_insert(0) += 1;
        }
        assert_eq!(counts.keys().copied().collect::<Vec<_>>(), [-2, -1, 0, 1, 2]);
        assert!(counts.values().all(|c| (9_500..10_500).contains(c)), "{counts:?}");
        let full = compile("{{rand -9223372036854775808 9223372036854775807}}", &mut Files::default());
        assert_ne!(render(&full, 1, Place::Body), render(&full, 2, Place::Body));
    }

    #[test]
    fn file_lines_in_turn_or_at_random_encoded_for_urls() {
        let dir = std::env::temp_dir().join(format!("loadlab-template-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("users.txt"), "ana\r\n\nJosé Smith\nzoë\n").unwrap();
        let mut f = Files::new(&dir);
        let t = compile("{{line users.txt}}", &mut f);
        let got: Vec<String> = (0..4).map(|s| render(&t, s, Place::Body)).collect();
        assert_eq!(got, ["ana", "José Smith", "zoë", "ana"]);
        let u = Template::parse("/u/{{line users.txt}}", Place::Url, &mut f).unwrap().unwrap();
        assert_eq!(render(&u, 0, Place::Url), "/u/ana");
        assert_eq!(render(&u, 1, Place::Url), "/u/Jos%C3%A9%20Smith");
        let r = compile("{{random-line users.txt}}", &mut f);
        let seen: std::collections::HashSet<String> = (0..100).map(|s| render(&r, s, Place::Body)).collect();
        assert_eq!(seen.len(), 3);
        std::fs::write(dir.join("bad.txt"), "fine\nbell\u{7}\n").unwrap();
        let e = Template::parse("{{line bad.txt}}", Place::Header, &mut f).unwrap_err();
        assert!(e.ends_with("bad.txt:2: not a valid header value"), "{e}");
        let e = Template::parse("{{line missing.txt}}", Place::Body, &mut f).unwrap_err();
        assert!(e.starts_with("{{line missing.txt}}: ") && e.contains("missing.txt"), "{e}");
    }

    #[test]
    fn literal_braces_and_mistakes() {
        let mut f = Files::default();
        assert_eq!(render(&compile(r#"{{"{{"}}x}}"#, &mut f), 0, Place::Body), "{{x}}");
        for (text, says) in [
            ("{{seq", "has no closing }} (braces as they are: {{\"{{\"}})"),
            ("{{sequence}}", "template {{sequence}}: unknown; templates are seq"),
            ("{{rand 9 1}}", "LOW <= HIGH"),
            ("{{rand a b}}", "whole numbers"),
            ("{{time hours}}", "s (the default), ms or rfc3339"),
            ("{{line}}", "expected one file name"),
            ("{{line a b}}", "expected one file name"),
        ] {
            let e = Template::parse(text, Place::Body, &mut f).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
