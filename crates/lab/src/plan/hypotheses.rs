//! `[[hypotheses]]`: claims the lab judges, naming targets or variants (and a profiled
//! function, or a traced span), checked against what the plan holds.

use super::raw::RawHypothesis;
use super::{Doc, Hypothesis, PlanError, TargetSpec, Variant};
use crate::measure::metric::Metric;

impl Doc<'_> {
    pub(super) fn hypotheses(
        &self,
        raw: Vec<RawHypothesis>,
        targets: &[TargetSpec],
        variants: &[Variant],
    ) -> Result<Vec<Hypothesis>, PlanError> {
        let mut hypotheses = Vec::new();
        let names: Vec<&str> =
            targets.iter().map(|t| t.name.as_str()).chain(variants.iter().map(|v| v.name.as_str())).collect();
        for (i, h) in raw.into_iter().enumerate() {
            let line = self.nth_table_line("[[hypotheses]]", i);
            let bad =
                |message: String| PlanError { file: self.file.into(), line, message: format!("hypotheses: {message}") };
            // CPU per request too: read beside each step, compared across repeats.
            let metric = Metric::parse(&h.metric).map_err(|e| bad(format!("metric: {e}")))?;
            let (subject, lower) = match (h.lower, h.higher) {
                (Some(s), None) => (s, true),
                (None, Some(s)) => (s, false),
                _ => return Err(bad("give one of lower = NAME or higher = NAME".into())),
            };
            for n in [&subject, &h.than] {
                if !names.contains(&n.as_str()) {
                    return Err(bad(format!("{n:?} is not a target or a variant (known: {})", names.join(", "))));
                }
            }
            if h.function.as_deref().is_some_and(|f| f.trim().is_empty()) {
                return Err(bad("where: name a function (or part of its name)".into()));
            }
            if h.function.is_some() && !targets.iter().any(|t| t.profile.is_some()) {
                return Err(bad("where: needs a profiled target (profile = true, or a pprof URL)".into()));
            }
            if h.span.as_deref().is_some_and(|s| s.trim().is_empty()) {
                return Err(bad("span: name a span, as the target's instrumentation names it".into()));
            }
            if h.span.is_some() && !targets.iter().any(|t| t.traces) {
                return Err(bad("span: needs a traced target (traces = true)".into()));
            }
            hypotheses.push(Hypothesis {
                claim: h.claim,
                metric,
                subject,
                than: h.than,
                lower,
                function: h.function,
                span: h.span,
            });
        }
        Ok(hypotheses)
    }
}
