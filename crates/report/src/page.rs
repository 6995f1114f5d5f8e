//! The one HTML page shell of every page loadlab writes or serves (`plot`'s page, the lab's
//! report.html and compare.html, the live dashboard): self-contained, nothing fetched.

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A whole page: `title` (escaped here), the page's own `style`, and its `body` (HTML as is).
pub fn shell(title: &str, style: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n\
         <style>\n{style}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        esc(title)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_title_is_escaped_and_the_body_kept() {
        let page = super::shell("a <b> & \"c\"", "p { }\n", "<p>x</p>\n");
        assert!(page.starts_with("<!doctype html>"));
        assert!(page.contains("<title>a &lt;b&gt; &amp; &quot;c&quot;</title>"));
        assert!(page.contains("<body>\n<p>x</p>\n</body>"));
    }
}
