//! Recipes: the JSON Origin Simulator reads, validated strictly into typed [`Recipe`]s. Every
//! error names the field (`recipe[1].stages[0].latency: ...`) and nothing of a bad upload is kept.

use std::time::Duration;

use serde_json::{Map, Value};

/// Microseconds, fixed or drawn uniformly from a range per request. (The BBC's recipes give
/// whole milliseconds; finer ones, `"10.5ms"` or `"10500us"`, let a bench inject a 5% change
/// into a 10 ms answer.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Latency {
    Fixed(u64),
    Range(u64, u64),
}

/// Microseconds as milliseconds, as a recipe writes them: `100`, `10.5`.
fn show_ms(us: u64) -> String {
    if us.is_multiple_of(1000) {
        (us / 1000).to_string()
    } else {
        format!("{}", us as f64 / 1000.0)
    }
}

impl Latency {
    /// As `routes_status` shows it: `100` or `100..200` (milliseconds).
    pub fn show(&self) -> String {
        match *self {
            Latency::Fixed(us) => show_ms(us),
            Latency::Range(a, b) => format!("{}..{}", show_ms(a), show_ms(b)),
        }
    }

    pub fn draw(&self) -> Duration {
        match *self {
            Latency::Fixed(us) => Duration::from_micros(us),
            Latency::Range(a, b) => Duration::from_micros(rand::random_range(a..=b)),
        }
    }
}

/// A connection-level misbehaviour instead of a response.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FaultKind {
    /// TCP RST, no response.
    Reset,
    /// FIN, no response.
    Close,
    /// Nothing, until the client gives up.
    Hang,
    /// The head at once, then the body at `bytes_per_sec`.
    SlowBody { bytes_per_sec: u64 },
}

impl FaultKind {
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Reset => "reset",
            FaultKind::Close => "close",
            FaultKind::Hang => "hang",
            FaultKind::SlowBody { .. } => "slow_body",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fault {
    pub kind: FaultKind,
    /// Share of requests hit, 0..=1.
    pub probability: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stage {
    pub at: Duration,
    pub status: u16,
    pub latency: Latency,
    pub fault: Option<Fault>,
    /// A service with a knee: at most `concurrency` requests served at once.
    pub capacity: Option<Capacity>,
}

/// `"concurrency": 64` requests of the route are served at once (each taking the stage's
/// latency); up to `"queue": 1000` more wait; beyond that `"overflow_status": 503` at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    pub concurrency: u32,
    pub queue: u32,
    pub overflow_status: u16,
}

/// A capacity's queue when the recipe gives none.
pub(crate) const DEFAULT_QUEUE: u32 = 1000;
/// The answer past the queue when the recipe gives none.
pub(crate) const DEFAULT_OVERFLOW_STATUS: u16 = 503;

/// Built-in answers that need no payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    Echo,
    Fibonacci,
    Empty,
}

/// Where a route's payload comes from, in the order of precedence.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    Origin(String),
    Body(String),
    /// Sizes in bytes: fixed when both are equal.
    Random {
        min: u64,
        max: u64,
    },
    Handler(Handler),
}

/// A validated recipe, with the JSON it came from (which `current_recipe` returns as posted).
#[derive(Clone, Debug, PartialEq)]
pub struct Recipe {
    pub route: String,
    pub stages: Vec<Stage>,
    pub source: Source,
    /// Header names lower-cased, in the order given.
    pub headers: Vec<(String, String)>,
    pub handler: Option<Handler>,
    /// With `content-encoding: gzip`, compress every response as it is sent (`"compress":
    /// "per_request"`, as a service that gzips on the request path does) instead of once at
    /// load.
    pub compress_per_request: bool,
    pub raw: Value,
}

impl Recipe {
    pub fn gzip(&self) -> bool {
        self.headers.iter().any(|(k, v)| k == "content-encoding" && v.trim().eq_ignore_ascii_case("gzip"))
    }
}

/// A recipe upload that cannot be applied; the text is one line naming the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RecipeError(pub String);

