//! `{port}`: a started target's port, left to the lab (filled by `systems` at the start).

use super::{Doc, PlanError, TargetKind, TargetSpec};

/// What a started target's `{port}` stands for in its url, command, ready and metrics.
pub(crate) const PORT_PLACEHOLDER: &str = "{port}";
use PORT_PLACEHOLDER as P;

/// `text` with `{port}` replaced by `port` (unchanged without one).
pub(crate) fn fill_port(text: &str, port: Option<u16>) -> String {
    match port {
        Some(p) => text.replace(P, &p.to_string()),
        None => text.to_owned(),
    }
}

impl TargetSpec {
    /// Whether the lab picks this started target's port (`{port}` in its url).
    pub fn uses_port_placeholder(&self) -> bool {
        matches!(&self.kind, TargetKind::Command { url, .. } if url.contains(P))
    }
}

impl Doc<'_> {
    /// `{port}` is a port the lab picks for a command it starts: the url must carry it so the
    /// load goes where the command listens.
    pub(super) fn check_port_placeholder(
        &self,
        field: &str,
        kind: &TargetKind,
        metrics: Option<&str>,
    ) -> Result<(), PlanError> {
        let has = |s: &str| s.contains(P);
        match kind {
            TargetKind::Command { url, start, ready, .. } => {
                let elsewhere =
                    start.iter().any(|a| has(a)) || ready.as_deref().is_some_and(has) || metrics.is_some_and(has);
                if elsewhere && !has(url) {
                    return Err(self.err(
                        &format!("{field}.url"),
                        format!("the command is given {P} but the url is not: write the url with {P} too"),
                    ));
                }
                Ok(())
            }
            TargetKind::Running { url, .. } if has(url) || metrics.is_some_and(has) => Err(self.err(
                field,
                format!("{P} is filled only for a command the lab starts (give start), not a system already running"),
            )),
            _ => Ok(()),
        }
    }
}
