//! `[targets.NAME.measure]`: a target measured by what it exports rather than by its processes
//! here (it runs on another machine, or in a pod), and the per-second series a target's
//! `series` charts, both as Prometheus selectors.

use serde::Deserialize;

use super::raw::OneOrMany;
use super::{Doc, PlanError, TargetKind};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMeasure {
    /// The exporter's URL, read at each step's edges.
    metrics: Option<String>,
    cpu: Option<String>,
    memory: Option<String>,
    host: Option<String>,
    /// The share of the host's CPU used outside the target past which a step is marked.
    host_busy: Option<String>,
    /// The share of the host's CPU stolen by its hypervisor past which a step is marked.
    host_steal: Option<String>,
    prometheus: Option<String>,
    /// The server's scrape interval, when it is not to be read from it (`15s`).
    interval: Option<String>,
    /// A bearer token for the server, from a file or an environment variable.
    token_file: Option<String>,
    token_env: Option<String>,
    /// Basic authentication for the server: a user, and a password from a file or a variable.
    user: Option<String>,
    password_file: Option<String>,
    password_env: Option<String>,
    /// TLS to an https exporter, as a target's own settings.
    insecure: Option<bool>,
    root_certs: Option<OneOrMany<String>>,
}

impl Doc<'_> {
    /// The measurement a target's `measure` table asks for.
    pub(super) fn measure(
        &self,
        field: &str,
        raw: Option<RawMeasure>,
        kind: &TargetKind,
        dir: &std::path::Path,
    ) -> Result<Option<scrape::Remote>, PlanError> {
        let Some(raw) = raw else { return Ok(None) };
        let field = format!("{field}.measure");
        let source = match (raw.metrics, raw.prometheus) {
            (Some(metrics), None) => {
                let url = super::fill_port(&metrics, Some(1));
                attack::parse_url(&url).map_err(|e| self.err(&format!("{field}.metrics"), e))?;
                scrape::Source::Exporter(metrics)
            }
            (None, Some(url)) => {
                attack::parse_url(&url).map_err(|e| self.err(&format!("{field}.prometheus"), e))?;
                let interval = match raw.interval.as_deref() {
                    None => None,
                    Some(i) => Some(
                        scrape::prometheus::go_duration(i)
                            .filter(|d| scrape::prometheus::interval_ok(*d))
                            .ok_or_else(|| self.err(&format!("{field}.interval"), format!("{i:?}: a duration above zero and at most an hour, such as \"15s\"")))?,
                    ),
                };
                let secret = |name: &str, file: Option<String>, env: Option<String>| -> Result<Option<scrape::prometheus::Secret>, PlanError> {
                    match (file, env) {
                        (Some(_), Some(_)) => Err(self.err(&format!("{field}.{name}_file"), format!("{name}_file and {name}_env exclude each other"))),
                        (Some(f), None) => {
                            let path = self.file(&format!("{field}.{name}_file"), dir, &f)?;
                            let text = std::fs::read_to_string(&path)
                                .map_err(|e| self.err(&format!("{field}.{name}_file"), format!("{f}: {e}")))?;
                            Ok(Some(scrape::prometheus::Secret::new(text)))
                        }
                        (None, Some(v)) => std::env::var(&v)
                            .map(|t| Some(scrape::prometheus::Secret::new(t)))
                            .map_err(|_| self.err(&format!("{field}.{name}_env"), format!("${v} is not set"))),
                        (None, None) => Ok(None),
                    }
                };
                let token = secret("token", raw.token_file, raw.token_env)?;
                let password = secret("password", raw.password_file, raw.password_env)?;
                let auth = match (token, raw.user, password) {
                    (None, None, None) => None,
                    (Some(t), None, None) => Some(scrape::prometheus::Auth::Bearer(t)),
                    (None, Some(user), Some(password)) => Some(scrape::prometheus::Auth::Basic { user, password }),
                    (None, Some(_), None) => return Err(self.err(&format!("{field}.user"), "give password_file or password_env with it")),
                    (None, None, Some(_)) => return Err(self.err(&field, "a password needs its user")),
                    (Some(_), _, _) => return Err(self.err(&field, "a token and a user exclude each other")),
                };
                scrape::Source::Prometheus(scrape::prometheus::Server { url, auth, interval, interval_checked: false })
            }
            (Some(_), Some(_)) => return Err(self.err(&field, "metrics (an exporter) and prometheus (a server) exclude each other")),
            (None, None) => {
                return Err(self.err(
                    &field,
                    "give metrics, the exporter's URL (http://HOST:PORT/metrics), or prometheus, a server's (http://HOST:9090)",
                ))
            }
        };
        if matches!(kind, TargetKind::Simulator { .. }) {
            return Err(self.err(&field, "an embedded simulator runs here: its CPU is read from this process"));
        }
        let (cpu, memory) = selectors(raw.cpu.as_deref(), raw.memory.as_deref())
            .map_err(|(name, e)| self.err(&format!("{field}.{name}"), e))?;
        if let Some(h) = &raw.host {
            attack::parse_url(&super::fill_port(h, Some(1))).map_err(|e| self.err(&format!("{field}.host"), e))?;
        }
        let share = |name: &str, text: Option<&str>, default: f64| match text {
            None => Ok(default),
            Some(text) => text
                .trim()
                .strip_suffix('%')
                .and_then(|p| p.trim().parse::<f64>().ok())
                .filter(|p| p.is_finite() && *p > 0.0 && *p < 100.0)
                .map(|p| p / 100.0)
                .ok_or_else(|| self.err(&format!("{field}.{name}"), format!("{text:?}: a share such as \"10%\""))),
        };
        let host_limits = scrape::host::Limits {
            busy_share: share("host_busy", raw.host_busy.as_deref(), scrape::host::DEFAULT_BUSY_SHARE)?,
            steal_share: share("host_steal", raw.host_steal.as_deref(), scrape::host::DEFAULT_STEAL_SHARE)?,
        };
        let mut tls = attack::TlsOptions { insecure: raw.insecure.unwrap_or(false), ..Default::default() };
        for cert in raw.root_certs.map(OneOrMany::into_vec).unwrap_or_default() {
            tls.root_certs.push(self.file(&format!("{field}.root_certs"), dir, &cert)?);
        }
        Ok(Some(scrape::Remote { source, cpu, memory, host: raw.host, host_limits, tls }))
    }

    /// A target's `series`, each a selector.
    pub(super) fn series(&self, field: &str, series: Vec<String>) -> Result<Vec<scrape::Selector>, PlanError> {
        series.iter().map(|s| scrape::Selector::parse(s).map_err(|e| self.err(&format!("{field}.series"), e))).collect()
    }
}

