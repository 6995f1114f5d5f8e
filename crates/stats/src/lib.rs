//! The statistics loadlab decides with, each written once, pure (no I/O), below `lab` and
//! `history`, each tested against an established package's values (recorded in its tests with
//! how they were made).
//!
//! Modules:
//! - `describe`: medians, means, variances and the centre a change is the ratio of;
//! - `welch`: Student's t interval of a centre and Welch's test of two sides (on logarithms);
//! - `bootstrap`: the percentile bootstrap (resamples, quantiles, a two-sided p of ratios);
//! - `counts`: the ratio of two counts of events (Poisson), with its interval;
//! - `covariate`: a level read against a figure of the machine (a regression on logarithms), and
//!   its prediction test of one more lab;
//! - `floors`: what two labs of one build differ by, and what a tail needs to be compared;
//! - `outliers`: a level's labs of a busy machine (robust, on logarithms);
//! - `paired`: two builds measured in pairs (Student's paired t on logarithms), and the looks a
//!   sequential run takes;
//! - `sequential`: Wald's sequential probability ratio test between two normal means;
//! - `holm`: Holm's step-down over many p-values (a gate over many series or cells);
//! - `spread`: a service's run-to-run spread over N labs of one build, and its tests of a
//!   change between two labs and of one more lab against a level (Student's t on logarithms);
//! - `change_points`: change points of a series (E-divisive means, as Apache Otava finds them).

pub mod bootstrap;
pub mod change_points;
pub mod counts;
pub mod covariate;
pub mod describe;
pub mod floors;
mod holm;
pub mod outliers;
pub mod paired;
pub mod sequential;
pub mod spread;
pub mod welch;

pub use holm::{holm, holm_adjusted};

/// Two-sided confidence level of every interval and test.
pub const CONFIDENCE: f64 = 0.95;
