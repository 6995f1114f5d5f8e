//! Access-log lines as nginx and Apache write them: the common and combined formats, optionally
//! with nginx's `$msec` (the request's end as seconds since the epoch, with milliseconds) first
//! or last on the line, and `$request_time` (how long it took, `0.012`) beside it (after a first
//! `$msec`, before a last one), which places the request at its start. Parsing is by hand over
//! the line's bytes: no regex, no allocation but the request's method and path.

/// One request read from a log line (or a HAR entry, or a run's record).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LogRequest {
    /// When it was sent, in microseconds since the epoch (integers: an f64 of seconds since
    /// 1970 keeps only about a quarter of a microsecond): `$msec` less `$request_time` when the
    /// line has both, `$msec` (its end) when it has that, else the whole second of
    /// `[time_local]`.
    pub time_us: i64,
    /// How long it took (`$request_time`), 0 when not logged: it was logged this long after
    /// `time_us`, so lines are in order of `time_us + took_us`.
    pub took_us: i64,
    /// Whether `time` has sub-second precision (`$msec`); whole seconds are spread by the reader.
    pub precise: bool,
    pub method: String,
    /// The request target as logged: `/path?query`.
    pub path: String,
    /// Recorded headers and body (a HAR file's; a log has none).
    pub headers: Vec<(http::HeaderName, http::HeaderValue)>,
    pub body: bytes::Bytes,
}

/// Why a line is not a request (counted, and the first few quoted).
pub type Skip = &'static str;

/// Parses one line. Lines that are not requests (`"-"` from a probe that sent nothing, a
/// malformed request line, a bad time) are skips.
pub(crate) fn parse_line(line: &str) -> Result<LogRequest, Skip> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.trim().is_empty() {
        return Err("empty line");
    }
    let open = line.find('[').ok_or("no [time] field")?;
    let close = open + line[open..].find(']').ok_or("no ] closing the time")?;
    let whole = time_local(&line[open + 1..close]).ok_or("bad [time]: expected 10/Oct/2000:13:55:36 -0700")?;
    let rest = &line[close + 1..];
    let q1 = rest.find('"').ok_or("no \"request\" field")?;
    let q2 = q1 + 1 + rest[q1 + 1..].find('"').ok_or("unterminated \"request\"")?;
    let request = &rest[q1 + 1..q2];
    let mut words = request.split(' ').filter(|w| !w.is_empty());
    let (Some(method), Some(path)) = (words.next(), words.next()) else {
        return Err("request is not METHOD PATH [PROTOCOL]");
    };
    if !method.bytes().all(|b| b.is_ascii_uppercase()) || method.len() > 16 {
        return Err("request method is not a token");
    }
    let path = match path.strip_prefix("http://").or_else(|| path.strip_prefix("https://")) {
        // An absolute form (a proxy's log): keep the path.
        Some(abs) => abs.find('/').map_or("/", |i| &abs[i..]),
        None => path,
    };
    if !path.starts_with('/') || path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err("request path does not start with / or holds control bytes");
    }
    let (prefix, suffix) = (&line[..open], rest.rsplit('"').next().unwrap_or_default());
    let (end, took) = match msec_field(prefix) {
        Some(m) => (Some(m), took_after(prefix, m)),
        None => msec_field(suffix).map_or((None, 0), |m| (Some(m), took_before(suffix, m))),
    };
    Ok(LogRequest {
        time_us: end.map_or(whole, |e| e - took),
        took_us: took,
        precise: end.is_some(),
        method: method.to_owned(),
        path: path.to_owned(),
        headers: Vec::new(),
        body: bytes::Bytes::new(),
    })
}

/// `$msec` among the words of `text`: seconds since the epoch with a fraction, after 2001, in
/// microseconds.
fn msec_field(text: &str) -> Option<i64> {
    text.split_ascii_whitespace().find_map(|w| {
        let (secs, frac) = w.split_once('.')?;
        if secs.len() != 10 || frac.is_empty() || frac.len() > 6 {
            return None;
        }
        if !secs.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return None;
        }
        let secs: i64 = secs.parse().ok().filter(|s| *s > 978_307_200)?;
        let micros: i64 = format!("{frac:0<6}").parse().ok()?;
        Some(secs * 1_000_000 + micros)
    })
}

/// `$request_time` right after the `$msec` word of `text` (whose value is `msec`), in
/// microseconds; 0 when there is none.
fn took_after(text: &str, msec: i64) -> i64 {
    let mut words = text.split_ascii_whitespace().skip_while(|w| msec_field(w) != Some(msec));
    words.next();
    words.next().and_then(request_time).unwrap_or(0)
}

/// `$request_time` right before the `$msec` word of `text`.
fn took_before(text: &str, msec: i64) -> i64 {
    let mut words = text.split_ascii_whitespace().rev().skip_while(|w| msec_field(w) != Some(msec));
    words.next();
    words.next().and_then(request_time).unwrap_or(0)
}

