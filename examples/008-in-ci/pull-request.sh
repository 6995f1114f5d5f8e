#!/usr/bin/env bash
# One CI job per pull request: does this branch make it slower? Builds the base and the head in
# worktrees of their own, runs the plan (each commit's own, from its tree) on each, 3 repeats,
# and compares head against base with the gates. Nothing is recorded into the main branch's
# history. Exit 0 no change past the gates, 3 the head is slower, 4 could not tell, 1 a build
# failed, 2 bad input.
#
#   bash pull-request.sh BASE HEAD [PLAN] [BUILD]     # e.g. origin/main HEAD plan.toml 'go build -o api .'
#
# PLAN is the plan's path inside each commit's tree (default plan.toml); BUILD the command that
# builds a commit in its tree (default: none). The gates are the plan's [history] fail_on, or
# GATES.
set -u
base=${1:?the base revision (origin/main)} head=${2:?the head revision (HEAD)}
plan=${3:-plan.toml} build=${4:-}
gates=${GATES:-p50>+5%,p99>+5%,target_cpu>+5%}
work=$(mktemp -d "${TMPDIR:-/tmp}/loadlab-pr.XXXXXX")
cleanup() {
  git worktree remove --force "$work/base" >/dev/null 2>&1
  git worktree remove --force "$work/head" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for side in base head; do
  rev=${!side}
  git worktree add --detach "$work/$side" "$rev" >/dev/null 2>&1 ||
    { echo "pull-request: $rev: not a revision of this repository" >&2; exit 2; }
  [ -f "$work/$side/$plan" ] || { echo "pull-request: $rev has no $plan" >&2; exit 2; }
  if [ -n "$build" ]; then
    (cd "$work/$side" && bash -c "$build") > "lab-$side-build.log" 2>&1 ||
      { echo "pull-request: the build of $side ($rev) failed: see lab-$side-build.log" >&2; exit 1; }
  fi
done
# Base, then head, 3 repeats each (one run a side is too few to gate on). A drift of the machine
# between the two labs falls on one side only: run the job on a quiet runner.
for side in base head; do
  env -u LOADLAB_HISTORY loadlab lab run "$work/$side/$plan" --out "lab-$side" --force --repeats 3 \
    >/dev/null 2>"lab-$side.log"
  code=$?
  [ $code -le 4 ] && [ $code -ne 2 ] || { cat "lab-$side.log" >&2; exit $code; }
done
loadlab lab compare "lab-base" "lab-head" --fail-on "$gates" --out compare
