//! Targets: what to request. Parsed from vegeta's `http` format (`METHOD URL`, header lines,
//! an optional `@body-file`, blank lines between) or its `json` format (one object a line:
//! `method`, `url`, `header` {name: [values]}, `body` base64).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Uri};

use crate::template::{Files, TargetTemplate};
pub use client::{parse_header, parse_url, quoted};

/// One request template.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub method: Method,
    pub url: Uri,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Bytes,
    /// Its share of the requests against the other targets' (1 by default): `"weight": 3` in
    /// the JSON format, a `# weight=3` line in its block in the http format.
    pub weight: u32,
    /// Per-request values in its URL, headers or body (`{{seq}}`, `{{uuid}}`...): the fields
    /// above then hold the first request's rendering.
    pub template: Option<Arc<TargetTemplate>>,
}

impl Target {
    /// A GET (or `method`) of `url` with no headers and an empty body.
    pub fn new(method: Method, url: Uri) -> Self {
        Target { method, url, headers: Vec::new(), body: Bytes::new(), weight: 1, template: None }
    }

    /// This target with request `seq`'s template values (itself, without its template, when it
    /// has none).
    pub fn render(&self, seq: u64, seed: u64) -> Result<Target, String> {
        let mut t = Target {
            method: self.method.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            weight: self.weight,
            template: None,
        };
        if let Some(tpl) = &self.template {
            if let Some(url) = tpl.render(seq, seed, &mut t.headers, &mut t.body)? {
                t.url = parse_url(&url).map_err(|e| format!("template url: {e}"))?;
            }
        }
        Ok(t)
    }

    /// Its host is this machine (127.0.0.0/8, ::1, localhost): the kernel's listen counters are
    /// the target's.
    pub fn is_loopback(&self) -> bool {
        match self.url.host().map(|h| h.trim_start_matches('[').trim_end_matches(']')) {
            Some("localhost") => true,
            Some(h) => h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback()),
            None => false,
        }
    }

    /// What the client needs of it.
    pub fn parts(&self) -> client::Parts<'_> {
        client::Parts { method: &self.method, url: &self.url, headers: &self.headers, body: &self.body }
    }

    /// `METHOD URL` (the URL as written, templates and all), as the results file's target table
    /// records it.
    pub fn label(&self) -> String {
        match self.template.as_ref().and_then(|t| t.url_text()) {
            Some(url) => format!("{} {url}", self.method),
            None => format!("{} {}", self.method, self.url),
        }
    }
}

/// A bad target: where, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}:{line}: {reason}")]
pub struct TargetError {
    pub source_name: String,
    pub line: usize,
    pub reason: String,
}

/// The two target formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetFormat {
    Http,
    Json,
}

impl std::str::FromStr for TargetFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "http" => Ok(TargetFormat::Http),
            "json" => Ok(TargetFormat::Json),
            _ => Err(format!("unknown target format {} (expected http or json)", quoted(s))),
        }
    }
}

/// Defaults applied to every parsed target: `--header` lines and the `--body` payload; and where
/// the files that templates name are found (the working directory when empty).
#[derive(Clone, Debug, Default)]
pub struct TargetDefaults {
    pub headers: Vec<(HeaderName, HeaderValue)>,
    pub body: Option<Bytes>,
    pub template_dir: PathBuf,
}

fn parse_method(s: &str) -> Result<Method, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!("bad method {}", quoted(s)));
    }
    Method::from_bytes(s.as_bytes()).map_err(|_| format!("bad method {}", quoted(s)))
}

/// Parses targets from `text`; `source_name` names the input in errors.
pub fn parse_targets(
    text: &str,
    format: TargetFormat,
    source_name: &str,
    defaults: &TargetDefaults,
) -> Result<Vec<Target>, TargetError> {
    // One line whatever the reason quotes (a JSON key may hold a newline).
    let err = |line: usize, reason: String| TargetError {
        source_name: source_name.to_owned(),
        line,
        reason: reason.replace('\n', "\\n").replace('\r', "\\r"),
    };
    let mut targets = match format {
        TargetFormat::Http => parse_http(text, &err)?,
        TargetFormat::Json => parse_json(text, &err)?,
    };
    if targets.is_empty() {
        return Err(err(0, "no targets".to_owned()));
    }
    let mut files = Files::new(&defaults.template_dir);
    for p in &mut targets {
        p.finish(defaults, &mut files, &err)?;
    }
    Ok(targets.into_iter().map(|p| p.target).collect())
}

