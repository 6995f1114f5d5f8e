//! `loadlab plot`: results files to an HTML page, SVG or PNG.

use report::chart::{render_html, render_png, render_svg, Chart, ChartBuilder};
use results::{Item, Reader};

use crate::bad;
use crate::cli::PlotArgs;
use crate::report_cmd::open_inputs;

enum Format {
    Html,
    Svg,
    Png,
}

pub fn run(a: PlotArgs) -> anyhow::Result<()> {
    let chart: Chart = a.chart.parse().map_err(|e: String| bad(format!("--chart: {e}")))?;
    let lower = a.output.to_ascii_lowercase();
    let format = if lower.ends_with(".html") || lower.ends_with(".htm") {
        Format::Html
    } else if lower.ends_with(".svg") {
        Format::Svg
    } else if lower.ends_with(".png") {
        Format::Png
    } else {
        return Err(bad(format!("--output {}: the name must end in .html, .svg or .png", a.output)));
    };
    let mut builder = ChartBuilder::new(a.title.clone());
    for input in open_inputs(&a.files)? {
        let base = std::path::Path::new(&input.name)
            .file_name()
            .map_or(input.name.clone(), |n| n.to_string_lossy().into_owned());
        let mut reader = Reader::new(input.reader, input.name.clone());
        let mut runs = 0;
        while let Some(item) = reader.next().map_err(|e| bad(e.to_string()))? {
            match item {
                Item::Run(h) => {
                    runs += 1;
                    let fallback = if runs == 1 { base.clone() } else { format!("{base}#{runs}") };
                    builder.start_run(&h, &fallback);
                }
                Item::Record(r) => builder.add(&r, reader.error_text(r.error)),
                Item::End => {}
            }
        }
        for w in reader.warnings() {
            eprintln!("loadlab: warning: {w}");
        }
    }
    let data = builder.finish();
    if data.runs.is_empty() {
        return Err(bad("nothing to plot: the inputs hold no requests"));
    }
    let bytes = match format {
        Format::Html => render_html(&data, chart).into_bytes(),
        Format::Svg => render_svg(&data, chart).into_bytes(),
        Format::Png => render_png(&render_svg(&data, chart), 2.0).map_err(|e| anyhow::anyhow!(e))?,
    };
    std::fs::write(&a.output, bytes).map_err(|e| bad(format!("--output {}: {e}", a.output)))?;
    Ok(())
}
