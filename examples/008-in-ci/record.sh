#!/usr/bin/env bash
# One CI job per merge: record the lab into the team's history, judge it, rerun the commit on a
# warning (three labs in a row beyond the level fail the gate), and leave history.md for the
# job's summary. Exit 0 pass, 3 slower, 4 cannot tell. The history is LOADLAB_HISTORY
# (a postgres:// URL, or an SQLite file the job keeps); the plan is $1 (default plan.toml).
set -u
plan=${1:-plan.toml}
: "${LOADLAB_HISTORY:?set LOADLAB_HISTORY to the history of the team: a postgres:// URL or a file}"
loadlab lab run "$plan" --out lab --force
status=$?
for rerun in 1 2; do
  [ $status -eq 0 ] || break
  loadlab history check --warning-exit 5 >/dev/null
  check=$?
  [ $check -eq 5 ] || { status=$check; break; }
  loadlab lab run "$plan" --out "lab-rerun-$rerun" --force
  status=$?
done
loadlab history show --out history/ >/dev/null
exit $status
