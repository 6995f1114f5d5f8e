//! Running a lab's steps: the `options` a run takes, its `events` (progress and failures),
//! the `systems` it brings up (the embedded origin, started commands), the `sample`s it takes
//! of them (/proc, Prometheus; `cpu`, a process tree's CPU in ns), each `step` (one attack and
//! its numbers) and the `capacity` search; the experiment module strings these together.

pub mod capacity;
pub mod cpu;
pub mod edges;
pub mod events;
pub mod options;
pub mod sample;
pub mod step;
pub mod systems;
