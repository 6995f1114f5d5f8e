//! How a comparison decides, one group for `report --compare` and `lab compare`.

use clap::Args;

/// How a comparison decides.
#[derive(Args, Debug)]
pub struct CompareGateArgs {
    /// Changes within this are `~` however significant (criterion's noise threshold).
    #[arg(long, default_value = "2%", value_parser = percent, value_name = "PERCENT")]
    pub threshold: f64,
    /// Exit 3 when a significant change passes one of these, e.g. 'p99>+5%,throughput<-3%'
    /// (metrics: throughput, p50, p99, success, target_cpu, generator_cpu).
    #[arg(long, value_name = "GATES")]
    pub fail_on: Option<String>,
}

/// `2%` or `2` as 2.0.
fn percent(s: &str) -> Result<f64, String> {
    s.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("{s:?} is not a percentage like 2%"))
}
