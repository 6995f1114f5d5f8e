#!/usr/bin/env bash
# Generator CPU per 1000 requests: loadlab beside wrk, h2load, vegeta and oha, all against one
# nginx on loopback. nginx is pinned to core 1 and every generator to core 0, so they never share
# a core. Run by hand (not in CI): bash bench/peers.sh   (peers: ../shared/tools/install-peers.sh)
#
# Environment: SECS (length of each run, default 5), CONNS (default 50), RATE (open-model rate,
# default 2000), HIGH (a second open-model rate, default 30000), REPS (rounds, default 3: the tools take turns each round and the ratios use each
# tool's median, since one run on a 2-core machine varies by 10-30%), LONG=1 adds the 10-minute
# memory run at 5000/s (REPS=0 LONG=1 runs only that). BEFORE=path/to/another/loadlab adds its
# rows beside loadlab's (a build of an older commit; each pair runs in turn first, as order
# alone moved a pair by 2-8%) and the ratios of the two: what a change cost. REPS even, then.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-5}
REPS=${REPS:-3}
CONNS=${CONNS:-50}
RATE=${RATE:-2000}
HIGH=${HIGH:-30000}
GEN_CORE=0
SRV_CORE=1
work=$(mktemp -d)
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT

source bench/common.sh
need_tools nginx wrk h2load vegeta oha /usr/bin/time taskset
build_loadlab

start_nginx "$work" $SRV_CORE "server {
    listen 127.0.0.1:18089;
    listen 127.0.0.1:18090 http2;
    root $work/html;
    location = /empty { return 200 \"\"; }
  }"
H1=http://127.0.0.1:18089/empty
H2=http://127.0.0.1:18090/empty

# measure NAME COUNT_CMD -- CMD...: runs CMD pinned to the generator core under /usr/bin/time,
# then COUNT_CMD (reading $work/out) prints the number of requests it completed.
declare -A CPU
measure() {
  local name=$1 count=$2; shift 3
  taskset -c $GEN_CORE /usr/bin/time -f "%U %S %M" -o "$work/time" "$@" > "$work/out" 2> "$work/err" || true
  local n; n=$(eval "$count" || echo 0)
  read -r user sys rss < <(tail -1 "$work/time")
  local per
  per=$(python3 -c "n=$n; print('%.2f' % ((${user}+${sys})*1e6/n) if n else 'nan')")
  CPU[$name]="${CPU[$name]:-} $per"
  printf '%-28s %10s requests  %7.2fs user %6.2fs sys  %7s ms CPU/1000 req  %6d MiB max RSS\n' \
    "$name" "$n" "$user" "$sys" "$per" $((rss / 1024))
}
median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='nan']; print('%.2f' % statistics.median(v) if v else 'nan')" $1; }
ratio() {
  local a b; a=$(median "${CPU[$1]:-}"); b=$(median "${CPU[$2]:-}")
  python3 -c "a='$a'; b='$b'; print('%-40s %s   (medians %s / %s ms per 1000)' % ('$1 / $2', ('%.2f' % (float(a)/float(b))) if a!='nan' and b!='nan' else 'n/a', a, b))"
}
llr_count='$LOADLAB report --type json "$work/out" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"requests\"])"'
veg_count='vegeta report -type=json "$work/out" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"requests\"])"'
oha_count='python3 -c "import json,sys; d=json.load(open(\"$work/out\")); print(sum(d[\"statusCodeDistribution\"].values()))"'

# both NAME ARGS...: loadlab's row NAME and, with BEFORE, the other build's, the two in turn
# first: whichever of a pair ran first cost 2-8% more per request on this machine, so a fixed
# order read as a change (HEAD against the build before it: 1.07 first, 1.02 second).
both() {
  local name=$1; shift
  if [[ -n ${BEFORE:-} && $((round % 2)) -eq 0 ]]; then
    measure "before $name" "$llr_count" -- "$BEFORE" "$@"
    measure "loadlab $name" "$llr_count" -- "$LOADLAB" "$@"
  else
    measure "loadlab $name" "$llr_count" -- "$LOADLAB" "$@"
    if [[ -n ${BEFORE:-} ]]; then measure "before $name" "$llr_count" -- "$BEFORE" "$@"; fi
  fi
}

