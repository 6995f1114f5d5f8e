//! Experiments driven in-process through the `attack`, `origin` and `report` libraries.
//! For now: `demo`, a rate ladder against an embedded origin simulator.

pub mod demo;
