#!/usr/bin/env bash
# lab ab's false alarms, power and time on a real server, as a pull request job runs it: RUNS
# runs of `lab ab` in a repository whose head is the base itself (CHANGE=0), a commit that
# changes only a comment (CHANGE=comment), or one that does CHANGE percent more work per request
# (the CPU-bound server's hashing, the origin's latency).
#
#   SERVER=cpu|origin|nginx|go RUNS=10 CHANGE=0|comment|5|10 [PAIRS=auto] [MOST=20] [GATE=...]
#     [RATES='[50]'] [SEPARATE=1] [OUT=dir] [LOADLAB_BIN=bin] bash bench/ab.sh
#
# The plan is bench/aa/plan.sh's (3 s steps after 1 s of warm-up). SEPARATE=1 also runs, after
# each ab run, what a team did before: `lab run --repeats 3` of base, then of head, then `lab
# compare`, so that the two intervals can be set side by side. OUT keeps every run, runs.csv
# (run, exit, pairs, seconds, line) and rows.csv (each gated row of each run, and the separate
# comparison's matching row).
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/common.sh
source bench/aa/plan.sh
SERVER=${SERVER:-cpu} RUNS=${RUNS:-10} CHANGE=${CHANGE:-0} PAIRS=${PAIRS:-auto} MOST=${MOST:-20}
SEPARATE=${SEPARATE:-0}
need_tools python3 git
[ "$SERVER" != nginx ] || need_tools nginx
[ "$SERVER" != nginx ] || [ "$CHANGE" = 0 ] || [ "$CHANGE" = comment ] || {
  echo "nginx serves a file: CHANGE=5 or 10 is for cpu and origin" >&2; exit 2; }
build_loadlab
case $SERVER in
  nginx) RATES=${RATES:-[400]};;
  cpu) RATES=${RATES:-[50]};;
  origin) RATES=${RATES:-[400]};;
  go) RATES=${RATES:-[400]};;
esac
export RATES LOADLAB
OUT=${OUT:-$(mktemp -d /tmp/loadlab-ab.XXXXXX)}
mkdir -p "$OUT"
repo=$OUT/repo
rm -rf "$repo"
mkdir -p "$repo"
git -C "$repo" init -q -b main
git -C "$repo" config user.email bench@example.com
git -C "$repo" config user.name bench
aa_plan "$repo" 0
echo "the service" > "$repo/README"
git -C "$repo" add -A
git -C "$repo" commit -qm "the service"
base=$(git -C "$repo" rev-parse HEAD)
case $CHANGE in
  0) head=$base;;
  comment) echo "the service, reworded" > "$repo/README"
           git -C "$repo" commit -qam "README reworded"; head=$(git -C "$repo" rev-parse HEAD);;
  *) aa_plan "$repo" "$CHANGE"; git -C "$repo" commit -qam "$CHANGE% more work"; head=$(git -C "$repo" rev-parse HEAD);;
esac
gate=(); [ -z "${GATE:-}" ] || gate=(--fail-on "$GATE")
repeats=(--repeats "$PAIRS"); [ "$PAIRS" != auto ] || repeats+=(--most-repeats "$MOST")

echo "run,exit,pairs,seconds,line" > "$OUT/runs.csv"
for r in $(seq 1 "$RUNS"); do
  dir=$OUT/run$r
  rm -rf "$dir"
  started=$(date +%s.%N)
  code=0
  (cd "$repo" && "$LOADLAB" lab ab plan.toml "$base" "$head" "${repeats[@]}" "${gate[@]}" --out "$dir" \
    >"$OUT/run$r.line" 2>"$OUT/run$r.err") || code=$?
  took=$(echo "$(date +%s.%N) - $started" | bc)
  pairs=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['pairs'])" "$dir/ab.json" 2>/dev/null || echo 0)
  line=$(tr -d ',' < "$OUT/run$r.line")
  echo "$r,$code,$pairs,$took,$line" >> "$OUT/runs.csv"
  echo "run $r of $RUNS (change $CHANGE): exit $code after $pairs pairs, ${took%.*} s: $line" >&2
  if [ "$SEPARATE" = 1 ]; then
    # What a team did before: two labs of 3 repeats, one after the other, and lab compare.
    for side in base head; do
      rev=$base; [ "$side" = base ] || rev=$head
      tree=$OUT/tree-$side
      git -C "$repo" worktree add -q --detach --force "$tree" "$rev"
      "$LOADLAB" lab run "$tree/plan.toml" --repeats 3 --out "$dir/separate-$side" >/dev/null 2>&1 || true
      git -C "$repo" worktree remove --force --force "$tree"
    done
    "$LOADLAB" lab compare "$dir/separate-base" "$dir/separate-head" "${gate[@]}" --out "$dir/separate" \
      >/dev/null 2>&1 || true
  fi
