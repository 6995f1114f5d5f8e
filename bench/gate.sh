#!/usr/bin/env bash
# The history gate's false alarms and power on a real server, as a CI job uses it: TRIALS
# histories of LABS labs each, every lab recorded (`lab run --history`, commit cNN) and, from the
# 6th lab on, checked (`history check`, the default gates unless GATE is set). With CHANGE set,
# the labs from FROM on run a slower server (CHANGE percent more work per request: the CPU-bound
# server's hashing, the origin's latency), and the tally is how soon a check fails after it.
#
#   SERVER=cpu|nginx|origin|go LABS=25 TRIALS=1 [CHANGE=10 FROM=13] [GATE='p50>+5%'] [PIN=1]
#     [BUSY_FROM=20] [RATES='[100, 200]'] [OUT=dir] [LOADLAB=bin] bash bench/gate.sh
#
# BUSY_FROM: the labs from that one on run beside a busy neighbour (a busy loop per core at
# BUSY_NICE, default 0 as another CI job's, started before the lab and stopped after it),
# unchanged otherwise: a check that fails there failed on the machine. checks.csv's `busy`
# column says which.
#
# Each lab: 2 load points (RATES; default the server's lowest and a middle one), 3 s steps after
# 1 s of warm-up, one repeat. OUT keeps the labs, each trial's history.db and checks.csv (trial,
# lab, changed, exit), and cpu.csv (every step's CPU per request, for its lab-to-lab spread).
# RESCORE=1 with the same OUT checks the labs already there again, with this build's gate (each
# history added again from the labs' folders, as this build records them).
#
# BRANCHES='10 30 100': instead of CHANGE, each trial's unchanged labs (1 to FROM-1) are
# continued once per change size, each in a copy of the history (labs FROM to LABS at that
# change): the sizes share their A/A labs, as a team's history would have them before any
# change. checks.csv's `change` column says which.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
source bench/aa/plan.sh
SERVER=${SERVER:-cpu} LABS=${LABS:-25} TRIALS=${TRIALS:-1} CHANGE=${CHANGE:-0} FROM=${FROM:-13} PIN=${PIN:-0}
GATE=${GATE:-}
need_tools python3 taskset
[ "$SERVER" != nginx ] || need_tools nginx
[ "$SERVER" != nginx ] || [ "$CHANGE" = 0 ] || { echo "nginx serves a file: CHANGE is for cpu and origin" >&2; exit 2; }
[ -n "${LOADLAB:-}" ] || build_loadlab  # LOADLAB=path: another build
case $SERVER in
  nginx) RATES=${RATES:-[200, 800]};;
  cpu) RATES=${RATES:-[100, 200]};;
  origin) RATES=${RATES:-[200, 600]};;
  go) RATES=${RATES:-[200, 400]};;
esac
export RATES
OUT=${OUT:-$(mktemp -d /tmp/loadlab-gate.XXXXXX)}
mkdir -p "$OUT"
pin_lab=() pin_server=""
if [ "$PIN" = 1 ]; then pin_lab=(taskset -c 0); pin_server="\"taskset\", \"-c\", \"1\", "; fi
gate=(); [ -z "$GATE" ] || gate=(--fail-on "$GATE")

