//! A step's edges: the CPU clocks of the processes here (the target's, when it runs here, and
//! loadlab's own), this machine's CPU by mode, and a remote target's exporter, read as the
//! warm-up ends and as the step ends, and what the step used between them.

use crate::run::cpu;

/// One edge's readings.
pub(crate) struct Edge {
    local: cpu::Reading,
    /// The other lab's targets, in a duet: known CPU, not other processes'.
    companions: cpu::Reading,
    machine: Option<scrape::host::HostCpu>,
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
    /// loadlab's machine over the step: what other processes used of it, where the lab knows
    /// where the target's CPU went (see [`Edge::until`]).
    pub machine: Option<scrape::host::HostUse>,
}

impl Edge {
    /// Reads `watched` (the target's processes, if here, then the generator), `companions`
    /// (the other lab's targets in a duet) and `remote` (`fresh`: the edge a step's counted time
    /// starts at, [`scrape::Remote::read`]).
    pub(crate) async fn read(
        watched: &[cpu::Watched],
        companions: &[cpu::Watched],
        remote: Option<&scrape::Remote>,
        fresh: bool,
    ) -> Edge {
        let local = cpu::Reading::now(watched);
        let companions = cpu::Reading::now(companions);
        let machine = cpu::machine_now();
        let remote = match remote {
            Some(r) => Some(r.read(fresh).await),
            None => None,
        };
        Edge { local, companions, machine, remote }
    }

    /// What was used from `self` to `later`; `limits` mark a busy host. `target_known`: the
    /// target's CPU on this machine is known (its processes here are read, it runs inside
    /// loadlab, or it runs on another host), so the rest of the machine's busy time was other
    /// processes'.
    pub(crate) fn until(&self, later: &Edge, limits: scrape::host::Limits, target_known: bool) -> Used {
        let local = self.local.until(&later.local);
        let (target, generator) = match local.as_slice() {
            [t, g] => (*t, *g),
            [g] => (None, *g),
            _ => (None, None),
        };
        let companions: Option<f64> =
            self.companions.until(&later.companions).into_iter().map(|u| u.map(|u| u.0)).sum();
        let here_cpu_s = match (local.len(), target, generator, companions) {
            (2, Some(t), Some(g), Some(c)) => Some(t.0 + g.0 + c),
            (1, _, Some(g), Some(c)) => Some(g.0 + c),
            _ => None,
        };
        let machine = match (&self.machine, &later.machine, here_cpu_s.filter(|_| target_known)) {
            (Some(a), Some(b), Some(known)) => {
                let whose = scrape::host::Whose::Loadlab;
                scrape::host::between_for(whose, a, b, Some(known), Default::default()).ok()
            }
            _ => None,
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
                        // On loadlab's own machine, loadlab's CPU is known too, not a neighbour's.
                        let here = self.machine.as_ref().is_some_and(|m| hb.same_machine(m));
                        let (whose, known) = match (here, target, generator) {
                            (true, Some(t), Some(g)) => (scrape::host::Whose::TargetBesideLoadlab, Some(t.0 + g.0)),
                            _ => (scrape::host::Whose::Target, target.map(|t| t.0)),
                        };
                        Some(scrape::host::between_for(whose, ha, hb, known, limits))
                    }
                    (Some(Err(e)), _) | (_, Some(Err(e))) => Some(Err(format!("host not read: {e}"))),
                    _ => None,
                };
                Used { target, generator, target_rss_mb: rss, unmeasured, host, machine }
            }
            _ => Used { target, generator, target_rss_mb: None, unmeasured: None, host: None, machine },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_other_lab_of_a_duet_is_not_counted_as_other_processes() {
        // A spinning process stands in for the other build's target: read as a companion, its
        // CPU is known and leaves the machine's "other processes"; read as nothing, it is in them.
        let mut spinner = std::process::Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        let companion = [cpu::Watched::Pid(spinner.id(), false)];
        let me = [cpu::Watched::Pid(std::process::id(), false)];
        let first = Edge::read(&me, &companion, None, true).await;
        std::thread::sleep(std::time::Duration::from_millis(400));
        let later = Edge::read(&me, &companion, None, false).await;
        let _ = spinner.kill();
        let _ = spinner.wait();
        let spun = first.companions.until(&later.companions)[0].unwrap().0;
        assert!(spun > 0.05, "the spinner ran {spun} s");
        let with = first.until(&later, Default::default(), true).machine.expect("this machine's CPU is read");
        let alone = |e: &Edge| Edge {
            local: e.local.clone(),
            companions: cpu::Reading::now(&[]),
            machine: e.machine.clone(),
            remote: None,
        };
        let without = alone(&first).until(&alone(&later), Default::default(), true).machine.unwrap();
        // The spinner's time moved from the others to the known, all of it: it spun about half
        // of the machine's time (one of two CPUs), far above /proc/stat's 10 ms ticks.
        let total_s: f64 = with.by_mode.values().sum();
        let moved_pct = with.target_pct.unwrap() - without.target_pct.unwrap();
        assert!((moved_pct / 100.0 * total_s - spun).abs() < 1e-6, "{with:?} {without:?}");
        let (other_with, other_without) = (with.other_pct.unwrap(), without.other_pct.unwrap());
        assert!(other_with <= other_without - 0.5 * moved_pct, "{other_with} {other_without} {moved_pct}");
    }
}
