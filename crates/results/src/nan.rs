//! Figures that may be NaN (a median of no values) in JSON: serde_json writes NaN as `null`;
//! these read `null` back as NaN, for every reader of lab.json and its profiles.

use serde::Deserialize;

/// An f64 that JSON wrote as `null` reads back as NaN.
pub fn nan_is_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// An interval whose ends JSON wrote as `null` reads back with NaN ends.
pub fn nan_pair_is_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<(f64, f64)>, D::Error> {
    let pair = Option::<(Option<f64>, Option<f64>)>::deserialize(d)?;
    Ok(pair.map(|(a, b)| (a.unwrap_or(f64::NAN), b.unwrap_or(f64::NAN))))
}
