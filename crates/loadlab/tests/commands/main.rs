//! One-shot commands as a user runs them: attack, report, encode, plot, origin, k8s.
//! One test binary (each links all of loadlab: fewer binaries, a faster build).

#[path = "../support/mod.rs"]
mod support;

mod cli;
mod first_hour;
mod h3_interop;
mod k8s;
mod origin_fds;
mod plot;
mod replay;
mod signals;
mod traces;
