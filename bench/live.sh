#!/usr/bin/env bash
# What watching costs: loadlab's CPU per 1000 requests with and without --live, at 2000/s (open
# model) and at the closed model's maximum (50 connections), against one nginx on loopback. With
# --live, a watcher reads /api/snapshot and /metrics every second, as a dashboard and a fast
# Prometheus would. nginx and the watcher run on core 1, loadlab on core 0. Run by hand:
# bash bench/live.sh   (nginx from ../shared/tools/install-peers.sh)
#
# Environment: SECS (length of each run, default 10), RATE (default 2000), REPS (rounds, default
# 3; ratios use the medians).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10}
REPS=${REPS:-3}
RATE=${RATE:-2000}
work=$(mktemp -d)
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
source bench/common.sh
need_tools nginx curl /usr/bin/time taskset
build_loadlab
start_nginx "$work" 1 "server { listen 127.0.0.1:18089; location = /empty { return 200 \"\"; } }"
URL=http://127.0.0.1:18089/empty

declare -A CPU
# run NAME LIVE ARGS...: one attack on core 0, with a watcher on core 1 when LIVE=1.
run() {
  local name=$1 live=$2; shift 2
  local extra=()
  [ "$live" = 1 ] && extra=(--live 127.0.0.1:18099)
  taskset -c 0 /usr/bin/time -f "%U %S %M" -o "$work/time" \
    "$LOADLAB" attack "$URL" --duration "${SECS}s" "$@" "${extra[@]}" -o "$work/out.llr" 2> "$work/err" &
  local pid=$!
  if [ "$live" = 1 ]; then
    sleep 0.5
    while kill -0 $pid 2>/dev/null; do
      taskset -c 1 curl -s -o /dev/null http://127.0.0.1:18099/api/snapshot || true
      taskset -c 1 curl -s -o /dev/null http://127.0.0.1:18099/metrics || true
      sleep 1
    done
  fi
  wait $pid
  local n; n=$("$LOADLAB" report --type json "$work/out.llr" | python3 -c "import json,sys; print(json.load(sys.stdin)['requests'])")
  read -r user sys rss < <(tail -1 "$work/time")
  local per; per=$(python3 -c "print('%.2f' % ((${user}+${sys})*1e6/$n))")
  CPU[$name]="${CPU[$name]:-} $per"
  printf '%-26s %9s requests  %6.2fs user %5.2fs sys  %6s ms CPU/1000 req  %4d MiB max RSS\n' "$name" "$n" "$user" "$sys" "$per" $((rss / 1024))
}
median() { python3 -c "import statistics,sys; print('%.2f' % statistics.median(float(x) for x in sys.argv[1:]))" $1; }

for round in $(seq "$REPS"); do
  echo "round $round"
  run "open ${RATE}/s" 0 --rate "$RATE"
  run "open ${RATE}/s --live" 1 --rate "$RATE"
  run "closed 50 conns" 0 --connections 50
  run "closed 50 conns --live" 1 --connections 50
done
for base in "open ${RATE}/s" "closed 50 conns"; do
  a=$(median "${CPU[$base --live]}"); b=$(median "${CPU[$base]}")
  python3 -c "print('%-26s --live / without: %.3f   (medians %s / %s ms per 1000)' % ('$base', $a/$b, '$a', '$b'))"
done
