//! Go-style durations (`300ms`, `1m30s`, `1.5h`), as vegeta's flags take them.

use std::time::Duration;

/// Parses a Go duration: a sequence of decimal numbers with units ns, us, µs, ms, s, m, h.
/// A bare `0` is zero.
pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    if s.is_empty() {
        return Err("empty duration".to_owned());
    }
    let mut rest = s;
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        if num_len == 0 {
            return Err(format!("bad duration {s:?}"));
        }
        let n: f64 = rest[..num_len].parse().map_err(|_| format!("bad duration {s:?}"))?;
        rest = &rest[num_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err(format!("bad duration {s:?}: missing unit")),
            u => return Err(format!("bad duration {s:?}: unknown unit {u:?}")),
        };
        rest = &rest[unit_len..];
        total += n * unit;
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_durations() {
        assert_eq!(parse("600s").unwrap(), Duration::from_secs(600));
        assert_eq!(parse("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("1.5h").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("0").unwrap(), Duration::ZERO);
        for bad in ["", "10", "s", "10x", "-1s"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
