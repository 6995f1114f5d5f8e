//! `loadlab encode`: results to vegeta's JSON lines or CSV, or vegeta's results to .llr.

pub mod args;

use std::io::Write;

use results::interop::{import, CsvExporter, ForeignFormat, JsonExporter};
use results::Consumer;

use crate::args::values::EncodeFormat;
use crate::bad;
use crate::inputs::{feed_all, open_inputs};
use args::EncodeArgs;

pub fn run(a: EncodeArgs) -> anyhow::Result<()> {
    let mut out: Box<dyn Write> = if a.output == "-" {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    } else {
        Box::new(std::io::BufWriter::new(
            std::fs::File::create(&a.output).map_err(|e| bad(format!("--output {}: {e}", a.output)))?,
        ))
    };
    let inputs = open_inputs(&a.files)?;
    let foreign = match a.from {
        EncodeFormat::Llr => None,
        EncodeFormat::Json => Some(ForeignFormat::Json),
        EncodeFormat::Csv => Some(ForeignFormat::Csv),
    };
    if let Some(format) = foreign {
        if a.to.is_some_and(|t| t != EncodeFormat::Llr) {
            return Err(bad("--to: an import (--from json|csv) writes llr"));
        }
        for input in inputs {
            import(input.reader, &input.name, format, &mut out).map_err(crate::inputs::results_error)?;
        }
        out.flush()?;
        return Ok(());
    }
    let mut to: Box<dyn Consumer> = match a.to.unwrap_or(EncodeFormat::Json) {
        EncodeFormat::Json => Box::new(JsonExporter::new(out)),
        EncodeFormat::Csv => Box::new(CsvExporter::new(out)),
        EncodeFormat::Llr => Box::new(results::LlrWriter::new(out)),
    };
    // A conversion keeps every record, the warm-up too.
    feed_all(inputs, &mut to, |_, _| {}, true)?;
    to.flush()?;
    Ok(())
}
