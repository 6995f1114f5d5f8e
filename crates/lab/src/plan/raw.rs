//! The plan file as written: what serde reads before `plan` checks it. Every table refuses
//! unknown fields, so a misspelt key is an error naming it.

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlan {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) question: String,
    pub(super) origin: Option<RawOrigin>,
    #[serde(default)]
    pub(super) targets: toml::map::Map<String, toml::Value>,
    pub(super) load: Option<RawLoad>,
    #[serde(default)]
    pub(super) variants: Vec<RawVariant>,
    #[serde(default)]
    pub(super) slo: toml::map::Map<String, toml::Value>,
    pub(super) capacity: Option<RawCapacity>,
    #[serde(default)]
    pub(super) hypotheses: Vec<RawHypothesis>,
    pub(super) baseline: Option<RawBaseline>,
    pub(super) history: Option<RawHistory>,
    pub(super) profile: Option<RawProfile>,
    pub(super) traces: Option<RawTraces>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTraces {
    pub(super) listen: Option<String>,
    pub(super) export: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProfile {
    pub(super) frequency: Option<i64>,
    pub(super) call_graph: Option<String>,
    pub(super) repeats: Option<String>,
    pub(super) max_size: Option<String>,
    pub(super) perf: Option<String>,
    pub(super) top: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBaseline {
    pub(super) path: String,
    pub(super) fail_on: Option<String>,
    pub(super) threshold: Option<String>,
    pub(super) calibration: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHistory {
    pub(super) path: Option<String>,
    pub(super) fail_on: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOrigin {
    pub(super) listen: Option<String>,
    pub(super) recipe: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTarget {
    pub(super) url: Option<String>,
    pub(super) origin: Option<String>,
    pub(super) path: Option<String>,
    pub(super) start: Option<Vec<String>>,
    pub(super) ready: Option<String>,
    pub(super) pid: Option<u32>,
    pub(super) dir: Option<String>,
    pub(super) metrics: Option<String>,
    #[serde(default)]
    pub(super) series: Vec<String>,
    /// TLS: trust any certificate (a test rig's self-signed one), or these PEM roots.
    pub(super) insecure: Option<bool>,
    pub(super) root_certs: Option<OneOrMany<String>>,
    /// `true` (linux-perf) or a pprof URL.
    pub(super) profile: Option<toml::Value>,
    /// Sample (and, with `profile = true`, profile) every process of this name (`nginx`).
    pub(super) process: Option<String>,
    /// Measured by what it exports (`[targets.NAME.measure]`).
    pub(super) measure: Option<super::measure::RawMeasure>,
    /// Each request carries a W3C `traceparent`.
    pub(super) traces: Option<bool>,
}

/// One value or a list of them.
#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(super) enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T> OneOrMany<T> {
    pub(super) fn into_vec(self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v],
            OneOrMany::Many(v) => v,
        }
    }
}

/// A number or a string with units (`700`, `"700/s"`, `"42/m"`).
#[derive(Deserialize, Clone)]
#[serde(untagged)]
pub(super) enum NumOrText {
    Int(i64),
    Float(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLoad {
    pub(super) rate: Option<OneOrMany<NumOrText>>,
    pub(super) connections: Option<OneOrMany<i64>>,
    pub(super) protocol: Option<OneOrMany<String>>,
    pub(super) requests_per_conn: Option<OneOrMany<i64>>,
    pub(super) streams: Option<OneOrMany<i64>>,
    pub(super) duration: Option<String>,
    pub(super) warmup: Option<String>,
    pub(super) repeats: Option<i64>,
    pub(super) pause: Option<String>,
    pub(super) method: Option<String>,
    #[serde(default, deserialize_with = "headers")]
    pub(super) headers: Vec<String>,
    pub(super) body: Option<String>,
    pub(super) body_file: Option<String>,
    pub(super) timeout: Option<String>,
    pub(super) max_workers: Option<i64>,
    pub(super) pace_tick: Option<String>,
    /// `split` (loadlab and started targets on disjoint CPUs, the default) or `shared`.
    pub(super) placement: Option<String>,
    pub(super) replay: Option<String>,
    pub(super) speed: Option<OneOrMany<NumOrText>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVariant {
    pub(super) name: String,
    pub(super) recipe: Option<String>,
    pub(super) method: Option<String>,
    #[serde(default, deserialize_with = "headers")]
    pub(super) headers: Vec<String>,
    pub(super) body: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCapacity {
    pub(super) start: Option<NumOrText>,
    pub(super) max: Option<NumOrText>,
    pub(super) precision: Option<String>,
    pub(super) probe: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHypothesis {
    pub(super) claim: String,
    pub(super) metric: String,
    pub(super) lower: Option<String>,
    pub(super) higher: Option<String>,
    pub(super) than: String,
    #[serde(rename = "where")]
    pub(super) function: Option<String>,
    pub(super) span: Option<String>,
}

pub(super) fn empty_load() -> RawLoad {
    RawLoad {
        rate: None,
        connections: None,
        protocol: None,
        requests_per_conn: None,
        streams: None,
        duration: None,
        warmup: None,
        repeats: None,
        pause: None,
        method: None,
        headers: Vec::new(),
        body: None,
        body_file: None,
        timeout: None,
        max_workers: None,
        pace_tick: None,
        placement: None,
        replay: None,
        speed: None,
    }
}

/// A plan's headers: a list of `Name: value` lines, or a table (`{ Accept-Encoding = "gzip" }`),
/// read as the same lines.
fn headers<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Headers {
        Lines(Vec<String>),
        Table(std::collections::BTreeMap<String, String>),
    }
    match Headers::deserialize(d) {
        Ok(Headers::Lines(lines)) => Ok(lines),
        Ok(Headers::Table(t)) => Ok(t.into_iter().map(|(k, v)| format!("{k}: {v}")).collect()),
        Err(_) => Err(serde::de::Error::custom(
            "headers: a list of \"Name: value\" lines, or a table of names and string values",
        )),
    }
}
