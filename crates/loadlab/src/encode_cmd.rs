//! `loadlab encode`: results to vegeta's JSON lines or CSV, or vegeta's results to .llr.

use std::io::Write;

use results::interop::{import, write_csv, write_json, Exported, ForeignFormat};
use results::{Item, Reader};

use crate::bad;
use crate::cli::EncodeArgs;
use crate::report_cmd::open_inputs;

pub fn run(a: EncodeArgs) -> anyhow::Result<()> {
    let mut out: Box<dyn Write> = if a.output == "-" {
        Box::new(std::io::BufWriter::new(std::io::stdout().lock()))
    } else {
        Box::new(std::io::BufWriter::new(
            std::fs::File::create(&a.output).map_err(|e| bad(format!("--output {}: {e}", a.output)))?,
        ))
    };
    let inputs = open_inputs(&a.files)?;
    match a.from.as_str() {
        "llr" => {}
        "vegeta-json" | "json" | "csv" => {
            if a.to.as_deref().is_some_and(|t| t != "llr") {
                return Err(bad("--to: an import (--from vegeta-json|csv) writes llr"));
            }
            let format = if a.from == "csv" { ForeignFormat::Csv } else { ForeignFormat::Json };
            for input in inputs {
                import(input.reader, &input.name, format, &mut out).map_err(|e| bad(e.to_string()))?;
            }
            out.flush()?;
            return Ok(());
        }
        other => return Err(bad(format!("--from: unknown format {other:?} (expected llr, vegeta-json or csv)"))),
    }
    enum To {
        Json(Box<dyn Write>),
        Csv(Box<csv::Writer<Box<dyn Write>>>),
    }
    let mut to = match a.to.as_deref().unwrap_or("json") {
        "json" | "vegeta-json" => To::Json(out),
        "csv" => To::Csv(Box::new(csv::Writer::from_writer(out))),
        other => return Err(bad(format!("--to: unknown format {other:?} (expected json, vegeta-json or csv)"))),
    };
    for input in inputs {
        let mut reader = Reader::new(input.reader, input.name);
        let mut header = None;
        while let Some(item) = reader.next().map_err(|e| bad(e.to_string()))? {
            match item {
                Item::Run(h) => header = Some(h),
                Item::End => {}
                Item::Record(r) => {
                    let h = header.as_ref().expect("records follow a run header");
                    let e = Exported {
                        header: h,
                        record: &r,
                        target: reader.targets().get(r.target as usize).map(String::as_str),
                        error: reader.error_text(r.error),
                    };
                    match &mut to {
                        To::Json(out) => write_json(out, &e)?,
                        To::Csv(out) => write_csv(out, &e)?,
                    }
                }
            }
        }
        for w in reader.warnings() {
            eprintln!("loadlab: warning: {w}");
        }
    }
    match to {
        To::Json(mut out) => out.flush()?,
        To::Csv(mut out) => out.flush()?,
    }
    Ok(())
}
