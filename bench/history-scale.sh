#!/usr/bin/env bash
# A history at team scale: LABS labs (default 10,000) of one plan, each 5 load points x 10 series
# (50 series, 500,000 figures), in SQLite and in PostgreSQL (Debian's package, started here in a
# folder of its own and stopped after). Then each read a team runs, on one core
# (taskset -c 0), its wall time and peak memory (GNU time's maximum RSS):
#
#   history (the list), history show, history show --json, history show of one series,
#   history check of the newest lab
#
#   [LABS=10000] [BACKENDS="sqlite postgres"] [OUT=dir] bash bench/history-scale.sh
#
# Filling takes a minute or two per backend (one transaction per lab, as `lab run` adds them);
# OUT keeps the SQLite file, so a second run with the same OUT reads it again at once.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
LABS=${LABS:-10000} BACKENDS=${BACKENDS:-sqlite postgres}
need_tools taskset /usr/bin/time
build_loadlab
cargo build --profile dist -q -p history --example fill
fill=$PWD/target/dist/examples/fill
OUT=${OUT:-$(mktemp -d /tmp/loadlab-scale.XXXXXX)}
mkdir -p "$OUT"

pg_dir="" pg_pid=""
stop_pg() { [ -z "$pg_pid" ] || kill -TERM "$pg_pid" 2>/dev/null || true; [ -z "$pg_pid" ] || wait "$pg_pid" 2>/dev/null || true; [ -z "$pg_dir" ] || rm -rf "$pg_dir"; }
trap stop_pg EXIT

# start_pg: a server of its own on a free port, as Debian's postgres user; sets PG_URL.
start_pg() {
  local bin port
  bin=$(ls -d /usr/lib/postgresql/*/bin | tail -1)
  pg_dir=$(mktemp -d /tmp/loadlab-scale-pg.XXXXXX)
  chown postgres:postgres "$pg_dir"
  runuser -u postgres -- "$bin/initdb" -D "$pg_dir/data" -A trust -U loadlab --no-sync -E UTF8 >/dev/null
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  runuser -u postgres -- "$bin/postgres" -D "$pg_dir/data" -h 127.0.0.1 -p "$port" -k "$pg_dir" \
    -c fsync=off >/dev/null 2>&1 &
  pg_pid=$!
  for _ in $(seq 1 100); do
    runuser -u postgres -- "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break
    sleep 0.2
  done
  PG_URL="postgres://loadlab@127.0.0.1:$port/postgres"
}

# measure NAME HISTORY ARGS...: one row of the table.
measure() {
  local name=$1 history=$2
  shift 2
  /usr/bin/time -f "%e %M" -o "$OUT/time" taskset -c 0 "$LOADLAB" "$@" --history "$history" \
    >"$OUT/stdout" 2>"$OUT/stderr" || true
  read -r wall rss < <(tail -1 "$OUT/time")
  printf "%-9s %-34s %7s s %7.0f MB %9d bytes out\n" "$backend" "$name" "$wall" "$((rss / 1024))" \
    "$(wc -c < "$OUT/stdout")"
}

echo "$LABS labs x 50 series; one core; wall time and peak memory"
for backend in $BACKENDS; do
  case $backend in
    sqlite) history=$OUT/history.db;;
    postgres) start_pg; history=$PG_URL;;
    *) echo "BACKENDS: sqlite or postgres, not $backend" >&2; exit 2;;
  esac
  start=$(date +%s)
  "$fill" "$history" "$LABS" 2>/dev/null
  echo "$backend: filled in $(( $(date +%s) - start )) s"
  measure "history" "$history" history
  measure "history show" "$history" history show
  measure "history show --json" "$history" history show --json
  measure "history show --metric p99 --load 300" "$history" history show --metric p99 --load 300
  measure "history check (the newest lab)" "$history" history check
  [ "$backend" != postgres ] || { stop_pg; pg_pid=""; pg_dir=""; }
done
