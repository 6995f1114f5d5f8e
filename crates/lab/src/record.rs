//! lab.json: a [`Lab`] as `render` writes it, read back by the same types (`lab compare`, a
//! plan's baseline), as criterion reads its baselines into the structs it saved. A format
//! number guards the layout: a field added since is ignored, a field the reader needs and the
//! file lacks is refused by its path (`steps[3].numbers.latency: missing field `p99``).

use std::path::Path;

use serde::Deserialize;

use crate::experiment::Lab;

/// The layout of lab.json this build writes and reads. Raise it when a field is renamed or
/// removed or changes meaning; adding a field does not need it.
pub const FORMAT: u32 = 1;

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ReadError(pub String);

/// The lab whose lab.json is at `path`.
pub fn read(path: &Path) -> Result<Lab, ReadError> {
    let bytes = std::fs::read(path).map_err(|e| ReadError(format!("{}: {e}", path.display())))?;
    parse(&bytes, &path.display().to_string())
}

/// A lab.json's bytes; `name` names it in errors.
pub fn parse(bytes: &[u8], name: &str) -> Result<Lab, ReadError> {
    #[derive(Deserialize)]
    struct Head {
        format: Option<serde_json::Value>,
    }
    let head: Head = serde_json::from_slice(bytes).map_err(|e| ReadError(format!("{name}: not a lab.json: {e}")))?;
    match head.format {
        None => {
            return Err(ReadError(format!(
                "{name}: a lab.json without a format number (written before format {FORMAT}, or not by loadlab): \
                 run the lab again, or compare its results files"
            )))
        }
        Some(serde_json::Value::Number(n)) if n.as_u64() == Some(u64::from(FORMAT)) => {}
        Some(other) => {
            return Err(ReadError(format!("{name}: lab.json format {other}; this loadlab reads format {FORMAT}")))
        }
    }
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        ReadError(format!("{name}: lab.json field {path}: {}", e.into_inner()))
    })
}

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
