#!/usr/bin/env bash
# The open model under overload, beside oha and vegeta in the same run, against one nginx on
# loopback (nginx on core 1, generators on core 0): a rate beyond what one nginx core answers,
# the server frozen for 2 s, the generator frozen for 2 s. For each: successes, not sent (loadlab),
# the peak of established connections, wall time and the generator's peak RSS.
# Run by hand (not in CI): bash bench/overload.sh   (peers: ../shared/tools/install-peers.sh)
#
# Environment: RATE (the overload rate, default 60000), SECS (default 5), FREEZE_RATE (default
# 5000), FREEZE_AT and FREEZE_FOR (seconds, default 2 and 2).
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-60000}
SECS=${SECS:-5}
FREEZE_RATE=${FREEZE_RATE:-5000}
FREEZE_AT=${FREEZE_AT:-2}
FREEZE_FOR=${FREEZE_FOR:-2}
GEN_CORE=0
SRV_CORE=1
work=$(mktemp -d)
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT

source bench/common.sh
need_tools nginx vegeta oha ss /usr/bin/time taskset
build_loadlab
start_nginx "$work" $SRV_CORE "server {
    listen 127.0.0.1:18089 backlog=65535;
    location = /empty { return 200 \"\"; }
  }"
URL=http://127.0.0.1:18089/empty
ulimit -n "$(ulimit -Hn)"

# Peak of established connections to nginx, sampled every 50 ms while $1 (a pid) lives.
peak_connections() {
  local pid=$1 peak=0 n
  while kill -0 "$pid" 2>/dev/null; do
    n=$(ss -Htn state established '( dport = :18089 )' 2>/dev/null | wc -l)
    [ "$n" -gt "$peak" ] && peak=$n
    sleep 0.05
  done
  echo "$peak"
}

# run NAME FREEZE -- CMD...: FREEZE is none, server or generator.
run() {
  local name=$1 freeze=$2; shift 3
  local start; start=$(date +%s.%N)
  taskset -c $GEN_CORE /usr/bin/time -f "%M" -o "$work/time" "$@" > "$work/out" 2> "$work/err" &
  local pid=$!
  sleep 0.2
  local gen; gen=$(pgrep -P "$pid" | head -1 || true)
  peak_connections "$pid" > "$work/peak" &
  local sampler=$!
  if [ "$freeze" != none ]; then
    sleep "$FREEZE_AT"
    local victim=$gen
    [ "$freeze" = server ] && victim=$(pgrep -P "$(cat "$work/nginx.pid")" | head -1)
    kill -STOP "$victim"; sleep "$FREEZE_FOR"; kill -CONT "$victim"
  fi
  wait "$pid" || true
  wait "$sampler" || true
  local wall; wall=$(python3 -c "import time; print('%.1f' % (time.time() - $start))")
  local rss; rss=$(( $(tail -1 "$work/time") / 1024 ))
  local ok sent notsent
  case "$name" in
    loadlab*) read -r ok notsent < <("$LOADLAB" report --type json "$work/out" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['status_codes'].get('200', 0), d['not_sent'])");;
    vegeta*)  ok=$(vegeta report -type=json "$work/out" | python3 -c "import json,sys; print(json.load(sys.stdin)['status_codes'].get('200', 0))"); notsent=-;;
    oha*)     ok=$(python3 -c "import json; print(json.load(open('$work/out'))['statusCodeDistribution'].get('200', 0))"); notsent=-;;
  esac
  printf '%-34s %9s ok  %8s not sent  %7s conns peak  %6ss wall  %6s MiB RSS\n' "$name" "$ok" "$notsent" "$(cat "$work/peak")" "$wall" "$rss"
}

echo "== $RATE req/s for ${SECS}s (asked: $((RATE * SECS)))"
run "loadlab" none -- "$LOADLAB" attack "$URL" --rate "$RATE" --duration "${SECS}s" -o /dev/stdout
run "oha (50 connections)" none -- oha --no-tui --output-format json -q "$RATE" -z "${SECS}s" "$URL"
run "vegeta" none -- timeout 300 vegeta attack -rate="$RATE" -duration="${SECS}s" -targets=<(echo "GET $URL")
echo
for freeze in server generator; do
  echo "== $FREEZE_RATE req/s for ${SECS}s, the $freeze frozen ${FREEZE_FOR}s at ${FREEZE_AT}s (asked: $((FREEZE_RATE * SECS)))"
  run "loadlab" "$freeze" -- "$LOADLAB" attack "$URL" --rate "$FREEZE_RATE" --duration "${SECS}s" -o /dev/stdout
  run "oha (50 connections)" "$freeze" -- oha --no-tui --output-format json -q "$FREEZE_RATE" -z "${SECS}s" "$URL"
  run "vegeta" "$freeze" -- vegeta attack -rate="$FREEZE_RATE" -duration="${SECS}s" -targets=<(echo "GET $URL")
  echo
done
