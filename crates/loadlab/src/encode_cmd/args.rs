//! The arguments of `encode`.

use clap::Args;

use crate::args::values::{encode_formats, EncodeFormat};

#[derive(Args, Debug)]
pub struct EncodeArgs {
    /// Input files; stdin when none or `-`.
    pub files: Vec<String>,
    /// Output format: json (vegeta's JSON lines, with ttfb and lag), vegeta-json (the same), or
    /// csv; an import (--from json|csv) always writes llr.
    #[arg(long, value_parser = encode_formats())]
    pub to: Option<EncodeFormat>,
    /// Input format: llr, or vegeta's json or csv.
    #[arg(long, default_value = "llr", value_parser = encode_formats())]
    pub from: EncodeFormat,
    /// Where to write; `-` for stdout.
    #[arg(long, short = 'o', default_value = "-")]
    pub output: String,
}
