//! The names of the figures a history keeps beside lab's metrics, for every module that reads
//! or writes them (the entry, the admission rules, the series, the check, the page).

/// The share of loadlab's machine other processes used during a step, in % (where the lab knew
/// where its target's CPU went): the control of a latency that failed on a busy machine.
pub(crate) const MACHINE_OTHER: &str = "machine_other";

/// The share of loadlab's machine its hypervisor took (steal) during a step, in %: the control
/// of a latency that failed while the host took the machine's CPUs away.
pub(crate) const MACHINE_STEAL: &str = "machine_steal";

/// A share of loadlab's machine (in %, its changes in points), not a figure of the service.
pub(crate) fn is_machine_share(metric: &str) -> bool {
    metric == MACHINE_OTHER || metric == MACHINE_STEAL
}
