//! Durations printed the way Go's `time.Duration.String` prints them, after vegeta's rounding
//! (to the unit below the largest one the value reaches), so reports compare by eye.

/// vegeta's rounding: >= 1h to the minute, >= 1m to the second, >= 1s to the ms, >= 1ms to the µs.
pub fn round_ns(ns: u64) -> u64 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
