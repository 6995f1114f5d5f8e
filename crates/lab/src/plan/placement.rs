//! Where a lab's processes run, as a plan says it (`[load] placement`).

use serde::{Deserialize, Serialize};

/// Whether the lab splits the CPUs between itself and the targets it starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// loadlab on the first half of the CPUs it may use, started targets on the rest.
    Split,
    /// Wherever the scheduler puts them: the default, since splitting did not narrow the spread
    /// between labs where it was measured and moved CPU per request's level (docs/DECISIONS.md,
    /// "Where the spread comes from").
    #[default]
    Shared,
}

impl Mode {
    pub fn parse(s: &str) -> Result<Mode, String> {
        match s {
            "split" => Ok(Mode::Split),
            "shared" => Ok(Mode::Shared),
            other => Err(format!("{other:?}: split (loadlab and started targets on disjoint CPUs) or shared")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placement_is_split_or_shared() {
        assert_eq!(Mode::parse("shared"), Ok(Mode::Shared));
        assert_eq!(Mode::default(), Mode::Shared);
        assert!(Mode::parse("half").unwrap_err().contains("split"));
    }
}