/// nginx's `$request_time`: seconds with milliseconds (`0.012`), up to a day, in microseconds.
fn request_time(w: &str) -> Option<i64> {
    let (secs, ms) = w.split_once('.')?;
    if secs.is_empty() || secs.len() > 5 || ms.len() != 3 || !secs.bytes().chain(ms.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let us = secs.parse::<i64>().ok()? * 1_000_000 + ms.parse::<i64>().ok()? * 1_000;
    (us <= 86_400_000_000).then_some(us)
}

/// `10/Oct/2000:13:55:36 -0700` as microseconds since the epoch.
fn time_local(s: &str) -> Option<i64> {
    let (datetime, zone) = s.split_once(' ')?;
    let mut parts = datetime.splitn(3, '/');
    let day: i64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let mut rest = parts.next()?.split(':');
    let year: i64 = rest.next()?.parse().ok()?;
    let hour: i64 = rest.next()?.parse().ok()?;
    let minute: i64 = rest.next()?.parse().ok()?;
    let second: i64 = rest.next()?.parse().ok()?;
    if rest.next().is_some() || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let zone = zone.as_bytes();
    if zone.len() != 5 || !matches!(zone[0], b'+' | b'-') || !zone[1..].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let digits = |i: usize| i64::from(zone[i] - b'0') * 10 + i64::from(zone[i + 1] - b'0');
    let offset = (digits(1) * 3600 + digits(3) * 60) * if zone[0] == b'-' { -1 } else { 1 };
    let days = days_from_civil(year, month, day);
    Some((days * 86_400 + hour * 3600 + minute * 60 + second - offset) * 1_000_000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn common_and_combined_lines_parse() {
        let common = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326"#;
        let r = parse_line(common).unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str(), r.precise), ("GET", "/apache_pb.gif", false));
        // 2000-10-10T20:55:36Z
        assert_eq!(r.time_us, 971_211_336_000_000);
        let combined = r#"10.1.2.3 - - [24/Nov/2026:09:00:01 +0000] "POST /api/v1/items?id=7 HTTP/1.1" 201 12 "https://example.com/" "Mozilla/5.0 (X11; Linux x86_64)""#;
        let r = parse_line(combined).unwrap();
        assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/api/v1/items?id=7"));
        assert_eq!(r.time_us, 1_795_510_801_000_000);
    }

    #[test]
    fn msec_first_or_last_gives_sub_second_times() {
        let first = r#"1795510801.250 10.1.2.3 - - [24/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8""#;
        let r = parse_line(first).unwrap();
        assert_eq!((r.time_us, r.precise), (1_795_510_801_250_000, true));
        let last = r#"10.1.2.3 - - [24/Nov/2026:09:00:01 +0000] "GET /x HTTP/1.1" 200 5 "-" "curl/8" 1795510801.999"#;
        assert_eq!(parse_line(last).unwrap().time_us, 1_795_510_801_999_000);
        // A request time (0.012) is not an epoch time.
        let rt = r#"10.1.2.3 - - [24/Nov/2026:09:00:01 +0000] "GET /x HTTP/1.1" 200 5 "-" "curl/8" 0.012"#;
        assert!(!parse_line(rt).unwrap().precise);
    }

    #[test]
    fn request_time_beside_msec_places_the_request_at_its_start() {
        let last =
            r#"10.1.2.3 - - [24/Nov/2026:09:00:01 +0000] "GET /x HTTP/1.1" 200 5 "-" "curl/8" 0.250 1795510801.999"#;
        let r = parse_line(last).unwrap();
        assert_eq!((r.time_us, r.took_us), (1_795_510_801_749_000, 250_000));
        let first = r#"1795510801.100 1.500 10.1.2.3 - - [24/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 5"#;
        let r = parse_line(first).unwrap();
        assert_eq!((r.time_us, r.took_us), (1_795_510_799_600_000, 1_500_000));
        // Not beside $msec (here $status): no request time.
        let apart =
            r#"10.1.2.3 - - [24/Nov/2026:09:00:01 +0000] "GET /x HTTP/1.1" 200 5 "-" "curl/8" 1795510801.999 0.250"#;
        assert_eq!(parse_line(apart).unwrap().took_us, 0);
    }

    #[test]
    fn what_is_not_a_request_is_a_skip_with_its_reason() {
        for (line, why) in [
            ("", "empty line"),
            ("garbage", "no [time] field"),
            (r#"1.2.3.4 - - [24/Nov/2026:09:00:01 +0000] "-" 400 0"#, "request is not METHOD PATH"),
            (r#"1.2.3.4 - - [31/Foo/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 1"#, "bad [time]"),
            (r#"1.2.3.4 - - [24/Nov/2026:09:00:01 +0000] "get / HTTP/1.1" 200 1"#, "not a token"),
            (r#"1.2.3.4 - - [24/Nov/2026:09:00:01 +0000] "GET x HTTP/1.1" 200 1"#, "does not start with /"),
            (r#"1.2.3.4 - - [24/Nov/2026:09:00:01 +0000] "GET /a"#, "unterminated"),
        ] {
            let e = parse_line(line).unwrap_err();
            assert!(e.starts_with(why) || e.contains(why), "{line:?}: {e}");
        }
        // A proxy's absolute form keeps its path.
        let abs = r#"1.2.3.4 - - [24/Nov/2026:09:00:01 +0000] "GET http://origin.example/a/b?c HTTP/1.1" 200 1"#;
        assert_eq!(parse_line(abs).unwrap().path, "/a/b?c");
    }

    proptest! {
        #[test]
        fn any_line_is_a_request_or_a_skip(line in ".{0,300}") {
            let _ = parse_line(&line);
        }

        #[test]
        fn any_bracketed_line_is_a_request_or_a_skip(
            pre in "[ -~]{0,40}", time in "[0-9A-Za-z/: +-]{0,40}", req in "[ -~]{0,60}", post in "[ -~]{0,40}"
        ) {
            let line = format!("{pre}[{time}] \"{req}\" {post}");
            if let Ok(r) = parse_line(&line) {
                prop_assert!(r.path.starts_with('/'));
                prop_assert!(r.time_us > i64::MIN);
            }
        }
    }
}
