//! QPACK (RFC 9204) as this client uses it: it allows the server no dynamic table
//! (SETTINGS_QPACK_MAX_TABLE_CAPACITY stays 0), so every field line is a static-table reference
//! or a literal. A request's field section is encoded once per prepared request; of a response
//! only `:status`, `location` and `content-encoding` are decoded, the other values skipped.

use std::borrow::Cow;

use bytes::Bytes;
use http::{HeaderMap, Method, Uri};

use super::frames::{put_frame_head, HEADERS};

/// The static table (RFC 9204 Appendix A), by index.
const STATIC: [(&str, &str); 99] = [
    (":authority", ""),
    (":path", "/"),
    ("age", "0"),
    ("content-disposition", ""),
    ("content-length", "0"),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("referer", ""),
    ("set-cookie", ""),
    (":method", "CONNECT"),
    (":method", "DELETE"),
    (":method", "GET"),
    (":method", "HEAD"),
    (":method", "OPTIONS"),
    (":method", "POST"),
    (":method", "PUT"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "103"),
    (":status", "200"),
    (":status", "304"),
    (":status", "404"),
    (":status", "503"),
    ("accept", "*/*"),
    ("accept", "application/dns-message"),
    ("accept-encoding", "gzip, deflate, br"),
    ("accept-ranges", "bytes"),
    ("access-control-allow-headers", "cache-control"),
    ("access-control-allow-headers", "content-type"),
    ("access-control-allow-origin", "*"),
    ("cache-control", "max-age=0"),
    ("cache-control", "max-age=2592000"),
    ("cache-control", "max-age=604800"),
    ("cache-control", "no-cache"),
    ("cache-control", "no-store"),
    ("cache-control", "public, max-age=31536000"),
    ("content-encoding", "br"),
    ("content-encoding", "gzip"),
    ("content-type", "application/dns-message"),
    ("content-type", "application/javascript"),
    ("content-type", "application/json"),
    ("content-type", "application/x-www-form-urlencoded"),
    ("content-type", "image/gif"),
    ("content-type", "image/jpeg"),
    ("content-type", "image/png"),
    ("content-type", "text/css"),
    ("content-type", "text/html; charset=utf-8"),
    ("content-type", "text/plain"),
    ("content-type", "text/plain;charset=utf-8"),
    ("range", "bytes=0-"),
    ("strict-transport-security", "max-age=31536000"),
    ("strict-transport-security", "max-age=31536000; includesubdomains"),
    ("strict-transport-security", "max-age=31536000; includesubdomains; preload"),
    ("vary", "accept-encoding"),
    ("vary", "origin"),
    ("x-content-type-options", "nosniff"),
    ("x-xss-protection", "1; mode=block"),
    (":status", "100"),
    (":status", "204"),
    (":status", "206"),
    (":status", "302"),
    (":status", "400"),
    (":status", "403"),
    (":status", "421"),
    (":status", "425"),
    (":status", "500"),
    ("accept-language", ""),
    ("access-control-allow-credentials", "FALSE"),
    ("access-control-allow-credentials", "TRUE"),
    ("access-control-allow-headers", "*"),
    ("access-control-allow-methods", "get"),
    ("access-control-allow-methods", "get, post, options"),
    ("access-control-allow-methods", "options"),
    ("access-control-expose-headers", "content-length"),
    ("access-control-request-headers", "content-type"),
    ("access-control-request-method", "get"),
    ("access-control-request-method", "post"),
    ("alt-svc", "clear"),
    ("authorization", ""),
    ("content-security-policy", "script-src 'none'; object-src 'none'; base-uri 'none'"),
    ("early-data", "1"),
    ("expect-ct", ""),
    ("forwarded", ""),
    ("if-range", ""),
    ("origin", ""),
    ("purpose", "prefetch"),
    ("server", ""),
    ("timing-allow-origin", "*"),
    ("upgrade-insecure-requests", "1"),
    ("user-agent", ""),
    ("x-forwarded-for", ""),
    ("x-frame-options", "deny"),
    ("x-frame-options", "sameorigin"),
];

