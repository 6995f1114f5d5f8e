//! Experiments from a plan, driven in-process through the `attack`, `origin` and `report`
//! libraries: `plan` (parse, check), `matrix` (axes to steps), `numbers` (what a step measured),
//! `stats` (pure: medians, intervals, Welch's test), `verdict` (SLO clauses, hypotheses), and
//! `demo`, a rate ladder against an embedded origin simulator.

pub mod demo;
pub mod matrix;
pub mod numbers;
pub mod plan;
pub mod stats;
pub mod verdict;
