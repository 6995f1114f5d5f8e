//! A target whose URL, headers or body hold templates: compiled once when the targets are read,
//! rendered into a new request for every send.

use std::time::SystemTime;

use bytes::Bytes;
use http::HeaderValue;

use super::{Draw, Files, Place, Template};
use crate::targets::{parse_url, Target};

/// The templated parts of one target.
#[derive(Debug, PartialEq)]
pub struct TargetTemplate {
    url: Option<Template>,
    /// By index into the target's headers.
    headers: Vec<(usize, Template)>,
    body: Option<Template>,
}

impl TargetTemplate {
    /// Compiles what of `t` holds templates (`url_text` is its URL as written); `None` when
    /// nothing does. A body is templated only when it is UTF-8 text: binary bodies go as they
    /// are.
    pub fn compile(t: &Target, url_text: &str, files: &mut Files) -> Result<Option<TargetTemplate>, String> {
        let url = Template::parse(url_text, Place::Url, files).map_err(|e| format!("url: {e}"))?;
        let mut headers = Vec::new();
        for (i, (name, value)) in t.headers.iter().enumerate() {
            if let Ok(text) = value.to_str() {
                if let Some(tpl) = Template::parse(text, Place::Header, files).map_err(|e| format!("{name}: {e}"))? {
                    headers.push((i, tpl));
                }
            }
        }
        let body = match std::str::from_utf8(&t.body) {
            Ok(text) => Template::parse(text, Place::Body, files).map_err(|e| format!("body: {e}"))?,
            Err(_) => None,
        };
        if url.is_none() && headers.is_empty() && body.is_none() {
            return Ok(None);
        }
        Ok(Some(TargetTemplate { url, headers, body }))
    }

    /// The URL as written, when it holds templates.
    pub fn url_text(&self) -> Option<&str> {
        self.url.as_ref().map(Template::text)
    }

    /// `base` with this request's values.
    pub fn render(&self, base: &Target, seq: u64, seed: u64) -> Result<Target, String> {
        let d = Draw { seq, seed, now: SystemTime::now() };
        let mut t = Target {
            method: base.method.clone(),
            url: base.url.clone(),
            headers: base.headers.clone(),
            body: base.body.clone(),
            weight: base.weight,
            template: None,
        };
        let mut s = String::with_capacity(128);
        if let Some(url) = &self.url {
            url.render(&d, Place::Url, &mut s);
            t.url = parse_url(&s).map_err(|e| format!("template url: {e}"))?;
        }
        for (i, tpl) in &self.headers {
            s.clear();
            tpl.render(&d, Place::Header, &mut s);
            t.headers[*i].1 = HeaderValue::from_str(&s)
                .map_err(|_| format!("template {}: not a valid header value", t.headers[*i].0))?;
        }
        if let Some(body) = &self.body {
            s.clear();
            body.render(&d, Place::Body, &mut s);
            t.body = Bytes::from(s);
        }
        Ok(t)
    }
}
