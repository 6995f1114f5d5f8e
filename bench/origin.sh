#!/usr/bin/env bash
# The origin simulator against nginx, by hand (not in CI): bash bench/origin.sh
#  1. a 200 KiB body: requests/s of loadlab origin vs nginx serving a static file of the same
#     size, each pinned to core 1, wrk pinned to core 0 (target: >= 0.8x nginx);
#  2. a 100 ms recipe latency with 1,000 requests in flight: p99 - 100 ms (target: <= 2 ms);
#  3. 10,000 idle keep-alive connections held, then each used again (target: no errors).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-5}
work=$(mktemp -d)
cleanup() { [ -n "${ORIGIN_PID:-}" ] && kill "$ORIGIN_PID" 2>/dev/null; nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
source bench/common.sh
need_tools nginx wrk taskset python3
build_loadlab
ulimit -n "$(ulimit -Hn)"  # 10,000 connections need more than the usual 1024

start_nginx "$work" 1 "server { listen 127.0.0.1:18091; root $work/html; }"

start_origin() {
  taskset -c 1 "$LOADLAB" origin --listen 127.0.0.1:18092 2> "$work/origin.log" &
  ORIGIN_PID=$!
  for _ in $(seq 50); do grep -q "serving on" "$work/origin.log" 2>/dev/null && break; sleep 0.1; done
  curl -sf -d "$1" http://127.0.0.1:18092/_admin/add_recipe > /dev/null
}
stop_origin() { kill "$ORIGIN_PID"; wait "$ORIGIN_PID" 2>/dev/null || true; ORIGIN_PID=; }
# Requests/s from wrk's output; refuses a run with error responses (a 403 is fast but no answer).
rps() { local out; out=$(cat); if grep -q "Non-2xx" <<<"$out"; then echo "error responses: $out" >&2; exit 1; fi
        grep -oE 'Requests/sec: +[0-9.]+' <<<"$out" | grep -oE '[0-9.]+$'; }

echo "== 1. 200 KiB body, wrk -t1 -c50 -d${SECS}s, server on one core"
start_origin '{"route":"/*","random_content":"200kb","stages":[{"at":0,"status":200}]}'
origin_rps=$(taskset -c 0 wrk -t1 -c50 -d"${SECS}s" http://127.0.0.1:18092/200k | rps)
nginx_rps=$(taskset -c 0 wrk -t1 -c50 -d"${SECS}s" http://127.0.0.1:18091/200k | rps)
stop_origin
python3 -c "print('nginx %10.0f req/s\nloadlab origin %10.0f req/s\nratio origin/nginx %.2f (target >= 0.80)' % ($nginx_rps, $origin_rps, $origin_rps/$nginx_rps))"

echo
# 10,000 req/s for 100 ms each keeps 1,000 in flight (Little's law), spread evenly; a closed
# model of 1,000 connections instead sends them in one burst per 100 ms, and the last of each
# burst waits for the 999 before it on the server's one core.
echo "== 2. 100 ms recipe latency, 10,000 req/s = 1,000 requests in flight, ${SECS}s"
start_origin '{"route":"/*","handler":"empty","stages":[{"at":0,"status":200,"latency":"100ms"}]}'
taskset -c 0 "$LOADLAB" attack http://127.0.0.1:18092/ --rate 10000 --duration "${SECS}s" -o "$work/lat.llr"
stop_origin
"$LOADLAB" encode --to csv "$work/lat.llr" | python3 -c "
import csv, sys
rows = [(int(r[0]), int(r[2]), r[1]) for r in csv.reader(sys.stdin)]
t0 = min(r[0] for r in rows)
def show(label, lat):
    lat.sort()
    p = lambda q: lat[min(len(lat) - 1, int(len(lat) * q))] / 1e6
    print('%-34s %6d requests  p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  p99-100ms %6.2f ms' % (label, len(lat), p(0.5), p(0.99), lat[-1] / 1e6, p(0.99) - 100))
print('errors: %d' % sum(1 for r in rows if r[2] != '200'))
show('all', [r[1] for r in rows])
# The first second opens ~1,400 connections at once; the target is about the steady state.
show('after the first second (target <= 2)', [r[1] for r in rows if r[0] - t0 >= 1e9])"
echo
echo "== 3. 10,000 idle keep-alive connections"
start_origin '{"route":"/*","handler":"empty","stages":[{"at":0,"status":200}]}'
python3 - <<'PY'
import socket, time
N = 10000
req = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
def ask(s):
    s.sendall(req)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return data.startswith(b"HTTP/1.1 200")
socks, errors = [], 0
for _ in range(N):
    try:
        s = socket.create_connection(("127.0.0.1", 18092), timeout=10)
        errors += not ask(s)
        socks.append(s)
    except OSError:
        errors += 1
print("opened %d connections, %d errors on the first request" % (len(socks), errors))
time.sleep(5)
again = 0
for s in socks:
    try:
        again += ask(s)
    except OSError:
        pass
print("after 5 s idle: %d of %d answered again (target: all)" % (again, len(socks)))
PY
stop_origin