/// The one target of `METHOD URL` (a command line's, a plan's), as a one-line targets file would
/// give it: `defaults` applied, templates compiled. `source_name` names it in errors.
pub fn target_from_url(
    method: &str,
    url: &str,
    source_name: &str,
    defaults: &TargetDefaults,
) -> Result<Target, TargetError> {
    let err = |line: usize, reason: String| TargetError {
        source_name: source_name.to_owned(),
        line,
        reason: reason.replace('\n', "\\n").replace('\r', "\\r"),
    };
    let method = parse_method(method).map_err(|e| err(1, e))?;
    let mut p = Parsed::new(1, method, url).map_err(|e| err(1, e))?;
    p.finish(defaults, &mut Files::new(&defaults.template_dir), &err)?;
    Ok(p.target)
}

/// A target as read, with its line and its URL as written.
struct Parsed {
    line: usize,
    target: Target,
    url_text: String,
}

impl Parsed {
    fn new(line: usize, method: Method, url: &str) -> Result<Parsed, String> {
        Ok(Parsed { line, target: Target::new(method, parse_url(&untemplated(url))?), url_text: url.to_owned() })
    }

    /// The defaults added (headers it lacks, a body where it has none) and its templates
    /// compiled: the fields then hold the first request's rendering (its URL decides the origin).
    fn finish(
        &mut self,
        defaults: &TargetDefaults,
        files: &mut Files,
        err: &dyn Fn(usize, String) -> TargetError,
    ) -> Result<(), TargetError> {
        let Parsed { line, target: t, url_text } = self;
        for (name, value) in &defaults.headers {
            if !t.headers.iter().any(|(n, _)| n == name) {
                t.headers.push((name.clone(), value.clone()));
            }
        }
        if t.body.is_empty() {
            if let Some(body) = &defaults.body {
                t.body = body.clone();
            }
        }
        if let Some(tpl) = TargetTemplate::compile(url_text, &t.headers, &t.body, files).map_err(|e| err(*line, e))? {
            t.template = Some(Arc::new(tpl));
            let first = t.render(0, 0).map_err(|e| err(*line, e))?;
            *t = Target { template: t.template.take(), ..first };
        }
        Ok(())
    }
}

/// `url` with every `{{...}}` as `0`: what the URL is checked as before templates are compiled.
fn untemplated(url: &str) -> std::borrow::Cow<'_, str> {
    if !url.contains("{{") {
        return url.into();
    }
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        out.push('0');
        rest = rest[open..].find("}}").map_or("", |c| &rest[open + c + 2..]);
    }
    out.push_str(rest);
    out.into()
}

fn parse_http(text: &str, err: &dyn Fn(usize, String) -> TargetError) -> Result<Vec<Parsed>, TargetError> {
    let mut targets: Vec<Parsed> = Vec::new();
    let mut current: Option<Parsed> = None;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if let Some(comment) = line.strip_prefix('#') {
            // `# weight=N` in a target's block weighs it (vegeta reads a comment).
            if let (Some(p), Some(w)) = (&mut current, comment.trim().strip_prefix("weight=")) {
                p.target.weight = parse_weight(w.trim()).map_err(|e| err(line_no, e))?;
            }
            continue;
        }
        if line.is_empty() {
            targets.extend(current.take());
            continue;
        }
        match &mut current {
            None => {
                let (method, url) = line
                    .split_once(char::is_whitespace)
                    .ok_or_else(|| err(line_no, format!("expected \"METHOD URL\", found {}", quoted(line))))?;
                let method = parse_method(method).map_err(|e| err(line_no, e))?;
                current = Some(Parsed::new(line_no, method, url.trim()).map_err(|e| err(line_no, e))?);
            }
            Some(Parsed { target: t, .. }) => {
                if let Some(path) = line.strip_prefix('@') {
                    let body = std::fs::read(Path::new(path.trim()))
                        .map_err(|e| err(line_no, format!("body file {:?}: {e}", path.trim())))?;
                    t.body = Bytes::from(body);
                } else if t.body.is_empty() && line.contains(':') && !looks_like_request_line(line) {
                    t.headers.push(parse_header(line).map_err(|e| err(line_no, e))?);
                } else if looks_like_request_line(line) {
                    // vegeta allows targets without blank lines between them.
                    targets.extend(current.take());
                    let (method, url) = line.split_once(char::is_whitespace).unwrap();
                    let method = parse_method(method).map_err(|e| err(line_no, e))?;
                    current = Some(Parsed::new(line_no, method, url.trim()).map_err(|e| err(line_no, e))?);
                } else {
                    return Err(err(
                        line_no,
                        format!("expected a header, @body-file or blank line, found {}", quoted(line)),
                    ));
                }
            }
        }
    }
    targets.extend(current);
    Ok(targets)
}