done

python3 - "$OUT" "$SERVER" "$CHANGE" <<'PY'
import csv, json, pathlib, statistics, sys
out, server, change = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
runs = list(csv.DictReader(open(out / "runs.csv")))
rows = []
for r in runs:
    ab = out / f"run{r['run']}" / "ab.json"
    if not ab.exists():
        continue
    j = json.loads(ab.read_text())
    sep = {}
    cj = out / f"run{r['run']}" / "separate" / "compare.json"
    if cj.exists():
        for s in json.loads(cj.read_text())["rows"]:
            sep[(s["measure"], s["load"])] = s
    for row in j["rows"]:
        if not row.get("gate"):
            continue
        lo, hi = row.get("interval_pct") or (None, None)
        s = sep.get((row["metric"], row["load"]))
        slo, shi = (s.get("ci_pct") or (None, None)) if s else (None, None)
        rows.append({"run": r["run"], "metric": row["metric"], "load": row["load"], "pairs": row["pairs"],
                     "change_pct": row["change_pct"], "lo": lo, "hi": hi, "said": row["said"],
                     "separate_change_pct": s["change_pct"] if s else None, "separate_lo": slo, "separate_hi": shi,
                     "separate_verdict": s["verdict"] if s else None,
                     "spread_pct": row.get("spread_pct"),
                     "machine_used": (row.get("machine") or {}).get("used"),
                     "unadjusted_change_pct": (row.get("machine") or {}).get("unadjusted_change_pct")})
with open(out / "rows.csv", "w", newline="") as f:
    if rows:
        w = csv.DictWriter(f, fieldnames=list(rows[0])); w.writeheader(); w.writerows(rows)
n = len(runs)
red = sum(r["exit"] == "3" for r in runs)
tell = sum(r["exit"] == "4" for r in runs)
secs = [float(r["seconds"]) for r in runs]
pairs = [int(r["pairs"]) for r in runs]
print(f"server {server}, change {change}: {n} runs; exit 3 in {red} ({red / max(n, 1):.0%}), exit 4 in {tell}; "
      f"pairs median {statistics.median(pairs) if pairs else 0}, max {max(pairs, default=0)}; "
      f"time median {statistics.median(secs) if secs else 0:.0f} s, max {max(secs, default=0):.0f} s")
for m in sorted({r["metric"] for r in rows}):
    mine = [r for r in rows if r["metric"] == m and r["lo"] is not None]
    if not mine:
        continue
    width = statistics.median(r["hi"] - r["lo"] for r in mine)
    excl = sum(r["lo"] > 0 or r["hi"] < 0 for r in mine)
    said = {k: sum(r["said"] == k for r in mine) for k in ("worse", "within", "undecided")}
    line = (f"  {m}: change median {statistics.median(r['change_pct'] for r in mine):+.1f}%, interval width median "
            f"{width:.1f} points, excludes 0 in {excl} of {len(mine)}; {said}")
    spreads = [r["spread_pct"] for r in mine if r["spread_pct"] is not None]
    if spreads:
        line += f"; pairs' spread median {statistics.median(spreads):.1f}%"
    used = [r for r in mine if r["machine_used"] is not None]
    if used:
        line += (f"; relative to the machine in {sum(bool(r['machine_used']) for r in used)} of {len(used)}, "
                 f"as measured median {statistics.median(r['unadjusted_change_pct'] for r in used):+.1f}%")
    sep = [r for r in mine if r["separate_lo"] is not None]
    if sep:
        sw = statistics.median(r["separate_hi"] - r["separate_lo"] for r in sep)
        sx = sum(r["separate_lo"] > 0 or r["separate_hi"] < 0 for r in sep)
        sc = statistics.median(abs(r["separate_change_pct"]) for r in sep)
        line += (f"; two lab runs + lab compare: |change| median {sc:.1f}%, width median {sw:.1f} points, "
                 f"excludes 0 in {sx} of {len(sep)}")
    print(line)
PY
echo "runs, runs.csv and rows.csv in $OUT" >&2
