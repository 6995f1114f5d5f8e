#!/usr/bin/env bash
# Where the lab-to-lab spread comes from: LABS labs of one build against a real server started
# by each lab, and per load point the spread between labs (sd of the logarithm, in %) of the
# target's CPU per request, of p50 and of loadlab's own CPU per request. One source is changed
# per set, the rest held, so each set's spread against the base set's is what that source adds:
#
#   SERVER=go|nginx|cpu|origin LABS=8 [PIN=1] [PROBE=1] [LAYOUT=fixed] [DURATION=3s] [WARMUP=1s] [REPEATS=1] [OUT=dir] bash bench/noise.sh
#
# PIN=0 lets the scheduler place both (`--placement shared`, the default); PIN=lab is the lab's
# own `--placement split` (loadlab on core 0, the server on core 1); PIN=1 pins the same way from
# outside with taskset (for a build without placement). PROBE=1 runs bench/noise/probe.c beside
# each lab and says how much of the target's spread its timings, or loadlab's own CPU per
# request, explain. Each lab's figures stay in OUT (labs.csv: one row a lab
# and load point).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
source bench/aa/plan.sh
SERVER=${SERVER:-go} LABS=${LABS:-8} PIN=${PIN:-0}
need_tools python3 taskset
[ "$SERVER" != nginx ] || need_tools nginx
[ -n "${LOADLAB:-}" ] || build_loadlab
OUT=${OUT:-$(mktemp -d /tmp/loadlab-noise.XXXXXX)}
mkdir -p "$OUT"
if [ "${PROBE:-}" = 1 ]; then need_tools cc; cc -O2 -o "$OUT/probe" bench/noise/probe.c; PROBE=$OUT/probe; fi
pin_lab=() pin_server=""
if [ "$PIN" = 1 ]; then pin_lab=(taskset -c 0); pin_server="\"taskset\", \"-c\", \"1\", "; fi
# LAYOUT=fixed starts the server with one memory layout in every lab (no address-space
# randomisation, Python's string hashes unseeded): how much of the spread is where a new
# process's code, stacks and heap happen to land.
if [ "${LAYOUT:-}" = fixed ]; then pin_server="\"env\", \"PYTHONHASHSEED=0\", \"setarch\", \"-R\", $pin_server"; fi
# The lab's own placement off: the taskset prefixes above are the set's only pinning.
shared=()
if "$LOADLAB" lab run --help | grep -q -- --placement; then
  if [ "$PIN" = lab ]; then shared=(--placement split); else shared=(--placement shared); fi
fi
for i in $(seq 1 "$LABS"); do
  aa_plan "$OUT/lab$i" 0
  probe_pid=
  if [ -n "${PROBE:-}" ]; then "$PROBE" 50 > "$OUT/lab$i/probe.txt" & probe_pid=$!; fi
  "${pin_lab[@]}" "$LOADLAB" lab run "$OUT/lab$i/plan.toml" "${shared[@]}" --out "$OUT/lab$i/lab" >/dev/null 2>"$OUT/lab$i/lab.err" || true
  [ -z "$probe_pid" ] || { kill "$probe_pid"; wait "$probe_pid" 2>/dev/null || true; }
  echo "lab $i of $LABS" >&2
done
python3 - "$OUT" "$SERVER" "$PIN" <<'PY'
import csv, json, math, pathlib, statistics, sys
out, server, pin = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
rows = []
def probe(lab, start, end):
    """The machine probe's median CPU per unit (ALU, memory, kernel; ns) over [start, end] (unix s)."""
    f = lab.parent.parent / "probe.txt"
    if not f.exists():
        return {}
    units = [list(map(int, l.split())) for l in f.read_text().split("\n") if len(l.split()) == 5]
    units = [u for u in units if start * 1000 <= u[0] <= end * 1000]
    if len(units) < 5:
        return {}
    return {k: statistics.median(u[i] for u in units) for i, k in [(1, "alu_ns"), (2, "mem_ns"), (3, "kernel_ns")]}