/// Parses an upload: one recipe object or an array of them.
pub fn parse_upload(text: &[u8]) -> Result<Vec<Recipe>, RecipeError> {
    let v: Value = serde_json::from_slice(text).map_err(|e| RecipeError(format!("recipe is not valid JSON: {e}")))?;
    match v {
        Value::Array(items) => {
            if items.is_empty() {
                return Err(RecipeError("recipe array is empty".into()));
            }
            items.into_iter().enumerate().map(|(i, item)| parse_recipe(item, &format!("recipe[{i}]"))).collect()
        }
        Value::Object(_) => Ok(vec![parse_recipe(v, "recipe")?]),
        _ => Err(RecipeError("recipe must be a JSON object or an array of objects".into())),
    }
}

const RECIPE_KEYS: &[&str] = &["route", "stages", "origin", "body", "random_content", "headers", "handler", "compress"];
const STAGE_KEYS: &[&str] =
    &["at", "status", "latency", "fault", "bandwidth", "probability", "concurrency", "queue", "overflow_status"];

fn err(path: &str, msg: impl std::fmt::Display) -> RecipeError {
    RecipeError(format!("{path}: {msg}"))
}

/// A present, non-null field.
fn field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn string<'a>(obj: &'a Map<String, Value>, key: &str, path: &str) -> Result<Option<&'a str>, RecipeError> {
    match field(obj, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(err(&format!("{path}.{key}"), format!("expected a string, found {other}"))),
    }
}

fn parse_recipe(v: Value, path: &str) -> Result<Recipe, RecipeError> {
    let Value::Object(obj) = &v else { return Err(err(path, "expected a JSON object")) };
    for k in obj.keys() {
        if !RECIPE_KEYS.contains(&k.as_str()) {
            return Err(err(&format!("{path}.{k}"), "unknown field"));
        }
    }
    let route = string(obj, "route", path)?.unwrap_or("/*").to_owned();
    if !route.starts_with('/') {
        return Err(err(&format!("{path}.route"), format!("{route:?} must start with '/'")));
    }
    if route.starts_with("/_admin") {
        return Err(err(&format!("{path}.route"), "routes under /_admin/ are reserved"));
    }
    let handler = match string(obj, "handler", path)? {
        None => None,
        Some("echo") => Some(Handler::Echo),
        Some("fibonacci") => Some(Handler::Fibonacci),
        Some("empty") => Some(Handler::Empty),
        Some(other) => {
            return Err(err(&format!("{path}.handler"), format!("unknown handler {other:?} (echo, fibonacci, empty)")))
        }
    };
    let mut headers = Vec::new();
    match field(obj, "headers") {
        None => {}
        Some(Value::Object(h)) => {
            for (k, val) in h {
                let Value::String(s) = val else {
                    return Err(err(&format!("{path}.headers.{k}"), "expected a string"));
                };
                if http::HeaderName::from_bytes(k.as_bytes()).is_err() || http::HeaderValue::from_str(s).is_err() {
                    return Err(err(&format!("{path}.headers.{k}"), "not a valid HTTP header"));
                }
                headers.push((k.to_ascii_lowercase(), s.clone()));
            }
        }
        Some(other) => return Err(err(&format!("{path}.headers"), format!("expected an object, found {other}"))),
    }
    let origin = string(obj, "origin", path)?;
    let body = string(obj, "body", path)?;
    let random = string(obj, "random_content", path)?;
    let source = if let Some(o) = origin {
        client::parse_url(o).map_err(|e| err(&format!("{path}.origin"), e))?;
        Source::Origin(o.to_owned())
    } else if let Some(b) = body {
        for tag in size_tags(b) {
            parse_size(tag).map_err(|e| err(&format!("{path}.body"), format!("<<{tag}>>: {e}")))?;
        }
        Source::Body(b.to_owned())
    } else if let Some(r) = random {
        let (min, max) = match r.split_once("..") {
            Some((a, b)) => (parse_size(a), parse_size(b)),
            None => (parse_size(r), parse_size(r)),
        };
        let (min, max) = (
            min.map_err(|e| err(&format!("{path}.random_content"), e))?,
            max.map_err(|e| err(&format!("{path}.random_content"), e))?,
        );
        if min > max {
            return Err(err(&format!("{path}.random_content"), format!("{r:?}: the range must not decrease")));
        }
        Source::Random { min, max }
    } else if let Some(h) = handler {
        Source::Handler(h)
    } else {
        return Err(err(path, "needs a payload: origin, body, random_content or handler"));
    };
    let stages = match field(obj, "stages") {
        None => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, s)| parse_stage(s, &format!("{path}.stages[{i}]")))
            .collect::<Result<Vec<_>, _>>()?,
        Some(other) => return Err(err(&format!("{path}.stages"), format!("expected an array, found {other}"))),
    };
    let mut stages = stages;
    stages.sort_by_key(|s| s.at);
    let compress_per_request = match string(obj, "compress", path)? {
        None | Some("once") => false,
        Some("per_request") => true,
        Some(other) => {
            return Err(err(
                &format!("{path}.compress"),
                format!("{other:?}: give \"once\" (at load) or \"per_request\""),
            ))
        }
    };
    if compress_per_request
        && !headers.iter().any(|(k, v)| k == "content-encoding" && v.trim().eq_ignore_ascii_case("gzip"))
    {
        return Err(err(
            &format!("{path}.compress"),
            "per_request compresses with gzip: give headers content-encoding: gzip",
        ));
    }
    Ok(Recipe { route, stages, source, headers, handler, compress_per_request, raw: v })
}

