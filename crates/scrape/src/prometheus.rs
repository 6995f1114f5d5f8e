//! A Prometheus server in front of the exporters (a pod measured through cAdvisor's series, a
//! fleet's node_exporters): instant queries of its HTTP API (`/api/v1/query`), the selectors'
//! sums and the time of the samples they were read from, and its scrape interval
//! (`/api/v1/targets`). Credentials go in a header and nowhere else.

use std::fmt;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};

use std::collections::BTreeMap;

use crate::answers;
pub use crate::answers::{go_duration, interval_ok, MAX_INTERVAL};
use crate::counters::Counters;
use crate::fetch::without_credentials;
use crate::Selector;

/// How far past the time asked for a sample's time may be (clocks read to the millisecond).
const CLOCK_SLACK_S: f64 = 1.0;

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
    /// Whether the interval is one the server said its targets are scraped at (read from it, or
    /// given and found among its targets' own).
    pub interval_checked: bool,
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
        answers::envelope(fetched.status, &fetched.body).map_err(|e| format!("{shown}: {e}"))
    }

    /// `sum(selector)` and the time of its newest sample, evaluated at `at` (unix s; now when
    /// none); none when the selector selects no series.
    pub async fn sum(
        &self,
        selector: &Selector,
        at: Option<f64>,
        tls: &client::TlsOptions,
    ) -> Result<Option<Answer>, String> {
        let at = at.unwrap_or_else(crate::fetch::unix_now);
        let (sum, newest) = (format!("sum({selector})"), format!("max(timestamp({selector}))"));
        let (value, sampled) = tokio::join!(self.vector(&sum, at, tls), self.vector(&newest, at, tls));
        let (value, sampled) = (value?.into_values().next(), sampled?.into_values().next());
        Ok(match (value, sampled) {
            (Some(value), Some(sampled_unix_s)) => {
                Some(Answer { value, sampled_unix_s: self.sampled(sampled_unix_s, at)? })
            }
            _ => None,
        })
    }

    /// A counter's series now, each value checked ([`Counters::of`]), and the time of the newest
    /// sample they were read from.
    pub async fn counters(&self, selector: &Selector, tls: &client::TlsOptions) -> Result<(Counters, f64), String> {
        let at = crate::fetch::unix_now();
        let (query, times_query) = (selector.to_string(), format!("timestamp({selector})"));
        let (values, times) = tokio::join!(self.vector(&query, at, tls), self.vector(&times_query, at, tls));
        let (values, times) = (values?, times?);
        let mut newest = f64::NEG_INFINITY;
        for t in times.values() {
            newest = newest.max(self.sampled(*t, at)?);
        }
        let name = selector.name().unwrap_or_default();
        let counters = Counters::of(values.into_iter().map(|(k, v)| (format!("{name}{k}"), v)), &selector.to_string())?;
        Ok((counters, newest))
    }

    /// A sample's time, when it is one a server could have answered for a query at `at`: a
    /// server never answers with a sample from after the time asked for.
    fn sampled(&self, t: f64, at: f64) -> Result<f64, String> {
        match t {
            t if !t.is_finite() => Err(format!("{}: a sample time that is not a number", self.shown())),
            t if t > at + CLOCK_SLACK_S => Err(format!(
                "{}: a sample from {:.0} s after the time asked for: not an answer to trust",
                self.shown(),
                t - at
            )),
            t => Ok(t),
        }
    }

    /// An instant query's vector at `at`: each series' value by its labels (without its name).
    async fn vector(&self, query: &str, at: f64, tls: &client::TlsOptions) -> Result<BTreeMap<String, f64>, String> {
        let path = format!("/api/v1/query?query={}&time={at:.3}", utf8_percent_encode(query, NON_ALPHANUMERIC));
        let json = self.get(&path, tls).await?;
        answers::vector(&json).map_err(|e| format!("{}: {query}: {e}", self.shown()))
    }

    /// The scrape intervals of its active targets, shortest first; an interval no scrape can
    /// have (zero, over [`MAX_INTERVAL`], not a duration) is refused, named.
    pub async fn scrape_intervals(&self, tls: &client::TlsOptions) -> Result<Vec<Duration>, String> {
        let json = self.get("/api/v1/targets?state=active", tls).await?;
        answers::intervals(&json).map_err(|e| format!("{}: {e}", self.shown()))
    }
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
        assert_eq!(go_duration("99999999999999999999999h"), None, "too long for a Duration, not a panic");
        assert_eq!(go_duration(&"9".repeat(400)), None, "infinite as a float");
        assert!(!interval_ok(go_duration("0s").unwrap()) && !interval_ok(go_duration("2h").unwrap()));
        assert!(interval_ok(go_duration("1s").unwrap()));
        assert_eq!(go_duration(""), None);
    }

    #[test]
    fn secrets_are_not_shown() {
        let s = Server {
            url: "http://u:pw@prom:9090/".into(),
            auth: Some(Auth::Bearer(Secret::new("tok\n".into()))),
            interval: None,
            interval_checked: false,
        };
        let shown = format!("{s:?} {}", s.shown());
        assert!(!shown.contains("tok") && !shown.contains("pw"), "{shown}");
        assert_eq!(s.headers()[0].1, "Bearer tok");
    }
}
