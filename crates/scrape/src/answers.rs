//! What a Prometheus server's HTTP API answers, read as plain data: the JSON envelope, an
//! instant query's vector, the active targets' scrape intervals. Pure, so that any bytes a
//! server (or someone posing as one) sends can be tried against them (`fuzz/`, the property
//! tests): a value or a one-line error, never a panic.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use results::text::plain_line;

use crate::counters::{series_key, SHOWN};

/// The JSON of an answer with HTTP status `status`, when it says `success`; else the server's
/// own reason, as plain text cut to a line.
pub fn envelope(status: u16, body: &[u8]) -> Result<serde_json::Value, String> {
    let json: serde_json::Value = serde_json::from_slice(body)
        .map_err(|_| format!("answered {status} and no JSON: is it a Prometheus server?"))?;
    if json["status"] != "success" {
        let what = json["error"].as_str().unwrap_or("no reason given");
        return Err(format!("answered {status}: {}", plain_line(what, 300)));
    }
    Ok(json)
}

/// An instant query's vector: each series' value by its labels (without its name); a series
/// twice, a value that is not a number's text, or no vector at all, refused.
pub fn vector(json: &serde_json::Value) -> Result<BTreeMap<String, f64>, String> {
    let result = json["data"]["result"].as_array().ok_or("no result vector")?;
    let mut out = BTreeMap::new();
    for r in result {
        let labels: BTreeMap<String, String> = r["metric"]
            .as_object()
            .map(|m| m.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
            .unwrap_or_default();
        let key = series_key("", &labels);
        let value = r["value"][1].as_str().and_then(|v| v.parse::<f64>().ok()).ok_or("a value that is not a number")?;
        if out.insert(key.clone(), value).is_some() {
            return Err(format!("the series {} twice", plain_line(&key, SHOWN)));
        }
    }
    Ok(out)
}

/// The scrape intervals of the active targets in `/api/v1/targets`' answer, shortest first; an
/// interval no scrape can have (zero, over [`MAX_INTERVAL`], not a duration) refused, named.
pub fn intervals(json: &serde_json::Value) -> Result<Vec<Duration>, String> {
    let mut found = BTreeSet::new();
    for t in json["data"]["activeTargets"].as_array().into_iter().flatten() {
        let Some(text) = t["scrapeInterval"].as_str() else { continue };
        let d = go_duration(text).filter(|d| interval_ok(*d)).ok_or_else(|| {
            format!(
                "a target's scrapeInterval {:?} is not an interval a scrape can have (above zero, at most {})",
                plain_line(text, 40),
                results::duration::span(MAX_INTERVAL)
            )
        })?;
        found.insert(d);
    }
    match found.is_empty() {
        true => Err("no active targets to read a scrape interval from: give interval".into()),
        false => Ok(found.into_iter().collect()),
    }
}

/// The longest scrape interval the lab works with: a step waits up to one for a fresh sample.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);

/// Whether `d` is an interval a scrape can have: above zero, at most [`MAX_INTERVAL`].
pub fn interval_ok(d: Duration) -> bool {
    !d.is_zero() && d <= MAX_INTERVAL
}

/// A Prometheus duration (`15s`, `1m30s`, `500ms`); none for any other text, and for one too
/// long for a `Duration`.
pub fn go_duration(text: &str) -> Option<Duration> {
    let mut total = 0.0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    Duration::try_from_secs_f64(total).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_s_answers_are_read_and_bad_ones_refused_in_one_line() {
        let ok = br#"{"status":"success","data":{"result":[{"metric":{"__name__":"c","pod":"a"},"value":[1,"2.5"]},{"metric":{"pod":"b"},"value":[1,"NaN"]}]}}"#;
        let v = vector(&envelope(200, ok).unwrap()).unwrap();
        assert_eq!(v[r#"{pod="a"}"#], 2.5);
        assert!(v[r#"{pod="b"}"#].is_nan(), "read as it is; a counter's check refuses it");
        let e = envelope(400, br#"{"status":"error","error":"bad \u001b]0;x\u0007 query"}"#).unwrap_err();
        assert_eq!(e, "answered 400: bad ?]0;x? query");
        assert!(envelope(502, b"<html>").unwrap_err().contains("no JSON"));
        let twice = br#"{"status":"success","data":{"result":[{"metric":{"a":"1"},"value":[1,"1"]},{"metric":{"a":"1"},"value":[1,"1"]}]}}"#;
        assert!(vector(&envelope(200, twice).unwrap()).unwrap_err().contains("twice"));
        let targets = |i: &str| {
            let text = format!(
                r#"{{"status":"success","data":{{"activeTargets":[{{"scrapeInterval":"{i}"}},{{"scrapeInterval":"1s"}}]}}}}"#
            );
            intervals(&envelope(200, text.as_bytes()).unwrap())
        };
        assert_eq!(targets("15s").unwrap(), vec![Duration::from_secs(1), Duration::from_secs(15)]);
        for bad in ["0s", "99999999999999999999999h", "2h", "soon"] {
            let e = targets(bad).unwrap_err();
            assert!(e.contains("not an interval a scrape can have"), "{bad}: {e}");
        }
    }
}
