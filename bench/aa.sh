#!/usr/bin/env bash
# A/A false alarms and power of `lab compare`: PAIRS pairs of labs of the same build against a
# real server started by each lab, each pair compared as a user would (`lab compare OLD NEW
# --fail-on ...`), tallied per metric: the share of cells called better or worse, and the pairs
# whose gate failed. With CHANGE set, the new lab of each pair runs a slower server (the
# origin's latency, or the CPU-bound server's work, CHANGE percent more), and the tally is the
# power: how often that change is found.
#
#   SERVER=nginx|cpu|origin REPEATS=1 PAIRS=10 [CHANGE=10] [PIN=1] [RATES='[200, 1000]'] [OUT=dir] [LOADLAB=bin] bash bench/aa.sh
#
# nginx: one worker serving a 10 KiB file (sub-millisecond); cpu: bench/aa/burn.py hashing for
# about 2 ms a request, one at a time; origin: `loadlab origin` answering in 10 ms. PIN=1 runs
# the lab on core 0 and the server on core 1. Each lab: the server's rates, 3 s steps after 1 s
# of warm-up, REPEATS repeats. The labs and compare.json files stay in OUT (rows.csv holds every
# row). RESCORE=1 with the same OUT compares the labs already there again, with this build's
# `lab compare`: another rule tried on the same runs.
#
# CALIBRATE=N first runs `lab calibrate` on the unchanged plan (N labs of their own, in
# OUT/calibration) and compares every pair with `--calibration`: the service's own spread.
# CALIBRATE=cross (for RESCORE=1 on labs already run) calibrates pair i from the old labs of the
# 5 pairs after it, so no lab is both calibration and compared. CALIBRATE=DIR uses the
# calibration.json in DIR (say, an A/A set's, for a set with CHANGE).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
source bench/aa/plan.sh
SERVER=${SERVER:-nginx} REPEATS=${REPEATS:-1} PAIRS=${PAIRS:-10} CHANGE=${CHANGE:-0} PIN=${PIN:-0}
GATE=${GATE:-p50>+10%,p99>+10%,throughput<-3%,target_cpu>+10%}
need_tools python3 taskset
[ "$SERVER" != nginx ] || need_tools nginx
[ -n "${LOADLAB:-}" ] || build_loadlab  # LOADLAB=path: another build
OUT=${OUT:-$(mktemp -d /tmp/loadlab-aa.XXXXXX)}
mkdir -p "$OUT"
pin_lab=() pin_server=""
if [ "$PIN" = 1 ]; then pin_lab=(taskset -c 0); pin_server="\"taskset\", \"-c\", \"1\", "; fi

# plan SIDE CHANGE: writes OUT/SIDE/plan.toml for the server, CHANGE percent slower.
plan() { aa_plan "$OUT/$1" "$2"; }

CALIBRATE=${CALIBRATE:-}
if [[ "$CALIBRATE" =~ ^[0-9]+$ ]] && [ "${RESCORE:-0}" != 1 ]; then
  plan cal 0
  rm -rf "$OUT/calibration"
  "${pin_lab[@]}" "$LOADLAB" lab calibrate "$OUT/cal/plan.toml" --runs "$CALIBRATE" --out "$OUT/calibration" \
    > "$OUT/calibration.txt" 2>"$OUT/calibration.err"
  cat "$OUT/calibration.txt" >&2
fi
# calibration I: the --calibration arguments for pair I.
calibration() {
  case $CALIBRATE in
    "") ;;
    cross)
      local labs=() j
      for k in 1 2 3 4 5; do j=$(( (($1 - 1 + k) % PAIRS) + 1 )); labs+=("$OUT/pair$j-old/lab"); done
      mkdir -p "$OUT/cal-$1"
      "$LOADLAB" lab calibrate "${labs[@]}" --out "$OUT/cal-$1" >/dev/null 2>&1
      echo "--calibration $OUT/cal-$1";;
    *[!0-9]*) echo "--calibration $CALIBRATE";;
    *) echo "--calibration $OUT/calibration";;
  esac
}

for i in $(seq 1 "$PAIRS"); do
  for side in old new; do
    [ "${RESCORE:-0}" = 1 ] && continue
    change=0; [ "$side" = new ] && change=$CHANGE
    plan "pair$i-$side" "$change"
    "${pin_lab[@]}" "$LOADLAB" lab run "$OUT/pair$i-$side/plan.toml" --out "$OUT/pair$i-$side/lab" >/dev/null 2>"$OUT/pair$i-$side/lab.err" || true
  done
  code=0
  rm -rf "$OUT/pair$i-cmp"
  # shellcheck disable=SC2046 # the flag and its path, or nothing
  "$LOADLAB" lab compare "$OUT/pair$i-old/lab" "$OUT/pair$i-new/lab" --fail-on "$GATE" --out "$OUT/pair$i-cmp" $(calibration "$i") \
    >/dev/null 2>"$OUT/pair$i-cmp.err" || code=$?
  echo "$code" > "$OUT/pair$i-cmp/exit"
  echo "pair $i of $PAIRS: lab compare exit $code" >&2
done

python3 - "$OUT" "$SERVER" "$REPEATS" "$CHANGE" "$PIN" "${CALIBRATE:-none}" <<'PY'
import csv, json, pathlib, sys
out, server, repeats, change, pin, calibrate = pathlib.Path(sys.argv[1]), *sys.argv[2:]
rows, gates = [], []
for cmp in sorted(out.glob("pair*-cmp")):
    j = json.loads((cmp / "compare.json").read_text())
    pair = cmp.name.split("-")[0]
    for r in j["rows"]:
        rows.append({"pair": pair, "load": r["load"], "metric": r["measure"], "old": r["old"], "new": r["new"],
                     "change_pct": r["change_pct"], "verdict": r["verdict"], "note": r.get("note") or ""})
    gates.append(int((cmp / "exit").read_text()) == 3)
with open(out / "rows.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["pair"])
    w.writeheader(); w.writerows(rows)
print(f"server {server}, repeats {repeats}, change {change}%, pinned {pin == '1'}, calibration {calibrate}: {len(gates)} pairs")
print(f"{'metric':<14}{'cells':>6}{'better':>8}{'worse':>7}{'called':>8}  median |change|  max |change|")
for m in sorted({r["metric"] for r in rows}):
    rs = [r for r in rows if r["metric"] == m]
    b = sum(r["verdict"] == "better" for r in rs); w = sum(r["verdict"] == "worse" for r in rs)
    ch = sorted(abs(r["change_pct"]) for r in rs if r["change_pct"] == r["change_pct"])
    med = ch[len(ch) // 2] if ch else float("nan")
    print(f"{m:<14}{len(rs):>6}{b:>8}{w:>7}{(b + w) / max(len(rs), 1):>8.0%}  {med:>13.1f}%  {ch[-1] if ch else float('nan'):>10.1f}%")
print(f"gate {sys.argv[0] and ''}failed in {sum(gates)} of {len(gates)} pairs")
PY
echo "labs and rows.csv in $OUT" >&2
