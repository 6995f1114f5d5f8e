//! A Prometheus server in front of the exporters (a pod measured through cAdvisor's series, a
//! fleet's node_exporters): instant queries of its HTTP API (`/api/v1/query`), the selectors'
//! sums and the time of the samples they were read from, and its scrape interval
//! (`/api/v1/targets`). Credentials go in a header and nowhere else.

use std::fmt;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};

use crate::fetch::without_credentials;
use crate::Selector;

/// A secret read from a file or the environment: never shown.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: String) -> Secret {
        Secret(s.trim_end_matches(['\n', '\r']).to_owned())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How the server is asked.
#[derive(Clone, Debug)]
pub enum Auth {
    Bearer(Secret),
    Basic { user: String, password: Secret },
}

/// A Prometheus server.
#[derive(Clone)]
pub struct Server {
    /// Its base URL (`http://prometheus:9090`).
    pub url: String,
    pub auth: Option<Auth>,
    /// Its scrape interval: given, or read from it when the lab starts.
    pub interval: Option<Duration>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("url", &self.shown())
            .field("auth", &self.auth)
            .field("interval", &self.interval)
            .finish()
    }
}

/// One answer: the sum, and the newest time (unix s) of the samples it was read from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Answer {
    pub value: f64,
    pub sampled_unix_s: f64,
}

impl Server {
    /// The URL shown and recorded.
    pub fn shown(&self) -> String {
        without_credentials(self.url.trim_end_matches('/'))
    }

    fn headers(&self) -> Vec<(String, String)> {
        use base64::Engine;
        match &self.auth {
            None => Vec::new(),
            Some(Auth::Bearer(t)) => vec![("Authorization".into(), format!("Bearer {}", t.0))],
            Some(Auth::Basic { user, password }) => {
                let both = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{}", password.0));
                vec![("Authorization".into(), format!("Basic {both}"))]
            }
        }
    }

    async fn get(&self, path_and_query: &str, tls: &client::TlsOptions) -> Result<serde_json::Value, String> {
        let url = format!("{}{path_and_query}", self.url.trim_end_matches('/'));
        let shown = self.shown();
        let fetched = client::fetch(&url, &self.headers(), crate::fetch::options(tls))
            .await
            .map_err(|e| format!("{shown}: {e}"))?;
        let json: serde_json::Value = serde_json::from_slice(&fetched.body)
            .map_err(|_| format!("{shown}: answered {} and no JSON: is it a Prometheus server?", fetched.status))?;
        if json["status"] != "success" {
            let what = json["error"].as_str().unwrap_or("no reason given");
            return Err(format!(
                "{shown}: answered {}: {}",
                fetched.status,
                what.chars().take(300).collect::<String>()
            ));
        }
        Ok(json)
    }

    /// `sum(selector)` and the time of its newest sample, evaluated at `at` (unix s; now when
    /// none); none when the selector selects no series.
    pub async fn sum(
        &self,
        selector: &Selector,
        at: Option<f64>,
        tls: &client::TlsOptions,
    ) -> Result<Option<Answer>, String> {
        let (sum, newest) = (format!("sum({selector})"), format!("max(timestamp({selector}))"));
        let (value, sampled) = tokio::join!(self.instant(&sum, at, tls), self.instant(&newest, at, tls));
        Ok(match (value?, sampled?) {
            (Some(value), Some(sampled_unix_s)) => Some(Answer { value, sampled_unix_s }),
            _ => None,
        })
    }

    /// An instant query's single value, none for an empty vector.
    async fn instant(&self, query: &str, at: Option<f64>, tls: &client::TlsOptions) -> Result<Option<f64>, String> {
        let mut path = format!("/api/v1/query?query={}", utf8_percent_encode(query, NON_ALPHANUMERIC));
        if let Some(t) = at {
            path.push_str(&format!("&time={t:.3}"));
        }
        let json = self.get(&path, tls).await?;
        let result =
            json["data"]["result"].as_array().ok_or_else(|| format!("{}: {query}: no result vector", self.shown()))?;
        match result.first() {
            None => Ok(None),
            Some(r) => r["value"][1]
                .as_str()
                .and_then(|v| v.parse::<f64>().ok())
                .map(Some)
                .ok_or_else(|| format!("{}: {query}: a value that is not a number", self.shown())),
        }
    }

    /// The longest scrape interval of its active targets.
    pub async fn scrape_interval(&self, tls: &client::TlsOptions) -> Result<Duration, String> {
        let json = self.get("/api/v1/targets?state=active", tls).await?;
        json["data"]["activeTargets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| go_duration(t["scrapeInterval"].as_str()?))
            .max()
            .ok_or_else(|| format!("{}: no active targets to read a scrape interval from: give interval", self.shown()))
    }
}

/// A Prometheus duration (`15s`, `1m30s`, `500ms`).
pub fn go_duration(text: &str) -> Option<Duration> {
    let mut total = 0.0;
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let n: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return None,
        };
        total += n * scale;
        rest = &rest[unit_end..];
    }
    Some(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_prometheus_writes_them() {
        assert_eq!(go_duration("15s"), Some(Duration::from_secs(15)));
        assert_eq!(go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(go_duration("1x"), None);
        assert_eq!(go_duration(""), None);
    }

    #[test]
    fn secrets_are_not_shown() {
        let s = Server {
            url: "http://u:pw@prom:9090/".into(),
            auth: Some(Auth::Bearer(Secret::new("tok\n".into()))),
            interval: None,
        };
        let shown = format!("{s:?} {}", s.shown());
        assert!(!shown.contains("tok") && !shown.contains("pw"), "{shown}");
        assert_eq!(s.headers()[0].1, "Bearer tok");
    }
}
