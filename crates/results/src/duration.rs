//! Durations in Go's syntax (`1m30s`, `500ms`, `1.5s`, `300us`, `1µs`), as vegeta's flags take
//! them: the one duration parser of every flag, plan and report.

use std::time::Duration;

/// The longest duration accepted: far beyond any load test, and small enough that adding it to
/// an `Instant` or multiplying it by a rate cannot overflow.
pub const MAX: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Parses a Go duration: one or more decimal numbers, each with a unit (ns, us, µs, ms, s, m, h).
/// A bare `0` is zero. Negative, unit-less or out-of-range values are refused with a message
/// saying why.
pub fn parse(s: &str) -> Result<Duration, String> {
    let text = s.trim();
    let quoted =
        if text.len() > 40 { format!("{:?}...", &text[..text.floor_char_boundary(40)]) } else { format!("{text:?}") };
    let bad = |why: &str| format!("bad duration {quoted}: {why} (expected e.g. 500ms, 1.5s, 1m30s)");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    if text.is_empty() {
        return Err(bad("empty"));
    }
    if text.starts_with('-') {
        return Err(bad("negative"));
    }
    let mut rest = text.strip_prefix('+').unwrap_or(text);
    let mut total_ns: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => a.split_at(a.find(|c: char| !c.is_ascii_digit()).unwrap_or(a.len())),
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return Err(bad("a number must come before each unit"));
        }
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let unit_ns: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "" => return Err(bad("missing unit")),
            _ => return Err(bad(&format!("unknown unit {unit:?}"))),
        };
        let too_large = || bad(&format!("longer than the maximum of {} hours", MAX.as_secs() / 3600));
        let whole: u128 = if int.is_empty() { 0 } else { int.parse().map_err(|_| too_large())? };
        // The fraction exactly, to the nanosecond: digits beyond what the unit resolves are cut.
        let mut part = whole.checked_mul(unit_ns).ok_or_else(too_large)?;
        let mut scale = unit_ns;
        for d in frac.bytes() {
            scale /= 10;
            if scale == 0 {
                break;
            }
            part += u128::from(d - b'0') * scale;
        }
        total_ns = total_ns.checked_add(part).ok_or_else(too_large)?;
        if total_ns > MAX.as_nanos() {
            return Err(too_large());
        }
        rest = after;
    }
    Ok(Duration::from_nanos(total_ns as u64))
}

// Go's `time.Duration.String`, after vegeta's rounding (to the unit below the largest one the
// value reaches), so reports compare with vegeta's by eye.

/// vegeta's rounding: >= 1h to the minute, >= 1m to the second, >= 1s to the ms, >= 1ms to the µs.
pub(crate) fn round_ns(ns: u64) -> u64 {
    const UNITS: [u64; 6] = [3_600_000_000_000, 60_000_000_000, 1_000_000_000, 1_000_000, 1_000, 1];
    for w in UNITS.windows(2) {
        if ns >= w[0] {
            let q = w[1];
            return (ns + q / 2) / q * q;
        }
    }
    ns
}

/// Go's `Duration.String` of `ns`.
pub fn go_string(ns: u64) -> String {
    if ns == 0 {
        return "0s".to_owned();
    }
    if ns < 1_000_000_000 {
        let (unit, div) = if ns < 1_000 {
            ("ns", 1)
        } else if ns < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        return format!("{}{unit}", frac(ns, div));
    }
    let h = ns / 3_600_000_000_000;
    let m = ns / 60_000_000_000 % 60;
    let s = ns % 60_000_000_000;
    let secs = format!("{}s", frac(s, 1_000_000_000));
    match (h, m) {
        (0, 0) => secs,
        (0, m) => format!("{m}m{secs}"),
        (h, m) => format!("{h}h{m}m{secs}"),
    }
}

/// `n / div` with the fraction's trailing zeros dropped.
fn frac(n: u64, div: u64) -> String {
    let whole = n / div;
    let rem = n % div;
    if rem == 0 {
        return whole.to_string();
    }
    let digits = div.ilog10() as usize;
    let f = format!("{rem:0digits$}");
    format!("{whole}.{}", f.trim_end_matches('0'))
}

