//! Running a lab's steps: the `options` a run takes, its `events` (progress and failures),
//! where its processes run (`placement`), the `systems` it brings up (the embedded origin, started commands), the `sample`s it takes
//! of them (/proc, Prometheus; `cpu`, a process tree's CPU in ns; `speed`, the machine's speed on
//! each CPU), each `step` (one attack and its numbers), `together` (the two labs of a duet kept
//! in step) and the `capacity` search; the experiment module strings these together.

pub(crate) mod capacity;
pub(crate) mod cpu;
pub(crate) mod edges;
pub(crate) mod events;
pub(crate) mod options;
pub(crate) mod placement;
pub(crate) mod sample;
pub(crate) mod speed;
pub(crate) mod step;
pub(crate) mod systems;
pub(crate) mod together;
pub(crate) mod traced;
