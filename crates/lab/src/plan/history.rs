//! `[history]`: where the lab is recorded (a file beside the plan, or a PostgreSQL URL) and the
//! gate on its series.

use std::path::Path;

use super::raw::RawHistory;
use super::{gate, Doc, HistorySpec, PlanError};

impl Doc<'_> {
    pub(super) fn history(&self, h: RawHistory, dir: &Path) -> Result<HistorySpec, PlanError> {
        let path = h.path.map(|p| {
            if p.starts_with("postgres://") || p.starts_with("postgresql://") {
                p
            } else {
                dir.join(&p).display().to_string()
            }
        });
        let fail_on = gate::Gate::parse_history_list(h.fail_on.as_deref().unwrap_or(""))
            .map_err(|e| self.err("history.fail_on", e))?;
        Ok(HistorySpec { path, fail_on })
    }
}
