//! Experiments from a plan, driven in-process through the `attack`, `origin`, `profile` and
//! `report` libraries.
//!
//! Layers, each importing only from those above it in this list:
//! - `measure`: what a step measured and the pure rules that read it (windows, numbers,
//!   metrics, statistics, SLO verdicts, a profiled function's finding);
//! - `provenance`: what a lab is of and where it ran;
//! - `plan`: the plan file, checked, and its `matrix` of steps;
//! - `run`: systems up and down, samples, steps, the capacity search;
//! - `outcome`: cells, ceilings and hypotheses judged from the steps;
//! - `record`: the [`Lab`], what lab.json holds, and reading it back;
//! - `experiment`: a plan run end to end into a [`Lab`];
//! - `compare`: two labs (or results files) side by side;
//! - `render`: report.md, report.html, charts, lab.json;
//! - `ending` (the lab's preview, exit and folder) and `demo` (a rate ladder against an
//!   embedded origin).

pub mod compare;
pub mod demo;
pub mod ending;
pub mod experiment;
pub mod measure;
pub mod outcome;
pub mod plan;
pub mod provenance;
pub mod record;
pub mod render;
pub mod run;

pub use experiment::{run, Event, LabError, RunOptions, Watcher};
pub use plan::Plan;
pub use record::Lab;