/// The HEADERS frame of a request: its pseudo-header fields from `uri` (absolute, with the
/// authority to send), then `headers`.
pub(crate) fn request_headers(method: &Method, uri: &Uri, headers: &HeaderMap) -> Bytes {
    // Required Insert Count and Base, both 0: nothing refers to a dynamic table.
    let mut section = vec![0, 0];
    let path = uri.path_and_query().map(|p| p.as_str()).filter(|p| !p.is_empty()).unwrap_or("/");
    field(&mut section, ":method", method.as_str().as_bytes());
    field(&mut section, ":scheme", uri.scheme_str().unwrap_or("https").as_bytes());
    field(&mut section, ":authority", uri.authority().map_or("", |a| a.as_str()).as_bytes());
    field(&mut section, ":path", path.as_bytes());
    for (name, value) in headers {
        field(&mut section, name.as_str(), value.as_bytes());
    }
    let mut frame = Vec::with_capacity(section.len() + 8);
    put_frame_head(&mut frame, HEADERS, section.len() as u64);
    frame.extend_from_slice(&section);
    Bytes::from(frame)
}

/// One field line: the static entry when name and value match one, else a literal value with
/// the static table's name when it has it, else a literal name and value.
fn field(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    if let Some(i) = STATIC.iter().position(|(n, v)| *n == name && v.as_bytes() == value) {
        put_int(out, 0xc0, 6, i as u64); // 11xxxxxx: indexed, static
    } else if let Some(i) = STATIC.iter().position(|(n, _)| *n == name) {
        put_int(out, 0x50, 4, i as u64); // 0101xxxx: literal value, static name
        put_string(out, 0x00, 7, value);
    } else {
        put_string(out, 0x20, 3, name.as_bytes()); // 001Nhxxx: literal name and value
        put_string(out, 0x00, 7, value);
    }
}

/// An integer with an N-bit prefix (RFC 7541 section 5.1) after the pattern bits `flags`.
fn put_int(out: &mut Vec<u8>, flags: u8, bits: u8, v: u64) {
    let max = (1u64 << bits) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// A string literal, Huffman-coded when that is shorter (the bit before the length's prefix
/// says which).
fn put_string(out: &mut Vec<u8>, flags: u8, bits: u8, s: &[u8]) {
    let mut coded = Vec::with_capacity(s.len());
    if httlib_huffman::encode(s, &mut coded).is_ok() && coded.len() < s.len() {
        put_int(out, flags | (1 << bits), bits, coded.len() as u64);
        out.extend_from_slice(&coded);
    } else {
        put_int(out, flags, bits, s.len() as u64);
        out.extend_from_slice(s);
    }
}

/// What the client needs of a response's field section.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct ResponseHead {
    pub status: u16,
    pub location: Option<Vec<u8>>,
    pub content_encoding: Option<Vec<u8>>,
}

/// Decodes a response's field section (a HEADERS frame's payload).
pub(crate) fn response_head(block: &[u8]) -> Result<ResponseHead, String> {
    let mut r = Reader(block);
    // Required Insert Count: anything but 0 refers to a dynamic table this client never allowed.
    if r.int(8)? != 0 {
        return Err("the server's field section refers to a QPACK dynamic table, which was not allowed".into());
    }
    r.int(7)?; // Base: meaningless without a dynamic table.
    let mut head = ResponseHead::default();
    while let Some(&first) = r.0.first() {
        let (name, value): (Cow<[u8]>, Option<Cow<[u8]>>) = if first & 0x80 != 0 {
            let (n, v) = r.static_entry(first & 0x40, 6)?;
            (n.as_bytes().into(), Some(v.as_bytes().into()))
        } else if first & 0x40 != 0 {
            let (n, _) = r.static_entry(first & 0x10, 4)?;
            (n.as_bytes().into(), r.value_if_wanted(n.as_bytes())?)
        } else if first & 0x20 != 0 {
            let n = r.string(3)?;
            let v = r.value_if_wanted(&n)?;
            (n, v)
        } else {
            return Err("the server's field section refers to a QPACK dynamic table, which was not allowed".into());
        };
        let Some(value) = value else { continue };
        match &name[..] {
            b":status" => head.status = status(&value)?,
            b"location" => head.location = Some(value.into_owned()),
            b"content-encoding" => head.content_encoding = Some(value.into_owned()),
            _ => {}
        }
    }
    if head.status == 0 {
        return Err("a response without :status".into());
    }
    Ok(head)
}