fn parse_stage(v: &Value, path: &str) -> Result<Stage, RecipeError> {
    let Value::Object(obj) = v else { return Err(err(path, "expected a JSON object")) };
    for k in obj.keys() {
        if !STAGE_KEYS.contains(&k.as_str()) {
            return Err(err(&format!("{path}.{k}"), "unknown field"));
        }
    }
    let at = match field(obj, "at") {
        None => return Err(err(&format!("{path}.at"), "missing")),
        Some(v) => {
            if v.as_str().is_some_and(|s| s.contains("..")) || v.is_array() {
                return Err(err(&format!("{path}.at"), "a range is not allowed here"));
            }
            Duration::from_millis(parse_duration_ms(v).map_err(|e| err(&format!("{path}.at"), e))?)
        }
    };
    let status = match field(obj, "status") {
        Some(Value::Number(n)) => match n.as_u64() {
            Some(s @ 100..=599) => s as u16,
            _ => return Err(err(&format!("{path}.status"), format!("{n} is not an HTTP status (100..599)"))),
        },
        None => return Err(err(&format!("{path}.status"), "missing")),
        Some(other) => return Err(err(&format!("{path}.status"), format!("expected a number, found {other}"))),
    };
    let latency = match field(obj, "latency") {
        None => Latency::Fixed(0),
        Some(v) => parse_latency(v).map_err(|e| err(&format!("{path}.latency"), e))?,
    };
    let probability = match field(obj, "probability") {
        None => 1.0,
        Some(Value::Number(n)) => match n.as_f64() {
            Some(p) if (0.0..=1.0).contains(&p) => p,
            _ => return Err(err(&format!("{path}.probability"), format!("{n} is outside 0..1"))),
        },
        Some(other) => return Err(err(&format!("{path}.probability"), format!("expected a number, found {other}"))),
    };
    let fault_name = string(obj, "fault", path)?;
    let bandwidth = string(obj, "bandwidth", path)?;
    let kind = match fault_name {
        None => None,
        Some("reset") => Some(FaultKind::Reset),
        Some("close") => Some(FaultKind::Close),
        Some("hang") => Some(FaultKind::Hang),
        Some("slow_body") => {
            let b = bandwidth
                .ok_or_else(|| err(&format!("{path}.bandwidth"), "slow_body needs a bandwidth such as \"64kb/s\""))?;
            let per_sec = b
                .strip_suffix("/s")
                .ok_or_else(|| err(&format!("{path}.bandwidth"), format!("{b:?}: expected SIZE/s")))?;
            let bytes = parse_size(per_sec).map_err(|e| err(&format!("{path}.bandwidth"), e))?;
            if bytes == 0 {
                return Err(err(&format!("{path}.bandwidth"), "must be above 0"));
            }
            Some(FaultKind::SlowBody { bytes_per_sec: bytes })
        }
        Some(other) => {
            return Err(err(
                &format!("{path}.fault"),
                format!("unknown fault {other:?} (reset, close, hang, slow_body)"),
            ))
        }
    };
    if bandwidth.is_some() && !matches!(kind, Some(FaultKind::SlowBody { .. })) {
        return Err(err(&format!("{path}.bandwidth"), "only slow_body takes a bandwidth"));
    }
    if field(obj, "probability").is_some() && kind.is_none() {
        return Err(err(&format!("{path}.probability"), "only a fault takes a probability"));
    }
    let count = |key: &str, range: std::ops::RangeInclusive<u64>| -> Result<Option<u64>, RecipeError> {
        match field(obj, key) {
            None => Ok(None),
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if range.contains(&v) => Ok(Some(v)),
                _ => Err(err(&format!("{path}.{key}"), format!("{n} is outside {}..{}", range.start(), range.end()))),
            },
            Some(other) => Err(err(&format!("{path}.{key}"), format!("expected a number, found {other}"))),
        }
    };
    let concurrency = count("concurrency", 1..=1_000_000)?;
    let queue = count("queue", 0..=10_000_000)?;
    let overflow_status = count("overflow_status", 100..=599)?;
    if concurrency.is_none() && (queue.is_some() || overflow_status.is_some()) {
        return Err(err(&format!("{path}.concurrency"), "queue and overflow_status need a concurrency"));
    }
    let capacity = concurrency.map(|c| Capacity {
        concurrency: c as u32,
        queue: queue.map_or(DEFAULT_QUEUE, |q| q as u32),
        overflow_status: overflow_status.map_or(DEFAULT_OVERFLOW_STATUS, |s| s as u16),
    });
    Ok(Stage { at, status, latency, fault: kind.map(|kind| Fault { kind, probability }), capacity })
}

