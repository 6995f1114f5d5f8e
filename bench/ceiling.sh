#!/usr/bin/env bash
# The highest open-model rate each generator holds from one core: loadlab (exact pacing, its
# default; a 250 us coalescing window; a 1 ms tick), oha and vegeta, against one nginx on loopback (nginx on core 1, generators on core
# 0). Unlike CPU per request in a closed loop, which is bounded by nginx's core once both cores
# are busy, this asks what a user asks of a generator: how far does its schedule hold?
# Run by hand (not in CI): bash bench/ceiling.sh   (peers: ../shared/tools/install-peers.sh)
#
# A rate holds when the run answered at least 98% of rate x SECS with 2xx and ended within
# SECS + 1 s; for loadlab, also when the p99 of its sends' lag stays within 1 ms (exact pacing
# and a coalescing window) or within its late threshold (a 1 ms tick, which waits up to a tick by
# design). The peers' own lag is not measured: their rows are judged on answers alone.
# Each tool climbs RATES in order and stops at its first miss; its ceiling is the last rate held.
# Environment: SECS (default 3), RATES (default "5000 10000 20000 30000 45000 60000 75000 90000
# 105000 120000 135000 150000"), REPS (rounds, default 3: a ceiling on a 2-core machine moves by a rung or two
# between runs, so each tool's median is given beside every round's), TWO_CORES=1 (adds loadlab
# and oha on both cores, sharing core 1 with nginx: this machine has no third core), ONLY (a
# comma-separated list of the rows to run, e.g. ONLY="loadlab,oha"), BEFORE (another loadlab
# binary, e.g. a build of an earlier commit: its default row, "loadlab before", climbs right after
# loadlab's in each round, so that a change is told from the machine's noise).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-3}
REPS=${REPS:-3}
RATES=${RATES:-5000 10000 20000 30000 45000 60000 75000 90000 105000 120000 135000 150000}
GEN_CORES=0
SRV_CORE=1
work=$(mktemp -d)
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT

source bench/common.sh
need_tools nginx vegeta oha /usr/bin/time taskset
build_loadlab
start_nginx "$work" $SRV_CORE "server {
    listen 127.0.0.1:18089 backlog=65535;
    location = /empty { return 200 \"\"; }
  }"
URL=http://127.0.0.1:18089/empty
echo "GET $URL" > "$work/targets"

# Each prints the 2xx count of the run in $work/out.
llr_ok='$LOADLAB report --type json "$work/out" | python3 -c "import json,sys; d=json.load(sys.stdin); print(sum(n for c,n in d[\"status_codes\"].items() if c.startswith(\"2\")))"'
veg_ok='vegeta report -type=json "$work/out" | python3 -c "import json,sys; d=json.load(sys.stdin); print(sum(n for c,n in d[\"status_codes\"].items() if c.startswith(\"2\")))"'
oha_ok='python3 -c "import json; d=json.load(open(\"$work/out\")); print(sum(n for c,n in d[\"statusCodeDistribution\"].items() if c.startswith(\"2\")))"'

