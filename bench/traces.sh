#!/usr/bin/env bash
# What `--traces` costs the generator: loadlab's own CPU per 1,000 requests with a W3C
# traceparent on every request against the same run without, rounds interleaved (each mode
# first in turn), against one nginx worker serving a small file. The goal is within 5%. A third
# column, `--otlp-export` (each request's client span sent live to a collector: a sink on
# core 1 that takes OTLP/HTTP posts and answers 200), against `--traces` alone.
# Generator on core 0, nginx on core 1; CPU from the attack's own rusage (GNU time's user+sys).
# Run by hand (not in CI): bash bench/traces.sh   Environment: REPS (6), RATES ("2000 20000"),
# SECS (5), PROTOCOLS ("http1 h2c").
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-6}
RATES=${RATES:-2000 20000}
SECS=${SECS:-5}
PROTOCOLS=${PROTOCOLS:-http1 h2c}
source bench/common.sh
need_tools nginx taskset
build_loadlab
work=$(mktemp -d)
port=18471 h2port=18472
sink=18473
# An OTLP/HTTP sink: reads each post's body, answers 200 (keep-alive), keeps nothing.
taskset -c 1 python3 -c '
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
' "$sink" &
sink_pid=$!
start_nginx "$work" 1 "server { listen 127.0.0.1:$port; location = /small { return 200 'ok'; } }
  server { listen 127.0.0.1:$h2port http2; location = /small { return 200 'ok'; } }"
trap 'kill $sink_pid 2>/dev/null; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT
sleep 0.5

# round PROTOCOL RATE MODE: µs of loadlab's CPU per request.
round() {
  local protocol=$1 rate=$2 mode=$3 flags=() out p=$port
  [ "$mode" = on ] && flags+=(--traces)
  [ "$mode" = export ] && flags+=(--otlp-export "http://127.0.0.1:$sink")
  [ "$protocol" = h2c ] && { flags+=(--h2c); p=$h2port; }
  /usr/bin/time -f "%U %S" -o "$work/time" taskset -c 0 "$LOADLAB" attack "http://127.0.0.1:$p/small" \
    --rate "$rate" --duration "${SECS}s" "${flags[@]}" --output "$work/r.llr" >/dev/null 2>&1
  out=$(tail -1 "$work/time")
  local n
  n=$("$LOADLAB" report "$work/r.llr" --type json | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])')
  echo "$out $n" | awk '{ printf "%.2f\n", ($1 + $2) * 1e6 / $3 }'
}

printf "%-6s %7s %12s %12s %14s %8s %12s\n" protocol rate "off us/req" "on us/req" "export us/req" "on/off" "export/on"
for protocol in $PROTOCOLS; do
  for rate in $RATES; do
    off=(); on=(); ex=()
    for r in $(seq 1 "$REPS"); do
      if [ $((r % 2)) = 1 ]; then off+=("$(round "$protocol" "$rate" off)"); on+=("$(round "$protocol" "$rate" on)"); ex+=("$(round "$protocol" "$rate" export)")
      else ex+=("$(round "$protocol" "$rate" export)"); on+=("$(round "$protocol" "$rate" on)"); off+=("$(round "$protocol" "$rate" off)"); fi
    done
    median() { printf "%s\n" "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
    m_off=$(median "${off[@]}"); m_on=$(median "${on[@]}"); m_ex=$(median "${ex[@]}")
    printf "%-6s %7s %12s %12s %14s %8.3f %12.3f\n" "$protocol" "$rate" "$m_off" "$m_on" "$m_ex" \
      "$(echo "$m_on / $m_off" | bc -l)" "$(echo "$m_ex / $m_on" | bc -l)"
  done
done
