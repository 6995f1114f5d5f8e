//! Typed values of flags: durations, sizes, rates, and the named choices (formats, charts) with
//! the names help and completions offer.

use std::time::Duration;

use attack::{RateSpec, TargetFormat};
use clap::builder::{PossibleValue, TypedValueParser};
use report::chart::Chart;
use report::ReportType;

/// A Go duration (`500ms`, `1.5s`, `1m30s`).
pub fn duration(s: &str) -> Result<Duration, String> {
    results::duration::parse(s)
}

/// A duration longer than zero.
/// A number that is one: `NaN` and `inf` parse as floats and are refused here.
pub(crate) fn finite(s: &str) -> Result<f64, String> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| format!("{s:?} is not a finite number"))
}

pub(crate) fn positive_duration(s: &str) -> Result<Duration, String> {
    match duration(s)? {
        d if d.is_zero() => Err("must be longer than 0".into()),
        d => Ok(d),
    }
}

/// A size: `N`, `Nb`, `Nkb`, `Nmb` or `Ngb` (powers of 1024).
pub(crate) fn byte_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = [("gb", 1u64 << 30), ("mb", 1 << 20), ("kb", 1 << 10), ("b", 1)]
        .iter()
        .find_map(|(suffix, m)| t.strip_suffix(suffix).map(|n| (n.to_owned(), *m)))
        .unwrap_or((t.clone(), 1));
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("bad size {s:?} (expected e.g. 512kb, 256mb or 2gb)"))
}

/// A rate for `--rate`: `N`, `N/s`, `N/m`, or a ramp `A..B`.
pub(crate) fn rate(s: &str) -> Result<RateSpec, String> {
    match s.parse()? {
        RateSpec::Steps(..) => Err(format!("bad rate {s:?}: steps go in --rate-steps")),
        r => Ok(r),
    }
}

/// Steps for `--rate-steps`: `R,R,...@STEP`.
pub(crate) fn rate_steps(s: &str) -> Result<RateSpec, String> {
    if !s.contains('@') {
        return Err(format!("{s:?}: expected RATE,RATE,...@STEP"));
    }
    s.parse()
}

/// A value parsed by its type's `FromStr` (whose message names what is wrong), with the names
/// clap offers in help and completions.
#[derive(Clone)]
pub struct Choice<T> {
    names: &'static [&'static str],
    parse: fn(&str) -> Result<T, String>,
}

impl<T: Clone + Send + Sync + 'static> TypedValueParser for Choice<T> {
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_str().ok_or_else(|| clap::Error::new(clap::error::ErrorKind::InvalidUtf8).with_cmd(cmd))?;
        (self.parse)(text).map_err(|e| {
            let mut err = clap::Error::raw(clap::error::ErrorKind::ValueValidation, e.clone()).with_cmd(cmd);
            if let Some(a) = arg {
                err.insert(
                    clap::error::ContextKind::InvalidArg,
                    clap::error::ContextValue::String(
                        a.get_long().map_or(a.get_id().to_string(), |l| format!("--{l}")),
                    ),
                );
            }
            err.insert(clap::error::ContextKind::Custom, clap::error::ContextValue::String(e));
            err
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(self.names.iter().map(|n| PossibleValue::new(*n))))
    }
}

pub(crate) fn target_formats() -> Choice<TargetFormat> {
    Choice { names: &["http", "json"], parse: |s| s.parse() }
}

pub(crate) fn report_types() -> Choice<ReportType> {
    Choice { names: &["text", "json", "hist[0,5ms,10ms]", "hdr"], parse: |s| s.parse() }
}

pub(crate) fn charts() -> Choice<Chart> {
    Choice { names: &["all", "latency", "status", "throughput", "hdr"], parse: |s| s.parse() }
}

/// What `encode` reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EncodeFormat {
    Llr,
    /// vegeta's JSON lines (with loadlab's ttfb and lag); `vegeta-json` is the same format.
    Json,
    Csv,
}

pub(crate) fn encode_formats() -> Choice<EncodeFormat> {
    Choice {
        names: &["llr", "json", "vegeta-json", "csv"],
        parse: |s| match s {
            "llr" => Ok(EncodeFormat::Llr),
            "json" | "vegeta-json" => Ok(EncodeFormat::Json),
            "csv" => Ok(EncodeFormat::Csv),
            _ => Err(format!("unknown format {s:?} (expected llr, json, vegeta-json or csv)")),
        },
    }
}

/// A start time: RFC 3339, or Unix seconds.
pub(crate) fn start_time(s: &str) -> Result<std::time::SystemTime, String> {
    let bad = || format!("bad time {s:?} (expected RFC 3339 like 2026-11-23T10:00:00Z, or Unix seconds)");
    if let Ok(secs) = s.trim().parse::<f64>() {
        if !(0.0..1e11).contains(&secs) {
            return Err(bad());
        }
        return Ok(std::time::UNIX_EPOCH + Duration::from_secs_f64(secs));
    }
    let t = chrono::DateTime::parse_from_rfc3339(s.trim()).map_err(|_| bad())?;
    let ns = t.timestamp_nanos_opt().filter(|n| *n >= 0).ok_or_else(bad)?;
    Ok(std::time::UNIX_EPOCH + Duration::from_nanos(ns as u64))
}

/// A share: `5%` or `0.05`.
pub(crate) fn share(s: &str) -> Result<f64, String> {
    lab::parse_percent(s).ok_or_else(|| format!("{s:?} is not a percentage like 5%"))
}
