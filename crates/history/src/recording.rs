//! Recording and judging a lab: the one path by which `lab run --history` (with `[history]
//! fail_on`), `history add`, `history check` and `history check --lab` add a lab and hold it to
//! its gates, so that none of them can read other labs or other rules than the rest.

use std::path::Path;

use lab::{Gate, Lab};
use stats::change_points::Settings;

use crate::admit::Refused;
use crate::check::{check, CheckError, Checked, Rules};
use crate::entry::{entry, provenance_of, Entry};
use crate::store::{Added, History, HistoryError};

/// Why a lab could not be judged: its history failed, or the check itself.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    History(#[from] HistoryError),
    #[error(transparent)]
    Check(#[from] CheckError),
}

/// Lab `id` of history `h` judged on `gates` (none: the default): what `lab run` (with
/// `[history] fail_on`), `history check` and `history check --lab` all call, so that the three
/// read the same labs and acceptances and hold them to the same rules.
pub async fn judge_lab(
    h: &History,
    id: i64,
    gates: &[Gate],
    settings: &Settings,
    any_machine: bool,
) -> Result<Checked, JudgeError> {
    let labs = h.labs_for_check(id, any_machine).await?;
    let accepted = h.acceptances().await?;
    let rules = Rules { any_machine, ..Rules::new(gates, settings, &accepted) };
    Ok(check(&labs, id, &rules)?)
}

/// Why a lab was not recorded and judged: the history refused what it holds, or it could not be
/// added (it is not in the history), or it was added and could not be judged.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the lab was not recorded: {0}")]
    Refused(Refused),
    #[error("the lab was not recorded: {0}")]
    NotAdded(HistoryError),
    #[error("the lab was recorded, but not judged: {0}")]
    NotJudged(JudgeError),
}

/// What recording a lab did: its key, whether it was there already, and the gate's verdict
/// when it was gated.
#[derive(Debug)]
pub struct Recorded {
    pub id: i64,
    pub already: bool,
    pub checked: Option<Checked>,
}

/// How a lab is recorded: what the command line says of it beside what it recorded itself (a
/// commit, a branch, tags), the gates it is judged on (none: recorded only; empty: the default
/// gates), the change points' settings, and whether labs of other machines count.
#[derive(Clone, Debug, Default)]
pub struct Recording<'a> {
    pub given: lab::Given,
    pub gates: Option<&'a [Gate]>,
    pub settings: Settings,
    pub any_machine: bool,
}

/// Adds `lab` (its folder `dir`) to `h` and, with gates, judges it: the one path by which `lab
/// run --history`, `history add`, `history check --lab`, bisect and `lab ab` record a lab, so
/// that none can differ.
pub async fn record(h: &mut History, lab: &Lab, dir: &Path, how: &Recording<'_>) -> Result<Recorded, RecordError> {
    let entry = entry(lab, dir, &provenance_of(lab, &how.given)).map_err(RecordError::Refused)?;
    add_and_judge(h, &entry, how.gates, &how.settings, how.any_machine).await
}

/// Adds `entry` to `h` and, with `gates`, judges it.
async fn add_and_judge(
    h: &mut History,
    entry: &Entry,
    gates: Option<&[Gate]>,
    settings: &Settings,
    any_machine: bool,
) -> Result<Recorded, RecordError> {
    let (id, already) = match h.add(entry).await.map_err(RecordError::NotAdded)? {
        Added::New(id) => (id, false),
        Added::Already(id) => {
            conflict(h, entry).await.map_err(RecordError::NotAdded)?;
            (id, true)
        }
    };
    let checked = match gates {
        Some(gates) => Some(judge_lab(h, id, gates, settings, any_machine).await.map_err(RecordError::NotJudged)?),
        None => None,
    };
    Ok(Recorded { id, already, checked })
}

/// The same lab recorded again adds nothing; another lab under a known id (other figures,
/// another commit: a lab.json copied and edited) is refused as a conflict, not dropped.
async fn conflict(h: &History, entry: &Entry) -> Result<(), HistoryError> {
    let filter = crate::store::Filter { uid: Some(entry.uid.clone()), ..Default::default() };
    let stored = h.labs_where(&filter).await?;
    match stored.first().filter(|(_, s)| !entry.same_lab(s)) {
        Some((id, other)) => Err(HistoryError(format!(
            "history {}: lab {} conflicts with lab {id} ({}): the same id ({}) with other figures or another \
             commit; nothing of it was added",
            h.name(),
            crate::series::plain(&entry.path),
            other.path,
            crate::series::plain(&entry.uid)
        ))),
        None => Ok(()),
    }
}
