#!/usr/bin/env bash
# Replaying a huge access log keeps memory flat: a generated combined log with $msec times
# (SIZE_MB, default 1024: about 9 million lines, 10,000 a second of log time) replayed at
# --speed SPEED (default 10: 100,000/s asked) against one nginx on loopback (nginx on core 1,
# loadlab on core 0), the resident memory sampled every second from /proc. A streaming reader
# prints the same RSS at 10% of the file as at 90%; a reader that kept the log would grow with it.
# Run by hand (not in CI): bash bench/replay.sh   (nginx: ../shared/tools/install-peers.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
SIZE_MB=${SIZE_MB:-1024}
SPEED=${SPEED:-3}
work=$(mktemp -d)
trap 'nginx -c "$work/nginx.conf" -s stop 2>/dev/null || true; rm -rf "$work"' EXIT

source bench/common.sh
need_tools nginx taskset python3
build_loadlab
start_nginx "$work" 1 "server {
    listen 127.0.0.1:18090 backlog=65535;
    location / { return 200 \"\"; }
  }"

echo "== generating a ${SIZE_MB} MiB combined log"
python3 - "$work/access.log" "$SIZE_MB" <<'PY'
import sys
path, size = sys.argv[1], int(sys.argv[2]) << 20
t0 = 1795510800.0
paths = ["/", "/news", "/api/items?id=%d", "/static/app.js", "/search?q=load%d"]
with open(path, "w", buffering=1 << 20) as f:
    n = written = 0
    while written < size:
        t = t0 + n / 10000.0
        p = paths[n % len(paths)]
        if "%d" in p:
            p = p % (n % 100000)
        line = '%.3f 10.%d.%d.%d - - [24/Nov/2026:09:00:00 +0000] "GET %s HTTP/1.1" 200 %d "-" "Mozilla/5.0 (bench)"\n' % (
            t, n % 256, (n >> 8) % 256, (n >> 16) % 256, p, n % 5000)
        f.write(line)
        written += len(line)
        n += 1
print("lines", n)
PY
ls -l "$work/access.log"

echo "== replaying at ${SPEED}x; RSS every second"
taskset -c 0 /usr/bin/time -f "%e s wall, %U+%S s CPU, max RSS %M KiB" \
  "$LOADLAB" attack --replay "$work/access.log" --base-url http://127.0.0.1:18090 --speed "$SPEED" \
  -o "$work/out.llr" 2> "$work/err" &
pid=$!
sleep 0.5
child=$(pgrep -P $pid loadlab || true)
samples=()
while kill -0 $pid 2>/dev/null; do
  [[ -n $child ]] && samples+=("$(awk '/VmRSS/ {print $2}' /proc/$child/status 2>/dev/null || echo 0)")
  sleep 1
done
wait $pid || true
cat "$work/err"
"$LOADLAB" report "$work/out.llr" | grep -E "Requests|Schedule Lag|Connections"
python3 - "${samples[@]}" <<'PY'
import sys
v = [int(x) for x in sys.argv[1:] if x.isdigit() and int(x) > 0]
if not v:
    sys.exit("no samples")
q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
print("RSS KiB at 10%%, 50%%, 90%% of the run: %d, %d, %d (%d samples, max %d)" % (q(0.1), q(0.5), q(0.9), len(v), max(v)))
PY
