#!/usr/bin/env bash
# One CI job per pull request: does this branch make it slower? `loadlab lab ab` builds the
# base and the head in worktrees of their own and labs them in pairs, one lab of each build in
# ABBA order, each starting its build afresh, so that a drift of the runner falls on both; it
# stops once every gate is decided (at most 20 pairs). The labs go into no history (give
# --history to keep them: they are recorded off the branch's line). Exit 0 no change past the
# gates, 3 the head is slower, 4 could not tell, 1 a build failed, 2 bad input.
#
#   bash pull-request.sh BASE HEAD [PLAN] [BUILD]     # e.g. origin/main HEAD plan.toml 'go build -o api .'
#
# PLAN is the plan's path inside each commit's tree (default plan.toml); BUILD the command that
# builds a commit in its tree (default: none). GATES sets the gates (default:
# p50>+5%,target_cpu>+5%; p99 is shown, and gated only when asked, as its pairs spread too
# widely on a shared runner for 20 pairs to decide it). ab/ab.md is the job's summary.
set -u
base=${1:?the base revision (origin/main)} head=${2:?the head revision (HEAD)}
plan=${3:-plan.toml} build=${4:-}
args=(lab ab "$plan" "$base" "$head" --out ab)
[ -z "$build" ] || args+=(--build "$build")
[ -z "${GATES:-}" ] || args+=(--fail-on "$GATES")
rm -rf ab
env -u LOADLAB_HISTORY loadlab "${args[@]}"