fn status(v: &[u8]) -> Result<u16, String> {
    std::str::from_utf8(v)
        .ok()
        .filter(|s| s.len() == 3)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|s| (100..1000).contains(s))
        .ok_or_else(|| format!("a bad :status {:?}", String::from_utf8_lossy(v)))
}

fn wanted(name: &[u8]) -> bool {
    matches!(name, b":status" | b"location" | b"content-encoding")
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8, String> {
        let (&b, rest) = self.0.split_first().ok_or("a truncated field section")?;
        self.0 = rest;
        Ok(b)
    }

    /// An integer with an N-bit prefix, the pattern bits above it ignored.
    fn int(&mut self, bits: u8) -> Result<u64, String> {
        let max = (1u64 << bits) - 1;
        let mut v = u64::from(self.byte()?) & max;
        if v < max {
            return Ok(v);
        }
        for shift in (0..63).step_by(7) {
            let b = self.byte()?;
            v += u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("an integer too large in a field section".into())
    }

    /// The static entry an index with an N-bit prefix names (`static_bit` set), or an error for
    /// a dynamic one.
    fn static_entry(&mut self, static_bit: u8, bits: u8) -> Result<(&'static str, &'static str), String> {
        let i = self.int(bits)?;
        if static_bit == 0 {
            return Err("the server's field section refers to a QPACK dynamic table, which was not allowed".into());
        }
        STATIC.get(i as usize).copied().ok_or_else(|| format!("static table index {i} does not exist"))
    }

    /// A string literal with an N-bit length prefix, the Huffman flag just above it.
    fn string(&mut self, bits: u8) -> Result<Cow<'a, [u8]>, String> {
        let huffman = self.0.first().is_some_and(|b| b & (1 << bits) != 0);
        let raw = self.raw(bits)?;
        if !huffman {
            return Ok(Cow::Borrowed(raw));
        }
        let mut out = Vec::with_capacity(raw.len() * 8 / 5);
        httlib_huffman::decode(raw, &mut out, httlib_huffman::DecoderSpeed::FourBits)
            .map_err(|e| format!("a bad Huffman-coded string in a field section ({e:?})"))?;
        Ok(Cow::Owned(out))
    }

    fn raw(&mut self, bits: u8) -> Result<&'a [u8], String> {
        let len = self.int(bits)? as usize;
        if len > self.0.len() {
            return Err("a truncated field section".into());
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(s)
    }

    /// A field's literal value (7-bit length prefix), decoded only for a field the client reads.
    fn value_if_wanted(&mut self, name: &[u8]) -> Result<Option<Cow<'a, [u8]>>, String> {
        if wanted(name) {
            self.string(7).map(Some)
        } else {
            self.raw(7).map(|_| None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(block: &[u8]) -> Result<ResponseHead, String> {
        response_head(block)
    }

    #[test]
    fn a_status_from_the_static_table_or_a_literal() {
        // 0xd9: indexed, static 25 (:status 200). 0x5f 0x09: literal value, static name 24
        // (:status, an index past the 4-bit prefix), "201" as is.
        assert_eq!(head(b"\x00\x00\xd9").unwrap().status, 200);
        assert_eq!(head(b"\x00\x00\x5f\x09\x03201").unwrap().status, 201);
        // Interim and other statuses from the table: 103 (24), 100 (63, past the 6-bit prefix).
        assert_eq!(head(b"\x00\x00\xd8").unwrap().status, 103);
        assert_eq!(head(b"\x00\x00\xff\x00").unwrap().status, 100);
        assert!(head(b"\x00\x00").unwrap_err().contains(":status"));
        assert!(head(b"\x00\x00\x5f\x09\x022x").unwrap_err().contains("bad :status"));
    }

    #[test]
    fn huffman_coded_values_are_decoded_and_other_fields_skipped() {
        // RFC 7541 C.4.1: "www.example.com" Huffman-coded, as a location (static name 12).
        let www = b"\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff";
        let mut block = b"\x00\x00\xdb".to_vec(); // :status 404
        block.extend_from_slice(b"\x5c\x8c"); // location, Huffman, 12 bytes
        block.extend_from_slice(www);
        // RFC 7541 C.4.3: "custom-key: custom-value", a literal name and value, both coded.
        // The name's 8 bytes overflow the 3-bit prefix: 7, then 1.
        block.extend_from_slice(b"\x2f\x01\x25\xa8\x49\xe9\x5b\xa9\x7d\x7f");
        block.extend_from_slice(b"\x89\x25\xa8\x49\xe9\x5b\xb8\xe8\xb4\xbf");
        block.push(0xeb); // content-encoding: gzip (43)
        let h = head(&block).unwrap();
        assert_eq!(
            h,
            ResponseHead {
                status: 404,
                location: Some(b"www.example.com".to_vec()),
                content_encoding: Some(b"gzip".to_vec())
            }
        );
        // A section cut short, or a coded value with EOS in it, is an error, not a guess.
        let cut = &block[..block.len() - 20];
        assert!(head(cut).is_err());
        assert!(head(b"\x00\x00\xd9\x5c\x84\xff\xff\xff\xff").is_err(), "EOS inside a string");
    }

    #[test]
    fn a_dynamic_table_that_was_never_allowed_is_an_error() {
        for block in [&b"\x01\x00\xd9"[..], b"\x00\x00\x99", b"\x00\x00\x10", b"\x00\x00\x40\x00", b"\x00\x00\x00"] {
            assert!(head(block).unwrap_err().contains("dynamic table"), "{block:?}");
        }
    }

    #[test]
    fn a_request_section_uses_the_static_table_and_huffman_coding() {
        let mut headers = HeaderMap::new();
        headers.insert("user-agent", "loadlab".parse().unwrap());
        headers.insert("x-custom", "custom-value".parse().unwrap());
        let uri: Uri = "https://www.example.com/".parse().unwrap();
        let frame = request_headers(&Method::GET, &uri, &headers);
        let mut expected = vec![0x00, 0x00];
        expected.push(0xd1); // :method GET (17)
        expected.push(0xd7); // :scheme https (23)
        expected.extend_from_slice(b"\x50\x8c"); // :authority (0), value coded in 12 bytes
        expected.extend_from_slice(b"\xf1\xe3\xc2\xe5\xf2\x3a\x6b\xa0\xab\x90\xf4\xff");
        expected.push(0xc1); // :path / (1)
        expected.push(0x5f); // user-agent (95 = 15 + 80), literal value
        expected.push(80);
        let mut ua = vec![];
        httlib_huffman::encode(b"loadlab", &mut ua).unwrap();
        expected.push(0x80 | ua.len() as u8);
        expected.extend_from_slice(&ua);
        // x-custom: literal name (coded, 6 bytes: shorter than 8), literal value (coded, 9).
        let (mut name, mut value) = (vec![], vec![]);
        httlib_huffman::encode(b"x-custom", &mut name).unwrap();
        httlib_huffman::encode(b"custom-value", &mut value).unwrap();
        expected.push(0x28 | name.len() as u8);
        expected.extend_from_slice(&name);
        expected.push(0x80 | value.len() as u8);
        expected.extend_from_slice(&value);
        assert_eq!(&frame[..2], &[0x01, expected.len() as u8]);
        assert_eq!(&frame[2..], &expected[..]);
        // A value no shorter when coded is sent as it is.
        let mut out = vec![];
        put_string(&mut out, 0, 7, b"\x00");
        assert_eq!(out, b"\x01\x00");
    }
}
