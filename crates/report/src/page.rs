//! The one HTML page shell of every page loadlab writes or serves (`plot`'s page, the lab's
//! report.html and compare.html, the live dashboard): self-contained, nothing fetched.

/// `s` escaped for HTML text and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// `json` made safe to sit inside a `<script type="application/json">` element: every `<`, `>`
/// and `&` written as a JSON escape, so no text (`</script>`, `<!--<script>`) can end the element
/// or put the HTML parser in another state; U+2028 and U+2029 too, which old script parsers read
/// as line ends. JSON.parse reads the same data back.
pub fn json_in_script(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// What a path may keep as it is in a URL: the unreserved characters and `/`; everything else
/// (`:`, `\\`, `%`, `?`, `#`, spaces, quotes) is percent-encoded.
const PATH_KEEPS: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// A file path as a link's URL that can only ever be a path: percent-encoded, so that no scheme
/// (`javascript:`) survives (its `:` is `%3A`), and never starting with `//` (a host). An
/// absolute path stays absolute (a page opened from disk resolves it to `file:///...`). Data
/// in a link is always built through this, never written into an `href` as it is.
pub fn href(path: &str) -> String {
    let encoded = percent_encoding::utf8_percent_encode(path, PATH_KEEPS).to_string();
    if encoded.starts_with("//") {
        // `//host/...` names a host: the same path, said without that.
        format!("/.{encoded}")
    } else if encoded.is_empty() {
        ".".into()
    } else {
        encoded
    }
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

    #[test]
    fn json_in_a_script_element_cannot_leave_it() {
        let data = serde_json::json!({"branch": "<!--<script>", "plan": "</script><b>&", "x": "\u{2028}"});
        let safe = super::json_in_script(&data.to_string());
        assert!(!safe.contains(['<', '>', '&', '\u{2028}']), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), data);
    }

    #[test]
    fn a_link_is_always_a_path() {
        use super::href;
        assert_eq!(href("javascript:alert(1)//x/report.html"), "javascript%3Aalert%281%29//x/report.html");
        assert_eq!(href("//evil.example/x"), "/.//evil.example/x");
        assert_eq!(href("\\\\evil.example\\x"), "%5C%5Cevil.example%5Cx");
        assert_eq!(href("/home/ci/lab 1/report.html"), "/home/ci/lab%201/report.html");
        assert_eq!(href("../lab-1/report.html"), "../lab-1/report.html");
        assert_eq!(href("a\"b<c>#d?e%f"), "a%22b%3Cc%3E%23d%3Fe%25f");
        assert_eq!(href("data:text/html,x"), "data%3Atext/html%2Cx");
        assert_eq!(href(""), ".");
    }
}