for lab in sorted(out.glob("lab*/lab/lab.json"), key=lambda p: int(p.parent.parent.name[3:])):
    j = json.loads(lab.read_text())
    for s in j["steps"]:
        n = s["numbers"]
        if s.get("uncounted") or not n["successes"]:
            continue
        cpu = s.get("target_cpu_s")
        gen = s.get("generator_cpu_s")
        rows.append({"lab": lab.parent.parent.name, "load": s["id"].split("--")[1],
                     "target_us": cpu * 1e6 / n["successes"] if cpu else None,
                     "generator_us": gen * 1e6 / n["successes"] if gen else None,
                     "p50_ms": n["latency"]["p50"],
                     **probe(lab, j["started_unix_s"] + s["started_s"] + s["warmup_s"] if "warmup_s" in s else j["started_unix_s"] + s["started_s"],
                             j["started_unix_s"] + s["ended_s"])})
with open(out / "labs.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=sorted({k for r in rows for k in r}, key=lambda k: list(max(rows, key=len)).index(k)))
    w.writeheader(); w.writerows(rows)
def sd_log(v):
    v = [x for x in v if x]
    return 100 * statistics.stdev(math.log(x) for x in v) if len(v) > 2 else float("nan")
print(f"server {server}, placement {dict(zip('0 1 lab'.split(), ['shared', 'taskset', 'split'])).get(pin, pin)}: spread between labs, sd of the log (%), and medians")
print(f"{'load':<10}{'labs':>5}{'target CPU/req':>16}{'p50':>8}{'loadlab CPU/req':>17}   medians: target µs, p50 ms")
for load in sorted({r['load'] for r in rows}, key=lambda l: int(''.join(c for c in l if c.isdigit()) or 0)):
    rs = [r for r in rows if r["load"] == load]
    med = lambda k: statistics.median(x[k] for x in rs if x[k])
    print(f"{load:<10}{len(rs):>5}{sd_log([r['target_us'] for r in rs]):>15.1f}%{sd_log([r['p50_ms'] for r in rs]):>7.1f}%"
          f"{sd_log([r['generator_us'] for r in rs]):>16.1f}%   {med('target_us'):.0f}, {med('p50_ms'):.3f}")
PY
echo "labs and labs.csv in $OUT" >&2
# Consecutive labs as the pairs of a `lab ab` A/A run: the spread of their differences, and what
# is left once loadlab's own CPU per request (the machine's measure lab ab uses) takes its part.
python3 - "$OUT" <<'PY'
import csv, math, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/labs.csv")))
print("consecutive labs as pairs: sd of the differences (%), then after taking out loadlab's own CPU per request (slope, correlation)")
for load in sorted({r["load"] for r in rows}):
    rs = sorted((r for r in rows if r["load"] == load and r["target_us"] and r["generator_us"]), key=lambda r: int(r["lab"][3:]))
    if len(rs) < 6:
        continue
    diff = lambda k: [math.log(float(b[k]) / float(a[k])) for a, b in zip(rs, rs[1:])]
    g = diff("generator_us")
    line = f"{load:<12}"
    for k in ["target_us", "p50_ms"]:
        d = diff(k)
        slope = statistics.covariance(d, g) / statistics.variance(g)
        left = [x - slope * y for x, y in zip(d, g)]
        line += f"  {k}: {100*statistics.stdev(d):.1f}% -> {100*statistics.stdev(left)*math.sqrt((len(d)-1)/(len(d)-2)):.1f}% ({slope:.2f}, {statistics.correlation(d, g):.2f})"
    print(line)
PY
if [ -n "${PROBE:-}" ]; then python3 - "$OUT" <<'PY'
import csv, math, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1] + "/labs.csv")))
print("the machine probe beside each step: its own spread, its correlation with the target's CPU/req, and the target's spread divided by it")
for load in sorted({r["load"] for r in rows}):
    rs = [r for r in rows if r["load"] == load and r.get("alu_ns") and r["target_us"]]
    if len(rs) < 3:
        continue
    t = [math.log(float(r["target_us"])) for r in rs]
    line = f"{load:<10} target {100*statistics.stdev(t):.1f}%"
    for k in ["alu_ns", "mem_ns", "kernel_ns", "generator_us"]:
        c = [math.log(float(r[k])) for r in rs]
        line += f" | {k} {100*statistics.stdev(c):.1f}% r={statistics.correlation(t, c):.2f} ratio {100*statistics.stdev([a-b for a, b in zip(t, c)]):.1f}%"
    print(line)
PY
fi
