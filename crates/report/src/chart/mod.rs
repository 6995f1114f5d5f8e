//! Charts: `data` computes what to draw from records (bounded memory), `svg` draws it as SVG,
//! `html` as a self-contained page, `png` rasterises the SVG; `xy` draws line charts of one
//! number against another (across a lab's steps).

pub mod data;
mod html;
mod png;
mod svg;
mod xy;

pub use data::{ChartBuilder, ChartData, MinMax, RunSeries};
pub use html::{render_html, SCRIPT, STYLE};
pub use png::render_png;
pub use svg::{render_svg, Chart, PALETTE};
pub use xy::{render_xy_svg, Series, XyChart};
