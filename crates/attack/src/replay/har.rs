//! HAR 1.2 files (a browser's or a proxy's recording): each entry's request (method, URL,
//! headers, body) at its `startedDateTime`. A HAR file is one JSON document, so it is read whole
//! (up to [`MAX_HAR`]) and its entries sorted by time; a log of any size streams instead.

use std::collections::VecDeque;
use std::io::Read;
use std::path::Path;

use base64::Engine;
use bytes::Bytes;
use http::{HeaderName, HeaderValue};
use serde::Deserialize;

use super::log::{LogRequest, Skip};
use super::source::{Item, Source};

/// The largest HAR file read (it is held in memory while its entries are sorted).
pub const MAX_HAR: u64 = 512 << 20;

/// Headers a replay does not copy from a recording: the connection's own (HTTP/2 pseudo-headers,
/// hop-by-hop fields, the length of a body it sends itself) and the recorded host (the request
/// goes to `--base-url`).
const NOT_COPIED: [&str; 8] =
    ["host", "content-length", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te"];

#[derive(Deserialize)]
struct File {
    log: Log,
}

#[derive(Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime")]
    started: String,
    request: Request,
}

#[derive(Deserialize)]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<NameValue>,
    #[serde(rename = "postData", default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    params: Vec<NameValue>,
    /// Not in HAR 1.2's postData, but some recorders write binary bodies so.
    #[serde(default)]
    encoding: Option<String>,
}

/// A HAR file's entries, in time order.
pub(crate) struct Har {
    entries: VecDeque<Item>,
}

impl Har {
    pub(crate) fn read(path: &Path, input: impl Read) -> Result<Har, String> {
        let size = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?.len();
        if size > MAX_HAR {
            return Err(format!(
                "{}: a HAR file is read whole, and this one is {} MiB (at most {} MiB): split it, or export an access log",
                path.display(),
                size >> 20,
                MAX_HAR >> 20
            ));
        }
        let file: File =
            serde_json::from_reader(input).map_err(|e| format!("{}: not a HAR file: {e}", path.display()))?;
        let mut entries: Vec<Item> = file
            .log
            .entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                let text = format!("{} {}", e.request.method, e.request.url);
                let parsed = entry(e);
                Item { at: i as u64 + 1, text: if parsed.is_err() { text } else { String::new() }, parsed }
            })
            .collect();
        // Recorders write entries as requests complete; a replay sends them as they started.
        entries.sort_by_key(|e| e.parsed.as_ref().map_or(i64::MIN, |r| r.time_us));
        Ok(Har { entries: entries.into() })
    }
}

impl Source for Har {
    fn next(&mut self) -> Result<Option<Item>, String> {
        Ok(self.entries.pop_front())
    }
}

fn entry(e: Entry) -> Result<LogRequest, Skip> {
    let time = chrono::DateTime::parse_from_rfc3339(&e.started).map_err(|_| "startedDateTime is not ISO 8601")?;
    let r = e.request;
    if r.method.is_empty() || r.method.len() > 16 || !r.method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err("request method is not a token");
    }
    let url: http::Uri = r.url.parse().map_err(|_| "request url is not a URL")?;
    let path = url.path_and_query().map_or("/", |p| p.as_str());
    if !path.starts_with('/') {
        return Err("request url has no path");
    }
    let mut headers = Vec::new();
    for h in &r.headers {
        let name = h.name.to_ascii_lowercase();
        if name.starts_with(':') || NOT_COPIED.contains(&name.as_str()) {
            continue;
        }
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| "a header name is not a token")?;
        let value = HeaderValue::from_str(&h.value).map_err(|_| "a header value holds control bytes")?;
        headers.push((name, value));
    }
    let body = match r.post_data {
        None => Bytes::new(),
        Some(PostData { text: Some(text), encoding: Some(enc), .. }) if enc == "base64" => Bytes::from(
            base64::engine::general_purpose::STANDARD.decode(text).map_err(|_| "postData.text is not base64")?,
        ),
        Some(PostData { text: Some(text), .. }) => Bytes::from(text),
        // A form recorded as its fields only.
        Some(PostData { text: None, params, .. }) => {
            Bytes::from(params.iter().map(|p| format!("{}={}", p.name, p.value)).collect::<Vec<_>>().join("&"))
        }
    };
    Ok(LogRequest {
        time_us: time.timestamp_micros(),
        took_us: 0,
        precise: true,
        method: r.method,
        path: path.to_owned(),
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn har(entries: &str) -> Vec<Item> {
        let dir = std::env::temp_dir().join(format!("loadlab-har-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{}.har", entries.len()));
        let text =
            format!(r#"{{"log":{{"version":"1.2","creator":{{"name":"t","version":"1"}},"entries":[{entries}]}}}}"#);
        std::fs::write(&path, &text).unwrap();
        let mut h = Har::read(&path, text.as_bytes()).unwrap();
        std::iter::from_fn(|| h.next().unwrap()).collect()
    }

    #[test]
    fn entries_in_start_order_with_headers_and_bodies() {
        let items = har(r#"
            {"startedDateTime":"2026-11-24T09:00:01.500+01:00","request":{"method":"POST","url":"https://shop.example/cart?x=1",
             "headers":[{"name":":authority","value":"shop.example"},{"name":"Host","value":"shop.example"},
                        {"name":"Content-Type","value":"application/json"},{"name":"Cookie","value":"s=1"}],
             "postData":{"mimeType":"application/json","text":"{\"sku\":7}"}}},
            {"startedDateTime":"2026-11-24T08:00:01.250Z","request":{"method":"GET","url":"https://shop.example/","headers":[]}},
            {"startedDateTime":"yesterday","request":{"method":"GET","url":"https://shop.example/x"}},
            {"startedDateTime":"2026-11-24T08:00:02Z","request":{"method":"PUT","url":"https://shop.example/f",
             "postData":{"mimeType":"application/x-www-form-urlencoded","params":[{"name":"a","value":"1"},{"name":"b","value":"2"}]}}}
        "#);
        let bad: Vec<_> = items.iter().filter(|i| i.parsed.is_err()).collect();
        assert_eq!(bad.len(), 1);
        assert_eq!((bad[0].at, bad[0].text.as_str()), (3, "GET https://shop.example/x"));
        let ok: Vec<&LogRequest> = items.iter().filter_map(|i| i.parsed.as_ref().ok()).collect();
        assert_eq!(ok.iter().map(|r| r.path.as_str()).collect::<Vec<_>>(), ["/", "/cart?x=1", "/f"]);
        // 09:00:01.5 at +01:00 is 08:00:01.5 UTC: 250 ms after the first.
        assert_eq!(ok[1].time_us - ok[0].time_us, 250_000);
        let names: Vec<&str> = ok[1].headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["content-type", "cookie"]);
        assert_eq!(&ok[1].body[..], b"{\"sku\":7}");
        assert_eq!(&ok[2].body[..], b"a=1&b=2");
    }

    #[test]
    fn what_is_not_a_har_file_says_so() {
        let dir = std::env::temp_dir().join(format!("loadlab-har-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.har");
        std::fs::write(&path, "{\"log\":{}}").unwrap();
        let e = Har::read(&path, &b"{\"log\":{}}"[..]).err().unwrap();
        assert!(e.contains("x.har: not a HAR file: missing field `entries`"), "{e}");
    }
}