/// `0`, `"0"`, `"<int>ms"` or `"<int>s"`, in milliseconds.
pub(crate) fn parse_duration_ms(v: &Value) -> Result<u64, String> {
    match v {
        Value::Number(n) if n.as_u64() == Some(0) => Ok(0),
        Value::Number(n) => Err(format!("{n} is not a duration (use 0, \"<int>ms\" or \"<int>s\")")),
        Value::String(s) => parse_duration_str(s),
        other => Err(format!("{other} is not a duration (use 0, \"<int>ms\" or \"<int>s\")")),
    }
}

fn parse_duration_str(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?} is not a duration (use 0, \"<int>ms\" or \"<int>s\")");
    if s == "0" {
        return Ok(0);
    }
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1000)
    } else {
        return Err(bad());
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)).ok_or_else(bad)
}

/// A latency in microseconds: `0`, `"<int>s"`, `"<int or decimal>ms"`, `"<int>us"` (or `µs`).
fn parse_latency_us(v: &Value) -> Result<u64, String> {
    let bad =
        |s: &dyn std::fmt::Display| format!("{s} is not a latency (use 0, \"<int>s\", \"10.5ms\" or \"<int>us\")");
    let s = match v {
        Value::Number(n) if n.as_u64() == Some(0) => return Ok(0),
        Value::String(s) => s.as_str(),
        other => return Err(bad(other)),
    };
    let whole = |n: &str, mult: u64| -> Option<u64> {
        (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| n.parse::<u64>().ok()?.checked_mul(mult))?
    };
    let us = if s == "0" {
        Some(0)
    } else if let Some(n) = s.strip_suffix("us").or_else(|| s.strip_suffix("µs")) {
        whole(n, 1)
    } else if let Some(n) = s.strip_suffix("ms") {
        // Up to three decimals: a microsecond.
        match n.split_once('.') {
            Some((i, f)) if !f.is_empty() && f.len() <= 3 && f.bytes().all(|b| b.is_ascii_digit()) => {
                let frac = f.parse::<u64>().ok().map(|v| v * 10u64.pow(3 - f.len() as u32));
                whole(i, 1000).zip(frac).and_then(|(i, f)| i.checked_add(f))
            }
            Some(_) => None,
            None => whole(n, 1000),
        }
    } else if let Some(n) = s.strip_suffix('s') {
        whole(n, 1_000_000)
    } else {
        None
    };
    us.ok_or_else(|| bad(&format!("{s:?}")))
}