fn looks_like_request_line(line: &str) -> bool {
    match line.split_once(char::is_whitespace) {
        Some((m, rest)) => {
            !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()) && {
                let u = rest.trim_start();
                u.starts_with("http://") || u.starts_with("https://")
            }
        }
        None => false,
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTarget {
    method: String,
    url: String,
    #[serde(default)]
    header: Option<std::collections::BTreeMap<String, Vec<String>>>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    weight: Option<u64>,
}

fn parse_weight(s: &str) -> Result<u32, String> {
    match s.parse::<u64>() {
        Ok(w) if (1..=1_000_000).contains(&w) => Ok(w as u32),
        _ => Err(format!("weight {}: expected a whole number from 1 to 1000000", quoted(s))),
    }
}

/// serde_json's message, with any value it quotes cut short (it quotes a bad string whole).
fn json_error(e: &serde_json::Error) -> String {
    const MAX: usize = 120;
    let text = e.to_string();
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}... at line {} column {}", &text[..i], e.line(), e.column()),
        None => text,
    }
}

fn parse_json(text: &str, err: &dyn Fn(usize, String) -> TargetError) -> Result<Vec<Parsed>, TargetError> {
    let mut targets = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let j: JsonTarget = serde_json::from_str(line).map_err(|e| err(line_no, json_error(&e)))?;
        let method = parse_method(&j.method).map_err(|e| err(line_no, format!("field method: {e}")))?;
        let mut p = Parsed::new(line_no, method, &j.url).map_err(|e| err(line_no, format!("field url: {e}")))?;
        let t = &mut p.target;
        if let Some(w) = j.weight {
            t.weight = parse_weight(&w.to_string()).map_err(|e| err(line_no, format!("field {e}")))?;
        }
        for (name, values) in j.header.unwrap_or_default() {
            for v in values {
                t.headers.push(
                    parse_header(&format!("{name}: {v}")).map_err(|e| err(line_no, format!("field header: {e}")))?,
                );
            }
        }
        if let Some(b) = j.body {
            let body = base64::engine::general_purpose::STANDARD
                .decode(b.as_bytes())
                .map_err(|e| err(line_no, format!("field body: not base64: {e}")))?;
            t.body = Bytes::from(body);
        }
        targets.push(p);
    }
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, f: TargetFormat) -> Result<Vec<Target>, TargetError> {
        parse_targets(text, f, "targets.txt", &TargetDefaults::default())
    }

    #[test]
    fn http_format_with_headers_bodies_and_comments() {
        let dir = std::env::temp_dir().join(format!("loadlab-targets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let body = dir.join("body.json");
        std::fs::write(&body, b"{\"a\":1}").unwrap();
        let text = format!(
            "# news\nGET http://127.0.0.1:8080/news\nX-Account-ID: 8675309\nreplayed-traffic: true\n\n\
             POST http://127.0.0.1:8080/things\n@{}\nDELETE http://127.0.0.1/x\n",
            body.display()
        );
        let t = parse(&text, TargetFormat::Http).unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].method, Method::GET);
        assert_eq!(t[0].headers.len(), 2);
        assert_eq!(t[0].headers[1].1, "true");
        assert_eq!(&t[1].body[..], b"{\"a\":1}");
        assert_eq!(t[2].method, Method::DELETE);
    }

    #[test]
    fn weights_in_both_formats() {
        let http =
            "# a comment before any target\nGET http://127.0.0.1:1/a\n# weight=3\nX-A: 1\n\nGET http://127.0.0.1:1/b\n";
        let t = parse(http, TargetFormat::Http).unwrap();
        assert_eq!((t[0].weight, t[1].weight), (3, 1));
        assert_eq!(t[0].headers.len(), 1);
        let json = "{\"method\":\"GET\",\"url\":\"http://127.0.0.1:1/a\",\"weight\":7}\n{\"method\":\"GET\",\"url\":\"http://127.0.0.1:1/b\"}";
        let t = parse(json, TargetFormat::Json).unwrap();
        assert_eq!((t[0].weight, t[1].weight), (7, 1));
        let e = parse("GET http://127.0.0.1:1/a\n# weight=0\n", TargetFormat::Http).unwrap_err();
        assert_eq!(e.to_string(), "targets.txt:2: weight \"0\": expected a whole number from 1 to 1000000");
        let e = parse("{\"method\":\"GET\",\"url\":\"http://127.0.0.1:1/a\",\"weight\":0}", TargetFormat::Json)
            .unwrap_err();
        assert!(e.to_string().starts_with("targets.txt:1: field weight \"0\""), "{e}");
    }

    #[test]
    fn templates_compile_with_their_target_and_mistakes_name_the_line() {
        let t = parse("GET http://127.0.0.1:1/u/{{seq}}\nX-Id: {{uuid}}\n", TargetFormat::Http).unwrap();
        assert_eq!(t[0].url.path(), "/u/0", "the first request's rendering");
        assert_eq!(t[0].label(), "GET http://127.0.0.1:1/u/{{seq}}");
        assert!(t[0].template.is_some());
        assert!(parse("GET http://127.0.0.1:1/{x}\n", TargetFormat::Http).unwrap()[0].template.is_none());
        let e = parse("\nGET http://127.0.0.1/{{nope}}\n", TargetFormat::Http).unwrap_err();
        assert!(e.to_string().starts_with("targets.txt:2: url: template {{nope}}: unknown"), "{e}");
        let json = r#"{"method":"GET","url":"http://127.0.0.1/","header":{"X-A":["{{rand 2 1}}"]}}"#;
        let e = parse(json, TargetFormat::Json).unwrap_err();
        assert!(e.to_string().starts_with("targets.txt:1: x-a: template {{rand 2 1}}"), "{e}");
    }

    #[test]
    fn json_format() {
        let text = r#"{"method":"POST","url":"http://127.0.0.1:1/f","header":{"Content-Type":["application/json"]},"body":"eyJmaWIiOjEwfQ=="}"#;
        let t = parse(text, TargetFormat::Json).unwrap();
        assert_eq!(&t[0].body[..], b"{\"fib\":10}");
        assert_eq!(t[0].headers[0].0, "content-type");
    }

    #[test]
    fn a_url_is_the_target_its_one_line_file_gives() {
        let mut defaults = TargetDefaults { body: Some(Bytes::from_static(b"b {{seq}}")), ..Default::default() };
        defaults.headers.push(parse_header("X-A: 1").unwrap());
        for (method, url) in [("GET", "http://127.0.0.1:1/x"), ("POST", "http://127.0.0.1:1/u/{{seq}}?q=1")] {
            let file = parse_targets(&format!("{method} {url}\n"), TargetFormat::Http, "t", &defaults).unwrap();
            let one = target_from_url(method, url, "t", &defaults).unwrap();
            assert_eq!((one.label(), one.render(7, 1)), (file[0].label(), file[0].render(7, 1)));
            assert_eq!((one.headers.clone(), one.body.clone()), (file[0].headers.clone(), file[0].body.clone()));
        }
        let e = target_from_url("get", "http://127.0.0.1/", "URL", &defaults).unwrap_err();
        assert_eq!(e.to_string(), "URL:1: bad method \"get\"");
        let e = target_from_url("GET", "ftp://127.0.0.1/", "URL", &defaults).unwrap_err();
        assert_eq!(e.to_string(), "URL:1: bad URL \"ftp://127.0.0.1/\": scheme must be http or https");
    }

    #[test]
    fn errors_name_line_and_field() {
        let e = parse("GET http://127.0.0.1/\nX-Ok: 1\nnot a header\n", TargetFormat::Http).unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.to_string().starts_with("targets.txt:3: expected a header"), "{e}");
        let e = parse("GET ftp://127.0.0.1/\n", TargetFormat::Http).unwrap_err();
        assert_eq!(e.to_string(), "targets.txt:1: bad URL \"ftp://127.0.0.1/\": scheme must be http or https");
        let e = parse("get http://127.0.0.1/\n", TargetFormat::Http).unwrap_err();
        assert_eq!(e.to_string(), "targets.txt:1: bad method \"get\"");
        let e = parse(
            "{\"method\":\"GET\",\"url\":\"http://127.0.0.1/\"}\n{\"method\":\"GET\",\"url\":\"x\"}",
            TargetFormat::Json,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("targets.txt:2: field url: bad URL"), "{e}");
        let e = parse("{\"method\":\"GET\",\"url\":\"http://127.0.0.1/\",\"body\":\"!!\"}", TargetFormat::Json)
            .unwrap_err();
        assert!(e.to_string().starts_with("targets.txt:1: field body: not base64"), "{e}");
        let e = parse("\n# nothing\n", TargetFormat::Http).unwrap_err();
        assert_eq!(e.to_string(), "targets.txt:0: no targets");
    }

    #[test]
    fn defaults_fill_in_without_overriding() {
        let defaults = TargetDefaults {
            headers: vec![parse_header("X-A: global").unwrap(), parse_header("X-B: global").unwrap()],
            body: Some(Bytes::from_static(b"default")),
            ..TargetDefaults::default()
        };
        let t = parse_targets("GET http://127.0.0.1/\nX-A: mine\n", TargetFormat::Http, "t", &defaults).unwrap();
        assert_eq!(t[0].headers.len(), 2);
        assert_eq!(t[0].headers[0].1, "mine");
        assert_eq!(&t[0].body[..], b"default");
    }
}

