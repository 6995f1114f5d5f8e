//! A URL and a header line as loadlab takes them from people.

use http::{HeaderName, HeaderValue, Uri};

use crate::text::quoted;

/// Parses a URL that must be absolute http(s).
pub fn parse_url(s: &str) -> Result<Uri, String> {
    let uri: Uri = s.parse().map_err(|e| format!("bad URL {}: {e}", quoted(s)))?;
    match uri.scheme_str() {
        Some("http") | Some("https") => {}
        _ => return Err(format!("bad URL {}: scheme must be http or https", quoted(s))),
    }
    if uri.host().is_none() {
        return Err(format!("bad URL {}: no host", quoted(s)));
    }
    // http's Uri takes any digits as a port and then reports none (so the default port
    // would be used): check the authority's text.
    let authority = uri.authority().map_or("", |a| a.as_str());
    let host_end = authority.rfind(']').map_or(0, |i| i + 1);
    if let Some((_, port)) = authority[host_end..].rsplit_once(':') {
        if port.parse::<u16>().map_or(true, |p| p == 0) {
            return Err(format!("bad URL {}: port {} is not 1 to 65535", quoted(s), quoted(port)));
        }
    }
    Ok(uri)
}

/// Parses one `Name: value` header line.
pub fn parse_header(line: &str) -> Result<(HeaderName, HeaderValue), String> {
    let (name, value) =
        line.split_once(':').ok_or_else(|| format!("bad header {}: expected \"Name: value\"", quoted(line)))?;
    let name =
        HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| format!("bad header name {:?}", name.trim()))?;
    let value = HeaderValue::from_str(value.trim()).map_err(|_| format!("bad header value for {name}"))?;
    Ok((name, value))
}

/// `url` without its `user:password@`, as a URL is shown (a report, a span, an error): the
/// authority ends at the first `/`, `?` or `#`, so an `@` in the path is left alone.
pub fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}
