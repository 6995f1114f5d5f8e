//! `[targets.NAME]`: what a plan tests (a system running, a command the lab starts, an embedded
//! simulator), each with its TLS trust, what measures it, its series and its profiler, checked.

use std::path::Path;

use super::raw::{OneOrMany, RawTarget};
use super::{fill_port, slug, Doc, PlanError, TargetKind, TargetSpec};

impl Doc<'_> {
    /// `[traces]`: an address and port for the spans' receiver (`listen`), a collector the
    /// client spans go to (`export`), each given a traced target.
    pub(super) fn traces(
        &self,
        raw: super::raw::RawTraces,
        plan: &super::Plan,
    ) -> Result<(Option<std::net::SocketAddr>, Option<String>), PlanError> {
        let traced = plan.targets.iter().any(|t| t.traces);
        let listen = match raw.listen {
            None => None,
            Some(listen) => {
                let addr = listen.parse::<std::net::SocketAddr>().map_err(|_| {
                    self.err("traces.listen", format!("{listen:?}: an address and port, as \"127.0.0.1:4318\""))
                })?;
                if !traced {
                    return Err(self.err("traces.listen", "no target has traces = true"));
                }
                Some(addr)
            }
        };
        if let Some(url) = &raw.export {
            spans::ExportTarget::new(url).map_err(|e| self.err("traces.export", e))?;
            if !traced {
                return Err(self.err("traces.export", "no target has traces = true"));
            }
        }
        Ok((listen, raw.export))
    }

    pub(super) fn targets(
        &self,
        raw: toml::map::Map<String, toml::Value>,
        dir: &Path,
    ) -> Result<Vec<TargetSpec>, PlanError> {
        let path = |p: &str| dir.join(p);
        let mut targets = Vec::new();
        for (name, value) in raw {
            let field = format!("targets.{name}");
            let t: RawTarget = value.try_into().map_err(|e: toml::de::Error| self.err(&field, e.message().trim()))?;
            let kind = match (t.url, t.origin, t.start) {
                (Some(url), None, None) => TargetKind::Running { url, pid: t.pid, process: t.process.clone() },
                (Some(url), None, Some(start)) => {
                    if start.is_empty() {
                        return Err(self.err(&format!("{field}.start"), "an empty command"));
                    }
                    let dir = t.dir.as_deref().map_or_else(|| dir.to_path_buf(), path);
                    TargetKind::Command { url, start, ready: t.ready, dir }
                }
                (None, Some(recipe), None) => {
                    TargetKind::Simulator { recipe: self.file(&format!("{field}.origin"), dir, &recipe)? }
                }
                (None, None, _) => {
                    return Err(
                        self.err(&field, "give url (a running system) or origin (a recipe for an embedded simulator)")
                    )
                }
                _ => return Err(self.err(&field, "url and origin exclude each other; start needs url")),
            };
            self.check_port_placeholder(&field, &kind, t.metrics.as_deref())?;
            let mut tls = attack::TlsOptions { insecure: t.insecure.unwrap_or(false), ..Default::default() };
            for cert in t.root_certs.map(OneOrMany::into_vec).unwrap_or_default() {
                tls.root_certs.push(self.file(&format!("{field}.root_certs"), dir, &cert)?);
            }
            if matches!(kind, TargetKind::Simulator { .. }) && (tls.insecure || !tls.root_certs.is_empty()) {
                return Err(self
                    .err(&field, "insecure and root_certs are for https urls: an embedded origin serves plain HTTP"));
            }
            if let TargetKind::Running { url, .. } | TargetKind::Command { url, .. } = &kind {
                // `{port}` is checked as a port the kernel could give.
                let url = fill_port(url, Some(1));
                attack::parse_url(&url).map_err(|e| self.err(&format!("{field}.url"), e))?;
            }
            // Step ids and files are named after the target's slug: two names that differ only
            // in case or punctuation would write over each other's results.
            let stem = slug(&name);
            if let Some(other) = targets.iter().find(|t: &&TargetSpec| slug(&t.name) == stem) {
                return Err(self.err(
                    &field,
                    format!("{name:?} and {:?} would share the results files of {stem:?}: rename one", other.name),
                ));
            }
            if stem.is_empty() {
                return Err(self.err(&field, "a name needs a letter or a digit"));
            }
            let measure = self.measure(&field, t.measure, &kind, dir)?;
            let series = self.series(&field, t.series)?;
            let profile = self.profiler(&field, &kind, t.profile, t.process)?;
            targets.push(TargetSpec {
                name,
                kind,
                path: t.path.unwrap_or_else(|| "/".into()),
                metrics: t.metrics,
                series,
                measure,
                tls,
                profile,
                traces: t.traces.unwrap_or(false),
            });
        }
        Ok(targets)
    }
}
