//! Experiments from a plan, driven in-process through the `attack`, `origin`, `profile` and
//! `report` libraries.
//!
//! Layers, each importing only from those above it in this list:
//! - `measure`: what a step measured and the pure rules that read it (windows, numbers,
//!   metrics, statistics, SLO verdicts, a profiled function's finding);
//! - `provenance`: what a lab is of and where it ran;
//! - `side`: one side of a comparison (a lab's cells and their steps' values);
//! - `calibration`: a service's run-to-run spread, made from N labs of one build read as
//!   sides, which `compare` holds its verdicts to (a plan's `[baseline]` names one);
//! - `plan`: the plan file, checked, and its `matrix` of steps;
//! - `run`: systems up and down, samples, steps, the capacity search;
//! - `outcome`: cells, ceilings and hypotheses judged from the steps;
//! - `lab_json`: the [`Lab`], what lab.json holds, and reading it back;
//! - `experiment`: a plan run end to end into a [`Lab`];
//! - `read_side`: a side read from a lab, its lab.json or a results file;
//! - `compare`: two labs (or results files) side by side;
//! - `render`: report.md, report.html, charts, lab.json;
//! - `ending` (the lab's preview, exit and folder) and `demo` (a rate ladder against an
//!   embedded origin).

mod calibration;
mod compare;
mod demo;
mod ending;
mod experiment;
mod lab_json;
mod measure;
mod outcome;
mod plan;
mod provenance;
mod read_side;
mod render;
mod run;
mod side;

// The front door: every item another crate may use, and nothing else (each module is private).
// A function keeps its module in its name where the module said what it works on
// (`plan::load` is `load_plan`); each line says where the item lives.
pub use calibration::{calibrate, Calibration};
pub use compare::Changes;
pub use demo::DemoOptions;
pub use ending::{conclude, new_dir, out_dir, preview, ConcludeError, Concluded, Ending, Preview};
pub use experiment::{run, Event, LabError, RunOptions, Watcher};
pub use lab_json::Lab;
pub use measure::estimate::Comparison;
pub use measure::metric::Metric;
pub use measure::tails::{grew as tail_growth, TailGrowth};
pub use measure::verdict::{parse_percent, Clause, Finding};
pub use plan::gate::{Gate, AB_DEFAULT, HISTORY_DEFAULT, HISTORY_GATED};
pub use plan::matrix::{Axes, Point};
pub use plan::placement::Mode as PlacementMode;
pub use plan::{CapacitySpec, LoadSpec, Plan, TargetSpec};
pub use provenance::{Given, Machine, Provenance, MEASUREMENT};
pub use render::markdown::capacity_sentence;
pub use run::capacity::{CapacityResult, Searched};
pub use run::placement::{Pinned, Placement};
pub use run::speed::{CpuSpeed, Speed};
pub use run::together::Duet;
pub use run::traced::StepTraces;
pub use side::{CellData, Side};

// Plans, labs and their reports.
pub use demo::run as run_demo;
pub use lab_json::{parse as parse_lab, read as read_lab, ReadError};
pub use plan::matrix::expand as expand_matrix;
pub use plan::measure::remote as measure_remote;
pub use plan::{load as load_plan, parse as parse_plan, PlanError, TargetKind};
pub use render::profiles::{differential_md, differential_text};
pub use render::{write as write_reports, write_brief as write_brief_reports};
pub use run::step::config as step_config;

// Comparisons: two sides, their changes, and the reports of them.
pub use compare::{changes, Rule};
pub use measure::metric::COMPARED;
pub use read_side::{load_file as load_results_side, load_lab as load_lab_side, side_of, CompareError};
pub use render::compare::{compared as write_comparison, text as changes_text};
