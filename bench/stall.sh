#!/usr/bin/env bash
# A server's stall, as each open-model generator reports it: nginx (one worker, its default
# listen queue of 511, a 10 KiB file) at RATE/s for SECS, its worker stopped for 1 s at 3 s.
# About RATE requests wait between 0 and 1 s, so the truth is p95 near 0.5 s and p99 near 0.9 s;
# a tail past that is the generator's connection policy meeting a full accept queue (a SYN
# retransmitted a second later). Per generator and repeat: p50, p95, p99, max, the requests
# counted, and the kernel's ListenOverflows over the run. Generators on core 0, nginx on core 1.
# Run by hand (not in CI): bash bench/stall.sh   (peers: ../shared/tools/install-peers.sh)
#
# Environment: RATE (default 1000), SECS (default 8), REPS (default 3), BEFORE=path/to/loadlab
# (another build's rows beside this one's).
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-1000} SECS=${SECS:-8} REPS=${REPS:-3}
work=$(mktemp -d)
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT
source bench/common.sh
need_tools nginx vegeta zrk taskset python3
build_loadlab
mkdir -p "$work/html"; head -c 10240 /dev/urandom > "$work/html/10k"
start_nginx "$work" 1 "server { listen 127.0.0.1:18090; root $work/html; }"
URL=http://127.0.0.1:18090/10k
ulimit -n "$(ulimit -Hn)"

overflows() { awk '/^TcpExt:/ { if (!h) { split($0, k); h = 1 } else { split($0, v); for (i in k) if (k[i] == "ListenOverflows") print v[i] } }' /proc/net/netstat; }

# run NAME PARSER -- CMD...: runs CMD on core 0, stops nginx's worker for 1 s at 3 s, prints a row.
run() {
  local name=$1 parser=$2; shift 3
  local before; before=$(overflows)
  taskset -c 0 "$@" > "$work/out" 2> "$work/err" &
  local pid=$!
  sleep 3
  local worker; worker=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1)
  kill -STOP "$worker"; sleep 1; kill -CONT "$worker"
  wait "$pid" || true
  local after; after=$(overflows)
  printf '%-28s %s %8d\n' "$name" "$($parser)" "$((after - before))"
}
# Each parser prints: p50 p95 p99 max (ms) and the requests counted.
from_loadlab() {
  "$LOADLAB" report --type json "$work/out" | python3 -c '
import json, sys
d = json.load(sys.stdin); l = d["latencies"]
print(*(f"{l[k] / 1e6:8.1f}" for k in ("50th", "95th", "99th", "max")), "%8d" % d["requests"])'
}
from_vegeta() {
  vegeta report -type=json "$work/out" | python3 -c '
import json, sys
d = json.load(sys.stdin); l = d["latencies"]
print(*(f"{l[k] / 1e6:8.1f}" for k in ("50th", "95th", "99th", "max")), "%8d" % d["requests"])'
}
from_zrk() {
  # zrk's JSON has no p95: read every quantile from its HdrHistogram percentile file (.hgrm).
  python3 - "$work/out" "$work/hgrm" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = []
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) == 4 and f[0].replace(".", "").isdigit():
        rows.append((float(f[1]), float(f[0])))
def q(p):
    return next(v for c, v in rows if c >= p)
scale = 1.0  # milliseconds in the file
print(*(f"{q(p) / scale:8.1f}" for p in (0.5, 0.95, 0.99)), f"{d['latency_us']['max'] / 1e3:8.1f}", f"{d['requests']:8d}")
PY
}

printf '%-28s %8s %8s %8s %8s %8s %8s\n' generator p50_ms p95_ms p99_ms max_ms requests overflow
for rep in $(seq 1 "$REPS"); do
  run "loadlab (default)" from_loadlab -- "$LOADLAB" attack "$URL" --rate "$RATE" --duration "${SECS}s" --output "$work/out"
  [ -z "${BEFORE:-}" ] || run "loadlab before (default)" from_loadlab -- "$BEFORE" attack "$URL" --rate "$RATE" --duration "${SECS}s" --output "$work/out"
  run "loadlab --connections 64" from_loadlab -- "$LOADLAB" attack "$URL" --rate "$RATE" --duration "${SECS}s" --connections 64 --output "$work/out"
  run "vegeta (default)" from_vegeta -- sh -c "echo 'GET $URL' | vegeta attack -rate $RATE -duration ${SECS}s"
  run "zrk -c 64" from_zrk -- zrk -t 1 -c 64 -R "$RATE" -d "${SECS}s" --format json --plain --hdr "$work/hgrm" "$URL"
done