/// What vegeta prints for a duration: rounded, then Go's format.
pub fn vegeta(ns: u64) -> String {
    go_string(round_ns(ns))
}

/// A wall-clock span, coarse: `45.0s`, `4m05s`, `1h02m` (a lab's estimate, a step's length).
pub fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// Milliseconds as a short latency: `850µs`, `107.3ms`, `1.204s`.
pub fn show_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.0}µs", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.1}ms")
    } else {
        format!("{:.3}s", ms / 1000.0)
    }
}

/// Microseconds of CPU: `38.2µs`, `0.41µs`, `1.20ms`; `-` when not known.
pub fn show_us(us: f64) -> String {
    if !us.is_finite() {
        "-".into()
    } else if us == 0.0 {
        "0µs".into()
    } else if us >= 1000.0 {
        format!("{:.2}ms", us / 1000.0)
    } else if us >= 10.0 {
        format!("{us:.1}µs")
    } else {
        format!("{us:.2}µs")
    }
}

/// A signed change in [`show_us`]'s units: `+4.49ms`, `-120.0µs`.
pub fn show_change_us(us: f64) -> String {
    let sign = if us < 0.0 { "-" } else { "+" };
    format!("{sign}{}", show_us(us.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vegeta_durations() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("600s", Duration::from_secs(600)),
            ("1m30s", Duration::from_secs(90)),
            ("500ms", ms(500)),
            ("1.5s", ms(1500)),
            ("300us", Duration::from_micros(300)),
            ("1µs", Duration::from_micros(1)),
            ("1μs", Duration::from_micros(1)),
            ("2ns", Duration::from_nanos(2)),
            ("1.5h", Duration::from_secs(5400)),
            ("1h2m3.5s", ms(3_723_500)),
            (".5s", ms(500)),
            ("1.s", ms(1000)),
            ("0", Duration::ZERO),
            ("0s", Duration::ZERO),
            (" 10s ", Duration::from_secs(10)),
            ("0.1234567891s", Duration::from_nanos(123_456_789)),
            ("876000h", MAX),
        ] {
            assert_eq!(parse(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn rejections_say_why() {
        for (text, why) in [
            ("", "empty"),
            ("10", "missing unit"),
            ("s", "a number must come before each unit"),
            ("10x", "unknown unit \"x\""),
            ("10S", "unknown unit \"S\""),
            ("-1s", "negative"),
            ("876001h", "longer than the maximum"),
            ("99999999999999999999999999999999999999999h", "longer than the maximum"),
            ("1e300s", "unknown unit \"e\""),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
            assert!(e.starts_with("bad duration"), "{e}");
        }
        // A long input is cut in the message.
        let long = "9".repeat(10_000);
        assert!(parse(&long).unwrap_err().len() < 200);
    }

    #[test]
    fn matches_go_and_vegeta() {
        let cases = [
            (0, "0s"),
            (999, "999ns"),
            (61_242, "61.242µs"),
            (36_968_123, "36.968ms"),
            (8_880_000, "8.88ms"),
            (796_717_420, "796.717ms"),
            (1_006_793_049, "1.007s"),
            (59_997_000_000, "59.997s"),
            (60_034_100_000, "1m0s"),
            (601_008_528_329, "10m1s"),
            (3_725_000_000_000, "1h2m0s"),
        ];
        for (ns, want) in cases {
            assert_eq!(vegeta(ns), want, "{ns}");
        }
        assert_eq!(go_string(60_034_100_000), "1m0.0341s");
        assert_eq!(go_string(1_500), "1.5µs");
    }

    #[test]
    fn spans_latencies_and_cpu_read_short() {
        assert_eq!((span(Duration::from_secs(3725)), span(Duration::from_secs(245))), ("1h02m".into(), "4m05s".into()));
        assert_eq!(
            (show_ms(0.85), show_ms(107.31), show_ms(1204.0)),
            ("850µs".into(), "107.3ms".into(), "1.204s".into())
        );
        assert_eq!((show_change_us(-45.0), show_change_us(4494.95)), ("-45.0µs".into(), "+4.49ms".into()));
    }
}
