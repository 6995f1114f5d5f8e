//! Reports over [`results::Metrics`]: vegeta's text layout (with loadlab's extra lines), vegeta's
//! JSON fields (plus extras), vegeta's latency histogram, and HdrHistogram's percentile
//! distribution. Accumulating is `results::Metrics`' job; this crate only renders.
//!
//! Layout: `duration` (Go-style durations as vegeta prints them), `tabwriter` (Go's column
//! alignment), `text`, `json`, `hist`, `hdr`, and `chart` (SVG, PNG and HTML charts).

pub mod chart;
pub mod every;
mod hdr;
mod hist;
mod json;
pub mod page;
mod tabwriter;
mod text;

pub use hdr::write_hdr;
pub use hist::{parse_buckets, write_hist};
pub use json::json_report;
pub use text::write_text;

/// The report kinds of `--type`.
#[derive(Clone, Debug, PartialEq)]
pub enum ReportType {
    Text,
    Json,
    /// Bucket bounds in microseconds.
    Hist(Vec<u64>),
    Hdr,
}

impl std::str::FromStr for ReportType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "text" => Ok(ReportType::Text),
            "json" => Ok(ReportType::Json),
            "hdr" | "hdrplot" => Ok(ReportType::Hdr),
            _ if s.starts_with("hist") => Ok(ReportType::Hist(parse_buckets(&s[4..])?)),
            _ => Err(format!("unknown report type {s:?} (expected text, json, hist[...] or hdr)")),
        }
    }
}

/// Renders `m` as `kind` to `out`.
pub fn write_report(kind: &ReportType, m: &results::Metrics, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    match kind {
        ReportType::Text => write_text(m, out),
        ReportType::Json => {
            serde_json::to_writer(&mut *out, &json_report(m))?;
            out.write_all(b"\n")
        }
        ReportType::Hist(b) => write_hist(m, b, out),
        ReportType::Hdr => write_hdr(m, out),
    }
}
