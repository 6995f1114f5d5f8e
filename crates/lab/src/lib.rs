//! Experiments from a plan, driven in-process through the `attack`, `origin` and `report`
//! libraries.
//!
//! `plan` (parse, check), `matrix` (axes to steps), `events` (progress and failures), `step`
//! (one attack and its numbers: `numbers`), `systems` (embedded simulators, started commands), `sample` (/proc, Prometheus),
//! `experiment` (the whole run), `stats` (pure: medians, intervals, Welch's test), `verdict` (SLO
//! clauses, hypothesis findings), `outcome` (cells, ceilings, hypotheses from the steps),
//! `capacity` (the search for a ceiling), `render` (report.md, report.html, charts, lab.json), and `demo`, a rate
//! ladder against an embedded origin simulator.

pub mod capacity;
pub mod compare;
pub mod demo;
pub mod ending;
pub mod events;
pub mod experiment;
pub mod matrix;
pub mod metric;
pub mod numbers;
pub mod options;
pub mod outcome;
pub mod plan;
pub mod profile;
pub mod record;
pub mod render;
pub mod sample;
pub mod stats;
pub mod step;
pub mod systems;
pub mod verdict;
pub mod windows;
