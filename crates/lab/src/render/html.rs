//! `report.html`: the Markdown report as one self-contained page: the charts inline as SVG, and
//! the runs' interactive time charts (zoomable) embedded. No network, no other file.

use pulldown_cmark::{html, Event, Options, Parser, Tag};

use report::page::{esc, shell};

use super::charts::Figure;

/// The report's style.
const STYLE: &str = r#"body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 16px auto; max-width: 1100px; color: #222; line-height: 1.4; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; } th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; }
th { background: #f4f4f4; } pre { background: #f7f7f7; padding: 8px; overflow-x: auto; font-size: 12px; }
blockquote { color: #444; border-left: 4px solid #ccc; margin-left: 0; padding-left: 12px; }
figure.chart { margin: 8px 0; } figure.chart svg { width: 100%; height: auto; }
iframe.runs { width: 100%; height: 1500px; border: 1px solid #eee; }
iframe.flame { width: 100%; height: 520px; border: 1px solid #eee; display: block; margin: 4px 0; }
"#;

/// Whether a link of the report may stay as it is: a web address, or a path that names no scheme.
fn safe_link(dest: &str) -> bool {
    let lower = dest.to_ascii_lowercase();
    let scheme = lower.split_once(':').map(|(s, _)| s).filter(|s| !s.contains(['/', '?', '#']));
    match scheme {
        Some(s) => s == "http" || s == "https",
        None => !lower.starts_with("//") && !lower.contains('\\'),
    }
}

/// The flame graphs (`profiles/*.svg`) that `md` links to, read from `dir`, to embed.
pub(crate) fn flames(dir: &std::path::Path, md: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for e in Parser::new_ext(md, Options::ENABLE_TABLES) {
        if let Event::Start(Tag::Link { dest_url, .. }) = e {
            let link = dest_url.to_string();
            if link.starts_with("profiles/") && link.ends_with(".svg") && !out.iter().any(|(l, _)| *l == link) {
                if let Ok(svg) = std::fs::read(dir.join(&link)) {
                    out.push((link, svg));
                }
            }
        }
    }
    out
}

/// `md` rendered, each chart image (`charts/STEM.png`) replaced by its SVG, each flame graph
/// linked (`flames`: link and SVG) shown below its link in a frame of its own, where its
/// search and zoom work; `interactive` is a whole page of the runs' charts (or none).
pub(crate) fn render(
    title: &str,
    md: &str,
    figures: &[Figure],
    flames: &[(String, Vec<u8>)],
    interactive: Option<&str>,
) -> String {
    let mut flame: Option<&[u8]> = None;
    // The Markdown is loadlab's own, but its names and paths are data: raw HTML in it is shown
    // as text, and a link that names a scheme other than the web's is not a link.
    let events = Parser::new_ext(md, Options::ENABLE_TABLES).map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Event::Text(h),
        Event::Start(Tag::Link { link_type, dest_url, title, id }) if !safe_link(&dest_url) => {
            Event::Start(Tag::Link { link_type, dest_url: report::page::href(&dest_url).into(), title, id })
        }
        e => e,
    });
    let events = events.map(|e| match &e {
        Event::Start(Tag::Link { dest_url, .. }) => {
            flame = flames.iter().find(|(l, _)| l.as_str() == dest_url.as_ref()).map(|(_, s)| s.as_slice());
            e
        }
        Event::End(pulldown_cmark::TagEnd::Link) => match flame.take() {
            Some(svg) => {
                use base64::Engine;
                let data = base64::engine::general_purpose::STANDARD.encode(svg);
                Event::Html(
                    format!("</a><iframe class=\"flame\" src=\"data:image/svg+xml;base64,{data}\"></iframe>").into(),
                )
            }
            None => e,
        },
        Event::Start(Tag::Image { dest_url, .. }) => {
            match figures.iter().find(|f| dest_url.as_ref() == format!("charts/{}.png", f.stem)) {
                Some(f) => Event::Html(format!("<figure class=\"chart\">{}", f.svg).into()),
                None => e,
            }
        }
        _ => e,
    });
    // An inlined figure's alt text would follow the SVG: drop text inside replaced images.
    let mut body = String::new();
    let mut skipping = false;
    let filtered = events.filter_map(|e| match e {
        Event::Html(ref h) if h.starts_with("<figure class=\"chart\">") => {
            skipping = true;
            Some(e)
        }
        Event::End(pulldown_cmark::TagEnd::Image) if skipping => {
            skipping = false;
            Some(Event::Html("</figure>".into()))
        }
        _ if skipping => None,
        _ => Some(e),
    });
    html::push_html(&mut body, filtered);
    let interactive = interactive.map_or(String::new(), |page| {
        format!(
            "<h2>Interactive charts</h2>\n<p>Every step's first run; drag across a time chart to zoom.</p>\n<iframe class=\"runs\" srcdoc=\"{}\"></iframe>\n",
            esc(page)
        )
    });
    let body = format!(
        r#"<script>
// Script errors and the embedded charts' state on the page's body, for whoever checks it.
window.addEventListener("error", e => document.body.setAttribute("data-errors", String(e.message)));
</script>
{body}{interactive}<script>
const runs = document.querySelector("iframe.runs");
if (runs) {{
  const mark = () => {{
    const b = runs.contentDocument && runs.contentDocument.body;
    if (!b) return;
    if (b.dataset.drawn) document.body.setAttribute("data-runs-drawn", b.dataset.drawn);
    if (b.dataset.errors) document.body.setAttribute("data-errors", b.dataset.errors);
  }};
  runs.addEventListener("load", () => setTimeout(mark, 200));
}}
</script>
"#
    );
    shell(title, STYLE, &body)
}

#[cfg(test)]
mod tests {
    #[test]
    fn data_in_the_report_is_never_markup_or_a_script_link() {
        let md = "# Lab <img src=x onerror=alert(1)>\n\nSide [old](javascript:alert(1)), \
                  [lab](data:text/html,x), [report](../lab-1/report.html), [site](https://example.org/).\n\n\
                  <script>alert(2)</script>\n";
        let page = super::render("t", md, &[], &[], None);
        let body = &page[page.find("</script>").unwrap()..];
        assert!(!body.contains("<img") && !body.contains("<script>alert"), "{body}");
        assert!(!body.contains("href=\"javascript:") && !body.contains("href=\"data:"), "{body}");
        assert!(body.contains("href=\"javascript%3Aalert%281%29\""), "{body}");
        assert!(body.contains("href=\"../lab-1/report.html\"") && body.contains("href=\"https://example.org/\""));
    }
}
