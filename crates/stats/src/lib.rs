//! The statistics loadlab decides with, each written once, pure (no I/O), below `lab` and
//! `history`, each tested against an established package's values (recorded in its tests with
//! how they were made).
//!
//! Modules:
//! - `holm`: Holm's step-down over many p-values (a gate over many series or cells);
//! - `changes`: change points of a series (E-divisive means, as Apache Otava finds them).

pub mod changes;
mod holm;

pub use holm::{holm, holm_adjusted};
