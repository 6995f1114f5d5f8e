//! `loadlab lab` as a user runs it, and the example plans end to end.
//! One test binary (each links all of loadlab: fewer binaries, a faster build).

#[path = "../support/mod.rs"]
mod support;

mod ab;
mod bisect;
mod busy_machine;
mod calibration;
mod capacity;
mod examples;
mod history;
mod hostile;
mod lab;
mod lying_source;
mod placement;
mod profile;
mod remote;
mod stalls;
mod traces;
