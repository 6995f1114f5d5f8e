//! `profile` on a target and the plan's `[profile]` table.

use profile::{PerfOptions, ProfileSpec, Profiler};

use super::raw::RawProfile;
use super::{fill_port, Doc, PlanError, TargetKind};

impl Doc<'_> {
    /// A target's `profile` (`true`, or a pprof URL) and `process`.
    pub(super) fn profiler(
        &self,
        field: &str,
        kind: &TargetKind,
        profile: Option<toml::Value>,
        process: Option<String>,
    ) -> Result<Option<Profiler>, PlanError> {
        let at = format!("{field}.profile");
        let how = match profile {
            None | Some(toml::Value::Boolean(false)) => None,
            Some(toml::Value::Boolean(true)) => Some(Profiler::Perf { process: process.clone() }),
            Some(toml::Value::String(url)) => {
                attack::parse_url(&fill_port(&url, Some(1))).map_err(|e| self.err(&at, e))?;
                Some(Profiler::Pprof { url })
            }
            Some(other) => {
                return Err(self.err(
                    &at,
                    format!("{other} is neither true nor a pprof URL (http://host:port/debug/pprof/profile)"),
                ))
            }
        };
        // A running target's `process` names the processes to sample (and to profile, with
        // profile = true); a started one's only those to profile.
        if process.is_some()
            && !matches!(how, Some(Profiler::Perf { .. }))
            && !matches!(kind, TargetKind::Running { .. })
        {
            return Err(
                self.err(&format!("{field}.process"), "names the processes to profile: give profile = true too")
            );
        }
        match (&how, kind) {
            (Some(Profiler::Perf { .. }), TargetKind::Simulator { .. }) => Err(self.err(
                &at,
                "an embedded simulator runs inside loadlab, with the generator: start it as a command \
                 (start = [\"{loadlab}\", \"origin\", ...]) to profile it",
            )),
            (Some(Profiler::Perf { process: None }), TargetKind::Running { pid: None, .. }) => {
                Err(self.err(&at, "a running target is profiled by its pid or process name: give pid or process"))
            }
            _ => Ok(how),
        }
    }

    /// `[profile]`: frequency, call graphs, repeats, the size bound, the perf program.
    pub(super) fn profile_spec(&self, p: RawProfile) -> Result<ProfileSpec, PlanError> {
        let mut spec = ProfileSpec::default();
        let mut perf = PerfOptions::default();
        if let Some(f) = p.frequency {
            perf.frequency = self.positive("profile.frequency", f, 10_000)? as u32;
        }
        perf.dwarf = match p.call_graph.as_deref() {
            None | Some("fp") => false,
            Some("dwarf") => true,
            Some(other) => {
                return Err(
                    self.err("profile.call_graph", format!("{other:?}: give \"fp\" (frame pointers) or \"dwarf\""))
                )
            }
        };
        spec.all_repeats = match p.repeats.as_deref() {
            None | Some("first") => false,
            Some("all") => true,
            Some(other) => return Err(self.err("profile.repeats", format!("{other:?}: give \"first\" or \"all\""))),
        };
        if let Some(size) = p.max_size {
            perf.max_size_kib = parse_size_kib(&size).ok_or_else(|| {
                self.err("profile.max_size", format!("{size:?} is not a size like \"256M\" or \"2G\""))
            })?;
        }
        if let Some(program) = p.perf {
            perf.program = program;
        }
        if let Some(n) = p.top {
            spec.top = self.positive("profile.top", n, 1000)? as usize;
        }
        spec.perf = perf;
        Ok(spec)
    }
}

/// `256M`, `2G`, `512K`, in KiB.
fn parse_size_kib(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit())?.max(1));
    let n: u64 = num.parse().ok()?;
    let kib = match unit.trim().to_ascii_uppercase().trim_end_matches("IB").trim_end_matches('B') {
        "K" => n,
        "M" => n * 1024,
        "G" => n * 1024 * 1024,
        _ => return None,
    };
    (n > 0).then_some(kib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_kib() {
        assert_eq!(parse_size_kib("256M"), Some(256 * 1024));
        assert_eq!(parse_size_kib("2G"), Some(2 << 20));
        assert_eq!(parse_size_kib("100K"), Some(100));
        assert_eq!(parse_size_kib("1 GiB"), Some(1 << 20));
        assert_eq!(parse_size_kib("lots"), None);
        assert_eq!(parse_size_kib("0M"), None);
    }
}
