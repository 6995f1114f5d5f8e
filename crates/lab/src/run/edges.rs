//! A step's edges: the CPU clocks of the processes here (the target's, when it runs here, and
//! loadlab's own) and a remote target's exporter, read as the warm-up ends and as the step ends,
//! and what the step used between them.

use crate::run::cpu;

/// One edge's readings.
pub(crate) struct Edge {
    local: cpu::Reading,
    remote: Option<scrape::Reading>,
}

/// What a step used: CPU seconds and % of one core, of its target and of the generator; the
/// target's memory at the end, where its exporter gave it; and why the target's CPU is not a
/// measurement, when it is not (a restart, a source that did not answer, too few ticks).
#[derive(Default)]
pub(crate) struct Used {
    pub target: Option<(f64, f64)>,
    pub generator: Option<(f64, f64)>,
    pub target_rss_mb: Option<f64>,
    pub unmeasured: Option<String>,
    /// The target's host over the step, when its node_exporter was read (why not, when it
    /// could not be).
    pub host: Option<Result<scrape::host::HostUse, String>>,
}

impl Edge {
    /// Reads `watched` (the target's processes, if here, then the generator) and `remote`
    /// (`fresh`: the edge a step's counted time starts at, [`scrape::Remote::read`]).
    pub(crate) async fn read(watched: &[cpu::Watched], remote: Option<&scrape::Remote>, fresh: bool) -> Edge {
        let local = cpu::Reading::now(watched);
        let remote = match remote {
            Some(r) => Some(r.read(fresh).await),
            None => None,
        };
        Edge { local, remote }
    }

    /// What was used from `self` to `later`; `busy_share` marks a busy host.
    pub(crate) fn until(&self, later: &Edge, busy_share: f64) -> Used {
        let local = self.local.until(&later.local);
        let (target, generator) = match local.as_slice() {
            [t, g] => (*t, *g),
            [g] => (None, *g),
            _ => (None, None),
        };
        match (&self.remote, &later.remote) {
            (Some(a), Some(b)) => {
                let rss = b.memory_bytes.map(|m| m / (1u64 << 20) as f64);
                let (target, unmeasured) = match scrape::remote::used(a, b, scrape::remote::EXPORTER_RESOLUTION_S) {
                    Ok(u) => (Some((u.cpu_s, u.cpu_pct)), None),
                    Err(why) => (None, Some(why)),
                };
                let host = match (&a.host, &b.host) {
                    (Some(Ok(ha)), Some(Ok(hb))) => {
                        Some(scrape::host::between(ha, hb, target.map(|t| t.0), busy_share))
                    }
                    (Some(Err(e)), _) | (_, Some(Err(e))) => Some(Err(format!("host not read: {e}"))),
                    _ => None,
                };
                Used { target, generator, target_rss_mb: rss, unmeasured, host }
            }
            _ => Used { target, generator, target_rss_mb: None, unmeasured: None, host: None },
        }
    }
}
