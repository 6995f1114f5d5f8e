//! What a step measured and the pure rules that read it, below every phase of a lab: the
//! per-second `windows`, a step's `numbers`, the `metric` that names one of them, `estimate`
//! (medians, intervals, Welch's test) and `verdict` (SLO clauses, whether a step counts,
//! hypothesis findings); `function` and `span` judge a hypothesis on a profiled function or a
//! traced span, `tails` what grew in the tail between two sides.

pub(crate) mod ab;
pub(crate) mod estimate;
pub(crate) mod function;
pub(crate) mod metric;
pub(crate) mod numbers;
pub(crate) mod span;
pub(crate) mod tails;
pub(crate) mod verdict;
pub(crate) mod windows;
