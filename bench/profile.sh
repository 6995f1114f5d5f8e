#!/usr/bin/env bash
# What profiling costs the profiled: CPU per request of a CPU-bound target (an origin that gzips
# each 300 KiB response, example 006's) without and with `perf record` attached as the lab
# attaches it (cpu-clock, FREQ Hz, call graphs), rounds interleaved. The goal is under 3% more
# CPU per request at 99 Hz. perf's own CPU is reported apart (it is neither the target's nor
# the generator's). Target on core 1, generator and perf on core 0.
# Run by hand (not in CI): bash bench/profile.sh   Environment: REPS (5), RATE (60), SECS (10),
# FREQ (99), CALL_GRAPH (fp, or dwarf).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-5}
RATE=${RATE:-60}
SECS=${SECS:-10}
FREQ=${FREQ:-99}
CALL_GRAPH=${CALL_GRAPH:-fp}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

source bench/common.sh
need_tools perf taskset
build_loadlab
port=18461
taskset -c 1 "$LOADLAB" origin --listen 127.0.0.1:$port --recipe examples/006-why-slower/per-request.json \
  >/dev/null 2>&1 & pids+=($!)
target=$!
sleep 1
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
graph=(-g)
[ "$CALL_GRAPH" = dwarf ] && graph=(--call-graph dwarf)

# round MODE: prints µs of target CPU per request (and perf's CPU-seconds with a profiler).
round() {
  local mode=$1 before after perf_pid= perf_cpu=0
  before=$(ticks "$target")
  if [ "$mode" = on ]; then
    taskset -c 0 perf record -q -e cpu-clock -F "$FREQ" "${graph[@]}" -p "$target" -o "$work/perf.data" \
      2>/dev/null & perf_pid=$!
    sleep 0.2
  fi
  taskset -c 0 "$LOADLAB" attack "http://127.0.0.1:$port/page" --rate "$RATE" --duration "${SECS}s" \
    -o "$work/run.llr" 2>/dev/null
  after=$(ticks "$target")
  if [ -n "$perf_pid" ]; then
    perf_cpu=$(ticks "$perf_pid")
    kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true
  fi
  local requests
  requests=$("$LOADLAB" report --type json "$work/run.llr" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
  python3 -c "print(f'{($after - $before) / $hz * 1e6 / $requests:.1f} {$perf_cpu / $hz:.2f}')"
}

off=(); on=(); perf_s=()
for r in $(seq "$REPS"); do
  a=$(round off); b=$(round on)
  off+=("${a%% *}"); on+=("${b%% *}"); perf_s+=("${b##* }")
  echo "round $r: without ${a%% *} µs/request, with perf at $FREQ Hz ${b%% *} µs/request (perf itself ${b##* } CPU-s)"
done
python3 - "${off[*]}" "${on[*]}" <<'PY'
import statistics, sys
off = [float(x) for x in sys.argv[1].split()]
on = [float(x) for x in sys.argv[2].split()]
a, b = statistics.median(off), statistics.median(on)
print(f"median: without {a:.1f}, with {b:.1f} µs of target CPU per request: {100 * (b / a - 1):+.2f}% with the profiler")
PY
