#!/usr/bin/env bash
# Long runs: report and plot over 10 million requests (by hand, not in CI): bash bench/plot.sh
# Prints wall time and peak memory of `report`, `plot -o .html` and `plot -o .png`, and sizes.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cargo build --release -q
LOADLAB=$PWD/target/release/loadlab
# A synthetic 10,000 req/s run (100-105 ms, one 500 in a thousand), through vegeta's CSV format.
python3 -c "
import sys
w = sys.stdout.write
t0 = 1700000000000000000
for i in range($N):
    code = 500 if i % 1000 == 0 else 200
    w('%d,%d,%d,0,204800,%s,,long,%d\n' % (t0 + i * 100000, code, 100000000 + (i * 7919) % 5000000, '500 Internal Server Error' if code == 500 else '', i))
" > "$work/run.csv"
"$LOADLAB" encode --from csv -o "$work/run.llr" "$work/run.csv"
printf 'results file: %s requests, %s bytes (%.1f bytes per request)\n' "$N" "$(stat -c %s "$work/run.llr")" \
  "$(python3 -c "print($(stat -c %s "$work/run.llr") / $N)")"
/usr/bin/time -f "report:      %e s, %M KiB peak" "$LOADLAB" report "$work/run.llr" > /dev/null
/usr/bin/time -f "plot (html): %e s, %M KiB peak" "$LOADLAB" plot "$work/run.llr" -o "$work/run.html"
/usr/bin/time -f "plot (png):  %e s, %M KiB peak" "$LOADLAB" plot "$work/run.llr" -o "$work/run.png"
ls -l "$work/run.html" "$work/run.png" | awk '{print $5, $9}'
