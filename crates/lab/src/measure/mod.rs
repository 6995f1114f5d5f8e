//! What a step measured and the pure rules that read it, below every phase of a lab: the
//! per-second `windows`, a step's `numbers`, the `metric` that names one of them, `estimate`
//! (medians, intervals, Welch's test) and `verdict` (SLO clauses, whether a step counts,
//! hypothesis findings).

pub mod ab;
pub mod estimate;
pub mod function;
pub mod metric;
pub mod numbers;
pub mod verdict;
pub mod windows;
