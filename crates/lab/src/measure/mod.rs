//! What a step measured and the pure rules that read it, below every phase of a lab: the
//! per-second `windows`, a step's `numbers`, the `metric` that names one of them, `stats`
//! (medians, intervals, Welch's test) and `verdict` (SLO clauses, whether a step counts,
//! hypothesis findings).

use serde::Deserialize;

pub mod ab;
pub mod metric;
pub mod numbers;
pub mod stats;
pub mod verdict;
pub mod windows;

/// An f64 that JSON wrote as `null` (serde_json writes NaN so: a median of no values) reads
/// back as NaN.
pub(crate) fn nan_is_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// An interval whose ends JSON wrote as `null` reads back with NaN ends.
pub(crate) fn nan_pair_is_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<(f64, f64)>, D::Error> {
    let pair = Option::<(Option<f64>, Option<f64>)>::deserialize(d)?;
    Ok(pair.map(|(a, b)| (a.unwrap_or(f64::NAN), b.unwrap_or(f64::NAN))))
}
