#!/usr/bin/env bash
# What templates cost the generator: the same POST sent plain and with per-request values in its
# URL, a header and its body ({{seq}}, {{rand}}, {{uuid}}, {{line FILE}}, {{time ms}}), against
# one nginx on loopback (nginx on core 1, loadlab on core 0).
#  1. CPU per 1,000 requests at 2,000/s (SECS_LOW, default 10 s);
#  2. CPU per 1,000 requests in a closed model (32 connections, CLOSED_REQUESTS, default
#     200,000): the generator's cost per request whatever the pacing;
#  3. the highest open-model rate held (98% answered in time and the p99 of send lag within
#     1 ms, as bench/ceiling.sh judges loadlab), climbing RATES for SECS (default 3 s) each.
# Each measure is taken REPS times (default 3), plain and templated alternating.
# Run by hand (not in CI): bash bench/templates.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-3}
SECS_LOW=${SECS_LOW:-10}
REPS=${REPS:-3}
RATES=${RATES:-10000 20000 30000 45000 60000 75000 90000 105000}
work=$(mktemp -d)
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT

source bench/common.sh
need_tools nginx /usr/bin/time taskset
build_loadlab
start_nginx "$work" 1 "server {
    listen 127.0.0.1:18091 backlog=65535;
    location / { return 200 \"\"; }
  }"
URL=http://127.0.0.1:18091
python3 -c "import random; random.seed(1); print('\n'.join('user-%06d' % random.randrange(10**6) for _ in range(10000)))" > "$work/users.txt"
printf 'POST %s/u/1?n=7\nX-Request-Id: 2f1c4be8-1f43-4b8e-9b5e-3c1d0c2b7a10\nContent-Type: application/json\n@%s\n' \
  "$URL" "$work/plain.json" > "$work/plain"
printf '{"user":"user-123456","at":1764000000000}' > "$work/plain.json"
printf 'POST %s/u/{{seq}}?n={{rand 1 1000}}\nX-Request-Id: {{uuid}}\nContent-Type: application/json\n@%s\n' \
  "$URL" "$work/templated.json" > "$work/templated"
printf '{"user":"{{line users.txt}}","at":{{time ms}}}' > "$work/templated.json"

# run KIND RATE SECS: one attack from core 0; prints "cpu_s ok lag_p99_ms".
run() {
  (cd "$work" && taskset -c 0 /usr/bin/time -f "%U %S" -o "$work/time" \
    "$LOADLAB" attack --targets "$work/$1" --rate "$2" --duration "${3}s" > "$work/out" 2> "$work/err") || true
  read -r user sys < <(tail -1 "$work/time")
  "$LOADLAB" report --type json "$work/out" | python3 -c "
import json, sys
d = json.load(sys.stdin)
ok = sum(n for c, n in d['status_codes'].items() if c.startswith('2'))
print('%.3f %d %.3f' % ($user + $sys, ok, d['schedule_lag']['99th'] / 1e6))"
}

echo "== CPU per 1,000 requests at 2,000/s for ${SECS_LOW}s"
declare -A LOW
for round in $(seq "$REPS"); do
  for kind in plain templated; do
    read -r cpu ok lag < <(run "$kind" 2000 "$SECS_LOW")
    per=$(python3 -c "print('%.1f' % (1000 * $cpu / max($ok, 1) * 1000))")
    printf '%-10s round %d  %6d ok  %5.2f CPU s  %6s ms CPU per 1,000  lag p99 %s ms\n' "$kind" "$round" "$ok" "$cpu" "$per" "$lag"
    LOW[$kind]="${LOW[$kind]:-} $per"
  done
done

CLOSED_REQUESTS=${CLOSED_REQUESTS:-200000}
echo "== CPU per 1,000 requests, closed model, 32 connections, $CLOSED_REQUESTS requests"
declare -A CLOSED
for round in $(seq "$REPS"); do
  for kind in plain templated; do
    (cd "$work" && taskset -c 0 /usr/bin/time -f "%U %S" -o "$work/time" \
      "$LOADLAB" attack --targets "$work/$kind" --connections 32 --requests "$CLOSED_REQUESTS" > "$work/out" 2> "$work/err") || true
    read -r user sys < <(tail -1 "$work/time")
    per=$(python3 -c "print('%.1f' % (1e6 * ($user + $sys) / $CLOSED_REQUESTS))")
    printf '%-10s round %d  %5.2f CPU s  %6s ms CPU per 1,000\n' "$kind" "$round" "$(python3 -c "print($user + $sys)")" "$per"
    CLOSED[$kind]="${CLOSED[$kind]:-} $per"
  done
done

echo "== highest rate held, ${SECS}s per rate"
declare -A HELD
for round in $(seq "$REPS"); do
  for kind in plain templated; do
    ceiling=0
    for rate in $RATES; do
      read -r cpu ok lag < <(run "$kind" "$rate" "$SECS")
      held=$(python3 -c "print(int($ok >= 0.98 * $rate * $SECS and $lag <= 1.0))")
      printf '%-10s round %d  %7d/s  %8d ok  %5.2f CPU s  lag p99 %7s ms  %s\n' "$kind" "$round" "$rate" "$ok" "$cpu" "$lag" \
        "$([[ $held == 1 ]] && echo held || echo MISS)"
      [[ $held == 1 ]] && ceiling=$rate || break
    done
    HELD[$kind]="${HELD[$kind]:-} $ceiling"
  done
done

echo "== summary: median of $REPS rounds, then each round"
for kind in plain templated; do
  python3 -c "import statistics,sys; l=[float(x) for x in sys.argv[2].split()]; c=[float(x) for x in sys.argv[3].split()]; h=[int(x) for x in sys.argv[4].split()]; print('%-10s  %6.1f ms CPU per 1,000 at 2,000/s (%s)   %5.1f ms per 1,000 closed (%s)   held %6d/s (%s)' % (sys.argv[1], statistics.median(l), ' '.join(map(str, l)), statistics.median(c), ' '.join(map(str, c)), statistics.median(h), ' '.join(map(str, h))))" \
    "$kind" "${LOW[$kind]}" "${CLOSED[$kind]}" "${HELD[$kind]}"
done