#[cfg(test)]
mod robustness {
    use super::*;

    #[test]
    fn mutated_targets_never_panic() {
        let base = "GET http://127.0.0.1:8080/news?x=1\nX-A: 1\nreplayed-traffic: true\n\nPOST http://[::1]:9/p\n\n{\"method\":\"GET\",\"url\":\"http://127.0.0.1/\",\"header\":{\"A\":[\"b\"]},\"body\":\"aGk=\"}\n";
        let alphabet = b"GETPOST http://[]:/?#@\n\r\t{}\":,ABab01\xff";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..5000 {
            let mut bytes = base.as_bytes().to_vec();
            for _ in 0..1 + next() % 6 {
                let i = (next() % bytes.len() as u64) as usize;
                bytes[i] = alphabet[(next() % alphabet.len() as u64) as usize];
            }
            let text = String::from_utf8_lossy(&bytes);
            for f in [TargetFormat::Http, TargetFormat::Json] {
                let _ = parse_targets(&text, f, "fuzz", &TargetDefaults::default());
            }
        }
    }
}

#[cfg(test)]
mod quoting_tests {
    use super::*;

    #[test]
    fn a_huge_bad_line_makes_a_short_message() {
        let line = format!("GET http://127.0.0.1/ {}", "x".repeat(10 << 20));
        let e = parse_targets(&format!("{line}\n"), TargetFormat::Http, "t.txt", &TargetDefaults::default())
            .unwrap_err()
            .to_string();
        assert!(e.len() < 300, "{} bytes", e.len());
        assert!(e.contains("t.txt:1") && e.contains("bytes)"), "{e}");
        assert_eq!(quoted("GET"), "\"GET\"");
    }
}
