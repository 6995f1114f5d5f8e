//! The templated parts of a target (URL, header values, body): compiled once when the targets
//! are read, rendered for every send. The target itself puts the parts together (`Target::render`).

use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderName, HeaderValue};

use super::{Draw, Files, Place, Template};

/// The templated parts of one target.
#[derive(Debug, PartialEq)]
pub struct TargetTemplate {
    url: Option<Template>,
    /// By index into the target's headers.
    headers: Vec<(usize, Template)>,
    body: Option<Template>,
}

impl TargetTemplate {
    /// Compiles what of a target holds templates (`url_text` is its URL as written); `None` when
    /// nothing does. A body is templated only when it is UTF-8 text: binary bodies go as they
    /// are.
    pub fn compile(
        url_text: &str,
        headers: &[(HeaderName, HeaderValue)],
        body: &Bytes,
        files: &mut Files,
    ) -> Result<Option<TargetTemplate>, String> {
        let url = Template::parse(url_text, Place::Url, files).map_err(|e| format!("url: {e}"))?;
        let mut templated = Vec::new();
        for (i, (name, value)) in headers.iter().enumerate() {
            if let Ok(text) = value.to_str() {
                if let Some(tpl) = Template::parse(text, Place::Header, files).map_err(|e| format!("{name}: {e}"))? {
                    templated.push((i, tpl));
                }
            }
        }
        let body = match std::str::from_utf8(body) {
            Ok(text) => Template::parse(text, Place::Body, files).map_err(|e| format!("body: {e}"))?,
            Err(_) => None,
        };
        if url.is_none() && templated.is_empty() && body.is_none() {
            return Ok(None);
        }
        Ok(Some(TargetTemplate { url, headers: templated, body }))
    }

    /// The URL as written, when it holds templates.
    pub fn url_text(&self) -> Option<&str> {
        self.url.as_ref().map(Template::text)
    }

    /// Renders request `seq`'s values into `headers` and `body`; the URL's text when it is
    /// templated.
    pub fn render(
        &self,
        seq: u64,
        seed: u64,
        headers: &mut [(HeaderName, HeaderValue)],
        body: &mut Bytes,
    ) -> Result<Option<String>, String> {
        let d = Draw { seq, seed, now: SystemTime::now() };
        let mut s = String::with_capacity(128);
        for (i, tpl) in &self.headers {
            s.clear();
            tpl.render(&d, Place::Header, &mut s);
            headers[*i].1 = HeaderValue::from_str(&s)
                .map_err(|_| format!("template {}: not a valid header value", headers[*i].0))?;
        }
        if let Some(tpl) = &self.body {
            let mut b = String::with_capacity(body.len() + 64);
            tpl.render(&d, Place::Body, &mut b);
            *body = Bytes::from(b);
        }
        Ok(self.url.as_ref().map(|url| {
            s.clear();
            url.render(&d, Place::Url, &mut s);
            s
        }))
    }
}
