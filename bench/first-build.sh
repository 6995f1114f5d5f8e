#!/usr/bin/env bash
# A newcomer's first command, timed: `cargo run --release -- demo` on a fresh clone with the
# crates already fetched (the registry is not part of the time): the build, then the demo, and
# the whole to the demo's end. Run by hand on an otherwise idle machine; each run is a clean build.
#
#   [REV=commit] [SRC=folder] [TIMINGS=dir] bash bench/first-build.sh
#
# REV: clone this repository at that commit (default HEAD). SRC: copy a folder instead (a tree
# with uncommitted changes; its target/ is left out). TIMINGS: also `--timings`, its HTML copied
# into that folder (keep it out of the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
REV=${REV:-HEAD}
work=$(mktemp -d /tmp/loadlab-first-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -n "${SRC:-}" ]; then
  mkdir -p "$work/src"
  tar --exclude=./target -C "$SRC" -cf - . | tar -C "$work/src" -xf -
else
  git clone -q . "$work/src"
  git -C "$work/src" checkout -q "$REV"
fi
cd "$work/src"
cargo fetch -q
timings=(); [ -z "${TIMINGS:-}" ] || timings=(--timings)
start=$(date +%s.%N)
cargo build --release -q "${timings[@]}"
built=$(date +%s.%N)
(cd "$work" && "$work/src/target/release/loadlab" demo >"$work/demo.out" 2>&1) || { tail -5 "$work/demo.out"; exit 1; }
ended=$(date +%s.%N)
python3 - "$start" "$built" "$ended" "$(git rev-parse --short HEAD 2>/dev/null || echo "$SRC")" <<'PY'
import sys
s, b, e, what = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
m = lambda x: f"{int(x // 60)} min {x % 60:.0f} s"
print(f"{what}: build {m(b - s)}, demo {b and e - b:.0f} s, to the demo's end {m(e - s)}")
PY
if [ -n "${TIMINGS:-}" ]; then
  mkdir -p "$TIMINGS"
  cp target/cargo-timings/cargo-timing.html "$TIMINGS/"
fi
