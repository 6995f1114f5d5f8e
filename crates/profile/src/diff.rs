//! What changed between two profiles, per request: the functions whose CPU moved most and a
//! differential flame graph, for a lab's pairs (a hypothesis's two sides, a variant against
//! the first) and for `lab compare OLD NEW`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::folded::{self, FunctionChange};
use super::StepProfile;

/// Functions shown per differential.
pub(crate) const SHOWN: usize = 10;

/// Two profiles compared.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Differential {
    /// `service at 350 req/s: gzip 300kb against 300kb`.
    pub title: String,
    /// What each side is (a step id, a lab).
    pub old: String,
    pub new: String,
    /// µs of CPU per request in all, each side.
    pub old_us: f64,
    pub new_us: f64,
    /// The functions whose CPU per request changed most, largest first.
    pub changes: Vec<FunctionChange>,
    /// The differential flame graph (widths of the new, red grown, blue shrunk), relative to
    /// the folder of the report that shows it ...
    pub svg: String,
    /// ... and the same on the old profile's shape, where what shrank or vanished is drawn
    /// (work that is gone has no width on the new one).
    #[serde(default)]
    pub svg_old: String,
}

/// Compares `old` (its files under `old_dir`) with `new` (under `new_dir`), writing the
/// differential flame graph into `out/rel/stem.svg`.
#[allow(clippy::too_many_arguments)]
pub fn compare(
    (old, old_dir, old_name): (&StepProfile, &Path, &str),
    (new, new_dir, new_name): (&StepProfile, &Path, &str),
    out: &Path,
    rel: &str,
    stem: &str,
    title: &str,
) -> Result<Differential, String> {
    let (a, b) = (old.read_folded(old_dir)?, new.read_folded(new_dir)?);
    let (ua, ub) = (old.us_per_weight(), new.us_per_weight());
    let lines = folded::differential(&a, ua, &b, ub);
    let totals = format!(
        "{old_name} {} -> {new_name} {} of CPU per request",
        results::duration::show_us(old.us_per_request),
        results::duration::show_us(new.us_per_request)
    );
    let svg =
        super::flame::differential_svg(&lines, title, format!("{totals}; the new shape: red grew, blue shrank"), false)
            .map_err(|e| e.to_string())?;
    // The old shape: the columns swapped (widths of the old), the colours negated back to
    // new against old.
    let swapped = folded::differential(&b, ub, &a, ua);
    let svg_old = super::flame::differential_svg(
        &swapped,
        title,
        format!("{totals}; the old shape: blue shrank or is gone, red grew"),
        true,
    )
    .map_err(|e| e.to_string())?;
    let dir = out.join(rel);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    results::files::put(&dir.join(format!("{stem}.svg")), &svg).map_err(|e| e.to_string())?;
    results::files::put(&dir.join(format!("{stem}-old.svg")), &svg_old).map_err(|e| e.to_string())?;
    Ok(Differential {
        title: title.to_owned(),
        old: old_name.to_owned(),
        new: new_name.to_owned(),
        old_us: old.us_per_request,
        new_us: new.us_per_request,
        changes: folded::changes(&a, ua, &b, ub, SHOWN),
        svg: format!("{rel}/{stem}.svg"),
        svg_old: format!("{rel}/{stem}-old.svg"),
    })
}
