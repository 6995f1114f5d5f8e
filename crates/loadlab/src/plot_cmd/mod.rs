//! `loadlab plot`: results files to an HTML page, SVG or PNG.

pub mod args;

use report::chart::{render_html, render_png, render_svg, ChartBuilder};

use crate::bad;
use crate::inputs::{feed_all, open_inputs};
use args::PlotArgs;

enum Format {
    Html,
    Svg,
    Png,
}

pub fn run(a: PlotArgs) -> anyhow::Result<()> {
    let chart = a.chart;
    let lower = a.output.to_ascii_lowercase();
    let format = if let Some(f) = &a.format {
        match f.as_str() {
            "svg" => Format::Svg,
            "png" => Format::Png,
            _ => Format::Html,
        }
    } else if a.output == "-" || lower.ends_with(".html") || lower.ends_with(".htm") {
        Format::Html
    } else if lower.ends_with(".svg") {
        Format::Svg
    } else if lower.ends_with(".png") {
        Format::Png
    } else {
        return Err(bad(format!("--output {}: the name must end in .html, .svg or .png (or give --format)", a.output)));
    };
    let mut read = (ChartBuilder::new(a.title.clone()), results::ShardSet::new());
    // Unnamed runs are named after their file.
    feed_all(
        open_inputs(&a.files)?,
        &mut read,
        |(b, set), name| {
            set.source(name);
            b.source(
                std::path::Path::new(name).file_name().map_or(name.to_owned(), |n| n.to_string_lossy().into_owned()),
            )
        },
        a.with_warmup,
    )?;
    let (builder, set) = read;
    // Drawn all the same (what was read is worth seeing), but said, and exit 4.
    crate::inputs::refuse_twice(&set.problems())?;
    let incomplete = crate::inputs::shard_problems(&set.problems());
    let data = builder.finish();
    if data.runs.is_empty() {
        return Err(bad("nothing to plot: the inputs hold no requests"));
    }
    let bytes = match format {
        Format::Html => render_html(&data, chart).into_bytes(),
        Format::Svg => render_svg(&data, chart).into_bytes(),
        Format::Png => render_png(&render_svg(&data, chart), 2.0).map_err(|e| anyhow::anyhow!(e))?,
    };
    if a.output == "-" {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(&bytes)?;
        out.flush()?;
        return incomplete;
    }
    std::fs::write(&a.output, bytes).map_err(|e| bad(format!("--output {}: {e}", a.output)))?;
    incomplete
}