/// A latency: a duration, a range `"100ms..200ms"`, or `["100ms", "1s"]`.
pub(crate) fn parse_latency(v: &Value) -> Result<Latency, String> {
    let range =
        |a: u64, b: u64| if a > b { Err("the range must not decrease".to_owned()) } else { Ok(Latency::Range(a, b)) };
    match v {
        Value::String(s) if s.contains("..") => {
            let (a, b) = s.split_once("..").unwrap();
            range(parse_latency_us(&Value::String(a.into()))?, parse_latency_us(&Value::String(b.into()))?)
        }
        Value::Array(items) => match items.as_slice() {
            [a, b] => range(parse_latency_us(a)?, parse_latency_us(b)?),
            _ => Err("a latency range is [\"min\", \"max\"]".to_owned()),
        },
        other => parse_latency_us(other).map(Latency::Fixed),
    }
}

/// `"<int>b"`, `"<int>kb"` (x1024) or `"<int>mb"` (x1024^2), in bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?} is not a size (use \"<int>b\", \"<int>kb\" or \"<int>mb\")");
    let (num, mult) = if let Some(n) = s.strip_suffix("kb") {
        (n, 1024)
    } else if let Some(n) = s.strip_suffix("mb") {
        (n, 1024 * 1024)
    } else if let Some(n) = s.strip_suffix('b') {
        (n, 1)
    } else {
        return Err(bad());
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n = num.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)).ok_or_else(bad)?;
    if n > 1 << 30 {
        return Err(format!("{s:?} is too large (at most 1024mb)"));
    }
    Ok(n)
}