/// The CPU and memory selectors asked for: the process's own series when neither is named; a
/// chosen CPU series says nothing of which memory series goes with it. An error names the field.
pub(crate) fn selectors(
    cpu: Option<&str>,
    memory: Option<&str>,
) -> Result<(scrape::Selector, Option<scrape::Selector>), (&'static str, String)> {
    let parse = |name, text: &str| scrape::Selector::parse(text).map_err(|e| (name, e));
    let memory = match (cpu, memory) {
        (None, None) => Some(parse("memory", scrape::remote::DEFAULT_MEMORY)?),
        (_, Some(m)) => Some(parse("memory", m)?),
        (Some(_), None) => None,
    };
    Ok((parse("cpu", cpu.unwrap_or(scrape::remote::DEFAULT_CPU))?, memory))
}

/// A target measured by an exporter (`metrics`) or a Prometheus server, as `lab capacity URL`'s
/// flags ask for it; an error names the flag's field.
pub fn remote(
    metrics: Option<String>,
    prometheus: Option<String>,
    cpu: Option<&str>,
    memory: Option<&str>,
    host: Option<String>,
    tls: attack::TlsOptions,
) -> Result<scrape::Remote, String> {
    let (cpu, memory) = selectors(cpu, memory).map_err(|(name, e)| format!("{name}: {e}"))?;
    let source = match (metrics, prometheus) {
        (Some(m), None) => scrape::Source::Exporter(m),
        (None, Some(url)) => scrape::Source::Prometheus(scrape::prometheus::Server {
            url,
            auth: None,
            interval: None,
            interval_checked: false,
        }),
        _ => return Err("give an exporter's URL or a Prometheus server's, one of them".into()),
    };
    let urls = match &source {
        scrape::Source::Exporter(u) | scrape::Source::Prometheus(scrape::prometheus::Server { url: u, .. }) => {
            std::iter::once(u).chain(&host)
        }
    };
    for u in urls {
        attack::parse_url(u).map_err(|e| format!("{u}: {e}"))?;
    }
    Ok(scrape::Remote { source, cpu, memory, host, host_limits: Default::default(), tls })
}