for round in $(seq "$REPS"); do
echo "#### round $round of $REPS"
echo "== HTTP/1.1 keep-alive, closed model, $CONNS connections, ${SECS}s, nginx /empty"
measure "wrk" "grep -oE '^ +[0-9]+ requests' $work/out | tr -dc 0-9" -- wrk -t1 -c"$CONNS" -d"${SECS}s" "$H1"
both "http1" attack "$H1" --connections "$CONNS" --duration "${SECS}s"
measure "oha http1" "$oha_count" -- oha --no-tui --output-format json -c "$CONNS" -z "${SECS}s" "$H1"
measure "vegeta http1 (max rate)" "$veg_count" -- vegeta attack -rate=0 -max-workers="$CONNS" -duration="${SECS}s" -targets=<(echo "GET $H1")
echo
echo "== h2c, closed model, $CONNS connections x 10 streams, ${SECS}s"
measure "h2load h2c" "grep -oE 'requests: [0-9]+ total' $work/out | tr -dc 0-9" -- h2load -c"$CONNS" -m10 -D"$SECS" "$H2"
both "h2c" attack "$H2" --h2c --connections "$CONNS" --streams 10 --duration "${SECS}s"
echo
echo "== open model, $RATE req/s for ${SECS}s, HTTP/1.1"
both "open" attack "$H1" --rate "$RATE" --duration "${SECS}s"
measure "vegeta open" "$veg_count" -- vegeta attack -rate="$RATE" -duration="${SECS}s" -targets=<(echo "GET $H1")
measure "oha open" "$oha_count" -- oha --no-tui --output-format json -q "$RATE" -z "${SECS}s" "$H1"
measure "h2load --rps (h2c)" "grep -oE 'requests: [0-9]+ total' $work/out | tr -dc 0-9" -- h2load -c10 -m1 --rps $((RATE / 10)) -D"$SECS" "$H2"
# The same open model over h2c: like h2load's protocol, but h2load's --rps timer fires at most
# every 10 ms and sends bursts, where loadlab sends each request at its time.
measure "loadlab open h2c" "$llr_count" -- "$LOADLAB" attack "$H2" --h2c --rate "$RATE" --duration "${SECS}s"
# Like for like with the peers' pacing: sends batched per tick as h2load --rps (10 ms) and oha
# (tokio's 1 ms timer wheel) batch theirs.
measure "loadlab open h2c tick 10ms" "$llr_count" -- "$LOADLAB" attack "$H2" --h2c --rate "$RATE" --duration "${SECS}s" --pace-tick 10ms
measure "loadlab open tick 1ms" "$llr_count" -- "$LOADLAB" attack "$H1" --rate "$RATE" --duration "${SECS}s" --pace-tick 1ms
echo
echo "== open model, $HIGH req/s for ${SECS}s, HTTP/1.1 (sends close enough to share wake-ups)"
both "open high" attack "$H1" --rate "$HIGH" --duration "${SECS}s"
measure "loadlab open high tick 1ms" "$llr_count" -- "$LOADLAB" attack "$H1" --rate "$HIGH" --duration "${SECS}s" --pace-tick 1ms
measure "loadlab open high window 250us" "$llr_count" -- "$LOADLAB" attack "$H1" --rate "$HIGH" --duration "${SECS}s" --pace-window 250us
measure "oha open high" "$oha_count" -- oha --no-tui --output-format json -q "$HIGH" -z "${SECS}s" "$H1"
measure "vegeta open high" "$veg_count" -- vegeta attack -rate="$HIGH" -duration="${SECS}s" -targets=<(echo "GET $H1")
echo
echo
done
echo "== ratios of CPU per request (lower is better for loadlab)"
ratio "loadlab http1" "wrk"
ratio "loadlab h2c" "h2load h2c"
ratio "loadlab http1" "vegeta http1 (max rate)"
ratio "loadlab open" "vegeta open"
ratio "loadlab open" "oha open"
ratio "loadlab open" "h2load --rps (h2c)"
ratio "loadlab open h2c" "h2load --rps (h2c)"
ratio "loadlab open h2c tick 10ms" "h2load --rps (h2c)"
ratio "loadlab open tick 1ms" "oha open"
ratio "loadlab open high" "oha open high"
ratio "loadlab open high tick 1ms" "oha open high"
ratio "loadlab open high window 250us" "oha open high"
ratio "loadlab open high" "vegeta open high"
if [ -n "${BEFORE:-}" ]; then
  for row in http1 h2c open "open high"; do ratio "loadlab $row" "before $row"; done
fi

if [ "${LONG:-0}" = 1 ]; then
  echo
  echo "== memory: 10 minutes at 5000 req/s"
  # RSS once a minute, to show it stays flat rather than only its maximum.
  ( while sleep 60; do
      pid=$(pgrep -f "^$LOADLAB attack $H1 --rate 5000" | head -1) || true
      [ -n "$pid" ] && echo "  minute sample: $(grep VmRSS /proc/"$pid"/status 2>/dev/null)"
    done ) &
  sampler=$!
  measure "loadlab 10m@5000" "$llr_count" -- "$LOADLAB" attack "$H1" --rate 5000 --duration 10m
  kill "$sampler" 2>/dev/null || true
fi
