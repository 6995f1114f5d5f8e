#!/usr/bin/env bash
# HTTP/3 generators compared by what they cost: requests per generator CPU-second over QUIC,
# against loadlab's own origin (`origin --http3`) and against a server nobody here wrote
# (aioquic, tests' interop script), server on core 1, generators on core 0, closed model
# (C connections x S streams) for SECS seconds. oha is the only peer with HTTP/3 (built with
# `--features http3` as oha-h3: OHA_H3=1 bash ../shared/tools/install-peers.sh).
# Run by hand (not in CI): bash bench/h3.sh     Environment: SECS (5), REPS (3), C (4), S (16).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-5}
REPS=${REPS:-3}
C=${C:-4}
S=${S:-16}
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT

source bench/common.sh
need_tools oha-h3 openssl python3 /usr/bin/time taskset
python3 -c 'import aioquic' || { echo "missing aioquic: pip3 install aioquic" >&2; exit 1; }
build_loadlab
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -addext basicConstraints=critical,CA:FALSE \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
echo '{"route": "/*", "body": "ok", "stages": [{"at": 0, "status": 200}]}' > "$work/r.json"

start_origin() {
  taskset -c 1 "$LOADLAB" origin --listen 127.0.0.1:18453 --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
    --http3 --recipe "$work/r.json" 2>/dev/null & pids+=($!)
  sleep 1
}
start_aioquic() {
  taskset -c 1 python3 crates/loadlab/tests/interop/h3_server.py "$work/cert.pem" "$work/key.pem" 18454 >/dev/null & pids+=($!)
  sleep 1
}

# run NAME COUNT_CMD -- CMD...: prints the generator's CPU per 1,000 answers and answers per CPU-second.
declare -A PER
run() {
  local name=$1 count=$2; shift 3
  taskset -c 0 /usr/bin/time -f "%U %S" -o "$work/time" "$@" > "$work/out" 2> "$work/err" || true
  local ok; ok=$(eval "$count" 2>/dev/null || echo 0)
  read -r user sys < <(tail -1 "$work/time")
  python3 - "$name" "$ok" "$user" "$sys" <<'PY'
import sys
name, ok, user, sys_ = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
cpu = user + sys_
print('%-26s %8d answers  %5.2f CPU s  %7.2f ms CPU per 1,000  %8.0f answers per CPU-second' % (
    name, ok, cpu, 1e6 * cpu / max(ok, 1), ok / max(cpu, 1e-9)))
PY
  PER[$name]="${PER[$name]:-} $(python3 -c "print('%.3f' % (1e6 * ($user + $sys) / max($ok, 1)))")"
}

llr_ok='$LOADLAB report --type json "$work/out" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d[\"status_codes\"].get(\"200\", 0))"'
oha_ok='python3 -c "import json; d=json.load(open(\"$work/out\")); print(d[\"statusCodeDistribution\"].get(\"200\", 0))"'

for server in origin aioquic; do
  if [[ $server == origin ]]; then start_origin; port=18453; else start_aioquic; port=18454; fi
  url=https://127.0.0.1:$port/x
  for round in $(seq "$REPS"); do
    echo "#### $server, round $round of $REPS: $C connections x $S streams, ${SECS}s"
    run "loadlab h3 -> $server" "$llr_ok" -- "$LOADLAB" attack "$url" --http3 --insecure --connections "$C" --streams "$S" --duration "${SECS}s"
    run "oha h3 -> $server" "$oha_ok" -- oha-h3 --no-tui --output-format json --http-version 3 --insecure -c "$C" -p "$S" -z "${SECS}s" "$url"
  done
  kill "${pids[-1]}" 2>/dev/null || true
  sleep 1
done

echo "== ratios of CPU per answer, loadlab / oha (lower is better for loadlab; the goal is 1/3 or less)"
for server in origin aioquic; do
  python3 -c "import statistics,sys; a=[float(x) for x in sys.argv[2].split()]; b=[float(x) for x in sys.argv[3].split()]; print('%-10s %.2f   (medians %.2f / %.2f ms per 1,000)' % (sys.argv[1], statistics.median(a)/statistics.median(b), statistics.median(a), statistics.median(b)))" \
    "$server" "${PER[loadlab h3 -> $server]}" "${PER[oha h3 -> $server]}"
done
