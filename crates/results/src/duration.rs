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
}
