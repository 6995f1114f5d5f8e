#!/usr/bin/env bash
# A target measured where it runs, against the truth: one server measured both ways in each lab,
# by its processes' CPU clocks here (`pid`/`process`) and by what it exports (`[measure]`), the
# steps interleaved. Two servers: the Go burn target (tests/labs/burn, its own
# process_cpu_seconds_total at /metrics) and nginx with one worker (Debian's
# prometheus-process-exporter, group by comm). Prints, per server, each step pair's CPU per
# request both ways and their difference, and the spread of CPU per request across repeats
# (A/A: one build) each way.
#
#   [REPEATS=5] [DURATION=5s] [RATES='[200, 400]'] [OUT=dir] [LOADLAB_BIN=bin] bash bench/remote.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
need_tools go nginx prometheus-process-exporter taskset python3
REPEATS=${REPEATS:-5} DURATION=${DURATION:-5s} RATES=${RATES:-[200, 400]}
[ -n "${LOADLAB:-}" ] || build_loadlab
OUT=${OUT:-$(mktemp -d /tmp/loadlab-remote.XXXXXX)}
mkdir -p "$OUT"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; nginx -c "$OUT/nginx/nginx.conf" -s stop 2>/dev/null || true; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return; sleep 0.1; done; echo "port $1 never opened" >&2; exit 1; }

# The Go target, pinned to core 1 (the lab runs on core 0).
go build -o "$OUT/burn" crates/loadlab/tests/labs/burn/burn.go
burn_port=$(port)
taskset -c 1 "$OUT/burn" "127.0.0.1:$burn_port" > /dev/null 2>&1 & pids+=($!)
burn_pid=$!
# nginx, one worker on core 1, and the process exporter watching it by name.
nginx_port=$(port)
start_nginx "$OUT/nginx" 1 "server { listen 127.0.0.1:$nginx_port; root $OUT/nginx/html; gzip on; gzip_types *; gzip_comp_level 6; }"
exporter_port=$(port)
printf 'process_names:\n  - name: nginx\n    comm:\n    - nginx\n' > "$OUT/exporter.yml"
prometheus-process-exporter -config.path "$OUT/exporter.yml" -web.listen-address "127.0.0.1:$exporter_port" >/dev/null 2>&1 & pids+=($!)
wait_port "$burn_port"; wait_port "$nginx_port"; wait_port "$exporter_port"

# lab SERVER PLAN_TARGETS: runs a lab of the two measurements of SERVER.
lab() {
  mkdir -p "$OUT/$1"
  cat > "$OUT/$1/plan.toml" <<PLAN
name = "remote against local, $1"
$2
[load]
rate = $RATES
duration = "$DURATION"
warmup = "1s"
repeats = $REPEATS
$3
PLAN
  taskset -c 0 "$LOADLAB" lab run "$OUT/$1/plan.toml" --out "$OUT/$1/lab" --force > /dev/null 2> "$OUT/$1/lab.err" || true
}
lab go "[targets.local]
url = \"http://127.0.0.1:$burn_port/\"
pid = $burn_pid
[targets.remote]
url = \"http://127.0.0.1:$burn_port/\"
[targets.remote.measure]
metrics = \"http://127.0.0.1:$burn_port/metrics\"" 'headers = { X-Alpha = "300" }'
lab nginx "[targets.local]
url = \"http://127.0.0.1:$nginx_port/200k\"
process = \"nginx\"
[targets.remote]
url = \"http://127.0.0.1:$nginx_port/200k\"
[targets.remote.measure]
metrics = \"http://127.0.0.1:$exporter_port/metrics\"
cpu = 'namedprocess_namegroup_cpu_seconds_total{groupname=\"nginx\"}'" 'headers = { Accept-Encoding = "gzip" }'

python3 - "$OUT" <<'PY'
import json, math, statistics, sys, pathlib
out = pathlib.Path(sys.argv[1])
for server in ["go", "nginx"]:
    lab = json.loads((out / server / "lab" / "lab.json").read_text())
    per = {}
    for s in lab["steps"]:
        if s.get("target_cpu_s") is None or not s["numbers"]["successes"]:
            continue
        us = s["target_cpu_s"] / s["numbers"]["successes"] * 1e6
        per.setdefault((s["point"], s["repeat"]), {})[s["target"]] = us
    print(f"{server}: CPU per request (µs), local clock against exporter, per step pair")
    diffs, spread = [], {0: {}, 1: {}}
    for (point, repeat), v in sorted(per.items()):
        if 0 in v and 1 in v:
            d = (v[1] / v[0] - 1) * 100
            diffs.append(d)
            print(f"  point {point} repeat {repeat}: {v[0]:8.1f} {v[1]:8.1f}  {d:+6.1f}%")
        for t in (0, 1):
            if t in v:
                spread[t].setdefault(point, []).append(math.log(v[t]))
    if diffs:
        print(f"  difference: median {statistics.median(diffs):+.1f}%, mean |d| {statistics.mean(map(abs, diffs)):.1f}%, max |d| {max(map(abs, diffs)):.1f}%")
    for t, name in [(0, "local"), (1, "exporter")]:
        sds = [statistics.stdev(xs) * 100 for xs in spread[t].values() if len(xs) >= 2]
        if sds:
            print(f"  A/A spread across repeats ({name}): sd of log CPU per request {statistics.mean(sds):.1f}% (per point: {', '.join(f'{x:.1f}%' for x in sds)})")
PY
echo "labs in $OUT" >&2