# step NAME RATE COUNT_CMD -- CMD...: runs CMD on the generator core; prints the line and
# returns 0 when the rate held, 2 when it was answered in time but loadlab's lag missed (held
# by the peers' test), 1 otherwise.
step() {
  local name=$1 rate=$2 count=$3; shift 4
  taskset -c "$GEN_CORES" /usr/bin/time -f "%e %U %S %M" -o "$work/time" "$@" > "$work/out" 2> "$work/err" || true
  local ok; ok=$(eval "$count" 2>/dev/null || echo 0)
  read -r wall user sys rss < <(tail -1 "$work/time")
  # loadlab also reports its sends' lag, which the peers' test cannot see (it only sees what
  # was answered in time): the default must keep its p99 within 1 ms, a tick within its late
  # threshold (the tick + 5 ms).
  local lag_ok=1 extra=""
  if [[ $name == loadlab* ]]; then
    read -r lag_ok extra < <("$LOADLAB" report --type json "$work/out" | python3 -c "
import json, sys
d = json.load(sys.stdin); l = d['schedule_lag']
limit = l['late_threshold'] if l['pace_tick'] else 1e6
print(int(l['99th'] <= limit), 'lag p99 %.2f ms, window %d us, %d late sends, %s' % (
    l['99th'] / 1e6, l['pace_window'] / 1e3, l['late_sends'],
    'generator-limited' if d['generator_limited'] else 'held'))")
  fi
  python3 - "$name" "$rate" "$ok" "$wall" "$user" "$sys" "$rss" "$SECS" "$lag_ok" "$extra" <<'PY'
import sys
name, rate, ok, wall, user, sys_, rss, secs, lag_ok, extra = sys.argv[1:]
rate, ok, wall, secs = float(rate), int(ok), float(wall), float(secs)
answered = ok >= 0.98 * rate * secs and wall <= secs + 1
held = answered and lag_ok == '1'
print('%-22s %7d/s  %8d ok (%5.1f%%)  %5.2fs wall  %5.2f CPU s  %5d MiB  %-5s %s' % (
    name, rate, ok, 100 * ok / (rate * secs), wall, float(user) + float(sys_), int(rss) // 1024,
    'held' if held else 'MISS', extra))
sys.exit(0 if held else 2 if answered else 1)
PY
}

declare -A CEILINGS
climb() {
  local name=$1 count=$2; shift 3
  if [[ -n ${ONLY:-} && ",$ONLY," != *",$name,"* ]]; then return; fi
  # loadlab's rows climb on past a lag miss while every answer still arrives in time, for a
  # second ceiling judged as the peers are (answers only).
  local ceiling=0 answered=0 strict=1 status
  for rate in $RATES; do
    local cmd=()
    for a in "$@"; do cmd+=("${a//@RATE@/$rate}"); done
    status=0
    step "$name" "$rate" "$count" -- "${cmd[@]}" || status=$?
    [[ $status == 1 ]] && break
    answered=$rate
    if [[ $status == 0 && $strict == 1 ]]; then ceiling=$rate; else strict=0; fi
  done
  CEILINGS[$name]="${CEILINGS[$name]:-} $ceiling"
  if [[ $name == loadlab* ]]; then
    CEILINGS["$name, answers only"]="${CEILINGS["$name, answers only"]:-} $answered"
  fi
  echo
}

for round in $(seq "$REPS"); do
  echo "#### round $round of $REPS: open model, HTTP/1.1 keep-alive, ${SECS}s per rate, nginx /empty"
  GEN_CORES=0
  climb "loadlab" "$llr_ok" -- "$LOADLAB" attack "$URL" --rate @RATE@ --duration "${SECS}s"
  if [[ -n ${BEFORE:-} ]]; then
    climb "loadlab before" "$llr_ok" -- "$BEFORE" attack "$URL" --rate @RATE@ --duration "${SECS}s"
  fi
  climb "loadlab window 250us" "$llr_ok" -- "$LOADLAB" attack "$URL" --rate @RATE@ --duration "${SECS}s" --pace-window 250us
  climb "loadlab tick 1ms" "$llr_ok" -- "$LOADLAB" attack "$URL" --rate @RATE@ --duration "${SECS}s" --pace-tick 1ms
  climb "oha" "$oha_ok" -- oha --no-tui --output-format json -q @RATE@ -z "${SECS}s" "$URL"
  climb "vegeta" "$veg_ok" -- vegeta attack -rate=@RATE@ -duration="${SECS}s" -targets="$work/targets"
  if [[ ${TWO_CORES:-0} == 1 ]]; then
    GEN_CORES=0,1
    climb "loadlab 2 cores" "$llr_ok" -- "$LOADLAB" attack "$URL" --rate @RATE@ --duration "${SECS}s"
    climb "oha 2 cores" "$oha_ok" -- oha --no-tui --output-format json -q @RATE@ -z "${SECS}s" "$URL"
  fi
done

echo "== highest rate held (req/s): median of $REPS rounds, then each round"
names=("loadlab" "loadlab before" "loadlab window 250us" "loadlab tick 1ms" "oha" "vegeta")
[[ ${TWO_CORES:-0} == 1 ]] && names+=("loadlab 2 cores" "oha 2 cores")
for row in "${names[@]}"; do
 for name in "$row" "$row, answers only"; do
  [[ -z ${CEILINGS[$name]:-} ]] && continue
  python3 -c "import statistics,sys; v=[int(x) for x in sys.argv[2:]]; print('%-34s %7d   %s' % (sys.argv[1], statistics.median(v), ' '.join(map(str, v))))" "$name" ${CEILINGS[$name]}
 done
done
