//! Charts: `data` computes what to draw from records (bounded memory), `svg` draws it as SVG,
//! `html` as a self-contained page, `png` rasterises the SVG.

pub mod data;
mod html;
mod png;
mod svg;

pub use data::{ChartBuilder, ChartData, MinMax, RunSeries};
pub use html::render_html;
pub use png::render_png;
pub use svg::{render_svg, Chart};
