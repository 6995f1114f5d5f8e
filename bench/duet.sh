#!/usr/bin/env bash
# Where the pairs' spread comes from, by design: TRIALS A/A pairs of fresh servers, measured one
# at a time (as `lab ab --one-at-a-time`) and both at once (a duet, as `lab ab` by default),
# the spread of each pair's log ratio of CPU per request and of p50 printed per server and mode.
#
#   SERVERS='cpu go nginx' TRIALS=20 [PIN=same] [LAYOUT=fixed] [MODES=seq,duet] [OUT=dir] \
#     [LOADLAB_BIN=bin] bash bench/duet.sh
#
# PIN=same: both servers on the last CPU and loadlab on the others; else wherever the scheduler
# puts them. The servers: bench/aa/burn.py (cpu, 50 req/s each), the profiling tests' Go service
# (go, 400 req/s), one nginx worker serving 10 KiB (nginx, 400 req/s). Loopback only; each
# trial is bounded (4 s a measurement).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
SERVERS=${SERVERS:-cpu go nginx} TRIALS=${TRIALS:-20}
need_tools python3 go nginx taskset
build_loadlab
OUT=${OUT:-$(mktemp -d /tmp/loadlab-duet.XXXXXX)}
mkdir -p "$OUT/html"
head -c 10240 /dev/urandom > "$OUT/html/10k"
chmod -R a+rX "$OUT"
go build -o "$OUT/burn-go" crates/loadlab/tests/labs/burn/burn.go
for s in $SERVERS; do
  LOADLAB=$LOADLAB WORK=$OUT python3 bench/duet/duet.py "$s" "$TRIALS" "$OUT/trials.csv"
done
python3 - "$OUT/trials.csv" <<'PY'
import csv, math, statistics as st, sys
by = {}
for r in csv.reader(open(sys.argv[1])):
    ca, pa, _, cb, pb, _ = map(float, r[3:9])
    by.setdefault((r[0], r[2]), []).append((math.log(cb / ca), math.log(pb / pa)))
print("server mode  pairs  spread of CPU per request  spread of p50   (sd of log B/A)")
for (s, mode), v in sorted(by.items()):
    if len(v) > 1:
        print(f"{s:6} {mode:5} {len(v):5}  {st.stdev(x[0] for x in v) * 100:22.1f}%  {st.stdev(x[1] for x in v) * 100:12.1f}%")
PY
echo "trials in $OUT/trials.csv" >&2