BUSY_FROM=${BUSY_FROM:-0} BUSY_NICE=${BUSY_NICE:-0}
spinners=()
stop_spinners() { [ ${#spinners[@]} = 0 ] || kill "${spinners[@]}" 2>/dev/null || true; spinners=(); }
trap stop_spinners EXIT
BRANCHES=${BRANCHES:-}
echo "trial,lab,changed,busy,exit,change" > "$OUT/checks.csv"
# One lab of trial $t: lab $i at change $change into $db (folder $dir), checked from the 6th.
for t in $(seq 1 "$TRIALS"); do
  db=$OUT/trial$t/history.db
  mkdir -p "$OUT/trial$t"
  # RESCORE=1 builds each history again from the labs' folders, with this build's figures.
  rm -f "$OUT/trial$t"/history*.db
  runs=()
  for i in $(seq 1 "$LABS"); do
    if [ -z "$BRANCHES" ]; then
      c=0; [ "$i" -ge "$FROM" ] && c=$CHANGE
      runs+=("$i:$c:")
    elif [ "$i" -lt "$FROM" ]; then
      runs+=("$i:0:")
    fi
  done
  for b in $BRANCHES; do
    for i in $(seq "$FROM" "$LABS"); do runs+=("$i:$b:-c$b"); done
  done
  for run in "${runs[@]}"; do
    IFS=: read -r i change branch <<< "$run"
    db=$OUT/trial$t/history$branch.db
    # A branch starts from the unchanged labs' history.
    if [ -n "$branch" ] && [ "$i" = "$FROM" ]; then
      cp "$OUT/trial$t/history.db" "$db"
    fi
    dir=$OUT/trial$t/lab$i$branch
    busy=0; [ "$BUSY_FROM" -gt 0 ] && [ "$i" -ge "$BUSY_FROM" ] && busy=1
    if [ "${RESCORE:-0}" != 1 ]; then
      aa_plan "$dir" "$change"
      if [ "$busy" = 1 ]; then
        for _ in $(seq "$(nproc)"); do timeout 600 nice -n "$BUSY_NICE" sh -c 'while :; do :; done' & spinners+=($!); done
      fi
      "${pin_lab[@]}" "$LOADLAB" lab run "$dir/plan.toml" --out "$dir/lab" --history "$db" \
        --commit "$(printf 'c%02d' "$i")" --branch main >/dev/null 2>"$dir/lab.err" || true
      stop_spinners
    else
      "$LOADLAB" history add "$dir/lab" --history "$db" >/dev/null 2>&1 || true
    fi
    [ "$i" -ge 6 ] || continue
    code=0
    # The lab by its folder: judged against the labs before it only (so RESCORE=1 replays them).
    "$LOADLAB" history check "$dir/lab" --history "$db" "${gate[@]}" > /dev/null 2>"$dir/check.txt" || code=$?
    echo "$t,$i,$([ "$change" = 0 ] && echo 0 || echo 1),$busy,$code,$change" >> "$OUT/checks.csv"
    echo "trial $t lab $i of $LABS (change $change%): history check exit $code" >&2
  done
done

python3 - "$OUT" "$SERVER" "$CHANGE" "$FROM" "${GATE:-default}" <<'PY'
import csv, json, math, pathlib, statistics, sys
out, server, change, start, gate = pathlib.Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rows = list(csv.DictReader(open(out / "checks.csv")))
# Every counted step's CPU per request (target and loadlab), by trial, rate and lab.
cpu = []
for lab in sorted(out.glob("trial*/lab*/lab/lab.json")):
    j = json.loads(lab.read_text())
    for s in j["steps"]:
        n = s["numbers"]
        if s.get("down") or s.get("uncounted") or not n.get("throughput"):
            continue
        rate = j["matrix"]["points"][s["point"]].get("rate")
        for who in ("target", "generator"):
            pct = s.get(f"{who}_cpu_pct")
            if pct is not None:
                cpu.append({"lab": str(lab.parent.parent.relative_to(out)), "rate": rate, "who": who,
                            "us_per_req": pct / 100 / n["throughput"] * 1e6})
with open(out / "cpu.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["lab", "rate", "who", "us_per_req"]); w.writeheader(); w.writerows(cpu)
print(f"server {server}, gates {gate}, change {change:g}% from lab {start}")
same = [r for r in rows if r["changed"] == "0"]
fails = sum(r["exit"] == "3" for r in same)
short = sum(r["exit"] == "4" for r in same)
print(f"unchanged build: {fails} of {len(same)} checks failed ({fails / max(len(same), 1):.1%}), {short} could not tell")
for size in sorted({float(r["change"]) for r in rows if r["changed"] == "1"}):
    firsts = []
    for t in sorted({r["trial"] for r in rows}, key=int):
        slow = [r for r in rows if r["trial"] == t and r["changed"] == "1" and float(r["change"]) == size]
        if not slow:
            continue
        first = next((k + 1 for k, r in enumerate(slow) if r["exit"] == "3"), None)
        firsts.append(first)
        held = sum(r["exit"] != "3" for r in slow)
        print(f"+{size:g}%, trial {t}: first failing slower lab: {first or 'none'}; {held} of {len(slow)} slower labs passed")
    n = len(firsts)
    by = lambda k: sum(f is not None and f <= k for f in firsts)
    print(f"+{size:g}%: red on its 1st lab in {by(1)} of {n} histories, by its 2nd {by(2)}, by its 3rd {by(3)}")
for who in ("target", "generator"):
    for rate in sorted({c["rate"] for c in cpu if c["who"] == who}, key=lambda r: r or 0):
        v = [c["us_per_req"] for c in cpu if c["who"] == who and c["rate"] == rate
             and "-c" not in c["lab"] and int(c["lab"].split("lab")[-1]) < start]
        if len(v) >= 3:
            sd = statistics.stdev(math.log(x) for x in v)
            print(f"{who} CPU at {rate}/s: {statistics.median(v):.1f} µs/req, lab-to-lab sd of logs {sd:.1%} over {len(v)} labs")
PY
echo "labs, histories, checks.csv and cpu.csv in $OUT" >&2
