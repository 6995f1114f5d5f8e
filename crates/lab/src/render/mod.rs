//! A lab's outputs in its directory: `report.md`, `lab.json` (every number, for scripts).

pub mod markdown;

use std::path::Path;

use crate::experiment::Lab;

/// Writes the lab's reports into `dir`; returns the files written.
pub fn write(lab: &Lab, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let json = dir.join("lab.json");
    std::fs::write(&json, serde_json::to_vec_pretty(lab).map_err(std::io::Error::other)?)?;
    let md = dir.join("report.md");
    std::fs::write(&md, markdown::render(lab, &[]))?;
    Ok(vec![md, json])
}
