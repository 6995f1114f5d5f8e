//! PNG by rasterising the SVG with resvg, using the machine's fonts (DejaVu or any sans-serif);
//! without fonts the charts still draw, without their text.

use std::sync::{Arc, OnceLock};

fn options() -> &'static resvg::usvg::Options<'static> {
    static OPTIONS: OnceLock<resvg::usvg::Options<'static>> = OnceLock::new();
    OPTIONS.get_or_init(|| {
        let mut opts = resvg::usvg::Options::default();
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_system_fonts();
        opts.fontdb = Arc::new(db);
        opts
    })
}

/// Rasterises `svg` at `scale` (2.0 for sharp text on screens).
pub fn render_png(svg: &str, scale: f32) -> Result<Vec<u8>, String> {
    let tree = resvg::usvg::Tree::from_str(svg, options()).map_err(|e| format!("SVG: {e}"))?;
    let size = tree.size().to_int_size().scale_by(scale).ok_or("empty chart")?;
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("chart too large")?;
    resvg::render(&tree, resvg::tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| format!("PNG: {e}"))
}
