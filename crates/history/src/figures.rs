//! The names of the figures a history keeps beside lab's metrics, for every module that reads
//! or writes them (the entry, the admission rules, the series, the check, the page).

/// The share of loadlab's machine other processes used during a step, in % (where the lab knew
/// where its target's CPU went): the control of a latency that failed on a busy machine.
pub(crate) const MACHINE_OTHER: &str = "machine_other";

/// The share of loadlab's machine its hypervisor took (steal) during a step, in %: the control
/// of a latency that failed while the host took the machine's CPUs away.
pub(crate) const MACHINE_STEAL: &str = "machine_steal";

/// The machine's speed during a step: a fixed piece of work's time (µs) on the CPUs the target
/// could run on (`lab::Speed`), the covariate a target's CPU per request is read at.
pub(crate) const MACHINE_SPEED: &str = "machine_speed";

/// The longest a probe's round trip can take, in µs (a second).
pub(crate) const MAX_SPEED_US: f64 = 1e6;

/// A figure of the machine rather than of the service (loadlab's own CPU per request, the
/// shares others took, the probe's speed): never leads a history's changes.
pub(crate) fn is_machine(metric: &str) -> bool {
    metric == lab::Metric::GeneratorCpu.name() || metric == MACHINE_SPEED || is_machine_share(metric)
}

/// A share of loadlab's machine (in %, its changes in points), not a figure of the service.
pub(crate) fn is_machine_share(metric: &str) -> bool {
    metric == MACHINE_OTHER || metric == MACHINE_STEAL
}