/// The `SIZE` of each `<<SIZE>>` in a body.
pub(crate) fn size_tags(body: &str) -> impl Iterator<Item = &str> {
    body.split("<<").skip(1).filter_map(|part| part.split_once(">>").map(|(tag, _)| tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one(v: Value) -> Result<Recipe, RecipeError> {
        parse_upload(v.to_string().as_bytes()).map(|mut r| r.remove(0))
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration_ms(&json!(0)), Ok(0));
        assert_eq!(parse_duration_ms(&json!("0")), Ok(0));
        assert_eq!(parse_duration_ms(&json!("100ms")), Ok(100));
        assert_eq!(parse_duration_ms(&json!("2s")), Ok(2000));
        for bad in [json!("100"), json!("1.5s"), json!("100MS"), json!("-100ms"), json!(""), json!(100), json!("ms")] {
            assert!(parse_duration_ms(&bad).is_err(), "{bad}");
        }
        assert_eq!(parse_latency(&json!("100ms..200ms")), Ok(Latency::Range(100_000, 200_000)));
        assert_eq!(parse_latency(&json!(["100ms", "1s"])), Ok(Latency::Range(100_000, 1_000_000)));
        assert_eq!(parse_latency(&json!("800ms..1s")), Ok(Latency::Range(800_000, 1_000_000)));
        // Finer than a millisecond: a 5% change to a 10 ms answer.
        assert_eq!(parse_latency(&json!("10.5ms")), Ok(Latency::Fixed(10_500)));
        assert_eq!(parse_latency(&json!("10500us")), Ok(Latency::Fixed(10_500)));
        assert_eq!(parse_latency(&json!("250µs")), Ok(Latency::Fixed(250)));
        assert_eq!(Latency::Fixed(10_500).show(), "10.5");
        assert_eq!(Latency::Range(100_000, 200_000).show(), "100..200");
        for bad in ["10.5", "1.2345ms", "1.5s", ".5ms", "ms", "-1ms"] {
            assert!(parse_latency(&json!(bad)).is_err(), "{bad}");
        }
        assert!(parse_latency(&json!("1s..100ms")).is_err());
        assert_eq!(parse_size("200kb"), Ok(204_800));
        assert_eq!(parse_size("1mb"), Ok(1_048_576));
        assert_eq!(parse_size("10b"), Ok(10));
        assert!(parse_size("10").is_err() && parse_size("1.5kb").is_err() && parse_size("kb").is_err());
    }

    #[test]
    fn example_recipe_with_nulls_parses() {
        let r = one(json!({"stages":[{"status":200,"latency":"100ms","at":0}],"route":"/*","random_content":"200kb",
            "origin":null,"headers":{"content-type":"text/html; charset=utf-8","content-encoding":"gzip"},"body":null}))
        .unwrap();
        assert_eq!(r.source, Source::Random { min: 204_800, max: 204_800 });
        assert!(r.gzip());
        assert_eq!(r.stages[0].latency, Latency::Fixed(100_000));
    }

    #[test]
    fn precedence_origin_body_random() {
        let r = one(json!({"origin":"http://127.0.0.1:1/","body":"x","random_content":"1kb"})).unwrap();
        assert!(matches!(r.source, Source::Origin(_)));
        let r = one(json!({"body":"","random_content":"1kb"})).unwrap();
        assert_eq!(r.source, Source::Body(String::new()));
        assert_eq!(one(json!({"handler":"echo"})).unwrap().source, Source::Handler(Handler::Echo));
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (
                json!({"body":"x","stages":[{"at":0,"status":200,"latency":"1.5s"}]}),
                "recipe.stages[0].latency: \"1.5s\" is not a latency",
            ),
            (json!({"body":"x","colour":"red"}), "recipe.colour: unknown field"),
            (json!({"body":"x","stages":[{"at":0,"status":200,"color":1}]}), "recipe.stages[0].color: unknown field"),
            (
                json!({"body":"x","stages":[{"at":"1s..2s","status":200}]}),
                "recipe.stages[0].at: a range is not allowed here",
            ),
            (
                json!({"body":"x","stages":[{"at":0,"status":200,"fault":"reset","probability":1.5}]}),
                "recipe.stages[0].probability: 1.5 is outside 0..1",
            ),
            (json!({"handler":"pong"}), "recipe.handler: unknown handler \"pong\""),
            (
                json!({"body":"x","stages":[{"at":0,"status":200,"fault":"melt"}]}),
                "recipe.stages[0].fault: unknown fault \"melt\"",
            ),
            (json!({"route":"/x"}), "recipe: needs a payload"),
            (json!({"random_content":"200"}), "recipe.random_content: \"200\" is not a size"),
            (json!({"body":"<<12x>>"}), "recipe.body: <<12x>>: \"12x\" is not a size"),
            (
                json!({"body":"x","stages":[{"at":0,"status":700}]}),
                "recipe.stages[0].status: 700 is not an HTTP status",
            ),
        ];
        for (v, want) in cases {
            let e = one(v.clone()).unwrap_err().0;
            assert!(e.starts_with(want), "{v}: {e}");
        }
        let e = parse_upload(br#"[{"body":"x"},{"body":"y","stages":[{"at":0,"status":200,"latency":"fast"}]}]"#)
            .unwrap_err();
        assert!(e.0.starts_with("recipe[1].stages[0].latency:"), "{}", e.0);
        assert!(parse_upload(b"{not json").unwrap_err().0.starts_with("recipe is not valid JSON"));
    }

    #[test]
    fn stages_are_sorted_by_start() {
        let r = one(json!({"body":"x","stages":[{"at":"2s","status":503},{"at":0,"status":200}]})).unwrap();
        assert_eq!(r.stages.iter().map(|s| s.status).collect::<Vec<_>>(), [200, 503]);
    }
}

#[cfg(test)]
mod robustness {
    use super::*;

    #[test]
    fn mutated_recipes_never_panic() {
        let base = br#"[{"route":"/news*","random_content":"50kb..200kb","headers":{"content-encoding":"gzip"},"stages":[{"at":0,"status":200,"latency":"100ms..200ms"},{"at":"2s","status":503,"fault":"slow_body","bandwidth":"64kb/s","probability":0.5}]},{"handler":"echo","body":"<<10b>>"}]"#;
        let alphabet = b"{}[]\":,.0123456789msbk<>*/ -etrunlfa";
        let mut state = 0x853c_49e6_748f_ea9bu64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut accepted = 0;
        for _ in 0..5000 {
            let mut bytes = base.to_vec();
            for _ in 0..1 + next() % 4 {
                let i = (next() % bytes.len() as u64) as usize;
                bytes[i] = alphabet[(next() % alphabet.len() as u64) as usize];
            }
            if let Ok(recipes) = parse_upload(&bytes) {
                accepted += 1;
                assert!(recipes.iter().all(|r| r.route.starts_with('/')));
            }
        }
        assert!(accepted > 0, "some mutations stay valid");
    }
}
